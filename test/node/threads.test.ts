/**
 * The threaded sandbox of the Node entry (node/threads/): hard stops off the caller's thread, the synchronous bridge
 * back to it, and the pool's bounds. The conformance suite runs against it in threads.conformance.test.ts.
 *
 * Stop latency is when the caller's thread learns the guest stopped: the worker's message that its run is over, or
 * the worker's exit when it had to be ended. Both are events a `Worker` emits, observed on `Worker.prototype.emit`.
 */
import { spawnSync } from "node:child_process";
import { readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import { Worker } from "node:worker_threads";
import { afterEach, describe, expect, it, vi } from "vitest";
import { instantiate } from "../../node/environment.js";
import { createSandbox, MAX_NESTING_DEPTH, MAX_QUEUED_RUNS, MAX_THREADS } from "../../node/index.js";
import { loadSwc } from "../../node/swc.js";
import type { ToWorker } from "../../node/threads/protocol.js";
import { InstancePool } from "../../src/core/instance-pool.js";
import { Transpiler } from "../../src/core/transpile.js";
import type { CodeExecution } from "../../src/core/types.js";
import { recorder } from "../environment/helpers.js";

const { runCode } = createSandbox({ threads: true });
/** The pinned QuickJS wasm, without the meter. */
const pinnedWasm = () => readFile(createRequire(import.meta.url).resolve("@jitl/quickjs-wasmfile-release-sync/wasm"));
const JS = { language: "javascript" } as const;
const NON_POLLING =
  "const big = Array.from({ length: 3e5 }, (_, i) => ({ i, s: 'x'.repeat(20) }));\nstarted();\nfor (;;) JSON.parse(JSON.stringify(big));";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function deferred<T = void>() {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

afterEach(() => {
  vi.restoreAllMocks();
});

/** Resolves with the time a worker next reports a run over or exits, and whether it exited. */
function nextStop(): Promise<{ at: number; exited: boolean }> {
  const emit = Worker.prototype.emit;
  return new Promise((resolve) => {
    const spy = vi.spyOn(Worker.prototype, "emit").mockImplementation(function (this: Worker, event, ...args) {
      const message = args[0] as { kind?: string } | undefined;
      if (event === "exit" || (event === "message" && message?.kind === "done")) {
        spy.mockRestore();
        resolve({ at: performance.now(), exited: event === "exit" });
      }
      return emit.call(this, event, ...args);
    });
  });
}

/**
 * Starts `source` (which calls `started()` once its endless work begins), terminates it, returns the stop latency;
 * `exits` says whether the worker had to be ended.
 */
async function stopLatency(source: string, exits: boolean, options: { ticks?: () => number } = {}): Promise<number> {
  const started = deferred();
  const run = runCode(source, { ...JS, globals: { started: () => started.resolve() } });
  await started.promise;
  const ticksBefore = options.ticks?.();
  await sleep(100);
  if (ticksBefore !== undefined) expect(options.ticks?.()).toBeGreaterThan(ticksBefore + 3);
  const stopped = nextStop();
  const at = performance.now();
  run.terminate("enough");
  const result = await run;
  expect(result.status).toBe("terminated");
  expect(result.error).toEqual({ name: "TerminatedError", message: "enough" });
  const stop = await stopped;
  expect(stop.exited).toBe(exits);
  return stop.at - at;
}

/**
 * A bound that only catches a hang: how fast a stop holds (1-3 ms at a poll, 20 ms of grace then the worker's end) is
 * `npm run bench`'s figure, not a test's.
 */
const HANG_MS = 2_000;

describe("stops", () => {
  it("terminate() stops while(true){} at its next poll, the worker kept, while the caller's event loop keeps ticking", async () => {
    let ticks = 0;
    const timer = setInterval(() => ticks++, 5);
    try {
      for (let i = 0; i < 3; i++) {
        expect(await stopLatency("started();\nwhile (true) {}", false, { ticks: () => ticks })).toBeLessThan(HANG_MS);
      }
    } finally {
      clearInterval(timer);
    }
  });

  it("a run taken by a worker watching its doorbell stops as any other, the worker kept for the next", async () => {
    expect((await runCode("export default 1", JS)).status).toBe("success");
    // Handed over at once, to the worker watching for it since the run before.
    const started = deferred();
    const run = runCode("started();\nwhile (true) {}", { ...JS, globals: { started: () => started.resolve() } });
    await started.promise;
    const stopped = nextStop();
    run.terminate("enough");
    expect(await run).toMatchObject({ status: "terminated", error: { message: "enough" } });
    expect((await stopped).exited).toBe(false);
    expect((await runCode("export default 2", JS)).result).toBe(2);
  });

  it("terminate() stops a native loop that never polls at the engine's next fuel refill: the worker is kept", async () => {
    for (let i = 0; i < 3; i++) expect(await stopLatency(NON_POLLING, false)).toBeLessThan(HANG_MS);
    expect(await runCode("export default 6 * 7", JS)).toMatchObject({ status: "success", result: 42 });
  });

  it("every run after killed workers still works, concurrently too", async () => {
    const results = await Promise.all(
      Array.from({ length: MAX_THREADS + 2 }, (_, i) => runCode("export default n * 2", { globals: { n: i } })),
    );
    expect(results.map((r) => r.result)).toEqual(Array.from({ length: MAX_THREADS + 2 }, (_, i) => i * 2));
  });

  it("terminate() of a run still waiting for a worker settles it and it never runs", async () => {
    const gate = deferred<number>();
    const busy = Array.from({ length: MAX_THREADS }, () =>
      runCode("export default await gate()", { globals: { gate: () => gate.promise } }),
    );
    let ran = false;
    const waiting = runCode("ran(); export default 1", { globals: { ran: () => (ran = true) } });
    waiting.terminate("not now");
    expect((await waiting).error?.message).toBe("not now");
    gate.resolve(7);
    expect((await Promise.all(busy)).map((r) => r.result)).toEqual(Array(MAX_THREADS).fill(7));
    await sleep(20);
    expect(ran).toBe(false);
  });

  it("the metered engine stops a native loop that never polls at cpuTimeMs on the worker, which is kept", async () => {
    const capped = createSandbox({ threads: true, safetyCap: { cpuTimeMs: 300 } });
    const stopped = nextStop();
    const r = await capped.runCode("const x = (1n << 1048000n) - 1n;\nfor (;;) String(x);");
    expect(r.error).toEqual({
      name: "TerminatedError",
      message: "Execution stopped by the safety cap after 300 ms of CPU time",
    });
    expect((await stopped).exited).toBe(false);
  });

  it("the watchdog ends a native loop of an engine without the meter once it outlasts cpuTimeMs, with the safety cap's message", async () => {
    const capped = createSandbox({ threads: true, wasm: pinnedWasm, safetyCap: { cpuTimeMs: 300 } });
    const stopped = nextStop();
    const started = performance.now();
    // One conversion of the largest BigInt to a string takes seconds between two interrupt polls.
    const r = await capped.runCode("const x = (1n << 1048000n) - 1n;\nfor (;;) String(x);");
    expect(r.status).toBe("terminated");
    expect(r.error).toEqual({
      name: "TerminatedError",
      message: "Execution stopped by the safety cap after 300 ms of CPU time",
    });
    // The worker was ended (it never reported the run over); the bound is for hangs, not a timing.
    expect((await stopped).exited).toBe(true);
    expect(performance.now() - started).toBeLessThan(5_000);
  });

  it("a run's timeoutMs crosses to the worker: a synchronous loop ends at its time limit, the sandbox's cap far off", async () => {
    const sandbox = createSandbox({ threads: true, safetyCap: { cpuTimeMs: 60_000 } });
    const started = performance.now();
    const r = await sandbox.runCode("while (true) {}", { timeoutMs: 200 });
    // The caller's timer or the CPU cap the worker derived from it (200 ms of guest CPU), whichever comes first.
    expect([r.status, r.error?.name]).toEqual(["terminated", "TerminatedError"]);
    expect(r.error?.message).toMatch(
      /^(The run's time limit of 200 ms ran out|Execution stopped by the safety cap after 200 ms of CPU time)$/,
    );
    // The bound is for hangs (the sandbox's cap is 60 s), not a timing.
    expect(performance.now() - started).toBeLessThan(20_000);
  });

  it("the safety cap still ends a polling loop on the worker, as the core's", async () => {
    const capped = createSandbox({ threads: true, safetyCap: { cpuTimeMs: 100 } });
    const r = await capped.runCode("while (true) {}");
    expect(r.status).toBe("terminated");
    expect(r.error).toEqual({
      name: "TerminatedError",
      message: "Execution stopped by the safety cap after 100 ms of CPU time",
    });
  });
});

describe("the bridge to the caller's thread", () => {
  it("synchronous host calls return values and run on the caller's thread", async () => {
    const seen: unknown[] = [];
    const add = (a: number, b: number) => {
      seen.push(a, b);
      return { sum: a + b, at: new Map([[1, new Set(["x"])]]) };
    };
    const r = await runCode("const a = add(1, 2); export default [a.sum, a.at.get(1).has('x')]", { globals: { add } });
    expect(r.result).toEqual([3, true]);
    expect(seen).toEqual([1, 2]);
  });

  it("a host throw reaches the guest with the name and message the core gives", async () => {
    const boom = () => {
      throw new RangeError("too far");
    };
    class Custom extends Error {
      override name = "CustomError";
    }
    const custom = () => {
      throw new Custom("mine");
    };
    const text = () => {
      throw "plain";
    };
    const source = `const out = [];
for (const f of [boom, custom, text]) { try { f(); } catch (e) { out.push(typeof e === "string" ? e : [e.name, e.message, e instanceof RangeError]); } }
export default out;`;
    const inThread = createSandbox({ threads: false }).runCode;
    const options = { ...JS, globals: { boom, custom, text } };
    const [threaded, core] = await Promise.all([runCode(source, options), inThread(source, options)]);
    expect(threaded.result).toEqual([["RangeError", "too far", true], ["CustomError", "mine", false], "plain"]);
    expect(threaded.result).toEqual(core.result);
  });

  it("host functions cross back and forth and keep their identity on the caller's thread", async () => {
    const target = (x: number) => x + 1;
    const make = () => target;
    let back: unknown;
    const keep = (fn: unknown) => {
      back = fn;
      return (fn as (x: number) => number)(41);
    };
    const r = await runCode("const f = make(); export default [f(1), keep(f), f.name, f.length]", {
      globals: { make, keep },
    });
    expect(r.result).toEqual([2, 42, "target", 1]);
    expect(back).toBe(target);
  });

  it("promise-returning host functions settle later, both ways; promises from the guest settle on the host", async () => {
    let guestPromise: Promise<unknown> | undefined;
    const later = async (x: number) => {
      await sleep(10);
      return x * 2;
    };
    const fail = async () => {
      await sleep(5);
      throw new TypeError("later failure");
    };
    const take = (p: Promise<unknown>) => {
      guestPromise = p;
    };
    const r = await runCode(
      "let resolve; take(new Promise((r) => { resolve = r; }));\nconst a = await later(21);\nresolve({ a });\nlet b; try { await fail(); } catch (e) { b = e.name + ': ' + e.message; }\nexport default [a, b];",
      { globals: { later, fail, take } },
    );
    expect(r.result).toEqual([42, "TypeError: later failure"]);
    expect(await guestPromise).toEqual({ a: 42 });
  });

  it("reports are live on the caller's thread and reach the report callback as the guest makes them", async () => {
    const gate = deferred<string>();
    const reached = deferred();
    const sink: unknown[] = [];
    const run: CodeExecution = runCode("report(1); report({ two: [2] }); reached(); report(await gate());", {
      globals: { gate: () => gate.promise, reached: () => reached.resolve() },
      report: (value) => sink.push(value),
    });
    await reached.promise;
    expect(run.reports).toEqual([1, { two: [2] }]);
    expect(sink).toEqual([1, { two: [2] }]);
    gate.resolve("three");
    const r = await run;
    expect(r.reports).toEqual([1, { two: [2] }, "three"]);
    expect(sink).toEqual(r.reports);
  });

  it("logs arrive with the result", async () => {
    const r = await runCode("console.log('a', 1n, { b: [2] }); console.error(new Error('e')); export default 0", JS);
    expect(r.logs.map((l) => [l.level, l.args])).toEqual([
      ["log", ["a", 1n, { b: [2] }]],
      ["error", [new Error("e")]],
    ]);
  });

  it("a run's fuel is what it is in-thread: logs, reports, to a sink or not, and a result that is not a primitive", async () => {
    const { runCode: inThread } = createSandbox({ threads: false });
    const source = "console.log('a', { b: [1n] }); report(new Map([[1, 2]])); export default { x: [undefined, -0] };";
    for (const options of [JS, { ...JS, report: () => {} }]) {
      const [here, there] = await Promise.all([inThread(source, options), runCode(source, options)]);
      expect(there.fuelUsed).toBe(here.fuelUsed);
    }
  });

  it("a run over its memory limit settles with memory and the worker's next run is fine", async () => {
    const r = await runCode("const keep = [];\nwhile (true) keep.push(new Uint8Array(1024 * 1024));", {
      memoryLimitBytes: 16 * 1024 * 1024,
    });
    expect(r.status).toBe("memory");
    expect(r.error?.name).toBe("MemoryError");
    expect((await runCode("export default 'next'")).result).toBe("next");
  });

  it("validation errors throw on the caller's thread, as the core's do", () => {
    expect(() => runCode("1", { nope: 1 } as never)).toThrow(
      new TypeError("runCode: unknown option 'nope' (options.nope)"),
    );
    expect(() => runCode("1", { filename: "runcode:internals" })).toThrow(
      new TypeError("runCode: options.filename must not start with 'runcode:'"),
    );
    expect(() => runCode("1", { globals: { s: Symbol("s") } })).toThrow(
      "Symbol(s) cannot be cloned: symbols do not cross the sandbox boundary",
    );
    expect(() => runCode("1", { tenant: 7 } as never)).toThrow(
      new TypeError("runCode: options.tenant must be a string of at most 256 characters, got number"),
    );
    expect(() => runCode("1", { tenant: "t".repeat(257) })).toThrow(
      new TypeError("runCode: options.tenant must be a string of at most 256 characters, got string"),
    );
  });

  it("a tenant of at most 256 characters is carried, in-thread too", async () => {
    expect((await runCode("export default 1", { tenant: "t".repeat(256) })).result).toBe(1);
    const inThread = createSandbox({ threads: false });
    expect((await inThread.runCode("export default 2", { tenant: "acme" })).result).toBe(2);
  });

  it("settings that are functions cannot cross to a worker", () => {
    expect(() => createSandbox({ threads: true, clock: () => 0 })).toThrow(
      new TypeError("createSandbox: clock cannot cross to a worker thread; pass threads: false to use it"),
    );
    expect(() => createSandbox({ threads: true, interrupted: () => false })).toThrow(
      new TypeError("createSandbox: interrupted cannot cross to a worker thread; pass threads: false to use it"),
    );
    expect(() => createSandbox({ threads: "yes" as never })).toThrow(
      new TypeError('createSandbox: threads must be true, false or "auto"'),
    );
  });

  it("a transpiler and a pool are the worker's own: given with threads, they are refused", () => {
    expect(() => createSandbox({ threads: true, transpiler: new Transpiler(loadSwc) })).toThrow(
      new TypeError("createSandbox: transpiler cannot cross to a worker thread; pass threads: false to use it"),
    );
    expect(() => createSandbox({ threads: true, pool: new InstancePool() })).toThrow(
      new TypeError("createSandbox: pool cannot cross to a worker thread; pass threads: false to use it"),
    );
  });
});

describe("what crosses to a worker", () => {
  /** The messages posted to workers while `work` runs. */
  async function posted(work: () => Promise<unknown>): Promise<ToWorker[]> {
    const messages: ToWorker[] = [];
    const post = Worker.prototype.postMessage;
    vi.spyOn(Worker.prototype, "postMessage").mockImplementation(function (this: Worker, message, transfer) {
      messages.push(message as ToWorker);
      return post.call(this, message, transfer);
    });
    await work();
    vi.restoreAllMocks();
    return messages;
  }

  it("a sandbox's settings cross once per worker; its later runs name them by number", async () => {
    const sandbox = createSandbox({ threads: true, safetyCap: { cpuTimeMs: 5_000 }, bootModules: { m: "export {}" } });
    const runs = await posted(async () => {
      for (let i = 0; i < 3; i++) await sandbox.runCode("export default 1", JS);
    });
    const settings = runs.flatMap((message) => (message.kind === "run" ? [message.settings] : []));
    expect(settings.length).toBe(3);
    expect(settings[0]?.settings).toMatchObject({
      safetyCap: { cpuTimeMs: 5_000 },
      boot: { modules: { m: "export {}" } },
    });
    expect(settings.slice(1)).toEqual([{ id: settings[0]?.id }, { id: settings[0]?.id }]);
  });

  it("the settlements of the caller's promises in one turn of its event loop cross in one message", async () => {
    const gate = deferred();
    const called = deferred();
    const later = (x: number) => gate.promise.then(() => x * 2);
    const source = "const all = Promise.all([1, 2, 3, 4].map(later));\ncalled();\nexport default await all;";
    let result: unknown;
    const messages = await posted(async () => {
      const run = runCode(source, { ...JS, globals: { later, called: () => called.resolve() } });
      await called.promise;
      gate.resolve();
      result = (await run).result;
    });
    expect(result).toEqual([2, 4, 6, 8]);
    const settles = messages.flatMap((message) => (message.kind === "settle" ? [message.settled.length] : []));
    expect(settles).toEqual([4]);
  });

  it("a run is handed over alone only when no other is in flight: then its worker watches for the next", async () => {
    const sandbox = createSandbox({ threads: true });
    const runs = await posted(async () => {
      for (let i = 0; i < 2; i++) await sandbox.runCode("export default 1", JS);
      await Promise.all(Array.from({ length: 6 }, () => sandbox.runCode("export default 1", JS)));
    });
    const alone = runs.flatMap((message) => (message.kind === "run" ? [message.alone] : []));
    // The last of the six may find the others over by the time it is handed over.
    expect(alone.slice(0, 7)).toEqual([true, true, false, false, false, false, false]);
  });

  it("a worker watching for the next run takes whatever comes first, a stale settlement included", async () => {
    const sandbox = createSandbox({ threads: true });
    const gate = deferred();
    // The first run's promise settles once the run is over: its settlement reaches a worker watching for a run.
    const later = () => gate.promise.then(() => 1);
    const first = await sandbox.runCode("later(); export default 1", { ...JS, globals: { later } });
    gate.resolve();
    await sleep(0);
    const calls: number[] = [];
    const second = await sandbox.runCode("export default add(2, 3) + (await twice(4))", {
      ...JS,
      globals: { add: (a: number, b: number) => calls.push(a + b) && a + b, twice: async (x: number) => 2 * x },
    });
    expect([first.status, second.status, second.result, calls]).toEqual(["success", "success", 13, [5]]);
  });

  it("values too large for the call channel cross whole, both ways", async () => {
    const text = "\uD800".repeat(200_000);
    const echo = (value: unknown) => value;
    const r = await runCode(
      "const back = echo(text + 'x'); export default [back.length, back.charCodeAt(7), back.at(-1)]",
      {
        ...JS,
        globals: { echo, text },
      },
    );
    expect(r.result).toEqual([200_001, 0xd800, "x"]);
  });
});

describe("bounds", () => {
  it(`runs beyond ${MAX_THREADS} workers wait in line and all finish`, async () => {
    const gate = deferred<number>();
    const runs = Array.from({ length: MAX_THREADS * 3 }, (_, i) =>
      runCode("export default (await gate()) + n", { globals: { gate: () => gate.promise, n: i } }),
    );
    await sleep(50);
    gate.resolve(100);
    const results = await Promise.all(runs);
    expect(results.map((r) => r.result)).toEqual(Array.from({ length: MAX_THREADS * 3 }, (_, i) => 100 + i));
  });

  it(`past ${MAX_QUEUED_RUNS} waiting runs, runCode throws a RangeError; the waiting runs still run`, async () => {
    const gate = deferred<number>();
    const options = { globals: { gate: () => gate.promise } };
    const runs = Array.from({ length: MAX_THREADS + MAX_QUEUED_RUNS }, () =>
      runCode("export default await gate()", options),
    );
    expect(() => runCode("export default 1")).toThrow(
      new RangeError(
        `runCode: ${MAX_QUEUED_RUNS} runs are already waiting for the ${MAX_THREADS} worker threads: await some before starting more`,
      ),
    );
    gate.resolve(1);
    const results = await Promise.all(runs);
    expect(results.every((r) => r.status === "success" && r.result === 1)).toBe(true);
    expect((await runCode("export default 2")).result).toBe(2);
  }, 60_000);
});

describe("runs nested through host functions", () => {
  const RECURSE = "export default async function (n) { return n === 0 ? 0 : 1 + (await nest(n - 1)); }";
  /** A host function that runs RECURSE again: every level of the guest's recursion is a run nested one deeper. */
  const nest = async (n: number): Promise<unknown> => {
    const r = await runCode(RECURSE, { ...JS, execute: { fn: "default", args: [n] }, globals: { nest } });
    if (r.status !== "success") throw new Error(r.error?.message);
    return r.result;
  };
  const recurse = (n: number) => runCode(RECURSE, { ...JS, execute: { fn: "default", args: [n] }, globals: { nest } });

  it(`${MAX_THREADS} runs each nesting ${MAX_NESTING_DEPTH} deep all complete`, async () => {
    // Each parent holds its worker while it awaits its nested run: before nested runs had workers of their own, a
    // 9th level waited for ever, and so did every later run of the process.
    const results = await Promise.all(Array.from({ length: MAX_THREADS }, () => recurse(MAX_NESTING_DEPTH)));
    expect(results.map((r) => [r.status, r.result])).toEqual(Array(MAX_THREADS).fill(["success", MAX_NESTING_DEPTH]));
  }, 60_000);

  it("deeper ones are refused at once; an unrelated run started meanwhile completes", async () => {
    const refused = {
      status: "error",
      error: {
        name: "Error",
        message: `runCode: runs nest at most ${MAX_NESTING_DEPTH} deep through host functions; this one would be ${MAX_NESTING_DEPTH + 1} deep`,
      },
    };
    const deep = [recurse(MAX_NESTING_DEPTH + 1), recurse(20)];
    expect(await runCode("export default 'unrelated'", JS)).toMatchObject({ status: "success", result: "unrelated" });
    for (const r of await Promise.all(deep)) expect(r).toMatchObject(refused);
    expect(await runCode("export default 'after'", JS)).toMatchObject({ status: "success", result: "after" });
  }, 60_000);

  it("nested runs wait in a line of their own: a guest's fan-out never fills the line of unrelated runs", async () => {
    const gate = deferred<number>();
    const refusals = new Set<string>();
    // A host function that starts a nested run waiting on the gate; the guest calls it more times than runs may wait.
    const fan = async () => {
      try {
        return (await runCode("export default await gate()", { ...JS, globals: { gate: () => gate.promise } })).result;
      } catch (error) {
        refusals.add((error as Error).message);
        return "refused";
      }
    };
    const fanned = deferred();
    const parent = runCode(
      `const all = Promise.all(Array.from({ length: ${MAX_QUEUED_RUNS + 10} }, () => fan()));\nfanned();\nexport default (await all).filter((r) => r === 1).length;`,
      { ...JS, globals: { fan, fanned: () => fanned.resolve() } },
    );
    await fanned.promise;
    expect(await runCode("export default 'unrelated'", JS)).toMatchObject({ status: "success", result: "unrelated" });
    expect([...refusals]).toEqual([
      `runCode: ${MAX_QUEUED_RUNS} nested runs are already waiting for the workers of nested runs: await some before starting more`,
    ]);
    gate.resolve(1);
    expect((await parent).result).toBeGreaterThanOrEqual(MAX_QUEUED_RUNS);
  }, 60_000);
});

describe("the environment module in Node", () => {
  async function environment() {
    const bindings = recorder();
    const env = instantiate();
    await env.setup({ config: {}, secrets: {}, bindings });
    return { env, bindings };
  }

  it("kill(eid) stops while(true){} at once", async () => {
    const { env, bindings } = await environment();
    for (let eid = 1; eid <= 3; eid++) {
      const exit = env.execute({
        eid,
        code: 'console.log("spinning");\nwhile (true) {}',
        options: { timeoutMs: 20_000 },
      });
      while (!bindings.text(eid, "stdout").includes("spinning")) await sleep(5);
      await sleep(50);
      const stopped = nextStop();
      const at = performance.now();
      await env.kill(eid);
      expect(await exit).toBe("canceled");
      expect((await stopped).at - at).toBeLessThan(HANG_MS);
    }
  });

  it("timeoutMs stops a native loop that never polls", async () => {
    const { env, bindings } = await environment();
    for (let eid = 1; eid <= 3; eid++) {
      const stopped = nextStop();
      const code = NON_POLLING.replace("started()", 'console.log("started")');
      const exit = env.execute({ eid, code, options: { timeoutMs: 300 } });
      expect(await exit).toBe("timeout");
      const timedOut = performance.now();
      expect((await stopped).at - timedOut).toBeLessThan(HANG_MS);
      expect(bindings.errors(eid)).toEqual([
        "Timeout: the process ran longer than its timeoutMs (300 ms) and was stopped",
      ]);
    }
  });
});

describe("the process", () => {
  it("exits by itself once its runs are over: nothing of runcode's, workers or timers, holds it", () => {
    const entry = fileURLToPath(new URL("../../dist/bundle/index.js", import.meta.url));
    const script = `const { createSandbox } = await import(${JSON.stringify(entry)});
const threaded = createSandbox();
const inThread = createSandbox({ threads: false });
createSandbox({ webApis: true });
const runs = [];
for (const sandbox of [threaded, inThread]) {
  runs.push(sandbox.runCode("export default (1 as number) + 1"));
  // 32 at once leave the in-thread pool more idle instances than it keeps when quiet.
  for (let i = 0; i < 32; i++) runs.push(sandbox.runCode("export default await later()", { globals: { later: async () => 1 } }));
}
const stopped = threaded.runCode("while (true) {}", { language: "javascript" });
setTimeout(() => stopped.terminate(), 50);
const results = await Promise.all([...runs, stopped]);
console.log(results.map((r) => r.status).join());`;
    const child = spawnSync(process.execPath, ["--input-type=module", "-e", script], {
      encoding: "utf8",
      timeout: HANG_MS * 5,
    });
    expect({ status: child.status, signal: child.signal, stderr: child.stderr }).toEqual({
      status: 0,
      signal: null,
      stderr: "",
    });
    expect(child.stdout).toBe(`${[...Array(66).fill("success"), "terminated"].join()}\n`);
  });
});
