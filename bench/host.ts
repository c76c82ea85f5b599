/**
 * `npm run bench:host`: processes per second through the HTTP handler for a trivial process, the overhead of a
 * process over a bare `runCode` of the same code, and how soon a streamed `POST /run` delivers its first event against
 * the whole answer. Cases are interleaved round by round in one run (these machines are noisy, so only ratios are
 * comparable between runs).
 */
import { readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { createSandbox } from "../node/index.js";
import type { SandboxOptions } from "../src/core/types.js";
import { instantiate } from "../src/environment/index.js";
import { createHost, MemoryQuotas } from "../src/host/index.js";
import { printTable, ratio, type Summary, sample, summarize } from "./stats.js";

const wasm = new WebAssembly.Module(await readFile(createRequire(import.meta.url).resolve("runcode/wasm")));
const CODE = "export default 1 + 1;";
const { runCode } = createSandbox({ threads: false, wasm });
/** The environment's sandboxes on the caller's thread, as the bare `runCode`. */
const inThread = (settings: SandboxOptions) => createSandbox({ ...settings, threads: false });
const { app, service } = await createHost({
  environment: { module: instantiate({ wasm, createSandbox: inThread }) },
  maxActiveProcesses: 64,
  // Rates are not what this measures.
  // `/run` on worker threads, as Node serves it: the caller's thread is free to send events while the guest works.
  app: {
    run: { runCode: createSandbox({ wasm }).runCode, defaultMemoryLimitBytes: 32 * 1024 * 1024 },
    quotas: new MemoryQuotas(1_000_000),
  },
});
// The environment module alone (no host, no tool discovery): where the overhead is, the environment's or the host's.
const environment = instantiate({ wasm, createSandbox: inThread });
const noop = () => {};
await environment.setup({
  config: {},
  secrets: {},
  bindings: {
    invokeTool: async () => undefined,
    setState: noop,
    setError: noop,
    emitStdout: noop,
    emitStderr: noop,
    emitOutput: noop,
  },
});
let eid = 0;

const post = (code: string) =>
  app.fetch(
    new Request("http://host/processes", {
      method: "POST",
      body: JSON.stringify({ code }),
      headers: { "content-type": "application/json" },
    }),
  );

const cases: Record<string, () => Promise<unknown>> = {
  "bare runCode": async () => {
    const r = await runCode(CODE);
    if (r.status !== "success") throw new Error(r.error?.message);
  },
  "environment.execute": async () => {
    const exit = await environment.execute({ eid: ++eid, code: CODE });
    if (exit !== "success") throw new Error(exit);
  },
  "process via ProcessService": async () => {
    const { pid } = await service.create({ code: CODE });
    const r = await service.wait(pid);
    if (r?.exitState !== "success") throw new Error(r?.error ?? "no record");
  },
  "process via HTTP (POST + completion)": async () => {
    const { pid } = (await (await post(CODE)).json()) as { pid: number };
    const r = await service.wait(pid);
    if (r?.exitState !== "success") throw new Error(r?.error ?? "no record");
  },
};
for (const fn of Object.values(cases)) for (let i = 0; i < 30; i++) await fn();

const times = new Map<string, number[]>(Object.keys(cases).map((k) => [k, []]));
const rounds = 20;
const perRound = 25;
for (let round = 0; round < rounds; round++) {
  for (const [label, fn] of Object.entries(cases)) times.get(label)?.push(...(await sample(perRound, fn)));
}
const rows = [...times].map(([label, t]) => summarize(label, t));
const [runCodeRow, viaEnvironment, viaService, viaHttp] = rows as [Summary, Summary, Summary, Summary];
console.log(`host bench: ${rounds} rounds x ${perRound} runs per case, Node ${process.version}\n`);
printTable(rows);
console.log();
ratio("environment.execute / bare runCode", viaEnvironment, runCodeRow);
ratio("process (ProcessService) / bare runCode", viaService, runCodeRow, "< 1.3x");
ratio("process (HTTP handler) / bare runCode", viaHttp, runCodeRow, "< 1.3x");

// Throughput with concurrency: 200 processes submitted over HTTP 16 at a time.
const total = 200;
const started = performance.now();
let next = 0;
await Promise.all(
  Array.from({ length: 16 }, async () => {
    while (next++ < total) {
      const { pid } = (await (await post(CODE)).json()) as { pid: number };
      await service.wait(pid);
    }
  }),
);
const elapsed = performance.now() - started;
console.log(
  `${"processes/s through the HTTP handler, 16 in flight".padEnd(60)} ${((1000 * total) / elapsed).toFixed(0)}`,
);
console.log(`${"processes/s through the HTTP handler, sequential".padEnd(60)} ${viaHttp.perSecond.toFixed(0)}`);

// A streamed POST /run: its first event (a log at the start of the run) against the whole answer, for a run of a
// few milliseconds of work after it.
const WORK = "console.log('started');\nlet s = 0;\nfor (let i = 0; i < 100_000; i++) s += i;\nexport default s;";
const run = (accept: string) =>
  app.fetch(
    new Request("http://host/run", {
      method: "POST",
      body: JSON.stringify({ source: WORK }),
      headers: { "content-type": "application/json", accept },
    }),
  );
const streamed = {
  "/run as JSON: the answer": async () => {
    if (!(await (await run("application/json")).text()).includes('"status":"success"')) throw new Error("failed");
  },
  "/run streamed: the first event": async () => {
    const reader = ((await run("text/event-stream")).body as ReadableStream<Uint8Array>).getReader();
    const { value } = await reader.read();
    if (!new TextDecoder().decode(value).startsWith("event: log")) throw new Error("no log event first");
    await reader.cancel();
  },
  "/run streamed: the whole stream": async () => {
    if (!(await (await run("text/event-stream")).text()).includes('"status":"success"')) throw new Error("failed");
  },
};
for (const fn of Object.values(streamed)) for (let i = 0; i < 20; i++) await fn();
const streamTimes = new Map<string, number[]>(Object.keys(streamed).map((k) => [k, []]));
for (let round = 0; round < rounds; round++) {
  for (const [label, fn] of Object.entries(streamed)) streamTimes.get(label)?.push(...(await sample(10, fn)));
}
const streamRows = [...streamTimes].map(([label, t]) => summarize(label, t));
const [answered, firstEvent, wholeStream] = streamRows as [Summary, Summary, Summary];
console.log();
printTable(streamRows);
console.log();
ratio("first event / JSON answer", firstEvent, answered);
ratio("whole stream / JSON answer", wholeStream, answered, "~1x");
