/**
 * The packages lock file (`runcode-packages.json`) that `runcode packages add` writes and hosts read
 * (`RUNCODE_PACKAGES` of `runcode serve`): each package's specifier, version, bundle file (beside the lock file) and
 * the bundle's SHA-256, so that a host boots exactly the bundles that were written, without esbuild or `node_modules`.
 * @module
 */
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { RUNCODE_VERSION } from "../src/core/version.js";
import { bundlePackages } from "./packages.js";

/** The lock file's default name, in the current working directory. */
export const PACKAGES_LOCK_FILE = "runcode-packages.json";

/** One package of a lock file. */
interface LockedPackage {
  specifier: string;
  version: string;
  /** The bundle, relative to the lock file's directory. */
  file: string;
  sha256: string;
}

interface PackagesLock {
  runcode: string;
  packages: LockedPackage[];
}

function readLock(lockPath: string): PackagesLock {
  let lock: PackagesLock;
  try {
    lock = JSON.parse(readFileSync(lockPath, "utf8")) as PackagesLock;
  } catch (error) {
    throw new TypeError(`${lockPath}: not a packages lock file: ${(error as Error).message}`);
  }
  if (!Array.isArray(lock?.packages)) throw new TypeError(`${lockPath}: not a packages lock file: no "packages" list`);
  return lock;
}

/**
 * Bundles `specifiers` (resolved from `from`), writes each bundle into `runcode-packages/` beside `lockPath`, and
 * adds them to the lock file (a specifier already there is replaced); returns the lock's packages.
 */
export function addPackages(specifiers: readonly string[], lockPath: string, from = process.cwd()): LockedPackage[] {
  const path = resolve(lockPath);
  const existing = existsSync(path) ? readLock(path).packages : [];
  const added = bundlePackages(specifiers, from).map(({ specifier, version, source }): LockedPackage => {
    const file = `runcode-packages/${specifier.replaceAll("/", "+")}@${version}.js`;
    mkdirSync(join(dirname(path), "runcode-packages"), { recursive: true });
    writeFileSync(join(dirname(path), file), source);
    return { specifier, version, file, sha256: sha256Of(source) };
  });
  const packages = [...existing.filter((p) => !added.some((a) => a.specifier === p.specifier)), ...added];
  packages.sort((a, b) => (a.specifier < b.specifier ? -1 : 1));
  writeFileSync(path, `${JSON.stringify({ runcode: RUNCODE_VERSION, packages } satisfies PackagesLock, null, 2)}\n`);
  return packages;
}

/** What a host boots from a lock file: its bundles as boot modules, and its packages for `run_code`'s guide. */
export interface LockedBoot {
  bootModules: Readonly<Record<string, string>>;
  packages: readonly { specifier: string; version: string }[];
}

/**
 * The bundles of a lock file, each checked against its SHA-256; throws a `TypeError` naming the lock file and the
 * package that does not match or cannot be read.
 */
export function readPackagesLock(lockPath: string): LockedBoot {
  const path = resolve(lockPath);
  const modules: Record<string, string> = {};
  const { packages } = readLock(path);
  for (const { specifier, file, sha256 } of packages) {
    let source: string;
    try {
      source = readFileSync(join(dirname(path), file), "utf8");
    } catch (error) {
      throw new TypeError(`${lockPath}: package '${specifier}': ${(error as Error).message}`);
    }
    if (sha256Of(source) !== sha256)
      throw new TypeError(`${lockPath}: package '${specifier}': ${file} does not match its sha256`);
    modules[specifier] = source;
  }
  return {
    bootModules: Object.freeze(modules),
    packages: packages.map(({ specifier, version }) => ({ specifier, version })),
  };
}

/** The SHA-256 of a bundle's source, hex: what a lock file records. */
function sha256Of(source: string): string {
  return createHash("sha256").update(source).digest("hex");
}
