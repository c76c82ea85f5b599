/**
 * Node's default path (`threads: "auto"`, node/threads/in-thread-first.ts): a run attempted on the caller's thread
 * for a slice of fuel stays there when it ends within it, and is run again from the start on a worker thread when it
 * needs more or reaches the caller, with nothing of the attempt seen. Where a run went is told by the run messages
 * posted to workers (`Worker.prototype.postMessage`). The conformance suite runs against this path in
 * default-path.conformance.test.ts.
 */
import { Worker } from "node:worker_threads";
import { afterEach, describe, expect, it, vi } from "vitest";
import { createSandbox, SLICE_FUEL, THREADS_BY_DEFAULT } from "../../node/index.js";
import { MAX_WAITING_ATTEMPTS } from "../../node/threads/attempt-turns.js";
import type { ToWorker } from "../../node/threads/protocol.js";
import { BootedInstance } from "../../src/core/instance.js";
import type { CodeExecutionResult } from "../../src/core/types.js";

const JS = { language: "javascript" } as const;
const auto = createSandbox();

afterEach(() => {
  vi.restoreAllMocks();
});

/** Counts the runs handed to worker threads from now on. */
function runsOnWorkers(): () => number {
  const post = Worker.prototype.postMessage;
  let runs = 0;
  vi.spyOn(Worker.prototype, "postMessage").mockImplementation(function (this: Worker, message: unknown, ...rest) {
    if ((message as ToWorker).kind === "run") runs++;
    return post.call(this, message, ...(rest as []));
  });
  return () => runs;
}

