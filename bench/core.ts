/**
 * `npm run bench`: issue 32's targets, each beside its floor measured in the same run. The floor is the pinned
 * QuickJS build driven through quickjs-emscripten-core, a fresh runtime and context per run; beside it `runCode`
 * in-thread (`threads: false`), on the default Node path (`createSandbox()` with no options, whatever it chooses) and
 * the peer `@sebastianwessel/quickjs` on the same build. Cases are interleaved round by round, then fresh processes
 * are timed from importing the package to their first result. These machines are shared: only ratios within a run
 * compare, and the load average is printed with them. One table, then one verdict block.
 */
import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { createSandbox } from "../node/index.js";
import { expect, succeeded } from "./checks.js";
import { rawCrossings, runCodeCrossings } from "./crossing.js";
import { evalModule, raw, runOnPeer } from "./engines.js";
import { FLOOR_PROGRAMS, TS_PROGRAM } from "./programs.js";
import { type Case, interleave, loadAverage, printTable, type Summary, summarize, verdict } from "./stats.js";

const loadAtStart = loadAverage();
const inThread = createSandbox({ threads: false });
const byDefault = createSandbox();

const TRIVIAL = "export default 1+1";
const JS = { language: "javascript" } as const;
const rawTrivial = () => expect(evalModule(raw, TRIVIAL), 2);
const trivialOn = (sandbox: typeof inThread) => async () => succeeded(await sandbox.runCode(TRIVIAL, JS), 2);
const atOnce = (sandbox: typeof inThread) => async () => {
  for (const result of await Promise.all(Array.from({ length: 32 }, () => sandbox.runCode(TRIVIAL, JS))))
    succeeded(result, 2);
};

/** Runs a round: trivial runs, runs of a few milliseconds, the long ones. */
const SHORT = 25;
const MEDIUM = 5;
const LONG = 2;
const rawCrossing = rawCrossings(raw);
const inThreadCrossing = runCodeCrossings(inThread.runCode);
const defaultCrossing = runCodeCrossings(byDefault.runCode);
const cases = {
  rawTrivial: { label: "raw engine: trivial module", runs: SHORT, run: rawTrivial },
  inThreadTrivial: { label: "runCode in-thread: trivial", runs: SHORT, run: trivialOn(inThread) },
  defaultTrivial: { label: "runCode default path: trivial", runs: SHORT, run: trivialOn(byDefault) },
  peerTrivial: {
    label: "peer @sebastianwessel/quickjs: trivial",
    runs: MEDIUM,
    run: async () => expect(await runOnPeer(TRIVIAL), 2),
  },
  raw32: {
    label: "raw engine: 32 trivial runs, one after another",
    runs: MEDIUM,
    run: () => {
      for (let i = 0; i < 32; i++) rawTrivial();
    },
  },
  inThread32: { label: "runCode in-thread: 32 trivial runs at once", runs: MEDIUM, run: atOnce(inThread) },
  default32: { label: "runCode default path: 32 trivial runs at once", runs: MEDIUM, run: atOnce(byDefault) },
  rawCalls: { label: "raw engine: 1,000 sync host calls", runs: MEDIUM, run: rawCrossing.calls },
  inThreadCalls: { label: "runCode in-thread: 1,000 sync host calls", runs: MEDIUM, run: inThreadCrossing.calls },
  defaultCalls: { label: "runCode default path: 1,000 sync host calls", runs: MEDIUM, run: defaultCrossing.calls },
  rawData: { label: "raw engine: ~1.1 MB in and out (JSON text)", runs: LONG, run: rawCrossing.data },
  inThreadData: { label: "runCode in-thread: ~1.1 MB in and out", runs: LONG, run: inThreadCrossing.data },
  defaultData: { label: "runCode default path: ~1.1 MB in and out", runs: LONG, run: defaultCrossing.data },
} satisfies Record<string, Case>;
/** The CPU-bound programs, each on the raw engine and in-thread. */
const programs = Object.entries(FLOOR_PROGRAMS).map(([name, { source, result }]) => ({
  name,
  raw: { label: `raw engine: ${name}`, runs: LONG, run: () => expect(evalModule(raw, source), result) },
  inThread: {
    label: `runCode in-thread: ${name}`,
    runs: LONG,
    run: async () => succeeded(await inThread.runCode(source, JS), result),
  },
}));
const all: Case[] = [...Object.values(cases), ...programs.flatMap(({ raw, inThread }) => [raw, inThread])];

const ROUNDS = 8;
// The warm-up (a round's runs of each case) takes the JIT, the workers the default path may start and the pools'
// instances for 32 runs at once.
const rows = await interleave(all, ROUNDS);
const p50 = (c: Case) => (rows.get(c) as Summary).p50;

