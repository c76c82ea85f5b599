import { describe, expect, test } from "vitest";
import {
  HOST_STATES,
  kvService,
  MemoryKeyValueStore,
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
