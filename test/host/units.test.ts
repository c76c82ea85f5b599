import { describe, expect, test } from "vitest";
import {
  HOST_STATES,
  kvService,
  MemoryKeyValueStore,
  MemoryProcessStore,
  type ProcessRecord,
  ToolError,
  ToolRegistry,
  toJson,
  transition,
} from "../../src/host/index.js";

describe("state machine", () => {
  test("exactly the diagram's transitions (+ idle -> queued for a re-run); duplicates and nonsense are told apart", () => {
    const table = Object.fromEntries(
      HOST_STATES.map((from) => [from, Object.fromEntries(HOST_STATES.map((to) => [to, transition(from, to)]))]),
    );
    expect(table).toEqual({
      idle: { idle: "duplicate", queued: "apply", running: "reject", terminating: "reject" },
      queued: { idle: "apply", queued: "duplicate", running: "apply", terminating: "reject" },
      running: { idle: "apply", queued: "reject", running: "duplicate", terminating: "apply" },
      terminating: { idle: "apply", queued: "reject", running: "reject", terminating: "duplicate" },
    });
  });
});

const record = (pid: number, patch: Partial<ProcessRecord> = {}): ProcessRecord => ({
  pid,
  tenant: "anonymous",
  state: "idle",
  exitState: null,
  code: "1",
  timeoutMs: 1000,
  output: {},
  stdout: "",
  stderr: "",
  error: null,
  truncated: { stdout: false, stderr: false, output: false },
  runs: 1,
  createdAt: 0,
  startedAt: null,
  finishedAt: null,
  ...patch,
});

describe("MemoryProcessStore", () => {
  test("pids ascend by one within a tenant and are never reused, even after a delete", async () => {
    const store = new MemoryProcessStore();
    const a = await store.nextPid("anonymous");
    await store.create(record(a));
    expect(await store.delete(a)).toBe(true);
    expect(await store.delete(a)).toBe(false);
    expect([await store.nextPid("anonymous"), await store.nextPid("anonymous")]).toEqual([a + 1, a + 2]);
  });

  test("a tenant's pids count its own processes only: another's 1,000 creations leave no trace in them", async () => {
    const quiet = new MemoryProcessStore();
    const busy = new MemoryProcessStore();
    for (let i = 0; i < 1_000; i++) await busy.nextPid("other");
    const pids = [quiet, busy].map(async (store) => [await store.nextPid("me"), await store.nextPid("me")]);
    const [inQuiet, inBusy] = (await Promise.all(pids)) as [number[], number[]];
    // Each is the tenant's random tag times 2^32 plus its own count: the same counts whatever others did.
    expect(inQuiet.map((pid) => pid % 2 ** 32)).toEqual([1, 2]);
    expect(inBusy.map((pid) => pid % 2 ** 32)).toEqual([1, 2]);
    const other = await busy.nextPid("other");
    expect([other % 2 ** 32, Math.floor(other / 2 ** 32) === Math.floor((inBusy[0] as number) / 2 ** 32)]).toEqual([
      1_001,
      false,
    ]);
    for (const pid of [...inQuiet, ...inBusy, other]) expect(Number.isSafeInteger(pid) && pid > 2 ** 32).toBe(true);
  });

  test("records are copied in and out; update patches; list filters and limits by ascending pid", async () => {
    const store = new MemoryProcessStore();
    const original = record(1, { ref: "x" });
    await store.create(original);
    original.stdout = "mutated";
    const got = (await store.get(1)) as ProcessRecord;
    got.output.a = 1;
    expect(await store.get(1)).toEqual(record(1, { ref: "x" }));
    await expect(store.create(record(1))).rejects.toThrow("Process 1 exists");
    expect(await store.update(1, { state: "queued", stdout: "s" })).toEqual(
      record(1, { ref: "x", state: "queued", stdout: "s" }),
    );
    expect(await store.update(9, { state: "queued" })).toBeUndefined();
    await store.create(record(3, { exitState: "failed" }));
    await store.create(record(2, { exitState: "success", ref: "x" }));
    expect((await store.list()).map((r) => r.pid)).toEqual([1, 2, 3]);
    expect((await store.list({ ref: "x" })).map((r) => r.pid)).toEqual([1, 2]);
    expect((await store.list({ exitState: "failed" })).map((r) => r.pid)).toEqual([3]);
    expect((await store.list({ state: "queued" })).map((r) => r.pid)).toEqual([1]);
    expect((await store.list({ limit: 2 })).map((r) => r.pid)).toEqual([1, 2]);
  });
});

