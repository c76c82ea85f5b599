/**
 * The edge's and the playground's packages, read from the lock file at build time (web/packages-plugin.ts): the
 * generated module, no lock file, and a bad one failing `vite build` with a message naming it.
 */
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { addPackages, readPackagesLock } from "../../node/packages-lock.js";
import { packagesModuleOf } from "../../web/packages-plugin.js";

const dir = mkdtempSync(join(tmpdir(), "runcode-packages-build-"));
afterAll(() => rmSync(dir, { recursive: true }));
const greet = join(dir, "node_modules", "greet");
mkdirSync(greet, { recursive: true });
writeFileSync(join(greet, "package.json"), JSON.stringify({ name: "greet", version: "1.2.3", type: "module" }));
writeFileSync(join(greet, "index.js"), 'export const hello = (name) => "hello " + name;\n');
const lock = join(dir, "runcode-packages.json");
addPackages(["greet"], lock, dir);

/** The exports of a generated module's text. */
async function load(text: string): Promise<Record<string, unknown>> {
  const file = join(dir, `generated-${Math.random().toString(36).slice(2)}.mjs`);
  writeFileSync(file, text);
  return { ...(await import(pathToFileURL(file).href)) };
}

describe("the packages module the build writes", () => {
  it("holds the lock file's bundles by specifier and its packages' versions", async () => {
    const { bootModules } = readPackagesLock(lock);
    expect(await load(packagesModuleOf(lock))).toEqual({
      packages: [{ specifier: "greet", version: "1.2.3" }],
      bootModules: { greet: bootModules.greet },
    });
    // RUNCODE_PACKAGES unset: runcode-packages.json in the directory the build runs in.
    expect(await load(packagesModuleOf(undefined, dir))).toEqual(await load(packagesModuleOf(lock)));
  });

  it("is empty without a lock file, and refuses a lock file named but missing", async () => {
    expect(await load(packagesModuleOf(undefined, join(dir, "node_modules")))).toEqual({
      packages: [],
      bootModules: {},
    });
    expect(() => packagesModuleOf(join(dir, "none.json"))).toThrow(
      new TypeError(`RUNCODE_PACKAGES: no lock file at ${join(dir, "none.json")}`),
    );
  });

  it("fails `vite build` naming the lock file and the package whose bundle does not match", () => {
    const bad = join(dir, "bad");
    mkdirSync(join(bad, "runcode-packages"), { recursive: true });
    const { packages } = JSON.parse(readFileSync(lock, "utf8")) as { packages: { file: string }[] };
    writeFileSync(join(bad, "runcode-packages.json"), JSON.stringify({ runcode: "0", packages }));
    writeFileSync(join(bad, packages[0]?.file ?? ""), "export const hello = 1;\n");
    const build = spawnSync("npx", ["vite", "build", "--outDir", join(dir, "out")], {
      encoding: "utf8",
      env: { ...process.env, RUNCODE_PACKAGES: join(bad, "runcode-packages.json") },
    });
    expect(build.status).not.toBe(0);
    expect(build.stderr).toContain(
      `TypeError: ${join(bad, "runcode-packages.json")}: package 'greet': runcode-packages/greet@1.2.3.js does not match its sha256`,
    );
  });
});
