/**
 * npm packages for the sandbox (`NodeSandboxOptions.packages`): each named package (or documented subpath,
 * `date-fns/format`), resolved from a directory as Node resolves it, bundled by esbuild into one ES module with
 * no imports (a package's browser build where it has one), cached on disk by name, version and runcode version, and
 * handed to the core as a boot module named by its specifier, which the guest imports by that bare name.
 *
 * A CommonJS entry becomes a module whose default export is `module.exports` and whose named exports are the keys
 * of `module.exports` the guest will see: found by running the bundle in a sandbox, in a child process, never on the
 * host, so that a package's code runs only in the guest (loaded on the host, its top level would have the host's
 * powers). A package that needs a Node built-in or a native addon is refused, naming the package and what it needs.
 * @module
 */
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { builtinModules, createRequire } from "node:module";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import type { BuildOptions, Metafile } from "esbuild";
import { RUNCODE_VERSION } from "../src/core/version.js";
import { builtFile } from "./built-files.js";

/** A package's bundle: the specifier the guest imports, the package's version and the module's source. */
interface PackageBundle {
  specifier: string;
  version: string;
  source: string;
}

/** A bare specifier: a package name (`zod`, `@scope/name`), optionally with a subpath (`lodash/fp`). */
const SPECIFIER = /^(?:@[a-z0-9][\w.~-]*\/)?[a-z0-9][\w.~-]*(?:\/[\w.~@-]+)*$/i;
const IDENTIFIER = /^[A-Za-z_$][\w$]*$/;
/**
 * A package's version as npm publishes it (semver): it names the bundle's file, so a `package.json` whose version
 * holds a `/` or `..` would write the bundle outside its directory.
 */
const VERSION = /^\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?$/;

/** The package name of a bare specifier (`@scope/name/sub` -> `@scope/name`). */
function packageNameOf(specifier: string): string {
  const parts = specifier.split("/");
  return parts.slice(0, specifier.startsWith("@") ? 2 : 1).join("/");
}

/**
 * The `node_modules` that holds `name` as Node finds it from `from` (that of `from` or of a parent), where its bundles
 * are cached too.
 */
function nodeModulesOf(name: string, from: string): string {
  for (let dir = resolve(from); ; dir = dirname(dir)) {
    const candidate = join(dir, "node_modules");
    if (existsSync(join(candidate, name, "package.json"))) return candidate;
    if (dirname(dir) === dir) throw new TypeError(`createSandbox: package '${name}' is not installed in ${from}`);
  }
}

const BUILTINS = new Set(builtinModules);

/** The message of a failed build: a Node built-in or native addon named as such, else esbuild's own. */
function failureOf(specifier: string, errors: readonly { text: string }[]): string {
  for (const { text } of errors) {
    const path = /^Could not resolve "([^"]+)"/.exec(text)?.[1];
    const bare = path?.replace(/^node:/, "").split("/")[0];
    if (path !== undefined && (path.startsWith("node:") || BUILTINS.has(bare ?? "")))
      return `package '${specifier}' needs the Node built-in '${bare}', which the sandbox does not have`;
    if (/"\.node" files/.test(text)) return `package '${specifier}' needs native code (a .node addon)`;
  }
  return `package '${specifier}' cannot be bundled: ${errors.map((e) => e.text).join("; ")}`;
}

function build(specifier: string, from: string, options: BuildOptions): { text: string; metafile: Metafile } {
  try {
    // Loaded only here: a process whose sandboxes have no packages, or only cached ones, never loads esbuild.
    const { buildSync } = createRequire(import.meta.url)("esbuild") as typeof import("esbuild");
    const result = buildSync({
      bundle: true,
      write: false,
      metafile: true,
      format: "esm",
      // "browser", not "neutral": only then does esbuild apply a package's `browser` map (`{"./util.js": false}`),
      // which is how packages such as qs leave Node's built-ins out of their browser builds.
      platform: "browser",
      target: "es2023",
      absWorkingDir: resolve(from),
      outdir: "out",
      logLevel: "silent",
      minifySyntax: true,
      // The sandbox has no `eval`; a package that only names it (get-intrinsic, under qs) reads `undefined`.
      define: { "process.env.NODE_ENV": '"production"', global: "globalThis", eval: "undefined" },
      ...options,
    });
    return { text: (result.outputFiles ?? [])[0]?.text ?? "", metafile: result.metafile as Metafile };
  } catch (error) {
    const errors = (error as { errors?: { text: string }[] }).errors ?? [{ text: (error as Error).message }];
    throw new TypeError(`createSandbox: ${failureOf(specifier, errors)}`);
  }
}

