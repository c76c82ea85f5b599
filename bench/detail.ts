/**
 * `npm run bench:detail`: the earlier rounds' cases that `npm run bench` (issue 32's targets) no longer prints, each
 * measured as it was then: the 50-line TypeScript program (repeated, first time, with enum/namespace) against the same
 * program as JavaScript, the array-method loop against the raw engine, `instances: "fresh"`, runs on a worker thread
 * (`threads: true`), the Web APIs' trivial run, boot, booted heap and fuel per call, runs/s with 1, 4 and 32 in
 * flight, values and host calls crossing (awaited async calls and the peer's cases too), stops on a thread, cold
 * TypeScript through each entry, a fresh process's first result and exit, and memory over 10,000 runs. Cases are
 * interleaved round by round; these machines are shared, so only ratios within a run compare.
 */
import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { Worker } from "node:worker_threads";
import ts from "typescript";
import { createSandbox, nodeWasm } from "../node/index.js";
import { newInstance } from "../src/core/engine.js";
import { BootedInstance, bootOf } from "../src/core/instance.js";
import { type Crossings, peerCrossings, rawCrossings, runCodeCrossings } from "./crossing.js";
import { evalModule, pinnedWasm, raw, runOnPeer } from "./engines.js";
import { TS_PROGRAM } from "./programs.js";
import { type Case, interleave, loadAverage, printTable, ratio, type Summary, summarize } from "./stats.js";

const loadAtStart = loadAverage();
/** runCode runs on the metered engine (see `npm run bench:fuel`); the floors and the peer on the pinned one. */
const metered = new WebAssembly.Module((await (nodeWasm as () => Promise<Uint8Array>)()) as BufferSource);
const { runCode } = createSandbox({ wasm: metered, threads: false });
const fresh = createSandbox({ wasm: metered, threads: false, instances: "fresh" });
const threaded = createSandbox({ wasm: metered, threads: true });
const web = createSandbox({ wasm: metered, threads: false, webApis: true });
const webThreaded = createSandbox({ wasm: metered, threads: true, webApis: true });

const TRIVIAL = "export default 1+1";
/** The same with the syntax that cannot be erased in place (enum, namespace, parameter property). */
const TS_PROGRAM_ENUMS = `${TS_PROGRAM}
enum Priority { Low = 1, High = 10 }
namespace Pricing { export const rate = Priority.High / 100; }
class Tagged { constructor(private readonly tag: string) {} get(): string { return this.tag; } }
export const extra = [Pricing.rate, new Tagged("x").get()];
`;
const JS_PROGRAM = ts.transpileModule(TS_PROGRAM, { compilerOptions: { target: ts.ScriptTarget.ES2022 } }).outputText;

/** Array methods in a hot loop: what the prelude's guards (wrappers that estimate and charge native work) cost. */
const ARRAY_LOOP = `const a = [1, 2, 3, 4, 5, 6, 7, 8];
let s = 0;
for (let i = 0; i < 5000; i++) {
  s += a.map((x) => x + i).filter((x) => x & 1).indexOf(i + 3) + a.join("").length + a.slice(2).length;
  s += a.includes(i) ? 1 : 0;
}
export default s;`;

/** 1,000 synchronous calls of a host function: what each crossing of the bridge costs. */
const BRIDGED_CALLS = "let s = 0;\nfor (let i = 0; i < 1000; i++) s += f(i);\nexport default s;";
const bridged = { language: "javascript", globals: { f: (i: number) => i } } as const;

