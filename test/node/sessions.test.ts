import { readFileSync } from "node:fs";
import { afterEach, describe, expect, it } from "vitest";
import {
  type CodeExecutionResult,
  createSandbox,
  createSession,
  MAX_QUEUED_CELLS,
  restoreSession,
  type Session,
  SessionError,
  type SessionOptions,
} from "../../node/index.js";
import { INSTANCE_BOOT_FUEL } from "../../src/core/host-fuel.js";
import { memoryLayout } from "../../src/core/instance.js";
import { decodeSnapshot, encodeSnapshot } from "../../src/core/snapshot.js";
import { RUNCODE_VERSION } from "../../src/core/version.js";

const js = { language: "javascript" } as const;
/** A bound that only catches a hang. */
const HANG_MS = 20_000;

const open: Session[] = [];
afterEach(() => {
  for (const session of open.splice(0)) session.close();
});

async function session(options: SessionOptions = {}): Promise<Session> {
  const made = await createSession(options);
  open.push(made);
  return made;
}

/** What a result says, without its timing and measures. */
function outcome(result: CodeExecutionResult) {
  const { status, result: value, error } = result;
  return status === "success" ? { status, result: value } : { status, name: error?.name, message: error?.message };
}

async function value(s: Session, cell: string): Promise<unknown> {
  const result = await s.run(cell, js);
  expect(result.error).toBeUndefined();
  return result.result;
}

