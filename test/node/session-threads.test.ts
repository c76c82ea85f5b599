import { afterEach, describe, expect, it } from "vitest";
import { type CodeExecutionResult, SessionError } from "../../node/index.js";
import { MAX_HOST_CALLS_PER_SESSION, threadedSessions } from "../../node/session-threads/engine.js";
import type { EngineSession, EngineSessionOptions } from "../../src/host/sessions/engine.js";

const js = { language: "javascript" } as const;
/** A bound that only catches a hang. */
const HANG_MS = 10_000;
/** Guest work that runs for seconds unless stopped: no interrupt poll lets it yield to the worker's event loop. */
const SPIN = "for (;;) {}";
/** A cap far past any test's length: only the stop ends a spinning cell. */
const LONG = { safetyCap: { fuel: 2e9, cpuTimeMs: 600_000 } };

const engine = threadedSessions(LONG, { threads: 2 });
const open: EngineSession[] = [];
afterEach(() => {
  for (const session of open.splice(0)) session.close();
});

async function session(options: Partial<EngineSessionOptions> = {}): Promise<EngineSession> {
  const made = await engine.create({ tenant: "t", ...options });
  open.push(made);
  return made;
}

async function value(s: EngineSession, cell: string): Promise<unknown> {
  const result = await s.run(cell, js);
  expect(result.error).toBeUndefined();
  return result.result;
}

function within<T>(ms: number, work: PromiseLike<T>): Promise<T> {
  return Promise.race([
    work,
    new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`no answer in ${ms} ms`)), ms)),
  ]);
}