const rounds = 20;
const perRound = 25;
const timed = (label: string, run: (i: number) => unknown): Case => ({ label, runs: perRound, run });
const cases = {
  floorRuntime: timed("floor: runtime+context on a ready instance", () => evalModule(raw, TRIVIAL)),
  floorInstance: timed("floor: fresh instance + runtime+context", async () =>
    evalModule((await newInstance(pinnedWasm, 64 << 20)).quickjs, TRIVIAL),
  ),
  trivial: timed("runCode trivial JS", () => runCode(TRIVIAL, { language: "javascript" })),
  programJs: timed("runCode 50-line program as JS", () => runCode(JS_PROGRAM, { language: "javascript" })),
  tsRepeated: timed("runCode 50-line TS, repeated", () => runCode(TS_PROGRAM)),
  tsFirst: timed("runCode 50-line TS, first time", (i) => runCode(`${TS_PROGRAM}// ${i} ${Math.random()}\n`)),
  tsEnums: timed("runCode 50-line TS + enum/namespace, first time", (i) =>
    runCode(`${TS_PROGRAM_ENUMS}// ${i} ${Math.random()}\n`),
  ),
  rawLoop: timed("raw engine: array-method loop (30,000 calls)", () => evalModule(raw, ARRAY_LOOP)),
  guardedLoop: timed("runCode: the same array-method loop", () => runCode(ARRAY_LOOP, { language: "javascript" })),
  trivialFresh: timed("runCode trivial JS, fresh instance per run", () =>
    fresh.runCode(TRIVIAL, { language: "javascript" }),
  ),
  trivialPeer: timed("peer: @sebastianwessel/quickjs trivial module", () => runOnPeer(TRIVIAL)),
  trivialThreaded: timed("runCode trivial JS on a worker thread", () =>
    threaded.runCode(TRIVIAL, { language: "javascript" }),
  ),
  bridgedCalls: timed("runCode 1,000 bridged calls", () => runCode(BRIDGED_CALLS, bridged)),
  bridgedThreaded: timed("runCode 1,000 bridged calls on a worker thread", () =>
    threaded.runCode(BRIDGED_CALLS, bridged),
  ),
  trivialWeb: timed("runCode trivial JS, webApis: true", () => web.runCode(TRIVIAL, { language: "javascript" })),
  trivialWebThreaded: timed("runCode trivial JS on a worker thread, webApis: true", () =>
    webThreaded.runCode(TRIVIAL, { language: "javascript" }),
  ),
};
// Warm up, 30 runs of each: the JIT, SWC's first load, caches.
const rows = await interleave(Object.values(cases), rounds, 30);
/** Each case's summary by its name in `cases`. */
const byName = <K extends string>(named: Record<K, Case>, summaries: Map<Case, Summary>) =>
  Object.fromEntries(Object.entries<Case>(named).map(([name, c]) => [name, summaries.get(c)])) as Record<K, Summary>;
const {
  floorRuntime,
  floorInstance,
  trivial,
  programJs,
  tsRepeated,
  tsFirst,
  tsEnums,
  rawLoop,
  guardedLoop,
  trivialFresh,
  trivialPeer,
  trivialThreaded,
  bridgedCalls,
  bridgedThreaded,
  trivialWeb,
  trivialWebThreaded,
} = byName(cases, rows);
console.log(
  `runCode detail bench: ${rounds} rounds x ${perRound} runs per case, Node ${process.version}, load average ${loadAtStart} at the start\n`,
);
printTable([...rows.values()]);
console.log();
ratio("runCode trivial JS / ready-instance floor", trivial, floorRuntime, "<= 2x");
ratio("runCode trivial JS, fresh instance per run / restored", trivialFresh, trivial);
ratio("peer @sebastianwessel/quickjs trivial / runCode trivial JS", trivialPeer, trivial, ">= 10x");
ratio("runCode trivial JS: on a worker thread / in-thread", trivialThreaded, trivial, "<= 1.5x");
ratio("1,000 bridged calls: on a worker thread / in-thread", bridgedThreaded, bridgedCalls, "<= 2x");
// Milliseconds over 1,000 calls are microseconds per call.
console.log(
  `${"  ... each bridged call on a worker thread, p50 extra".padEnd(60)} ${(bridgedThreaded.p50 - bridgedCalls.p50).toFixed(1)} us`,
);
ratio("fresh instance floor / ready-instance floor", floorInstance, floorRuntime);
ratio("runCode 50-line TS repeated / the same program as JS", tsRepeated, programJs, "<= 1.2x");
console.log(`${"runCode 50-line TS first time p50".padEnd(60)} ${tsFirst.p50.toFixed(2)} ms  (target < 5 ms)`);
console.log(`${"  ... with enum/namespace p50".padEnd(60)} ${tsEnums.p50.toFixed(2)} ms`);
ratio("array-method loop: runCode / raw engine (guards + runCode's fixed cost)", guardedLoop, rawLoop);
ratio("runCode trivial JS: webApis: true / without", trivialWeb, trivial);
ratio("runCode trivial JS on a worker thread: webApis: true / without", trivialWebThreaded, trivialThreaded);