describe("a session's cells", () => {
  it("keep what earlier cells declared, and answer their completion values", async () => {
    const s = await session();
    expect(await s.run("var x = 41; function twice(n) { return 2 * n }", js)).toMatchObject({
      status: "success",
      result: undefined,
    });
    expect(await value(s, "x + 1")).toBe(42);
    expect(await value(s, "twice(x)")).toBe(82);
    expect(await value(s, "x = await Promise.resolve(7); x")).toBe(7);
    expect(await value(s, "if (x > 1) { 'big' } else { 'small' }")).toBe("big");
    expect(await value(s, "({ a: [1n, new Map([[1, 2]])] })")).toEqual({ a: [1n, new Map([[1, 2]])] });
    expect(s.cells).toBe(6);
  });

  it("erase TypeScript, and report console entries, reports and cell-relative positions", async () => {
    const s = await session();
    const typed = await s.run("var n: number = 2;\nconsole.log('n', n); report(n * 3); n");
    expect(typed).toMatchObject({ status: "success", result: 2, reports: [6] });
    expect(typed.logs.map((entry) => entry.args)).toEqual([["n", 2]]);
    const thrown = await s.run("var y = 1;\n  null.x", { ...js, filename: "step.js" });
    expect(thrown.status).toBe("error");
    expect(thrown.error).toMatchObject({ name: "TypeError", filename: "step.js", line: 2 });
    expect(await value(s, "y")).toBe(1);
  });

  it("give a syntax error as a link error, and an import that does not resolve too", async () => {
    const s = await session();
    expect(outcome(await s.run("var = 1", js))).toMatchObject({ status: "link_error", name: "SyntaxError" });
    expect(outcome(await s.run("export const a = 1", js))).toEqual({
      status: "link_error",
      name: "SyntaxError",
      message: "A cell cannot export: it is a script",
    });
    const missing = await s.run("var before = 1;\nimport x from './nope.js'", js);
    expect(missing.status).toBe("link_error");
    expect(missing.error).toMatchObject({ name: "LinkError", specifier: "./nope.js" });
    expect(await value(s, "typeof before")).toBe("undefined");
  });

  it("keep let, const and class declarations, which a later cell may declare again, as a console does", async () => {
    const s = await session();
    expect(
      await s.run("let n = 1; const k = { v: 2 }; class Point { constructor(x) { this.x = x } }", js),
    ).toMatchObject({ status: "success", result: undefined });
    expect(await value(s, "[n, k.v, new Point(3).x]")).toEqual([1, 2, 3]);
    expect(await value(s, "const getN = () => n; n = 5; getN()")).toBe(5);
    expect(await value(s, "let n = 'again'; const k = 7; [n, k, getN()]")).toEqual(["again", 7, "again"]);
    expect(await value(s, "k = 8; k")).toBe(7);
    expect(await value(s, "const { a, b: [c] = [9] } = { a: 1 }; [a, c]")).toEqual([1, 9]);
  });

  it("bind imports at a cell's top like const: the options' bare specifiers and relative modules", async () => {
    const s = await session({
      imports: { units: { default: "cm", per: 100 } },
      modules: { "./lib.ts": "export const half = (n: number): number => n / 2;" },
    });
    expect(
      await s.run("import unit, { per } from 'units';\nimport { half } from './lib.ts';\nhalf(per) + unit"),
    ).toMatchObject({
      status: "success",
      result: "50cm",
    });
    expect(await value(s, "[unit, per, half(8)]")).toEqual(["cm", 100, 4]);
  });

  it("see the options' globals, imports and modules, given once, and call host functions", async () => {
    const calls: unknown[] = [];
    const s = await session({
      globals: { base: 10, record: (n: unknown) => calls.push(n) },
      imports: { tools: { add: (a: number, b: number) => a + b, unit: "cm" } },
      modules: { "./lib.js": "export const triple = (n) => 3 * n;" },
    });
    expect(await value(s, "record(base); base")).toBe(10);
    expect(await value(s, "var m = await import('tools'); m.add(base, 5) + m.unit")).toBe("15cm");
    expect(await value(s, "var lib = await import('./lib.js'); lib.triple(base)")).toBe(30);
    expect(await value(s, "lib.triple(m.add(1, 1))")).toBe(6);
    expect(calls).toEqual([10]);
  });

  it("leave the session usable with every effect before the stop: a throw, fuel, memory, time, terminate", async () => {
    const s = await session({
      clock: () => 0,
      safetyCap: { fuel: 20_000_000 },
      memoryLimitBytes: 16 * 1024 * 1024,
      globals: { never: () => new Promise(() => {}) },
    });
    expect(outcome(await s.run("var a = 1; throw new RangeError('no')", js))).toEqual({
      status: "error",
      name: "RangeError",
      message: "no",
    });
    const spent = await s.run("var b = 2; for (;;) {}", js);
    expect(spent.status).toBe("terminated");
    expect(spent.error?.message).toMatch(/20000000 units of fuel/);
    const full = await s.run("var c = 3; var big = []; for (;;) big.push(new Array(100000).fill(1))", js);
    expect(full.status).toBe("memory");
    expect(await value(s, "big = undefined; [a, b, c]")).toEqual([1, 2, 3]);
    // On the caller's thread a synchronous loop holds the timer back: the time limit's cap stops it, in fuel where
    // the clock stands still (10 ms: 10,000,000 units).
    const timed = await s.run("var d = 4; for (;;) {}", { ...js, timeoutMs: 10 });
    expect(outcome(timed)).toMatchObject({
      status: "terminated",
      message: "Execution stopped by the safety cap after 10000000 units of fuel",
    });
    const handle = s.run("var e = 5; await never()", js);
    setTimeout(() => handle.terminate("enough"), 10);
    expect(outcome(await handle)).toMatchObject({ status: "terminated", message: "enough" });
    expect(await value(s, "[a, b, c, d, e]")).toEqual([1, 2, 3, 4, 5]);
  });

  it("pay for their parse on the host before it is done: a cell its fuel cannot parse ends on its fuel", async () => {
    const s = await session({ clock: () => 0, safetyCap: { fuel: 5_000_000 } });
    // 80,006 characters at 80 units each: past the cap before the parse; the engine alone spends far less on it.
    const padded = `/*${"x".repeat(80_000)}*/ 1 + 1`;
    expect(outcome(await s.run(padded, js))).toEqual({
      status: "terminated",
      name: "TerminatedError",
      message: "Execution stopped by the safety cap after 5000000 units of fuel",
    });
    const small = await s.run(`/*${"x".repeat(1_000)}*/ 1 + 1`, js);
    expect(small.status).toBe("success");
    expect(small.fuelUsed).toBeGreaterThan(80 * 1_006);
  });

  it("go back to the state before a cell that left the engine unfit (a hard stop inside a native)", async () => {
    const s = await session({ clock: () => 0, safetyCap: { fuel: 20_000_000 } });
    await value(s, "var kept = 1");
    const source = "kept = 2; var x = 3n ** 2000000n; for (;;) x = (x * x) % (3n ** 2000000n);";
    const stopped = await s.run(source, js);
    expect(stopped.status).toBe("terminated");
    // It pays for the instance the session takes in its place, as a run does (before: the cap and the grace alone).
    expect(stopped.fuelUsed).toBeGreaterThan(20_000_000 + INSTANCE_BOOT_FUEL);
    expect(await value(s, "[kept, typeof x]")).toEqual([1, "undefined"]);
    expect(await value(s, "kept = 3")).toBe(3);
  });

  it("end the timers they leave, and stop on their signal", async () => {
    const s = await session({ webApis: true });
    const left = s.run("var fired = 0; setTimeout(() => { fired++ }, 5); for (;;) {}", { ...js, timeoutMs: 50 });
    expect((await left).status).toBe("terminated");
    expect(await value(s, "await new Promise((r) => setTimeout(r, 30)); fired")).toBe(0);
    const controller = new AbortController();
    const cell = s.run("await new Promise(() => {})", { ...js, signal: controller.signal });
    controller.abort(new Error("user left"));
    expect(outcome(await cell)).toMatchObject({ status: "terminated", message: "user left" });
  });

  it("run one at a time, in order, and refuse past the queue's bound", async () => {
    const s = await session({ webApis: true });
    const order: unknown[] = [];
    const first = s.run("var log = []; await new Promise((r) => setTimeout(r, 20)); log.push(1); log", js);
    const second = s.run("log.push(2); log", js);
    first.then((r) => order.push(r.result));
    second.then((r) => order.push(r.result));
    await Promise.all([first, second]);
    expect(order).toEqual([[1], [1, 2]]);
    const queued = Array.from({ length: MAX_QUEUED_CELLS }, () => s.run("1", js));
    expect(() => s.run("1", js)).toThrow(SessionError);
    expect(() => s.run("1", js)).toThrow(/queued on this session/);
    await Promise.all(queued);
    expect(await value(s, "log.length")).toBe(2);
  });

  it("refuse bad options with a TypeError", async () => {
    const s = await session();
    expect(() => s.run("1", { nope: 1 } as never)).toThrow(/unknown option 'nope'/);
    expect(() => s.run("1", { language: "python" } as never)).toThrow(TypeError);
    expect(() => s.run("1", { signal: {} } as never)).toThrow(/signal must be an AbortSignal/);
    expect(() => s.run(1 as never)).toThrow(TypeError);
  });
});