/** A result without what differs between any two runs: its duration and its entries' timestamps. */
function comparable({ durationMs: _, logs, ...rest }: CodeExecutionResult) {
  return { ...rest, logs: logs.map(({ timestamp: _t, ...entry }) => entry) };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A bound that only catches a hang. */
const HANG_MS = 10_000;

describe("the default path", () => {
  // First in the file: the entry's pool of the caller's thread has no instance yet.
  it("readies a restorable instance for the first run, which the second run restores rather than boot another", async () => {
    const boot = vi.spyOn(BootedInstance, "boot");
    expect((await auto.runCode("export default 1", JS)).result).toBe(1);
    expect(boot.mock.calls.map(([, , restorable]) => restorable)).toEqual([true]);
    expect((await auto.runCode("export default 2", JS)).result).toBe(2);
    expect(boot).toHaveBeenCalledTimes(1);
  });

  it('is "auto": createSandbox() attempts each run on the caller\'s thread', async () => {
    expect(THREADS_BY_DEFAULT).toBe("auto");
    const runs = runsOnWorkers();
    expect(comparable(await auto.runCode("console.log('hi'); report(2); export default 1 + 1", JS))).toEqual({
      status: "success",
      result: 2,
      reports: [2],
      logs: [{ level: "log", args: ["hi"] }],
      memoryUsedBytes: expect.any(Number),
      fuelUsed: expect.any(Number),
    });
    expect(runs()).toBe(0);
  });

  it("gives the result the caller's thread and the worker threads give, within the slice and past it", async () => {
    // A fuel cap the clock never beats, so every stop is the same on every path.
    const safetyCap = { fuel: 5_000_000 };
    const { runCode: capped } = createSandbox({ threads: "auto", safetyCap });
    const { runCode: cappedThreads } = createSandbox({ threads: true, safetyCap });
    const { runCode: cappedInThread } = createSandbox({ threads: false, safetyCap });
    // What an attempt is: the run on the caller's thread with its fuel lowered to the slice.
    const { runCode: slice } = createSandbox({ threads: false, safetyCap: { fuel: SLICE_FUEL } });
    /** Each program, its options, and whether it goes on past the slice. */
    const programs: [string, object, boolean][] = [
      [
        "console.log('a', { b: [1, 2n] }); report(new Map([[1, 2]])); export default { x: 1, y: [undefined, -0] };",
        {},
        false,
      ],
      ["throw new TypeError('bad');", {}, false],
      ["export const other = 1;", {}, false],
      ["import x from 'nowhere'; export default x;", {}, false],
      ["const a = new ArrayBuffer(100 << 20);", { memoryLimitBytes: 16 << 20 }, false],
      ["const a = []; for (;;) a.push('x'.repeat(1000));", { memoryLimitBytes: 8 << 20 }, true],
      ["let s = 0; for (let i = 0; i < 2e5; i++) s += i; console.log(s); export default s;", {}, true],
      ["console.log(1); for (;;) {}", {}, true],
      ["const a = []; for (let i = 0; ; i++) a.push(i);", { memoryLimitBytes: 16 << 20 }, true],
    ];
    for (const [source, options, past] of programs) {
      const expected = comparable(await cappedInThread(source, { ...JS, ...options }));
      const runs = runsOnWorkers();
      // A run handed over tells what its attempt spent, apart from `fuelUsed`; one that ended within it, nothing.
      const { fuelRedone, ...result } = comparable(await capped(source, { ...JS, ...options }));
      expect(result).toEqual(expected);
      expect(runs(), source).toBe(past ? 1 : 0);
      expect(fuelRedone).toBe(past ? (await slice(source, { ...JS, ...options })).fuelUsed : undefined);
      expect(comparable(await cappedThreads(source, { ...JS, ...options }))).toEqual(expected);
      vi.restoreAllMocks();
    }
  });

  it("hands a run past its slice to a worker, where terminate() stops it; the caller's event loop keeps turning", async () => {
    const runs = runsOnWorkers();
    let ticks = 0;
    const ticker = setInterval(() => ticks++, 1);
    try {
      const run = auto.runCode("for (;;) {}", JS);
      await vi.waitFor(() => expect(runs()).toBe(1), { timeout: HANG_MS });
      const before = ticks;
      await sleep(50);
      expect(ticks).toBeGreaterThan(before);
      run.terminate("enough");
      expect(await run).toMatchObject({
        status: "terminated",
        error: { name: "TerminatedError", message: "enough" },
      });
    } finally {
      clearInterval(ticker);
    }
  });

  it("leaves the caller's thread by fuel where its clock stands still", async () => {
    vi.spyOn(performance, "now").mockReturnValue(0);
    const frozen = createSandbox();
    const runs = runsOnWorkers();
    const run = frozen.runCode("for (;;) {}", JS);
    await vi.waitFor(() => expect(runs()).toBe(1), { timeout: HANG_MS });
    run.terminate();
    expect((await run).status).toBe("terminated");
  });

  it("calls each host function, sink and listener once, on the worker the run went on to, with nothing of the attempt", async () => {
    const runs = runsOnWorkers();
    const calls: unknown[] = [];
    const result = await auto.runCode(
      "console.log('before'); report('r'); const v = add(1, 2); console.log(v); export default v;",
      {
        ...JS,
        globals: {
          add: (a: number, b: number) => {
            calls.push(["add", a, b]);
            return a + b;
          },
        },
        report: (value) => void calls.push(["report", value]),
        onLog: (entry) => void calls.push(["log", ...entry.args]),
      },
    );
    expect(comparable(result)).toEqual({
      status: "success",
      result: 3,
      reports: ["r"],
      logs: [
        { level: "log", args: ["before"] },
        { level: "log", args: [3] },
      ],
      memoryUsedBytes: expect.any(Number),
      fuelUsed: expect.any(Number),
      // The attempt ended at the listener's stand-in, its first `console.log`.
      fuelRedone: expect.any(Number),
    });
    expect(calls).toEqual([
      ["log", "before"],
      ["report", "r"],
      ["add", 1, 2],
      ["log", 3],
    ]);
    expect(runs()).toBe(1);
  });

  it("hands over a host call the guest would catch, and a report to a sink, before the caller sees either", async () => {
    const runs = runsOnWorkers();
    let called = 0;
    const caught = "let v; try { v = f(); } catch { v = 'caught'; } export default v;";
    expect(await auto.runCode(caught, { ...JS, globals: { f: () => ++called } })).toMatchObject({ result: 1 });
    expect(called).toBe(1);
    const sunk: unknown[] = [];
    const reported = await auto.runCode("report(1); export default 2;", { ...JS, report: (v) => void sunk.push(v) });
    expect(reported).toMatchObject({ status: "success", result: 2, reports: [1] });
    expect(sunk).toEqual([1]);
    expect(runs()).toBe(2);
  });

  it("hands over a run that waits for a timer, and one whose values hold the caller's promises", async () => {
    const web = createSandbox({ webApis: true });
    const runs = runsOnWorkers();
    const timer = "export default await new Promise((resolve) => setTimeout(() => resolve(7), 5));";
    expect(await web.runCode(timer, JS)).toMatchObject({ status: "success", result: 7 });
    expect(runs()).toBe(1);
    const promised = await auto.runCode("export default await later;", {
      ...JS,
      globals: { later: Promise.resolve(8) },
    });
    expect(promised).toMatchObject({ status: "success", result: 8 });
    expect(runs()).toBe(2);
  });

  it("keeps a run whose own cap is within the slice on the caller's thread, host calls and all", async () => {
    const capped = createSandbox({ safetyCap: { fuel: SLICE_FUEL } });
    const runs = runsOnWorkers();
    const called: number[] = [];
    const result = await capped.runCode("export default f(1);", {
      ...JS,
      globals: { f: (x: number) => called.push(x) },
    });
    expect(result).toMatchObject({ status: "success", result: 1 });
    const spun = await capped.runCode("for (;;) {}", JS);
    expect(spun).toMatchObject({
      status: "terminated",
      error: { message: `Execution stopped by the safety cap after ${SLICE_FUEL} units of fuel` },
    });
    expect(called).toEqual([1]);
    expect(runs()).toBe(0);
  });

  it("attempts runs at once one after another, each after a turn of the caller's event loop", async () => {
    const runs = runsOnWorkers();
    let turns = 0;
    let turning = true;
    const turn = () => {
      turns++;
      if (turning) setImmediate(turn);
    };
    setImmediate(turn);
    const results = await Promise.all(Array.from({ length: 16 }, (_, i) => auto.runCode(`export default ${i};`, JS)));
    turning = false;
    expect(results.map((result) => result.result)).toEqual(Array.from({ length: 16 }, (_, i) => i));
    expect(turns).toBeGreaterThanOrEqual(15);
    expect(runs()).toBe(0);
  });

  it("takes turns for the caller's thread by tenant: another tenant's run comes second behind one tenant's many", async () => {
    // A frozen clock: the turns count attempts, not time.
    vi.spyOn(performance, "now").mockReturnValue(0);
    const frozen = createSandbox();
    const runs = runsOnWorkers();
    const order: unknown[] = [];
    const started = (tenant: string, name: string) =>
      frozen.runCode(`export default "${name}";`, { ...JS, tenant }).then(({ result }) => void order.push(result));
    await Promise.all([...["a1", "a2", "a3", "a4", "a5", "a6"].map((name) => started("a", name)), started("b", "b1")]);
    expect(order).toEqual(["a1", "b1", "a2", "a3", "a4", "a5", "a6"]);
    expect(runs()).toBe(0);
  });

  it(`sends a tenant's run past its ${MAX_WAITING_ATTEMPTS} waiting attempts to a worker at once, not another's`, async () => {
    const runs = runsOnWorkers();
    const a = (value: number) => auto.runCode(`export default ${value};`, { ...JS, tenant: "a" });
    // The first takes the caller's thread, the next MAX_WAITING_ATTEMPTS wait, the last goes to a worker.
    const flood = Array.from({ length: MAX_WAITING_ATTEMPTS + 1 }, () => a(1));
    const past = a(2);
    const other = auto.runCode("export default 3;", { ...JS, tenant: "b" });
    const results = await Promise.all([...flood, past, other]);
    expect(results.map((result) => result.result)).toEqual([...flood.map(() => 1), 2, 3]);
    expect(runs()).toBe(1);
  });

  it("a run stopped while it waits for the caller's thread never runs", async () => {
    const first = auto.runCode("let s = 0; for (let i = 0; i < 1e4; i++) s += i; export default s;", JS);
    let ran = false;
    const second = auto.runCode("export default f();", { ...JS, globals: { f: () => (ran = true) } });
    second.terminate("not now");
    expect(await second).toMatchObject({ status: "terminated", error: { message: "not now" } });
    expect((await first).status).toBe("success");
    expect(ran).toBe(false);
  });

  it("a run stopped as its turn comes never runs, and the next run takes the caller's thread", async () => {
    const first = auto.runCode("export default 1;", JS);
    let ran = false;
    const second = auto.runCode("export default f();", { ...JS, globals: { f: () => (ran = true) } });
    // Settled after the first attempt ended, which gave the caller's thread to the second after a turn.
    void first.then(() => second.terminate("not now"));
    expect(await second).toMatchObject({ status: "terminated", error: { message: "not now" } });
    // The turn comes to nobody.
    await sleep(10);
    expect(ran).toBe(false);
    expect(await auto.runCode("export default 3;", JS)).toMatchObject({ status: "success", result: 3 });
  });

  it("a run stopped while its attempt waits for the host settles with the reports and logs it made, as in-thread", async () => {
    const web = createSandbox({ webApis: true });
    let waiting!: () => void;
    const waited = new Promise<void>((resolve) => {
      waiting = resolve;
    });
    // The platform's digest never answers: the attempt waits for it, the caller's event loop turning.
    vi.spyOn(crypto.subtle, "digest").mockImplementation(() => {
      waiting();
      return new Promise(() => {});
    });
    const source = "report(1); console.log('a'); await crypto.subtle.digest('SHA-256', new Uint8Array(4));";
    const run = web.runCode(source, JS);
    await waited;
    run.terminate("enough");
    expect(comparable(await run)).toEqual({
      status: "terminated",
      error: { name: "TerminatedError", message: "enough" },
      reports: [1],
      logs: [{ level: "log", args: ["a"] }],
      memoryUsedBytes: undefined,
      fuelUsed: expect.any(Number),
    });
  });

  it("threads must be true, false or auto, and the settings of the caller's thread are refused as on threads", () => {
    expect(() => createSandbox({ threads: "yes" as never })).toThrow(
      new TypeError('createSandbox: threads must be true, false or "auto"'),
    );
    expect(() => createSandbox({ clock: () => 0 })).toThrow(
      new TypeError("createSandbox: clock cannot cross to a worker thread; pass threads: false to use it"),
    );
  });
});