// Concurrent trivial runs: runs/s with 1, 4 and 32 in flight, in-thread (the pool keeps an instance for each) and on
// the worker threads, beside the raw engine's floor (synchronous: one at a time whatever is in flight).
async function throughput(run: () => unknown, inFlight: number, total: number): Promise<number> {
  let started = 0;
  const begin = performance.now();
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (started < total) {
        started++;
        await run();
      }
    }),
  );
  return (1000 * total) / (performance.now() - begin);
}
const TRIVIAL_JS = { language: "javascript" } as const;
const concurrent: Record<string, () => unknown> = {
  "raw engine (floor)": () => evalModule(raw, TRIVIAL),
  "runCode in-thread": () => runCode(TRIVIAL, TRIVIAL_JS),
  "runCode on worker threads": () => threaded.runCode(TRIVIAL, TRIVIAL_JS),
};
const inFlights = [1, 4, 32];
const rates = new Map<string, number[]>();
// The first round boots the instances and spawns the workers 32 runs at once need.
for (let round = 0; round < 6; round++) {
  for (const inFlight of inFlights) {
    for (const [label, run] of Object.entries(concurrent)) {
      const rate = await throughput(run, inFlight, 2_000);
      if (round > 0) rates.set(`${label}|${inFlight}`, [...(rates.get(`${label}|${inFlight}`) ?? []), rate]);
    }
  }
}
const median = (values: number[]) => [...values].sort((a, b) => a - b)[values.length >> 1] ?? Number.NaN;
console.log();
console.log(
  `${"runs/s (median of 5 rounds), trivial JS".padEnd(44)} ${inFlights.map((n) => `${n} in flight`.padStart(13)).join("")}`,
);
for (const label of Object.keys(concurrent)) {
  const row = inFlights
    .map((n) =>
      median(rates.get(`${label}|${n}`) ?? [])
        .toFixed(0)
        .padStart(13),
    )
    .join("");
  console.log(`${label.padEnd(44)} ${row}`);
}

// The Web APIs are booted into the image: what an instance's boot and its booted heap take with them, and what their
// guest code costs where a run uses it.
const boots = { plain: [] as number[], web: [] as number[] };
const heaps = { plain: 0, web: 0 };
for (let i = 0; i < 40; i++) {
  for (const kind of ["plain", "web"] as const) {
    const started = performance.now();
    const booted = await BootedInstance.boot(metered, 64 << 20, true, bootOf(undefined, kind === "web"));
    boots[kind].push(performance.now() - started);
    heaps[kind] = booted.heapBytes() ?? 0;
  }
}
const perCall = async (expression: string) => {
  const source = (body: string) => `for (let i = 0; i < 1000; i++) ${body};\nexport default 0`;
  const run = await web.runCode(source(expression), { language: "javascript" });
  const empty = await web.runCode(source(""), { language: "javascript" });
  return `${(((run.fuelUsed ?? 0) - (empty.fuelUsed ?? 0)) / 1000).toFixed(0)} units of fuel`;
};
console.log();
printTable([summarize("boot an instance", boots.plain), summarize("boot an instance, webApis: true", boots.web)]);
console.log(`${"booted heap, without / with webApis".padEnd(60)} ${heaps.plain} / ${heaps.web} bytes`);
for (const expression of ["new URL('https://example.com/a?b#c')", "new TextEncoder().encode('hello, world')"])
  console.log(`${expression.padEnd(60)} ${await perCall(expression)}`);

// Values and host calls crossing, each beside its bare-engine floor (interleaved, fewer runs: the data case is long).
// The peer's cases once a round: its 1.1 MB case takes seconds.
const crossingCases = (
  who: string,
  { data, calls, awaited }: Crossings,
  runs: number,
): Record<keyof Crossings, Case> => ({
  data: { label: `${who}: ~1.1 MB in and out`, runs, run: data },
  calls: { label: `${who}: 1,000 sync host calls`, runs, run: calls },
  awaited: { label: `${who}: 1,000 awaited async host calls`, runs, run: awaited },
});
const rawCases = crossingCases("raw engine", rawCrossings(raw), 5);
const inThreadCases = crossingCases("runCode", runCodeCrossings(runCode), 5);
const peerCases = crossingCases("peer", peerCrossings(), 1);
const threadedCases = crossingCases("runCode on a worker thread", runCodeCrossings(threaded.runCode), 5);
const crossingRows = await interleave(
  [rawCases, inThreadCases, peerCases, threadedCases].flatMap((x) => Object.values(x)),
  8,
);
const rawRows = byName(rawCases, crossingRows);
const inThreadRows = byName(inThreadCases, crossingRows);
const peerRows = byName(peerCases, crossingRows);
const threadedRows = byName(threadedCases, crossingRows);
console.log();
printTable([...crossingRows.values()]);
ratio("1.1 MB in and out: runCode / raw engine", inThreadRows.data, rawRows.data, "<= 1.5x");
ratio("1,000 sync host calls: runCode / raw engine", inThreadRows.calls, rawRows.calls, "<= 2x");
ratio("1,000 awaited async host calls: runCode / raw engine", inThreadRows.awaited, rawRows.awaited);
ratio("1.1 MB in and out: on a worker thread / raw engine", threadedRows.data, rawRows.data, "<= 2x");
ratio("1,000 sync host calls: on a worker thread / in-thread", threadedRows.calls, inThreadRows.calls, "<= 2x");
ratio("1,000 awaited async host calls: on a worker thread / in-thread", threadedRows.awaited, inThreadRows.awaited);
// The peer table: each case through the peer against runCode, in the same run.
console.log();
ratio("peer / runCode: trivial run", trivialPeer, trivial);
ratio("peer / runCode: 1.1 MB in and out", peerRows.data, inThreadRows.data);
ratio("peer / runCode: 1,000 sync host calls", peerRows.calls, inThreadRows.calls);
ratio("peer / runCode: 1,000 awaited async host calls", peerRows.awaited, inThreadRows.awaited);