describe("closing a session", () => {
  it("refuses later calls and ends queued cells", async () => {
    const s = await createSession({ webApis: true });
    const running = s.run("await new Promise((r) => setTimeout(r, 50)); 1", js);
    const queued = s.run("2", js);
    s.close();
    s.close();
    expect(s.closed).toBe(true);
    expect((await running).status).toBe("terminated");
    expect(outcome(await queued)).toMatchObject({ status: "terminated", message: /the session was closed/ });
    for (const call of [() => s.run("1"), () => s.snapshot(), () => s.fork()]) {
      expect(call).toThrow(expect.objectContaining({ name: "SessionError", code: "closed" }));
    }
  });
});

describe("forks", () => {
  it("go on apart from their parent, with their own random values", async () => {
    const s = await session();
    await value(s, "var list = [1]; var seen = Math.random()");
    const t = await s.fork();
    open.push(t);
    await value(t, "list.push(2)");
    await value(s, "list.push(3)");
    expect(await value(t, "list")).toEqual([1, 2]);
    expect(await value(s, "list")).toEqual([1, 3]);
    expect(t.cells).toBe(s.cells);
    const [parent, fork] = await Promise.all([value(s, "Math.random()"), value(t, "Math.random()")]);
    expect(parent).not.toBe(fork);
  });

  it("outlive their parent, and fork again", async () => {
    const s = await createSession();
    await value(s, "var depth = 0");
    const t = await s.fork();
    open.push(t);
    s.close();
    expect(await value(t, "++depth")).toBe(1);
    const u = await t.fork();
    open.push(u);
    expect(await value(u, "++depth")).toBe(2);
    expect(await value(t, "depth")).toBe(1);
  });
});

