/**
 * `npm run bench:fuel`: what the metered engine (wasm/quickjs-fuel.wasm) costs and how fuel maps to CPU. CPU per
 * 10^6 units of fuel across a catalogue of runaways (bench/fuel-catalogue.ts) stopped with a frozen clock, in-thread,
 * at `FUEL_BENCH_UNITS` each (default 10^8; the spread is what an operator turning a CPU budget into fuel must allow
 * for); the engine's speed metered against the pinned engine on
 * CPU-bound programs (raw engine, interleaved round by round); runCode's trivial run on either.
 */
import { readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { createSandbox, nodeWasm } from "../node/index.js";
import { newInstance } from "../src/core/engine.js";
import { RUNAWAYS, transport } from "./fuel-catalogue.js";
import { METER_PROGRAMS as PROGRAMS } from "./programs.js";
import { printTable, ratio, sample, summarize } from "./stats.js";

const pinned = new WebAssembly.Module(
  await readFile(createRequire(import.meta.url).resolve("@jitl/quickjs-wasmfile-release-sync/wasm")),
);
const metered = new WebAssembly.Module((await (nodeWasm as () => Promise<Uint8Array>)()) as BufferSource);

const FUEL = Number(process.env.FUEL_BENCH_UNITS ?? 100_000_000);
const settings = {
  threads: false,
  wasm: metered,
  clock: () => 0,
  safetyCap: { fuel: FUEL, cpuTimeMs: 1e12 },
} as const;
const frozen = createSandbox(settings);
const frozenWeb = createSandbox({
  ...settings,
  webApis: true,
  fetch: { allow: ["http://local.test"], fetch: transport, maxRequests: 1e9, timeoutMs: 1e9 },
});
const js = { language: "javascript", memoryLimitBytes: 256 * 1024 * 1024 } as const;
// The engine's wasm is compiled in tiers: the first runaway would pay for the optimizing tier.
await frozen.runCode("for (let i = 0; i < 3e7; i++);", js);
await frozenWeb.runCode("export default 0", js);
console.log(`fuel bench, Node ${process.version}: runaways stopped at ${FUEL} units, frozen clock, in-thread\n`);
console.log(
  `${"program".padEnd(34)} ${"status".padEnd(11)} ${"fuel".padStart(22)} ${"CPU ms".padStart(8)} ${"ms/10^6".padStart(8)}`,
);
const rates: [string, number][] = [];
for (const [name, { source, globals = {}, modules = {}, web, wait }] of Object.entries(RUNAWAYS)) {
  const run = web ? frozenWeb.runCode : frozen.runCode;
  const before = process.cpuUsage();
  const result = await run(source, { ...js, globals, modules });
  const { user, system } = process.cpuUsage(before);
  const cpuMs = (user + system) / 1000;
  const used = result.fuelUsed ?? 0;
  const rate = cpuMs / (used / 1e6);
  if (!wait) rates.push([name, rate]);
  console.log(
    `${name.padEnd(34)} ${result.status.padEnd(11)} ${String(used).padStart(22)} ${cpuMs.toFixed(0).padStart(8)} ${rate.toFixed(2).padStart(8)}`,
  );
}
rates.sort((a, b) => a[1] - b[1]);
const [fastest, slowest] = [rates[0] as [string, number], rates[rates.length - 1] as [string, number]];
console.log(
  `\nCPU per 10^6 fuel over ${rates.length} runaways (timer waits apart: time, not CPU): ${fastest[1].toFixed(2)} ms (${fastest[0]}) - ${slowest[1].toFixed(2)} ms (${slowest[0]}), spread ${(slowest[1] / fastest[1]).toFixed(1)}x (target <= 4x)\n`,
);

/** A module's default export in a fresh runtime and context of a ready instance. */
async function engine(module: WebAssembly.Module) {
  const { quickjs } = await newInstance(module, 64 << 20);
  return (source: string) => {
    const runtime = quickjs.newRuntime();
    const context = runtime.newContext();
    const result = context.unwrapResult(context.evalCode(source, "bench.js"));
    const value = context.getNumber(result);
    result.dispose();
    context.dispose();
    runtime.dispose();
    return value;
  };
}
const [plain, fueled] = await Promise.all([engine(pinned), engine(metered)]);
const rounds = 10;
const perRound = 10;
const overheads: number[] = [];
const rows = [];
for (const [name, source] of Object.entries(PROGRAMS)) {
  const times = { plain: [] as number[], fueled: [] as number[] };
  for (let i = 0; i < 5; i++) [plain(source), fueled(source)];
  for (let round = 0; round < rounds; round++) {
    times.plain.push(...(await sample(perRound, () => plain(source))));
    times.fueled.push(...(await sample(perRound, () => fueled(source))));
  }
  const [a, b] = [summarize(`pinned engine: ${name}`, times.plain), summarize(`metered engine: ${name}`, times.fueled)];
  rows.push(a, b);
  overheads.push(b.p50 / a.p50);
}
printTable(rows);
console.log();
for (const [i, name] of Object.keys(PROGRAMS).entries())
  console.log(`${`metered / pinned: ${name}`.padEnd(60)} ${(overheads[i] as number).toFixed(2)}x`);
const geomean = Math.exp(overheads.reduce((sum, r) => sum + Math.log(r), 0) / overheads.length);
console.log(`${"metered / pinned, geomean".padEnd(60)} ${geomean.toFixed(2)}x  (target <= 1.3x)\n`);

const onPinned = createSandbox({ threads: false, wasm: pinned });
const onMetered = createSandbox({ threads: false, wasm: metered });
const trivial = { onPinned: [] as number[], onMetered: [] as number[] };
for (let i = 0; i < 50; i++)
  [await onPinned.runCode("export default 1", js), await onMetered.runCode("export default 1", js)];
for (let round = 0; round < 20; round++) {
  trivial.onPinned.push(...(await sample(25, () => onPinned.runCode("export default 1+1", js))));
  trivial.onMetered.push(...(await sample(25, () => onMetered.runCode("export default 1+1", js))));
}
const pinnedTrivial = summarize("runCode trivial JS, pinned engine", trivial.onPinned);
const meteredTrivial = summarize("runCode trivial JS, metered engine", trivial.onMetered);
printTable([pinnedTrivial, meteredTrivial]);
ratio("runCode trivial JS: metered / pinned", meteredTrivial, pinnedTrivial, "<= 1.05x");