// A fresh process, from importing the package (its Node entry as bundled: scripts/bundle-node.mjs) to its first
// result: a trivial JavaScript module (and how long the second run after it takes), or the first TypeScript program;
// the raw engine's import to its first trivial result.
const nodeEntry = JSON.stringify(fileURLToPath(new URL("../bundle/index.js", import.meta.url)));
const freshScripts = {
  javascript: `const started = performance.now();
const { createSandbox } = await import(${nodeEntry});
const sandbox = createSandbox();
const first = await sandbox.runCode(${JSON.stringify(TRIVIAL)}, { language: "javascript" });
const firstAt = performance.now();
const second = await sandbox.runCode(${JSON.stringify(TRIVIAL)}, { language: "javascript" });
if (first.result !== 2 || second.result !== 2) throw new Error("a fresh process's run failed");
console.log(firstAt - started, performance.now() - firstAt);`,
  typescript: `const started = performance.now();
const { createSandbox } = await import(${nodeEntry});
const result = await createSandbox().runCode(${JSON.stringify(TS_PROGRAM)});
if (result.status !== "success") throw new Error(result.error?.message);
console.log(performance.now() - started);`,
  raw: `const started = performance.now();
const { default: variant } = await import("@jitl/quickjs-wasmfile-release-sync");
const { newQuickJSWASMModuleFromVariant } = await import("quickjs-emscripten-core");
const quickjs = await newQuickJSWASMModuleFromVariant(variant);
const runtime = quickjs.newRuntime();
const context = runtime.newContext();
const namespace = context.unwrapResult(context.evalCode(${JSON.stringify(TRIVIAL)}, "bench.js", { type: "module" }));
if (context.getNumber(context.getProp(namespace, "default")) !== 2) throw new Error("raw engine miscounted");
console.log(performance.now() - started);`,
};
const fresh = { javascript: [] as number[], second: [] as number[], typescript: [] as number[], raw: [] as number[] };
for (let i = 0; i < 5; i++) {
  for (const kind of ["javascript", "typescript", "raw"] as const) {
    const out = execFileSync(process.execPath, ["--input-type=module", "-e", freshScripts[kind]], { encoding: "utf8" });
    const [first, second] = out.trim().split(" ").map(Number) as [number, number?];
    fresh[kind].push(first);
    if (second !== undefined) fresh.second.push(second);
  }
}
const freshRows = {
  javascript: summarize("fresh process, default path: import to first result", fresh.javascript),
  second: summarize("fresh process, default path: the second run", fresh.second),
  typescript: summarize("fresh process, default path: import to first TypeScript result", fresh.typescript),
  raw: summarize("fresh process, raw engine: import to first result", fresh.raw),
};

console.log(
  `floor bench: ${ROUNDS} rounds interleaved (${SHORT}, ${MEDIUM} or ${LONG} runs a round by length), then 5 fresh processes of each kind; Node ${process.version}, load average ${loadAtStart} at the start, ${loadAverage()} at the end\n`,
);
printTable([...rows.values(), ...Object.values(freshRows)]);
console.log();
const over = (value: Case, base: Case) => p50(value) / p50(base);
const { rawTrivial: floor, inThreadTrivial, defaultTrivial, peerTrivial } = cases;
verdict("trivial run: in-thread / raw engine", over(inThreadTrivial, floor), { atMost: 1.5 });
verdict("trivial run: default path / raw engine", over(defaultTrivial, floor), { atMost: 2 });
verdict("trivial run: peer / default path", over(peerTrivial, defaultTrivial), { atLeast: 20 });
for (const { name, raw, inThread } of programs)
  verdict(`${name}: in-thread / raw engine`, over(inThread, raw), { atMost: 1.25 });
verdict("1,000 sync host calls: default path / in-thread", over(cases.defaultCalls, cases.inThreadCalls), {
  atMost: 1.5,
});
verdict("32 trivial runs: default path at once / raw engine in a row", over(cases.default32, cases.raw32), {
  atMost: 2,
});
const rawFirst = `raw engine ${freshRows.raw.p50.toFixed(1)} ms`;
for (const kind of ["javascript", "typescript"] as const)
  verdict(freshRows[kind].label, freshRows[kind].p50, { below: 150 }, " ms", rawFirst);
const elsewhere = (label: string, bench: string, target: string) =>
  console.log(`${label.padEnd(64)} npm run ${bench}  (target ${target})`);
elsewhere("runcode serve: trivial /run at 10 connections / its floor", "bench:serve", ">= 60%");
elsewhere("guest fetch of a small JSON / the host's fetch", "bench:fetch", "<= 1.5x");
const { rawCalls, inThreadCalls, rawData, inThreadData, defaultData } = cases;
verdict("earlier rounds: 1,000 sync host calls, in-thread / raw engine", over(inThreadCalls, rawCalls), { atMost: 2 });
verdict("earlier rounds: ~1.1 MB in and out, in-thread / raw engine", over(inThreadData, rawData), { atMost: 1.5 });
verdict("earlier rounds: ~1.1 MB in and out, default path / raw engine", over(defaultData, rawData), { atMost: 2 });
