/**
 * The package's Node entries as package.json names them are the bundle scripts/bundle-node.mjs makes of dist/node
 * (`npm run build`): a fresh process importing `runcode`, `runcode/environment` and `runcode/host` and running on the default path, on
 * a worker thread and through the environment loads the package's code from dist/bundle only (one copy of the core),
 * and fewer than 30 files of it (the unbundled build has a module per source file, over 70 of them here). The files
 * a process loads are told by a module hook.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { afterAll, expect, it } from "vitest";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const dir = mkdtempSync(join(tmpdir(), "runcode-entries-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

it("package.json's exports and bin name the bundle", () => {
  const manifest = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8"));
  const { exports } = manifest;
  expect([
    exports["."].node.default,
    exports["./environment"].node.default,
    exports["./host"].node.default,
    manifest.bin,
  ]).toEqual([
    "./dist/bundle/index.js",
    "./dist/bundle/environment.js",
    "./dist/bundle/host.js",
    { runcode: "dist/bundle/cli.js" },
  ]);
});

it("a fresh process loads the package's code from the bundle only, a few files of it", () => {
  writeFileSync(
    join(dir, "hooks.mjs"),
    `export async function load(url, context, next) {
  if (url.startsWith(${JSON.stringify(pathToFileURL(ROOT).href)})) process.stderr.write(url + "\\n");
  return next(url, context);
}`,
  );
  writeFileSync(
    join(dir, "register.mjs"),
    `import { register } from "node:module";\nregister(${JSON.stringify(pathToFileURL(join(dir, "hooks.mjs")).href)});`,
  );
  const script = `const { createSandbox } = await import("runcode");
const { instantiate } = await import("runcode/environment");
const { createApp } = await import("runcode/host");
const first = await createSandbox().runCode("export default 1 + 1", { language: "javascript" });
const typed = await createSandbox().runCode("const n: number = 3; export default n;");
const threaded = await createSandbox({ threads: true }).runCode("export default 4", { language: "javascript" });
console.log(JSON.stringify([first.result, typed.result, threaded.result, typeof instantiate, typeof createApp]));`;
  // Run from the repository, whose package.json names `runcode`: Node resolves the package's own name to its exports.
  const child = spawnSync(
    process.execPath,
    ["--import", pathToFileURL(join(dir, "register.mjs")).href, "--input-type=module", "-e", script],
    { cwd: ROOT, encoding: "utf8" },
  );
  expect(JSON.parse(child.stdout)).toEqual([2, 3, 4, "function", "function"]);
  const files = child.stderr
    .split("\n")
    .filter((url) => url !== "" && !url.includes("/node_modules/"))
    .map((url) => fileURLToPath(url).slice(ROOT.length));
  expect(files.filter((file) => !file.startsWith("dist/bundle/") && file !== "dist/swc/swc.js")).toEqual([]);
  expect(files).toContain("dist/bundle/index.js");
  expect(files.length).toBeLessThan(30);
});