describe("MemoryProcessStore order", () => {
  test("records created out of pid order still list in pid order, and the limit stops the walk", async () => {
    const store = new MemoryProcessStore();
    for (const pid of [2, 5, 1, 4, 3]) await store.create(record(pid));
    expect((await store.list()).map((r) => r.pid)).toEqual([1, 2, 3, 4, 5]);
    expect((await store.list({ limit: 2 })).map((r) => r.pid)).toEqual([1, 2]);
    expect(await store.list({ limit: 0 })).toEqual([]);
  });
});

describe("MemoryKeyValueStore usage and prefixes", () => {
  test("keys stay sorted, prefixes list exactly (emoji included), usage follows every write", async () => {
    const kv = new MemoryKeyValueStore();
    for (const key of ["b", "a😀", "a", "ab", "a\uffff"]) await kv.set(key, key.length);
    expect(await kv.list({ prefix: "a" })).toEqual(["a", "ab", "a😀", "a\uffff"]);
    expect(await kv.list({ prefix: "a", limit: 2 })).toEqual(["a", "ab"]);
    expect(await kv.list({ prefix: "c" })).toEqual([]);
    expect(await kv.usage()).toEqual({ keys: 5, bytes: 1 + 1 + 5 + 1 + 1 + 1 + 2 + 1 + 4 + 1 });
    await kv.set("ab", "xyz");
    expect(await kv.delete("a😀")).toBe(true);
    expect(await kv.usage()).toEqual({ keys: 4, bytes: 2 + 2 + 2 + 5 + 4 + 1 });
    await expect(kv.set("c", 1, { maxKeys: 4, maxBytes: 1000 })).rejects.toThrow(
      "quota exceeded: the store may hold at most 4 keys",
    );
    await kv.set("ab", 1, { maxKeys: 4, maxBytes: 1000 });
  });
});

describe("MemoryKeyValueStore", () => {
  test("JSON values by key, sorted prefix listing, delete", async () => {
    const kv = new MemoryKeyValueStore();
    await kv.set("b", { n: 1 });
    await kv.set("a/1", [1, "x"]);
    await kv.set("a/2", null);
    expect(await kv.get("b")).toEqual({ n: 1 });
    expect(await kv.get("a/2")).toBeNull();
    expect(await kv.get("none")).toBeUndefined();
    expect(await kv.list()).toEqual(["a/1", "a/2", "b"]);
    expect(await kv.list({ prefix: "a/", limit: 1 })).toEqual(["a/1"]);
    expect(await kv.delete("b")).toBe(true);
    expect(await kv.delete("b")).toBe(false);
    await expect(kv.set("u", undefined)).rejects.toThrow("kv values must be JSON values");
  });
});

describe("toJson", () => {
  test("the documented conversion of cloned values", () => {
    expect(
      toJson({
        d: new Date(0),
        b: 12n,
        m: new Map([["k", 1]]),
        s: new Set([1]),
        u: undefined,
        t: new Uint8Array([1, 2]),
      }),
    ).toEqual({ d: "1970-01-01T00:00:00.000Z", b: "12", m: { k: 1 }, s: [1], t: [1, 2] });
  });
});