// Stops on a worker thread: from terminate() to the worker reporting the run over (its next interrupt poll saw the
// flag) or exiting (ended after the grace: native work that never polls). Run by run, so each event is the stop's.
let stoppedAt = 0;
const emit = Worker.prototype.emit;
Worker.prototype.emit = function (this: Worker, event: string | symbol, ...args: unknown[]) {
  if (event === "exit" || (event === "message" && (args[0] as { kind?: string } | undefined)?.kind === "done"))
    stoppedAt = performance.now();
  return emit.call(this, event, ...args);
};
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
async function stopLatency(source: string): Promise<number> {
  let started = () => {};
  const begun = new Promise<void>((resolve) => {
    started = resolve;
  });
  const run = threaded.runCode(source, { language: "javascript", globals: { started: () => started() } });
  await begun;
  await sleep(50);
  stoppedAt = 0;
  const at = performance.now();
  run.terminate();
  await run;
  while (stoppedAt === 0) await sleep(1);
  return stoppedAt - at;
}
const NON_POLLING =
  "const big = Array.from({ length: 3e5 }, (_, i) => ({ i, s: 'x'.repeat(20) }));\nstarted();\nfor (;;) JSON.parse(JSON.stringify(big));";
const stops = { polling: [] as number[], native: [] as number[] };
for (let i = 0; i < 9; i++) {
  stops.polling.push(await stopLatency("started();\nwhile (true) {}"));
  stops.native.push(await stopLatency(NON_POLLING));
}
console.log();
printTable([
  summarize("stop on a thread: while (true) {} (flag, next poll)", stops.polling),
  summarize("stop on a thread: JSON loop that never polls (fuel refill)", stops.native),
]);
console.log(
  `${"stop on a thread, slowest of 18".padEnd(60)} ${Math.max(...stops.polling, ...stops.native).toFixed(1)} ms  (target < 50 ms)`,
);

// Cold TypeScript: a fresh Node process, from importing the package to the 50-line program's result. The Node entry
// erases types with SWC from its package, on a worker thread by default or on the caller's thread; the core alone
// gets SWC as Workers and browsers do: its glue from dist/swc/, its metered wasm from the package (`runcode/swc.wasm`).
type ColdCase = "threads" | "in-thread" | "core";
const coreSwc = `
const { instantiate } = await import(${JSON.stringify(fileURLToPath(new URL("../swc/swc.js", import.meta.url)))});
const swcWasm = await WebAssembly.compile(await readFile(createRequire(import.meta.url).resolve("runcode/swc.wasm")));
const { Transpiler } = await import(${JSON.stringify(fileURLToPath(new URL("../src/index.js", import.meta.url)))});
const transpiler = new Transpiler(async () => (out) => instantiate(swcWasm, out));`;
const coldScript = (entry: ColdCase) => `
const started = performance.now();
const { readFile } = await import("node:fs/promises");
const { createRequire } = await import("node:module");
const wasm = await readFile(createRequire(import.meta.url).resolve("runcode/wasm"));${entry === "core" ? coreSwc : ""}
const { createSandbox } = await import(${JSON.stringify(fileURLToPath(new URL(entry === "core" ? "../src/index.js" : "../node/index.js", import.meta.url)))});
const result = await createSandbox({ wasm${{ threads: "", "in-thread": ", threads: false", core: ", transpiler" }[entry]} }).runCode(${JSON.stringify(TS_PROGRAM)});
if (result.status !== "success") throw new Error(result.error?.message);
console.log(performance.now() - started);`;
const cold = (entry: ColdCase) =>
  Number(execFileSync(process.execPath, ["--input-type=module", "-e", coldScript(entry)], { encoding: "utf8" }));
