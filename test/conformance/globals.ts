/** §3.4 globals: free identifiers at module scope, never on globalThis. */
import { describe, expect, it } from "vitest";
import type { CodeExecutionOptions, RunCode } from "../../src/core/types.js";
import { fails, nameAndMessage, ok, thrown } from "./helpers.js";

export function globalsSuite(runCode: RunCode): void {
  describe("§3.4 globals", () => {
    it("are free identifiers in the entry", async () => {
      const source = "const n = input.reduce((a, b) => a + b, 0);\nexport default n;";
      expect(await ok(runCode, source, { globals: { input: [1, 2, 3] } })).toBe(6);
    });

    it("are free identifiers in every module", async () => {
      const source = "import { f } from './lib/f.js';\nexport default f()";
      const options = { globals: { secret: "s3" }, modules: { "./lib/f.js": "export const f = () => secret + '!'" } };
      expect(await ok(runCode, source, options)).toBe("s3!");
    });

    it("are visible in a dynamically imported module", async () => {
      const source = "export default (await import('./d.js')).d";
      const options = { globals: { g: 4 }, modules: { "./d.js": "export const d = g * 2" } };
      expect(await ok(runCode, source, options)).toBe(8);
    });

    it("async function globals can be awaited", async () => {
      const source = "const m = await getMessage();\nexport default m.toUpperCase()";
      expect(await ok(runCode, source, { globals: { getMessage: async () => "latest" } })).toBe("LATEST");
    });

    it("functions nested in objects are callable", async () => {
      const seen: unknown[] = [];
      const source = "tools.log('x', 1);\nexport default tools.deep.twice(21)";
      const globals = {
        tools: {
          log: (...args: unknown[]) => {
            seen.push(args);
          },
          deep: { twice: (n: unknown) => Number(n) * 2 },
        },
      };
      expect(await ok(runCode, source, { globals })).toBe(42);
      expect(seen).toEqual([["x", 1]]);
    });

    it("are not on globalThis", async () => {
      const source = `export default [
        Object.keys(globalThis),
        'input' in globalThis,
        globalThis.input,
        typeof globalThis.getMessage,
        typeof input,
        typeof getMessage,
      ]`;
      const globals = { input: [1], getMessage: async () => "m" };
      expect(await ok(runCode, source, { globals })).toEqual([[], false, undefined, "undefined", "object", "function"]);
    });

    it("are not among the own property names of globalThis", async () => {
      const source =
        "export default Object.getOwnPropertyNames(globalThis).filter((k) => k === 'input' || k === 'fetch')";
      expect(await ok(runCode, source, { globals: { input: 1, fetch: () => 1 } })).toEqual([]);
    });

    it("can install a capability the sandbox lacks", async () => {
      const source = "export default [await fetch('u'), typeof globalThis.fetch]";
      expect(await ok(runCode, source, { globals: { fetch: async (u: unknown) => `fetched ${String(u)}` } })).toEqual([
        "fetched u",
        "undefined",
      ]);
    });

    it("a top-level declaration of the module shadows a global", async () => {
      expect(await ok(runCode, "const input = 5;\nexport default input", { globals: { input: 1 } })).toBe(5);
    });

    it("a function parameter shadows a global", async () => {
      expect(await ok(runCode, "export default ((input) => input)(9)", { globals: { input: 1 } })).toBe(9);
    });

    it("an undeclared identifier is still a ReferenceError", async () => {
      const error = await fails(runCode, "error", "export default notGiven + 1", { globals: { given: 1 } });
      expect(error.name).toBe("ReferenceError");
      expect(error.message).toContain("notGiven");
    });

    it.each(["a-b", "class", "1a", "", "a b"])("an invalid identifier %j throws TypeError synchronously", (name) => {
      const options: CodeExecutionOptions = { globals: { [name]: 1 } };
      const error = thrown(() => runCode("export default 1", options));
      expect(error).toBeInstanceOf(TypeError);
      expect(nameAndMessage(error).name).toBe("TypeError");
    });

    it("accepts identifiers with $ and _ and unicode letters", async () => {
      const source = "export default [$, _x, café]";
      expect(await ok(runCode, source, { globals: { $: 1, _x: 2, café: 3 } })).toEqual([1, 2, 3]);
    });

    it("a global whose value is undefined is declared (no ReferenceError)", async () => {
      expect(await ok(runCode, "export default [typeof u, u === undefined]", { globals: { u: undefined } })).toEqual([
        "undefined",
        true,
      ]);
    });
  });
}