describe("ToolRegistry", () => {
  const registry = () =>
    new ToolRegistry().register({
      id: "math",
      description: "Arithmetic",
      tools: [
        {
          id: "add",
          description: "Adds",
          inputSchema: {
            type: "object",
            properties: { a: { type: "number" }, b: { type: "number" } },
            required: ["a", "b"],
            additionalProperties: false,
          },
          outputSchema: { type: "number" },
          run: (p) => (p.a as number) + (p.b as number),
        },
        {
          id: "boom",
          description: "Fails",
          inputSchema: { type: "object" },
          run: () => {
            throw new Error("exploded");
          },
        },
      ],
    });

  test("lists services with full tool definitions", () => {
    expect(registry().list()).toEqual([
      {
        id: "math",
        name: "math",
        description: "Arithmetic",
        tools: [
          expect.objectContaining({ id: "add", name: "add", description: "Adds", outputSchema: { type: "number" } }),
          { id: "boom", name: "boom", description: "Fails", inputSchema: { type: "object" }, outputSchema: {} },
        ],
      },
    ]);
  });

  test("validates before running; every failure is a ToolError with a clear message", async () => {
    const r = registry();
    expect(await r.invoke({ serviceId: "math", toolId: "add", parameters: { a: 1, b: 2 } })).toBe(3);
    const failure = async (serviceId: string, toolId: string, parameters: Record<string, unknown>) => {
      const error = (await r.invoke({ serviceId, toolId, parameters }).catch((e: unknown) => e)) as ToolError;
      expect(error).toBeInstanceOf(ToolError);
      return [error.code, error.message];
    };
    expect(await failure("nope", "add", {})).toEqual(["unknown_service", "Unknown service 'nope' (available: math)"]);
    expect(await failure("math", "sub", {})).toEqual([
      "unknown_tool",
      "Service 'math' has no tool 'sub' (available: add, boom)",
    ]);
    expect(await failure("math", "add", { a: "1", c: 1 })).toEqual([
      "invalid_parameters",
      'Invalid parameters for math.add: Instance does not have required property "b".; a: Instance type "string" is invalid. Expected "number".; unknown field "c"',
    ]);
    expect(await failure("math", "boom", {})).toEqual(["tool_failed", "math.boom failed: exploded"]);
  });

  test("refuses bad and duplicate ids", () => {
    const r = registry();
    expect(() => r.register({ id: "math", description: "", tools: [] })).toThrow(
      "Service 'math' is already registered",
    );
    expect(() => r.register({ id: "bad id", description: "", tools: [] })).toThrow("must match");
    expect(r.unregister("math")).toBe(true);
    expect(r.list()).toEqual([]);
  });
});

describe("the kv service", () => {
  test("get/set/delete/list over the store, with validation and a value cap", async () => {
    const store = new MemoryKeyValueStore();
    const r = new ToolRegistry().register(kvService(() => store));
    const call = (toolId: string, parameters: Record<string, unknown>) =>
      r.invoke({ serviceId: "kv", toolId, parameters });
    expect(await call("get", { key: "n" })).toEqual({ found: false, value: null });
    expect(await call("set", { key: "n", value: { at: new Date(0), big: 5n } })).toEqual({ bytes: 43 });
    expect(await store.get("n")).toEqual({ at: "1970-01-01T00:00:00.000Z", big: "5" });
    expect(await call("get", { key: "n" })).toEqual({
      found: true,
      value: { at: "1970-01-01T00:00:00.000Z", big: "5" },
    });
    await call("set", { key: "m", value: 1 });
    expect(await call("list", {})).toEqual({ keys: ["m", "n"] });
    expect(await call("list", { prefix: "n", limit: 5 })).toEqual({ keys: ["n"] });
    expect(await call("delete", { key: "n" })).toEqual({ deleted: true });
    expect(await call("delete", { key: "n" })).toEqual({ deleted: false });
    await expect(call("get", { key: 1 })).rejects.toThrow('Invalid parameters for kv.get: key: Instance type "number"');
    await expect(call("set", { key: "k" })).rejects.toThrow('required property "value"');
    await expect(call("set", { key: "big", value: "x".repeat(70_000) })).rejects.toThrow(
      "kv.set failed: the value is 70002 bytes of JSON, over 65536",
    );
  });
});
