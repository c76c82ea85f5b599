import { describe, expect, test } from "vitest";
import { kvService } from "../../src/tools/kv.js";
import { MemoryKeyValueStore } from "../../src/tools/kv-store.js";
import { ToolRegistry } from "../../src/tools/registry.js";

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
