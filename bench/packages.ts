/**
 * `npm run bench:packages`: the npm packages of test/node/package-examples.ts, each in a sandbox of its own on the
 * caller's thread with the Web APIs: its version, its bundle's size and cold bundling time, the first run (the boot),
 * what importing it adds to a trivial run, and whether its README example answers as in Node; then all of them in one
 * sandbox: the booted image's size, the boot, and a trivial run with and without an import.
 */
import { rmSync, writeFileSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { isDeepStrictEqual } from "node:util";
import { createSandbox, DEFAULT_MEMORY_LIMIT_BYTES, type Sandbox } from "../node/index.js";
import { bundlePackages } from "../node/packages.js";
import { BootedInstance, bootOf } from "../src/core/instance.js";
import { EXAMPLES } from "../test/node/package-examples.js";
import { sample, summarize } from "./stats.js";

const ROOT = process.cwd();
const CACHE = join(ROOT, "node_modules/.cache/runcode/packages");
const ROUNDS = 20;
const js = { language: "javascript" } as const;

async function trivial(sandbox: Sandbox, source: string): Promise<number> {
  const times = await sample(ROUNDS, async () => {
    const result = await sandbox.runCode(source, { language: "javascript" });
    if (result.status !== "success") throw new Error(`bench run failed: ${JSON.stringify(result.error)}`);
  });
  return summarize(source, times).p50;
}

async function inNode(name: string, source: string): Promise<unknown> {
  const file = join(ROOT, `node_modules/.cache/runcode/bench-${name.replaceAll("/", "+")}.mjs`);
  writeFileSync(file, source);
  return (await import(pathToFileURL(file).href)).default;
}

rmSync(CACHE, { recursive: true, force: true });
const wasm = await WebAssembly.compile(await readFile(createRequire(import.meta.url).resolve("runcode/wasm")));
/** The booted image's MiB with `modules` and the Web APIs. */
async function imageMiB(modules: Readonly<Record<string, string>> | undefined): Promise<number> {
  const instance = await BootedInstance.boot(wasm, DEFAULT_MEMORY_LIMIT_BYTES, true, bootOf(modules, true));
  return (instance.span() ?? 0) / 1024 / 1024;
}
const webImage = await imageMiB(undefined);

console.log(
  "| package | version | bundle KiB | bundling ms (cold) | image MiB added | first run ms (boot) | trivial run ms | import ms | README example |",
);
console.log("|---|---|--:|--:|--:|--:|--:|--:|---|");
for (const [name, { packages, source }] of Object.entries(EXAMPLES)) {
  const start = performance.now();
  const bundles = bundlePackages(packages, ROOT);
  const bundling = performance.now() - start;
  const bytes = bundles.reduce((sum, b) => sum + Buffer.byteLength(b.source), 0);
  const sandbox = createSandbox({ packages, packagesFrom: ROOT, webApis: true, threads: false });
  const first = performance.now();
  await sandbox.runCode("export default 1", { language: "javascript" });
  const boot = performance.now() - first;
  const base = await trivial(sandbox, "export default 1");
  const image = (await imageMiB(Object.fromEntries(bundles.map((b) => [b.specifier, b.source])))) - webImage;
  const imported = await trivial(sandbox, `import * as ns from "${packages[0]}";\nexport default 1`);
  const result = await sandbox.runCode(source, { language: "javascript" });
  const same = result.status === "success" && isDeepStrictEqual(result.result, await inNode(name, source));
  console.log(
    `| ${name} | ${bundles[0]?.version} | ${(bytes / 1024).toFixed(0)} | ${bundling.toFixed(0)} | ${image.toFixed(1)} | ${boot.toFixed(0)} | ${base.toFixed(2)} | ${(imported - base).toFixed(2)} | ${same ? "as in Node" : `differs: ${JSON.stringify(result.error ?? result.result).slice(0, 80)}`} |`,
  );
}

const all = Object.values(EXAMPLES).flatMap((example) => example.packages);
const modules = Object.fromEntries(bundlePackages(all, ROOT).map((b) => [b.specifier, b.source]));
const bundleBytes = Object.values(modules).reduce((sum, source) => sum + Buffer.byteLength(source), 0);
for (const [label, boot] of [
  ["web APIs only", bootOf(undefined, true)],
  ["web APIs and all packages", bootOf(modules, true)],
] as const) {
  const start = performance.now();
  const instance = await BootedInstance.boot(wasm, DEFAULT_MEMORY_LIMIT_BYTES, true, boot);
  const ms = performance.now() - start;
  console.log(`${label}: boot ${ms.toFixed(0)} ms, image ${((instance.span() ?? 0) / 1024 / 1024).toFixed(1)} MiB`);
}
console.log(`all ${all.length} bundles: ${(bundleBytes / 1024 / 1024).toFixed(2)} MiB of source`);
const everything = createSandbox({ packages: all, packagesFrom: ROOT, webApis: true, threads: false });
const plain = createSandbox({ webApis: true, threads: false });
await everything.runCode("export default 1", js);
await plain.runCode("export default 1", js);
console.log(`trivial run, web APIs only: ${(await trivial(plain, "export default 1")).toFixed(2)} ms`);
console.log(`trivial run, all packages booted: ${(await trivial(everything, "export default 1")).toFixed(2)} ms`);
console.log(
  `a run importing zod, lodash and date-fns, all booted: ${(await trivial(everything, 'import { z } from "zod"; import _ from "lodash"; import { format } from "date-fns"; export default 1')).toFixed(2)} ms`,
);
