import { describe, expect, test } from "vitest";
import { ToolError, ToolRegistry } from "../../src/tools/registry.js";

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

  describe("sessionModules", () => {
    test("the same functions for the whole session, each cell's calls charged to a scope of its own", async () => {
      const counting = new ToolRegistry().register({
        id: "counter",
        description: "Counts calls per scope",
        tools: [
          {
            id: "tick",
            description: "Counts",
            inputSchema: { type: "object" },
            run: (_parameters, { scope }) => {
              scope.take("tick", 100);
              return `${scope.tenant}:${scope.calls("tick")}`;
            },
          },
        ],
      });
      const { modules, nextCell } = counting.sessionModules("acme");
      const tick = modules.counter?.tick as (parameters: Record<string, unknown>) => Promise<unknown>;
      expect([await tick({}), await tick({})]).toEqual(["acme:1", "acme:2"]);
      nextCell();
      expect(modules.counter?.tick).toBe(tick);
      expect(await tick({})).toBe("acme:1");
    });
  });
});