/** Bounds on a CommonJS entry's names, which become code: how many, how long each. */
const MAX_NAMES = 4096;
const MAX_NAME_LENGTH = 256;
/** Bounds on the probe's child process: its output, and its time, a backstop for the fuel it gives the package. */
const MAX_PROBE_OUTPUT_BYTES = 16 * 1024 * 1024;
const PROBE_TIMEOUT_MS = 60_000;

/**
 * The named exports of a CommonJS entry whose ES module bundle is `source` (default export `module.exports`): the keys
 * the guest will see, found by running it in a sandbox in a child process (node/package-probe.ts), never on the
 * host, and kept if identifiers other than `default` and `__esModule`, MAX_NAMES at most. A package whose top level
 * throws or runs out of fuel there has none (the default export alone). A probe that gives no answer (its child
 * cannot start, dies, times out or prints anything but a list of strings: the machine, not the package) throws, so
 * that no bundle is kept without the names a later probe would find.
 */
function commonJsExportsOf(specifier: string, source: string): string[] {
  let keys: unknown;
  try {
    const output = execFileSync(process.execPath, [fileURLToPath(builtFile("package-probe.js"))], {
      input: source,
      encoding: "utf8",
      maxBuffer: MAX_PROBE_OUTPUT_BYTES,
      timeout: PROBE_TIMEOUT_MS,
      stdio: ["pipe", "pipe", "ignore"],
    });
    keys = JSON.parse(output);
  } catch (error) {
    throw new TypeError(
      `createSandbox: package '${specifier}' could not be probed for its names: ${(error as Error).message}`,
    );
  }
  if (!Array.isArray(keys) || !keys.every((key) => typeof key === "string"))
    throw new TypeError(`createSandbox: package '${specifier}' could not be probed for its names: no list of names`);
  return keys
    .filter((key: string) => key.length <= MAX_NAME_LENGTH && IDENTIFIER.test(key))
    .filter((key: string) => key !== "default" && key !== "__esModule")
    .slice(0, MAX_NAMES);
}

/** The module of `specifier`: its ES module bundle, or a wrapper giving a CommonJS entry Node's ES shape. */
function bundle(specifier: string, from: string): string {
  const first = build(specifier, from, { entryPoints: [specifier] });
  const output = Object.values(first.metafile.outputs)[0];
  const entry = output?.entryPoint;
  if (entry === undefined || first.metafile.inputs[entry]?.format !== "cjs") return first.text;
  // The names of the build bundled (a package's browser build, where it has one), which the guest's `m` holds.
  const keys = commonJsExportsOf(specifier, first.text);
  const reads = keys.map((key, i) => `const v${i} = m.${key};`).join("\n");
  const names = keys.map((key, i) => `v${i} as ${key}`).join(", ");
  const contents = `const m = require(${JSON.stringify(specifier)});\nexport default m;\n${reads}\nexport { ${names} };\n`;
  return build(specifier, from, { stdin: { contents, resolveDir: resolve(from), sourcefile: "entry.js" } }).text;
}

/**
 * The bundle of each of `specifiers`, resolved from `from`: read from the cache in `.cache/runcode/packages` of the
 * `node_modules` that holds the package, else bundled and written there (a package changed in place under the same
 * version needs its cached bundle deleted).
 */
export function bundlePackages(specifiers: readonly string[], from = process.cwd()): PackageBundle[] {
  if (!Array.isArray(specifiers)) throw new TypeError("createSandbox: packages must be an array of package names");
  return specifiers.map((specifier) => {
    if (typeof specifier !== "string" || !SPECIFIER.test(specifier))
      throw new TypeError(`createSandbox: packages: ${JSON.stringify(specifier)} is not a package name`);
    const name = packageNameOf(specifier);
    const nodeModules = nodeModulesOf(name, from);
    const { version } = JSON.parse(readFileSync(join(nodeModules, name, "package.json"), "utf8")) as {
      version: unknown;
    };
    if (typeof version !== "string" || !VERSION.test(version)) {
      const shown = JSON.stringify(version ?? null).slice(0, 100);
      throw new TypeError(`createSandbox: package '${name}' has the version ${shown}, which is not a semantic version`);
    }
    const file = join(
      nodeModules,
      ".cache/runcode/packages",
      `${specifier.replaceAll("/", "+")}@${version}-runcode${RUNCODE_VERSION}.js`,
    );
    if (existsSync(file)) return { specifier, version, source: readFileSync(file, "utf8") };
    const source = bundle(specifier, from);
    mkdirSync(dirname(file), { recursive: true });
    const temporary = `${file}.${process.pid}.tmp`;
    writeFileSync(temporary, source);
    renameSync(temporary, file);
    return { specifier, version, source };
  });
}