const colds: Record<ColdCase, number[]> = { threads: [], "in-thread": [], core: [] };
for (let i = 0; i < 7; i++)
  for (const entry of ["threads", "in-thread", "core"] as const) colds[entry].push(cold(entry));
console.log();
printTable([
  summarize("cold: first 50-line TS run, Node entry (worker thread)", colds.threads),
  summarize("cold: the same, Node entry with threads: false", colds["in-thread"]),
  summarize("cold: the same, the core with SWC's wasm file (as Workers)", colds.core),
]);

// A fresh process's first result of a trivial run (the default language, TypeScript, and JavaScript), from importing
// the package, and how long after its last result (of three) the process exits; the raw engine alike: its import to
// the value of `export default 1+1` in a fresh runtime and context.
type FreshCase = "threads" | "threads, JavaScript" | "in-thread" | "raw engine";
const nodeEntry = JSON.stringify(fileURLToPath(new URL("../node/index.js", import.meta.url)));
const freshScript = (entry: FreshCase) =>
  entry === "raw engine"
    ? `const started = performance.now();
const { default: variant } = await import("@jitl/quickjs-wasmfile-release-sync");
const { newQuickJSWASMModuleFromVariant } = await import("quickjs-emscripten-core");
const quickjs = await newQuickJSWASMModuleFromVariant(variant);
let first;
for (let i = 0; i < 3; i++) {
  const runtime = quickjs.newRuntime();
  const context = runtime.newContext();
  const namespace = context.unwrapResult(context.evalCode(${JSON.stringify(TRIVIAL)}, "bench.js", { type: "module" }));
  if (context.getNumber(context.getProp(namespace, "default")) !== 2) throw new Error("raw engine miscounted");
  first ??= performance.now() - started;
}
console.log(first, performance.timeOrigin + performance.now());`
    : `const started = performance.now();
const { createSandbox } = await import(${nodeEntry});
const sandbox = createSandbox({ threads: ${entry !== "in-thread"} });
let first;
for (let i = 0; i < 3; i++) {
  const result = await sandbox.runCode(${JSON.stringify(TRIVIAL)}${entry === "threads, JavaScript" ? ', { language: "javascript" }' : ""});
  if (result.status !== "success") throw new Error(result.error?.message);
  first ??= performance.now() - started;
}
console.log(first, performance.timeOrigin + performance.now());`;
const freshProcess = (entry: FreshCase) => {
  const out = execFileSync(process.execPath, ["--input-type=module", "-e", freshScript(entry)], { encoding: "utf8" });
  const exited = performance.timeOrigin + performance.now();
  const [first, last] = out.trim().split(" ").map(Number) as [number, number];
  return { first, exit: exited - last };
};
const freshCases = ["threads", "threads, JavaScript", "in-thread", "raw engine"] as const;
const firsts = new Map<FreshCase, number[]>(freshCases.map((entry) => [entry, []]));
const exits = new Map<FreshCase, number[]>(freshCases.map((entry) => [entry, []]));
for (let i = 0; i < 9; i++) {
  for (const entry of freshCases) {
    const { first, exit } = freshProcess(entry);
    firsts.get(entry)?.push(first);
    exits.get(entry)?.push(exit);
  }
}
console.log();
printTable([
  ...freshCases.map((entry) => summarize(`first trivial result of a process: ${entry}`, firsts.get(entry) ?? [])),
  ...freshCases.map((entry) => summarize(`exit after the last result: ${entry}`, exits.get(entry) ?? [])),
]);
console.log(
  `${"first trivial result on threads p50".padEnd(60)} ${summarize("", firsts.get("threads") ?? []).p50.toFixed(1)} ms  (target < 200 ms)`,
);

// Memory: 10,000 consecutive runs must not grow the process.
const gc = (globalThis as { gc?: () => void }).gc;
const rss = () => {
  gc?.();
  return process.memoryUsage().rss;
};
const before = rss();
for (let i = 0; i < 10_000; i++)
  await runCode("export default [1, 2, 3].map((x) => x * 2)", { language: "javascript" });
const after = rss();
console.log(
  `${"RSS growth over 10,000 runs".padEnd(60)} ${((after - before) / 1048576).toFixed(1)} MB  (target < 20 MB${gc ? "" : "; run with --expose-gc"})`,
);
console.log(`\nload average ${loadAverage()} at the end`);
