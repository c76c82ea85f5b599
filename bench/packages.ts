/**
 * `npm run bench:packages`: the npm packages of test/node/package-examples.ts, each in a sandbox of its own on the
 * caller's thread with the Web APIs: its version, its bundle's size and cold bundling time, the first run (the boot),
 * what importing it adds to a trivial run, and whether its README example answers as in Node; then each option
 * of a sandbox alone and together (none, `webApis`, `intl`, both, five typical packages, all of them,
 * everything): the booted image's size, the boot and a trivial run's time and fuel, and a run importing three packages.
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
import { InstancePool } from "../src/core/instance-pool.js";
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
const typical = ["zod", "lodash", "date-fns", "dayjs", "uuid"];
const modulesOf = (packages: readonly string[]) =>
  Object.fromEntries(bundlePackages(packages, ROOT).map((b) => [b.specifier, b.source]));
const bytesOf = (modules: Readonly<Record<string, string>>) =>
  Object.values(modules).reduce((sum, source) => sum + Buffer.byteLength(source), 0);
console.log(`\nall ${all.length} bundles: ${(bytesOf(modulesOf(all)) / 1024 / 1024).toFixed(2)} MiB of source`);

/** Each option of the sandbox alone and together: what the image holds, what a boot takes, what a trivial run costs. */
interface OptionCase {
  label: string;
  webApis: boolean;
  intl: boolean;
  packages: readonly string[];
  /** Boots timed (the heavy images take seconds each). */
  boots: number;
}
const cases: OptionCase[] = [
  { label: "none", webApis: false, intl: false, packages: [], boots: 10 },
  { label: "webApis", webApis: true, intl: false, packages: [], boots: 10 },
  { label: "intl", webApis: false, intl: true, packages: [], boots: 10 },
  { label: "webApis + intl", webApis: true, intl: true, packages: [], boots: 10 },
  // Packages with the Web APIs, which some of them use as they are booted (@cfworker/json-schema makes a `URL`).
  { label: `webApis + packages: ${typical.join(", ")}`, webApis: true, intl: false, packages: typical, boots: 5 },
  {
    label: `webApis + all ${Object.keys(EXAMPLES).length} packages`,
    webApis: true,
    intl: false,
    packages: all,
    boots: 3,
  },
  {
    label: `webApis + intl + all ${Object.keys(EXAMPLES).length} packages`,
    webApis: true,
    intl: true,
    packages: all,
    boots: 3,
  },
];
const rows = [];
for (const option of cases) {
  const modules = option.packages.length === 0 ? undefined : modulesOf(option.packages);
  const boot = bootOf(modules, option.webApis, false, option.intl);
  const times = await sample(option.boots, async () => {
    await BootedInstance.boot(wasm, DEFAULT_MEMORY_LIMIT_BYTES, true, boot);
  });
  const instance = await BootedInstance.boot(wasm, DEFAULT_MEMORY_LIMIT_BYTES, true, boot);
  // A pool of its own: the entry's one pool keeps a few idle instances, least recently used first out, so runs
  // interleaved across seven boots would each boot anew.
  const settings = { webApis: option.webApis, intl: option.intl, threads: false, pool: new InstancePool() } as const;
  const sandbox = createSandbox(
    option.packages.length === 0 ? settings : { ...settings, packages: option.packages, packagesFrom: ROOT },
  );
  const first = await sandbox.runCode("export default 1", js);
  rows.push({
    option,
    sandbox,
    boot: summarize(option.label, times).p50,
    image: instance.span() ?? 0,
    fuel: first.fuelUsed,
    runs: [] as number[],
  });
}
// The trivial runs interleaved across the sandboxes, so that the machine's load falls on every case alike.
for (let round = 0; round < 10 * ROUNDS; round++)
  for (const row of rows) {
    const start = performance.now();
    const result = await row.sandbox.runCode("export default 1", js);
    row.runs.push(performance.now() - start);
    if (result.status !== "success") throw new Error(`bench run failed: ${JSON.stringify(result.error)}`);
  }
console.log("\n| options | image MiB (booted memory) | boot ms | trivial run ms (in-thread) | trivial run fuel |");
console.log("|---|--:|--:|--:|--:|");
for (const { option, boot, image, fuel, runs } of rows)
  console.log(
    `| ${option.label} | ${(image / 1024 / 1024).toFixed(1)} | ${boot.toFixed(1)} | ${summarize(option.label, runs).p50.toFixed(2)} | ${fuel?.toLocaleString("en-US")} |`,
  );
const everything = rows.at(-1)?.sandbox as Sandbox;
console.log(
  `\na run importing zod, lodash and date-fns, all booted: ${(await trivial(everything, 'import { z } from "zod"; import _ from "lodash"; import { format } from "date-fns"; export default 1')).toFixed(2)} ms`,
);