describe("sessions on worker threads", () => {
  it("keep state across cells, and count them", async () => {
    const s = await session();
    expect(await value(s, "let total = 40; const items = new Map([[1, 2n]]);")).toBeUndefined();
    expect(await value(s, "total += 2; total")).toBe(42);
    expect(await value(s, "items")).toEqual(new Map([[1, 2n]]));
    expect(await value(s, "({ at: new Date(0), bytes: new Uint8Array([1, 2]), set: new Set(['a']) })")).toEqual({
      at: new Date(0),
      bytes: new Uint8Array([1, 2]),
      set: new Set(["a"]),
    });
    expect(s.cells).toBe(4);
    expect(s.memoryBytes).toBeGreaterThan(0);
  });

  it("stream logs and reports to the host as they come, in order, and keep them in the result", async () => {
    const s = await session();
    const seen: unknown[] = [];
    const execution = s.run(
      `console.log("a", 1); report({ step: 1 }); await new Promise((r) => r()); console.warn("b"); report(2); "done"`,
      { ...js, onLog: (entry) => seen.push([entry.level, ...entry.args]), report: (v) => seen.push({ report: v }) },
    );
    const result = await execution;
    expect(seen).toEqual([["log", "a", 1], { report: { step: 1 } }, ["warn", "b"], { report: 2 }]);
    expect(result.status).toBe("success");
    expect(result.result).toBe("done");
    expect(result.reports).toEqual([{ step: 1 }, 2]);
    expect(execution.reports).toEqual([{ step: 1 }, 2]);
    expect(result.logs.map(({ level, args }) => [level, ...args])).toEqual([
      ["log", "a", 1],
      ["warn", "b"],
    ]);
  });

  it("drop what a cell's listeners throw: the cell and the session go on", async () => {
    const s = await session();
    const throwing = () => {
      throw new Error("a listener's fault");
    };
    const result = await s.run("console.log(1); report(2); 3", { ...js, onLog: throwing, report: throwing });
    expect(result).toMatchObject({ status: "success", result: 3, reports: [2] });
    expect(await value(s, "4")).toBe(4);
  });

  it("keep the host's event loop free while a cell computes", async () => {
    const s = await session();
    const execution = s.run(SPIN, js);
    let ended = false;
    void execution.then(() => {
      ended = true;
    });
    const fired = await new Promise<boolean>((resolve) => setTimeout(() => resolve(!ended), 10));
    expect(fired).toBe(true);
    expect(execution.running).toBe(true);
    execution.terminate("enough");
    expect((await execution).status).toBe("terminated");
  });

  it("stop a cell spinning in synchronous code at once, and the session goes on", async () => {
    const s = await session();
    await value(s, "let kept = 'before'");
    const execution = s.run(SPIN, js);
    await new Promise((resolve) => setTimeout(resolve, 50));
    execution.terminate("stopped by the test");
    const result = await execution;
    expect(result.status).toBe("terminated");
    expect(result.error).toEqual({ name: "TerminatedError", message: "stopped by the test" });
    expect(execution.running).toBe(false);
    // The worker's cell ended too: the next one runs.
    expect(await within(HANG_MS, s.run("kept + ' and after'", js))).toMatchObject({
      status: "success",
      result: "before and after",
    });
  });

  it("stop a spinning cell on its signal, and one stopped while it waited for its turn never runs", async () => {
    const s = await session();
    const controller = new AbortController();
    const spinning = s.run(SPIN, { ...js, signal: controller.signal });
    const waiting = s.run("globalThis.ran = true", js);
    waiting.terminate();
    controller.abort(new Error("aborted by the test"));
    expect((await spinning).error).toEqual({ name: "TerminatedError", message: "aborted by the test" });
    expect((await waiting).error).toEqual({ name: "TerminatedError", message: "Execution terminated by the caller" });
    expect(await within(HANG_MS, value(s, "typeof ran"))).toBe("undefined");
  });

  it("end a cell at its timeoutMs, though it spins", async () => {
    const s = await session();
    const result = await within(HANG_MS, s.run(SPIN, { ...js, timeoutMs: 100 }));
    expect(result.status).toBe("terminated");
    // The worker's core ends it first, by the safety cap it lowers to the time limit, as in-thread.
    expect(result.error?.name).toBe("TerminatedError");
    expect(result.error?.message).toMatch(/^Execution stopped by the safety cap/);
    expect(await within(HANG_MS, value(s, "1 + 1"))).toBe(2);
  });

  it("call the host's functions from cells: their values come back, what they throw is the guest's error", async () => {
    const calls: unknown[] = [];
    const tools = {
      double: async ({ n }: { n: number }) => {
        calls.push(n);
        return { doubled: n * 2, at: new Date(5) };
      },
      fail: async () => {
        throw new RangeError("no such thing");
      },
    };
    const s = await session({ imports: { tools }, globals: { same: tools.double, settings: { level: 3 } } });
    expect(await value(s, `import { double } from "tools"; await double({ n: 21 })`)).toEqual({
      doubled: 42,
      at: new Date(5),
    });
    expect(await value(s, "(await same({ n: settings.level })).doubled")).toBe(6);
    expect(calls).toEqual([21, 3]);
    expect(
      await value(s, `import { fail } from "tools"; try { await fail() } catch (e) { [e.name, e.message] }`),
    ).toEqual(["RangeError", "no such thing"]);
    const uncaught = await s.run(`import { fail } from "tools"; await fail()`, js);
    expect(uncaught.status).toBe("error");
    expect(uncaught.error).toMatchObject({ name: "RangeError", message: "no such thing" });
  });

  it("take the options' data as the in-thread core does: a key named __proto__, holes, values shared", async () => {
    const shared = { n: 1 };
    const holes = [1];
    holes.length = 3;
    const data = { ...JSON.parse('{"__proto__": {"x": 1}}'), holes, a: shared, b: shared };
    const s = await session({ globals: { data } });
    expect(await value(s, "[Object.keys(data), data.holes.length, 1 in data.holes, data.a === data.b]")).toEqual([
      ["__proto__", "holes", "a", "b"],
      3,
      false,
      true,
    ]);
  });

  it("bound the host calls a session has in flight: past the bound a call throws a RangeError in the guest", async () => {
    const gate: (() => void)[] = [];
    const wait = () =>
      new Promise<string>((resolve) => {
        gate.push(() => resolve("answered"));
        if (gate.length === MAX_HOST_CALLS_PER_SESSION) {
          setTimeout(() => {
            for (const open of gate) open();
          }, 100);
        }
      });
    const s = await session({ globals: { wait } });
    const cell = `const outcomes = await Promise.all(Array.from({ length: ${MAX_HOST_CALLS_PER_SESSION + 10} },
      () => wait().then((v) => v, (e) => e.name + ": " + e.message)));
    [outcomes.filter((o) => o === "answered").length, [...new Set(outcomes.filter((o) => o !== "answered"))]]`;
    expect(await value(s, cell)).toEqual([
      MAX_HOST_CALLS_PER_SESSION,
      [`RangeError: ${MAX_HOST_CALLS_PER_SESSION} host calls of this session are in flight: await some first`],
    ]);
  });

  it("snapshot and restore through the engine: the state, the count and the host functions again", async () => {
    const options = { imports: { tools: { hello: async (name: unknown) => `hello ${name}` } } };
    const s = await session(options);
    await value(s, "var greeting = 'world'; const big = 12n ** 20n");
    const bytes = await s.snapshot();
    expect(bytes).toBeInstanceOf(Uint8Array);
    const restored = await engine.restore(bytes, { tenant: "t", ...options });
    open.push(restored);
    expect(restored.cells).toBe(1);
    expect(await value(restored, `import { hello } from "tools"; [await hello(greeting), big]`)).toEqual([
      "hello world",
      12n ** 20n,
    ]);
    await expect(engine.restore(bytes, { tenant: "t" })).rejects.toMatchObject({
      name: "SessionError",
      code: "snapshot_mismatch",
    });
    const refused = engine.restore(new Uint8Array([1, 2, 3]), { tenant: "t", ...options });
    await expect(refused).rejects.toBeInstanceOf(SessionError);
    await expect(refused).rejects.toMatchObject({ code: "invalid_snapshot" });
  });

  it("fork sessions that change independently", async () => {
    const s = await session();
    await value(s, "const list = [1]");
    const fork = await s.fork();
    open.push(fork);
    expect(fork.cells).toBe(1);
    await value(fork, "list.push(2)");
    await value(s, "list.push(3)");
    expect(await value(s, "list")).toEqual([1, 3]);
    expect(await value(fork, "list")).toEqual([1, 2]);
  });

  it("close: the running cell ends, and later calls are refused", async () => {
    const s = await session();
    const spinning = s.run(SPIN, js);
    s.close();
    expect(await spinning).toMatchObject({
      status: "terminated",
      error: { name: "TerminatedError", message: "Execution terminated: the session was closed" },
    });
    expect(() => s.run("1", js)).toThrow(new SessionError("closed", "Session.run: the session is closed"));
    expect(() => s.snapshot()).toThrow(SessionError);
    s.close();
  });

  it("a worker that dies ends its cells as an InternalError, its sessions act closed, and new ones get a worker", async () => {
    const s = await session();
    const spinning = s.run(SPIN, js);
    await engine.endThreadOf(s);
    const result: CodeExecutionResult = await within(HANG_MS, spinning);
    expect(result.status).toBe("error");
    expect(result.error).toEqual({
      name: "InternalError",
      message: "The worker thread holding the session exited",
    });
    expect(() => s.run("1", js)).toThrow(SessionError);
    const next = await session();
    expect(await value(next, "6 * 7")).toBe(42);
  });
});
