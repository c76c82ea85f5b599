/**
 * Node's default path (`threads: "auto"`, node/threads/in-thread-first.ts): a run attempted on the caller's thread
 * for a slice of fuel stays there when it ends within it, and is run again from the start on a worker thread when it
 * needs more or reaches the caller, with nothing of the attempt seen. Where a run went is told by the run messages
 * posted to workers (`Worker.prototype.postMessage`). The conformance suite runs against this path in
 * default-path.conformance.test.ts.
 */
import { Worker } from "node:worker_threads";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { createSandbox, SLICE_CALLS, SLICE_FUEL, THREADS_BY_DEFAULT } from "../../node/index.js";
import { MAX_WAITING_ATTEMPTS } from "../../node/threads/attempt-turns.js";
import { Replay } from "../../node/threads/host-call-record.js";
import type { ToWorker } from "../../node/threads/protocol.js";
import { HOST_CALL_FUEL } from "../../src/core/host-fuel.js";
import { BootedInstance } from "../../src/core/instance.js";
import { Transpiler } from "../../src/core/transpile.js";
import type { CodeExecutionResult } from "../../src/core/types.js";
import { type LoopbackServer, startServer } from "../fetch/server.js";

const JS = { language: "javascript" } as const;
const auto = createSandbox();
const { transpile } = Transpiler.prototype;
const boot = BootedInstance.boot.bind(BootedInstance);

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

  it("boots a TypeScript run's instance after transpiling its source, as the core does", async () => {
    // In a fresh process SWC's first transform then runs before V8 compiles the booted engine's hot code in the
    // background, not beside it (docs/performance.md, "The boot, round four"). A memory class no run took yet: no
    // instance of it is idle.
    const order: string[] = [];
    vi.spyOn(Transpiler.prototype, "transpile").mockImplementation(function (this: Transpiler, ...args) {
      order.push("transpile");
      return transpile.apply(this, args);
    });
    vi.spyOn(BootedInstance, "boot").mockImplementation((...args) => {
      order.push("boot");
      return boot(...args);
    });
    const result = await auto.runCode("const x: number = 3; export default x;", { memoryLimitBytes: 200 << 20 });
    expect(result.result).toBe(3);
    expect(order).toEqual(["transpile", "boot"]);
  });

  it("boots nothing on the caller's thread for a client choosing a new memoryLimitBytes each run", async () => {
    // As a `/run` client of `runcode serve` may: every limit it allows is of the readied instance's memory class.
    const boot = vi.spyOn(BootedInstance, "boot");
    for (let mebibytes = 12; mebibytes <= 64; mebibytes += 4) {
      const memoryLimitBytes = mebibytes * 1024 * 1024 + 4096;
      expect((await auto.runCode("export default 3", { ...JS, memoryLimitBytes })).result).toBe(3);
    }
    expect(boot).not.toHaveBeenCalled();
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

  it("does not count host calls' fees against the slice, but against the run's own cap", async () => {
    const safetyCap = { fuel: 1_500_000 };
    const { runCode: capped } = createSandbox({ threads: "auto", safetyCap });
    const { runCode: cappedThreads } = createSandbox({ threads: true, safetyCap });
    const { runCode: cappedInThread } = createSandbox({ threads: false, safetyCap });
    const options = { ...JS, globals: { add: (a: number, b: number) => a + b } };
    const runs = runsOnWorkers();
    // 500 calls: 850,000 units of fees, over twice the slice, and ~84,000 of the engine's.
    const within = "let s = 0; for (let i = 0; i < 500; i++) s += add(i, 1); export default s;";
    const result = comparable(await capped(within, options));
    expect(result).toEqual(comparable(await cappedInThread(within, options)));
    expect(result).toMatchObject({ status: "success", result: 125_250 });
    expect(runs()).toBe(0);
    // Past the run's own cap by fees alone: the attempt ends there, and the run stops on the worker as on threads.
    const past = "let s = 0; for (let i = 0; i < 1000; i++) s += add(i, 1); export default s;";
    const { fuelRedone, ...stopped } = comparable(await capped(past, options));
    expect(stopped).toEqual(comparable(await cappedThreads(past, options)));
    // What the attempt spent before it ended at the cap, which its host charges besides fuelUsed.
    expect(fuelRedone).toBe(1_515_789);
    expect(stopped).toMatchObject({ status: "terminated", error: { message: expect.stringContaining("1500000") } });
    // The default path's hand-over, and the threaded sandbox's run.
    expect(runs()).toBe(2);
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
    const frozenNow = vi.spyOn(performance, "now").mockReturnValue(0);
    const frozen = createSandbox();
    const runs = runsOnWorkers();
    const run = frozen.runCode("for (;;) {}", JS);
    await vi.waitFor(() => expect(runs()).toBe(1), { timeout: HANG_MS });
    run.terminate();
    expect((await run).status).toBe("terminated");
    // The slice does not count the first host calls' fees, but each call is the engine's work too. The worker's
    // calls are served by the caller's thread in slices of its clock: it moves again once the worker calls.
    let attempted = 0;
    const f = () => {
      if (runs() === 1) attempted++;
      else frozenNow.mockRestore();
    };
    const calling = frozen.runCode("for (;;) f();", { ...JS, globals: { f } });
    await vi.waitFor(() => expect(runs()).toBe(2), { timeout: HANG_MS });
    calling.terminate();
    expect((await calling).status).toBe("terminated");
    // Past its first SLICE_CALLS, each call's fee counts against the slice too.
    expect(attempted).toBeGreaterThan(SLICE_CALLS);
    expect(attempted).toBeLessThanOrEqual(SLICE_CALLS + SLICE_FUEL / HOST_CALL_FUEL);
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

  it("keeps a run that calls the host within its slice on the caller's thread, and hands over a report to a sink", async () => {
    const runs = runsOnWorkers();
    let called = 0;
    const caught = "let v; try { v = f(); } catch { v = 'caught'; } export default v;";
    expect(await auto.runCode(caught, { ...JS, globals: { f: () => ++called } })).toMatchObject({ result: 1 });
    expect(called).toBe(1);
    const calls = "let s = 0; for (let i = 0; i < 1000; i++) s += add(i, 1); export default s;";
    const added = await auto.runCode(calls, { ...JS, globals: { add: (a: number, b: number) => a + b } });
    expect(added).toMatchObject({ status: "success", result: 500_500 });
    expect(runs()).toBe(0);
    const sunk: unknown[] = [];
    const reported = await auto.runCode("report(1); export default 2;", { ...JS, report: (v) => void sunk.push(v) });
    expect(reported).toMatchObject({ status: "success", result: 2, reports: [1] });
    expect(sunk).toEqual([1]);
    expect(runs()).toBe(1);
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

  it("a run stopped during its attempt settles with the reports and logs it made, as in-thread", async () => {
    const runs = runsOnWorkers();
    let run!: ReturnType<typeof auto.runCode>;
    const source = "report(1); console.log('a'); stop(); for (;;) {}";
    run = auto.runCode(source, { ...JS, globals: { stop: () => run.terminate("enough") } });
    expect(comparable(await run)).toEqual({
      status: "terminated",
      error: { name: "TerminatedError", message: "enough" },
      reports: [1],
      logs: [{ level: "log", args: ["a"] }],
      memoryUsedBytes: undefined,
      fuelUsed: expect.any(Number),
    });
    expect(runs()).toBe(0);
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

describe("the default path's attempt calls the host, and its run on a worker replays what the attempt got", () => {
  /** Guest code that spends more than the slice's fuel (~1,000,000 units). */
  const SPEND = "let spent = 0; for (let i = 0; i < 30000; i++) spent += i;";

  /** A host function that counts its calls, noting for each whether a run had gone to a worker by then. */
  function counter(runs: () => number) {
    const calls: [unknown[], "attempt" | "worker"][] = [];
    const fn = (...args: unknown[]) => {
      calls.push([args, runs() === 0 ? "attempt" : "worker"]);
      return calls.length;
    };
    return { fn, calls };
  }

  it("calls each host function once per guest call when the slice runs out after calls", async () => {
    const runs = runsOnWorkers();
    const { fn, calls } = counter(runs);
    const source = `const a = []; for (let i = 0; i < 3; i++) a.push(count(i)); ${SPEND} a.push(count(3)); export default a;`;
    expect(await auto.runCode(source, { ...JS, globals: { count: fn } })).toMatchObject({
      status: "success",
      result: [1, 2, 3, 4],
    });
    expect(calls).toEqual([
      [[0], "attempt"],
      [[1], "attempt"],
      [[2], "attempt"],
      [[3], "worker"],
    ]);
    expect(runs()).toBe(1);
  });

  it("answers the re-run with what the host returned as the attempt's guest got it, though the host changed it since, its getters not read again", async () => {
    const runs = runsOnWorkers();
    const items: number[] = [];
    const globals = { add: (n: number) => void items.push(n), items: () => items };
    const source = `const seen = []; for (let i = 0; i < 3; i++) { add(i); seen.push(items().length); } ${SPEND} export default seen;`;
    expect(await auto.runCode(source, { ...JS, globals })).toMatchObject({ status: "success", result: [1, 2, 3] });
    expect(items).toEqual([0, 1, 2]);
    expect(runs()).toBe(1);
    // An answer with a function and a getter: the re-run's guest gets it as the attempt's did, the getter not read again.
    let reads = 0;
    const box = {
      n: 0,
      f: () => 0,
      get read() {
        return ++reads;
      },
    };
    const boxed = { bump: () => void box.n++, box: () => box };
    const changed = `const seen = []; for (let i = 0; i < 2; i++) { bump(); const b = box(); seen.push([b.n, b.read, typeof b.f]); } ${SPEND} export default seen;`;
    expect(await auto.runCode(changed, { ...JS, globals: boxed })).toMatchObject({
      status: "success",
      result: [
        [1, 1, "function"],
        [2, 2, "function"],
      ],
    });
    expect([box.n, reads]).toEqual([2, 2]);
    expect(runs()).toBe(2);
  });

  it("answers the re-run with the error a call threw, or its answer's crossing did, as it crossed: no getter read again", async () => {
    // Before, the re-run's crossing read the getter again: the host ran it twice and the run's result was its second
    // answer, which no path gives.
    const runs = runsOnWorkers();
    let reads = 0;
    const globals = {
      get: () => ({
        get x() {
          if (++reads === 1) throw new Error("not yet");
          return reads;
        },
      }),
    };
    const source = `let x; try { x = get().x; } catch (error) { x = error.message; } ${SPEND} export default x;`;
    expect(await auto.runCode(source, { ...JS, globals })).toMatchObject({ status: "success", result: "not yet" });
    expect(reads).toBe(1);
    // So with a value the host function threw: the re-run's guest gets it as it crossed, its getter read once.
    let thrown = 0;
    const fail = () => {
      throw {
        get message() {
          return `read ${++thrown}`;
        },
      };
    };
    const throws = `let m; try { fail(); } catch (error) { m = error.message; } ${SPEND} export default m;`;
    expect(await auto.runCode(throws, { ...JS, globals: { fail } })).toMatchObject({
      status: "success",
      result: "read 1",
    });
    expect(thrown).toBe(1);
    expect(runs()).toBe(2);
  });

  it("numbers the functions of an answer as the attempt did, or fails: a guest never calls one function for another", async () => {
    // The attempt's guest got `other` as function 2; its re-run's table numbered `fn`, of a promise settled meanwhile,
    // first. Before, the check passed and the guest's `other()` called `fn`.
    const fn = () => "fn";
    const other = () => "other";
    const globals = { later: () => Promise.resolve({ fn }), make: () => other };
    const source = `later().then(() => {}); let first = 0; for (let i = 0; i < 5000; i++) first += i;
      const h = make(); ${SPEND} export default h();`;
    const threaded = await createSandbox({ threads: true }).runCode(source, { ...JS, globals });
    expect(threaded).toMatchObject({ status: "success", result: "other" });
    expect(await auto.runCode(source, { ...JS, globals })).toMatchObject({
      status: "error",
      error: {
        name: "InternalError",
        message:
          "The run did not repeat on a worker thread what it did on the caller's thread: the functions of a host call's answer were numbered otherwise",
      },
    });
  });

  it("calls each host function once per guest call when a timer wait hands the run over after calls", async () => {
    const web = createSandbox({ webApis: true });
    const runs = runsOnWorkers();
    const { fn, calls } = counter(runs);
    const source =
      "const a = [count('x', { y: [1n] }), count(new Uint8Array([1, 2]))]; await new Promise((resolve) => setTimeout(resolve, 5)); a.push(count(2)); export default a;";
    expect(await web.runCode(source, { ...JS, globals: { count: fn } })).toMatchObject({
      status: "success",
      result: [1, 2, 3],
    });
    expect(calls).toEqual([
      [["x", { y: [1n] }], "attempt"],
      [[new Uint8Array([1, 2])], "attempt"],
      [[2], "worker"],
    ]);
    expect(runs()).toBe(1);
  });

  it("replays the attempt's Math.random seed, clocks and random bytes, so the guest passes the host the same values", async () => {
    const web = createSandbox({ webApis: true });
    const runs = runsOnWorkers();
    const seen: [unknown[], number][] = [];
    const see = (...values: unknown[]) => void seen.push([values, runs()]);
    const read =
      "[Math.random(), Date.now(), new Date().getTime(), performance.now(), [...crypto.getRandomValues(new Uint8Array(8))], crypto.randomUUID()]";
    const source = `const before = ${read}; see(...before); ${SPEND} const after = ${read}; see(...after); export default [before, after];`;
    const result = await web.runCode(source, { ...JS, globals: { see } });
    expect(result.status).toBe("success");
    const [before, after] = result.result as unknown[][];
    expect(seen).toEqual([
      [before, 0],
      [after, 1],
    ]);
    const number = expect.any(Number);
    expect(before).toEqual([number, number, number, number, expect.any(Array), expect.any(String)]);
    expect(after).not.toEqual(before);
  });

  it("delivers logs and reports once and in order, the listener and the sink called by the run on the worker", async () => {
    const runs = runsOnWorkers();
    const seen: unknown[] = [];
    const source = "f(1); console.log('a'); report('r'); f(2); console.log('b'); export default 0;";
    const result = await auto.runCode(source, {
      ...JS,
      globals: { f: (x: number) => void seen.push(["f", x, runs()]) },
      report: (value) => void seen.push(["report", value, runs()]),
      onLog: (entry) => void seen.push(["log", ...entry.args, runs()]),
    });
    expect(comparable(result)).toMatchObject({
      status: "success",
      reports: ["r"],
      logs: [
        { level: "log", args: ["a"] },
        { level: "log", args: ["b"] },
      ],
    });
    expect(seen).toEqual([
      ["f", 1, 0],
      ["log", "a", 1],
      ["report", "r", 1],
      ["f", 2, 1],
      ["log", "b", 1],
    ]);
    // Without a listener, the logs the attempt made are the worker's run's, once.
    // Without a listener and a sink, the logs and reports the attempt made are the caller's as they are made, once.
    let run!: ReturnType<typeof auto.runCode>;
    const unheard = `console.log('x'); report('p'); f(3); ${SPEND} console.log('y'); report('q'); export default 1;`;
    run = auto.runCode(unheard, {
      ...JS,
      globals: { f: (x: number) => void seen.push(["f", x, runs(), [...run.reports]]) },
    });
    const unlistened = await run;
    expect(comparable(unlistened)).toMatchObject({
      logs: [
        { level: "log", args: ["x"] },
        { level: "log", args: ["y"] },
      ],
      reports: ["p", "q"],
    });
    expect(seen.slice(5)).toEqual([["f", 3, 1, ["p"]]]);
  });

  it("replays what a host function threw, and a promise it returned, without calling it again", async () => {
    const runs = runsOnWorkers();
    const called: string[] = [];
    const globals = {
      boom: () => {
        called.push("boom");
        throw new RangeError("no");
      },
      later: () => {
        called.push("later");
        return Promise.resolve(5);
      },
    };
    const thrown = `let m; try { boom(); } catch (e) { m = e.name + ': ' + e.message; } ${SPEND} export default m;`;
    expect(await auto.runCode(thrown, { ...JS, globals })).toMatchObject({
      status: "success",
      result: "RangeError: no",
    });
    const promised = "const p = later(); export default (await p) + 1;";
    expect(await auto.runCode(promised, { ...JS, globals })).toMatchObject({ status: "success", result: 6 });
    expect(called).toEqual(["boom", "later"]);
    expect(runs()).toBe(2);
  });

  it("a run a host function starts during the attempt goes to a worker, and ends with the run that started it", async () => {
    const runs = runsOnWorkers();
    const started: ReturnType<typeof auto.runCode>[] = [];
    const start = () => started.push(auto.runCode("for (;;) {}", JS));
    expect(await auto.runCode("start(); export default 2;", { ...JS, globals: { start } })).toMatchObject({
      status: "success",
      result: 2,
    });
    expect(await started[0]).toMatchObject({
      status: "terminated",
      error: { message: "Execution terminated: the run that started it has ended" },
    });
    const twice = async (n: number) => (await auto.runCode(`export default ${n} * 2;`, JS)).result;
    expect(await auto.runCode("export default await twice(3);", { ...JS, globals: { twice } })).toMatchObject({
      status: "success",
      result: 6,
    });
    // The nested runs, and the run that awaited one, handed over at its wait.
    expect(runs()).toBe(3);
  });

  it("nests a run a host function starts after its own await, as on threads: a guest recursing through it meets the depth limit", async () => {
    // Before, such a run was a root of its own: 9,639 levels in 4 s filled the workers' queue, and another caller's
    // run past its slice failed with its RangeError.
    let levels = 0;
    const deeper = async () => {
      await null;
      levels++;
      const { status, result, error } = await auto.runCode("export default await deeper();", {
        ...JS,
        globals: { deeper },
      });
      return status === "success" ? result : error?.message;
    };
    expect(await auto.runCode("export default await deeper();", { ...JS, globals: { deeper } })).toMatchObject({
      status: "success",
      result: "runCode: runs nest at most 8 deep through host functions; this one would be 9 deep",
    });
    expect(levels).toBe(9);
    expect(await auto.runCode("for (;;) {}", { ...JS, timeoutMs: 50 })).toMatchObject({ status: "terminated" });
  });

  it("hands the host its own functions back, as in-thread", async () => {
    const runs = runsOnWorkers();
    const mine = () => 1;
    const globals = { make: () => mine, same: (fn: unknown) => fn === mine };
    const source = "const f = make(); export default [same(f), f(), same(make)];";
    expect(await auto.runCode(source, { ...JS, globals })).toMatchObject({ result: [true, 1, false] });
    expect(runs()).toBe(0);
  });

  it("a stop during the replay ends the run without calling the host", async () => {
    const runs = runsOnWorkers();
    const { fn, calls } = counter(runs);
    let run!: ReturnType<typeof auto.runCode>;
    const answer = Replay.prototype.answer;
    vi.spyOn(Replay.prototype, "answer").mockImplementation(function (this: Replay, ...args) {
      run.terminate("enough");
      return answer.apply(this, args);
    });
    run = auto.runCode(`count(1); count(2); ${SPEND} count(3); export default 1;`, { ...JS, globals: { count: fn } });
    expect(await run).toMatchObject({ status: "terminated", error: { message: "enough" } });
    expect(calls).toEqual([
      [[1], "attempt"],
      [[2], "attempt"],
    ]);
    vi.restoreAllMocks();
    expect(await auto.runCode(`${SPEND} export default count(4);`, { ...JS, globals: { count: fn } })).toMatchObject({
      result: 3,
    });
  });

  it("a re-run that does not repeat its attempt's calls fails rather than call the host again", async () => {
    const runs = runsOnWorkers();
    const { fn, calls } = counter(runs);
    const answer = Replay.prototype.answer;
    vi.spyOn(Replay.prototype, "answer").mockImplementation(function (this: Replay, fnId, args) {
      return answer.call(this, fnId, [...args, "other"]);
    });
    const result = await auto.runCode(`count(1); ${SPEND} count(2); export default 1;`, {
      ...JS,
      globals: { count: fn },
    });
    expect(result).toMatchObject({
      status: "error",
      error: {
        name: "InternalError",
        message:
          "The run did not repeat on a worker thread what it did on the caller's thread: its host call 1 was of function 0 there and of function 0 here, or with other arguments; the host was not called again",
      },
    });
    expect(calls).toEqual([[[1], "attempt"]]);
  });
});

describe("the default path of a sandbox with fetch", () => {
  let server: LoopbackServer;
  beforeAll(async () => {
    server = await startServer();
  });
  afterAll(() => server.close());
  const sandbox = () => createSandbox({ webApis: true, fetch: { allow: [server.origin] } });
  const requests = (path: string) => server.received.filter((r) => r.path === path).length;
  /** `fetch` reached without its name in the code. */
  const unnamed = 'globalThis["fe" + "tch"]';

  it("keeps a run that does not name fetch on the caller's thread", async () => {
    const runs = runsOnWorkers();
    const result = await sandbox().runCode("export default typeof Response;", JS);
    expect(comparable(result)).toEqual({
      status: "success",
      result: "function",
      reports: [],
      logs: [],
      memoryUsedBytes: expect.any(Number),
      fuelUsed: expect.any(Number),
    });
    expect(runs()).toBe(0);
  });

  it("sends a run that names fetch, in its code or a module's, to a worker at once", async () => {
    const runs = runsOnWorkers();
    const named = await sandbox().runCode(`export default (await fetch(A + "/echo/named")).status;`, {
      ...JS,
      globals: { A: server.origin },
    });
    expect(named).toMatchObject({ status: "success", result: 200 });
    expect(named.fuelRedone).toBeUndefined();
    const moduled = await sandbox().runCode(`import { get } from "./get.js"; export default await get(A);`, {
      ...JS,
      globals: { A: server.origin },
      modules: { "./get.js": 'export const get = async (a) => (await fetch(a + "/echo/moduled")).status;' },
    });
    expect(moduled).toMatchObject({ status: "success", result: 200 });
    expect(moduled.fuelRedone).toBeUndefined();
    expect(runs()).toBe(2);
    expect([requests("/echo/named"), requests("/echo/moduled")]).toEqual([1, 1]);
  });

  it("ends the attempt of a run that reaches fetch unnamed before its request is sent: each request and host call made once", async () => {
    const runs = runsOnWorkers();
    const calls: string[] = [];
    const source = `const before = f("before");
      let caught = "no";
      try {
        const res = await ${unnamed}(A + "/echo/unnamed");
        caught = (await res.json()).path;
      } catch (e) {
        f("caught " + e.message);
      }
      export default [before, caught, f("after")];`;
    const result = await sandbox().runCode(source, {
      ...JS,
      globals: { A: server.origin, f: (what: string) => calls.push(what) },
    });
    expect(result).toMatchObject({ status: "success", result: [1, "/echo/unnamed", 2] });
    expect(result.fuelRedone).toEqual(expect.any(Number));
    expect(calls).toEqual(["before", "after"]);
    expect(requests("/echo/unnamed")).toBe(1);
    expect(runs()).toBe(1);
  });

  it("stops a run handed over at its unnamed fetch while the worker's request is in flight: one request, aborted", async () => {
    const run = sandbox().runCode(`await ${unnamed}(A + "/hang/handed");`, { ...JS, globals: { A: server.origin } });
    await server.arrived("/hang/handed");
    run.terminate("enough");
    expect(await run).toMatchObject({ status: "terminated", fuelRedone: expect.any(Number) });
    await server.dropped("/hang/handed");
    expect(requests("/hang/handed")).toBe(1);
  });

  it("hands over a run whose unnamed fetch the host refuses, which it refuses again on the worker, nothing sent", async () => {
    const result = await sandbox().runCode(
      `export default await ${unnamed}("https://off.example/x").then(() => "sent", (e) => [e.name, e.message]);`,
      JS,
    );
    expect(result).toMatchObject({
      status: "success",
      result: ["TypeError", "fetch: https://off.example is not on the sandbox's allow list"],
    });
  });
});