describe("snapshots", () => {
  it("ask the memory their state spans, not the length an earlier run on the same instance grew it to", async () => {
    // The snapshot's header: JSON after the magic, the format, the length and the header's own length.
    const headerOf = (bytes: Uint8Array) => {
      const length = new DataView(bytes.buffer, bytes.byteOffset).getUint32(14, true);
      return JSON.parse(new TextDecoder().decode(bytes.subarray(18, 18 + length))) as { memoryBytes: number };
    };
    // The run's instance goes back to the pool the entry's sessions take from, its memory kept grown.
    // (Twice: the pool's first run gets an instance booted for it alone, never kept.)
    const memoryLimitBytes = 48 * 1024 * 1024;
    const sandbox = createSandbox({ threads: false });
    for (let i = 0; i < 2; i++) {
      const grown = await sandbox.runCode("export default new Uint8Array(12 * 1024 * 1024).fill(1).length", {
        ...js,
        memoryLimitBytes,
      });
      expect(outcome(grown)).toEqual({ status: "success", result: 12 * 1024 * 1024 });
    }
    const s = await session({ memoryLimitBytes });
    await value(s, "var data = [1, 2, 3]");
    expect(headerOf(await s.snapshot()).memoryBytes).toBe(16 * 1024 * 1024);
  });

  it("restore the whole state, rebinding host functions by path", async () => {
    const s = await session({ globals: { scale: (n: number) => n * 2 }, webApis: true });
    await value(s, "var data = { rows: [1, 2, 3] }; var total = data.rows.reduce((a, b) => a + b)");
    const bytes = await s.snapshot();
    expect(bytes).toBeInstanceOf(Uint8Array);
    const r = await restoreSession(bytes, { globals: { scale: (n: number) => n * 10 }, webApis: true });
    open.push(r);
    expect(r.cells).toBe(s.cells);
    expect(await value(r, "[total, scale(total), data.rows.length]")).toEqual([6, 60, 3]);
    await value(r, "data.rows.push(4)");
    expect(await value(s, "data.rows.length")).toBe(3);
  });

  it("keep a crypto.subtle key made in an earlier cell, non-extractable and still working, in later cells and restored", async () => {
    const s = await session({ webApis: true });
    await value(
      s,
      `var key = await crypto.subtle.importKey("raw", new TextEncoder().encode("Jefe"), { name: "HMAC", hash: "SHA-256" },
        false, ["sign"]); 0`,
    );
    const mac = `var mac = await crypto.subtle.sign("HMAC", key, new TextEncoder().encode("what do ya want for nothing?"));
      Array.from(new Uint8Array(mac).slice(0, 8), (x) => x.toString(16).padStart(2, "0")).join("")`;
    // RFC 4231, test case 2.
    expect(await value(s, mac)).toBe("5bdcc146bf60754e");
    const r = await restoreSession(await s.snapshot(), { webApis: true });
    open.push(r);
    expect(await value(r, mac)).toBe("5bdcc146bf60754e");
    expect(
      await value(r, "var refused = await crypto.subtle.exportKey('raw', key).catch((e) => e.name); refused"),
    ).toBe("InvalidAccessError");
  });

  it("refuse other settings, changed bytes and what is not a snapshot", async () => {
    const s = await session({ globals: { f: () => 1 } });
    await value(s, "var x = 1");
    const bytes = await s.snapshot();
    const refused = (promise: Promise<unknown>, code: string) =>
      expect(promise).rejects.toMatchObject({ name: "SessionError", code });
    await refused(restoreSession(bytes, { globals: { f: () => 2 }, webApis: true }), "snapshot_mismatch");
    await refused(restoreSession(bytes, { globals: { g: () => 2 } }), "snapshot_mismatch");
    await refused(restoreSession(bytes.slice(0, bytes.length - 1), { globals: { f: () => 2 } }), "invalid_snapshot");
    await refused(restoreSession(new Uint8Array(64), {}), "invalid_snapshot");
    await expect(restoreSession("bytes" as never)).rejects.toThrow(TypeError);
  });

  it("refuse bytes whose allocator's break lies outside the span their header gives", async () => {
    const s = await session();
    await value(s, "var keep = 'x'.repeat(100000); 0");
    const { header, writeInto } = await decodeSnapshot(await s.snapshot(), {
      runcode: RUNCODE_VERSION,
      maxMemoryBytes: 1 << 30,
    });
    const { breakAt } = (await memoryLayout(
      await WebAssembly.compile(readFileSync(new URL("../../wasm/quickjs-fuel.wasm", import.meta.url))),
    )) as { breakAt: number };
    const memory = new Uint8Array(header.span);
    writeInto(memory, () => undefined);
    for (const forged of [0x7ffffff0, header.span + 65536, 16]) {
      new DataView(memory.buffer).setInt32(breakAt, forged, true);
      // A digest over the whole is no signature: anyone can write bytes that pass it.
      const bytes = await encodeSnapshot(header, memory, () => undefined);
      await expect(restoreSession(bytes)).rejects.toMatchObject({
        name: "SessionError",
        code: "invalid_snapshot",
        message: `restoreSession: Invalid snapshot: the allocator's break in its memory is not within its span ${header.span}`,
      });
    }
  });

  it("keep a snapshot's own memory limit only up to the default, unless the options give it", async () => {
    // A stranger's session file asking 1 GiB, restored without a limit (`runcode run --session FILE` with no --memory).
    const s = await session({ memoryLimitBytes: 1024 * 1024 * 1024 });
    const bytes = await s.snapshot();
    await expect(restoreSession(bytes)).rejects.toMatchObject({
      name: "SessionError",
      code: "snapshot_mismatch",
      message:
        "restoreSession: the snapshot asks memoryLimitBytes 1073741824, more than this sandbox's default (67108864): " +
        "give memoryLimitBytes to restore it with that much",
    });
    const r = await restoreSession(bytes, { memoryLimitBytes: 16 * 1024 * 1024 });
    open.push(r);
    expect((await r.run("new Uint8Array(32 * 1024 * 1024).length", js)).status).toBe("memory");
    // Within the default, the snapshot's own limit holds.
    const small = await session({ memoryLimitBytes: 16 * 1024 * 1024 });
    const again = await restoreSession(await small.snapshot());
    open.push(again);
    expect((await again.run("new Uint8Array(32 * 1024 * 1024).length", js)).status).toBe("memory");
  });
});

describe("a session's bounds", () => {
  it("hold its memory to its limit across cells", async () => {
    const s = await session({ memoryLimitBytes: 8 * 1024 * 1024 });
    for (let i = 0; i < 3; i++) {
      const result = await s.run(`var keep${i} = new Array(100000).fill(${i})`, js);
      expect(result.status).toBe("success");
    }
    const started = performance.now();
    expect((await s.run("var more = []; for (;;) more.push(new Array(100000).fill(1))", js)).status).toBe("memory");
    expect(performance.now() - started).toBeLessThan(HANG_MS);
    expect(await value(s, "more = undefined; keep2[0]")).toBe(2);
  });
});
