import { describe, expect, test } from "vitest";
import { kvService } from "../../src/tools/kv.js";
import { MemoryKeyValueStore } from "../../src/tools/kv-store.js";
import { ToolRegistry } from "../../src/tools/registry.js";

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
