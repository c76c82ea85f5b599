/** §3.1 execute and §5.1 the configured export. */
import { describe, expect, it } from "vitest";
import type { CodeExecutionOptions, RunCode } from "../../src/core/types.js";
import { fails, ok } from "./helpers.js";

export function executeSuite(runCode: RunCode): void {
  describe("§3.1 execute / §5.1 configured export", () => {
    it.each([
      ["export default 42", "a value"],
      ["export default async () => 42", "an async function"],
      ["export default () => Promise.resolve(42)", "a function returning a promise"],
      ["export default Promise.resolve(42)", "a promise"],
    ])("%s (%s) gives 42", async (source) => {
      expect(await ok(runCode, source)).toBe(42);
    });

    it("awaits a thenable object", async () => {
      expect(await ok(runCode, "export default { then(resolve) { resolve(7) } }")).toBe(7);
    });

    it("awaits nested thenables until the value is no longer one", async () => {
      const source = "export default () => ({ then(r) { r({ then(r2) { r2(Promise.resolve(8)) } }) } })";
      expect(await ok(runCode, source)).toBe(8);
    });

    it("calls a named export with args", async () => {
      const source = `
        export function increment(n: number): number { return n + 1; }
        export default function fallback() { return 123; }
      `;
      expect(await ok(runCode, source, { execute: { fn: "increment", args: [100] } })).toBe(101);
    });

    it("passes several args of structured types", async () => {
      const source = "export const f = (a, b, c) => [a + b, c.list.length, c.map.get('k')]";
      const args = [2, 3, { list: [1, 2, 3], map: new Map([["k", "v"]]) }];
      expect(await ok(runCode, source, { execute: { fn: "f", args } })).toEqual([5, 3, "v"]);
    });

    it("defaults fn to 'default' when only args are given", async () => {
      expect(await ok(runCode, "export default (n) => n * 2", { execute: { args: [5] } })).toBe(10);
    });

    it("calls the function with no arguments when args are omitted", async () => {
      expect(await ok(runCode, "export default (...a) => a.length", { execute: { fn: "default" } })).toBe(0);
    });

    it("awaits an async named export", async () => {
      const source = "export async function scan() { await null; return { scanned: true }; }";
      expect(await ok(runCode, source, { execute: { fn: "scan", args: [] } })).toEqual({ scanned: true });
    });

    it("selects an export whose name is not an identifier", async () => {
      const source = "const v = 'odd'; export { v as 'odd name' }";
      expect(await ok(runCode, source, { execute: { fn: "odd name" } })).toBe("odd");
    });

    it("returns a non-function export itself when args are empty", async () => {
      expect(await ok(runCode, "export const data = { a: [1] }", { execute: { fn: "data", args: [] } })).toEqual({
        a: [1],
      });
    });

    it("a missing selected export is a link_error naming the export", async () => {
      const error = await fails(runCode, "link_error", "export const yes = 1", { execute: { fn: "nope" } });
      expect(error.name).toBe("LinkError");
      expect(error.message).toContain("nope");
    });

    it("a missing default export is a link_error", async () => {
      const error = await fails(runCode, "link_error", "export const yes = 1");
      expect(error.name).toBe("LinkError");
      expect(error.message).toContain("default");
    });

    it("a missing export is told by its code, missing_export; a module that does not resolve has no code", async () => {
      const missing = await fails(runCode, "link_error", "export const yes = 1", { execute: { fn: "no" } });
      expect(missing).toEqual({
        name: "LinkError",
        message: "The module does not export 'no'",
        code: "missing_export",
      });
      const unresolved = await fails(runCode, "link_error", "import 'ghost';\nexport default 1");
      expect(unresolved.code).toBeUndefined();
    });

    it("a non-function export with non-empty args is an error (TypeError)", async () => {
      const error = await fails(runCode, "error", "export const data = 5", { execute: { fn: "data", args: [1] } });
      expect(error.name).toBe("TypeError");
    });

    it("a throwing export gives its name and message", async () => {
      const error = await fails(runCode, "error", "export default () => { throw new RangeError('bad') }");
      expect(error.name).toBe("RangeError");
      expect(error.message).toBe("bad");
    });

    it("a thrown string becomes the message", async () => {
      const error = await fails(runCode, "error", "export default () => { throw 'str' }");
      expect(error.message).toBe("str");
    });

    it("a rejecting async export gives its name and message", async () => {
      const error = await fails(
        runCode,
        "error",
        "export default async () => { await null; throw new TypeError('x') }",
      );
      expect(error.name).toBe("TypeError");
      expect(error.message).toBe("x");
    });

    it("an export that returns a rejected promise is an error", async () => {
      const error = await fails(runCode, "error", "export default () => Promise.reject(new Error('r'))");
      expect(error.name).toBe("Error");
      expect(error.message).toBe("r");
    });

    it("a rejected promise as the export value is an error", async () => {
      const error = await fails(runCode, "error", "export default Promise.reject(new SyntaxError('s'))");
      expect(error.name).toBe("SyntaxError");
      expect(error.message).toBe("s");
    });

    it("a thenable that rejects is an error", async () => {
      const error = await fails(runCode, "error", "export default { then(_, reject) { reject(new Error('t')) } }");
      expect(error.message).toBe("t");
    });

    it("a subclass of Error keeps its own name", async () => {
      const source = "class MyErr extends Error { name = 'MyErr' }\nexport default () => { throw new MyErr('mine') }";
      const error = await fails(runCode, "error", source);
      expect(error.name).toBe("MyErr");
      expect(error.message).toBe("mine");
    });

    it("a throw during module evaluation is an error", async () => {
      const error = await fails(runCode, "error", "throw new Error('top');\nexport default 1");
      expect(error.message).toBe("top");
    });

    it("supports top-level await", async () => {
      expect(await ok(runCode, "await Promise.resolve(); export default 5")).toBe(5);
    });

    it("an export whose value is undefined succeeds with result undefined", async () => {
      const r = await runCode("export const x = undefined", { execute: { fn: "x" } });
      expect(r.status).toBe("success");
      expect("result" in r).toBe(true);
      expect(r.result).toBeUndefined();
    });

    it("a function returning nothing succeeds with result undefined", async () => {
      const r = await runCode("export default () => {}");
      expect(r.status).toBe("success");
      expect("result" in r).toBe(true);
      expect(r.result).toBeUndefined();
    });

    it("calls the export after the whole module evaluated", async () => {
      const source = "let n = 1; export default () => n; n = 2;";
      expect(await ok(runCode, source)).toBe(2);
    });

    it("a class as the default export cannot be called and is an error (TypeError)", async () => {
      const error = await fails(runCode, "error", "export default class A {}");
      expect(error.name).toBe("TypeError");
    });

    describe("execute: 'script'", () => {
      it("a module without a default export succeeds with result undefined, its logs and reports kept", async () => {
        const r = await runCode("console.log('hi', 1);\nreport({ n: 2 });", { execute: "script" });
        expect({ status: r.status, hasResult: "result" in r, result: r.result, error: r.error }).toEqual({
          status: "success",
          hasResult: true,
          result: undefined,
          error: undefined,
        });
        expect(r.logs.map(({ level, args }) => ({ level, args }))).toEqual([{ level: "log", args: ["hi", 1] }]);
        expect(r.reports).toEqual([{ n: 2 }]);
      });

      it("named exports alone give no result", async () => {
        expect(await ok(runCode, "export const x = 1;\nexport function f() { return 2; }", { execute: "script" })).toBe(
          undefined,
        );
      });

      it("a default export is still the result, a function called with no arguments", async () => {
        expect(await ok(runCode, "export default 42", { execute: "script" })).toBe(42);
        expect(await ok(runCode, "export default async (...a) => a.length + 1", { execute: "script" })).toBe(1);
      });

      it("awaits top-level await, then runs the jobs left queued as a default export's run would", async () => {
        const source = `await null;
Promise.resolve().then(() => console.log("a")).then(() => console.log("b"));
(async () => { for (let i = 0; i < 3; i++) await null; console.log("c"); })();`;
        const logs = async (options: CodeExecutionOptions) =>
          (
            await runCode(source + (options.execute === "script" ? "" : "\nexport default undefined"), options)
          ).logs.map((log) => log.args[0]);
        expect(await logs({ execute: "script" })).toEqual(["a", "b", "c"]);
        expect(await logs({})).toEqual(["a", "b", "c"]);
      });

      it("a throw is an error, a syntax error or an unresolved import a link_error", async () => {
        const thrown = await fails(runCode, "error", "console.log(1);\nthrow new RangeError('top');", {
          execute: "script",
        });
        expect({ name: thrown.name, message: thrown.message }).toEqual({ name: "RangeError", message: "top" });
        expect((await fails(runCode, "link_error", "let = ;", { execute: "script" })).name).toBe("SyntaxError");
        const missing = await fails(runCode, "link_error", "import { x } from 'nowhere';", { execute: "script" });
        expect(missing.specifier).toBe("nowhere");
      });
    });

    it("passes undefined args as present arguments", async () => {
      const source = "export default (...a) => [a.length, a[0] === undefined, a[1]]";
      expect(await ok(runCode, source, { execute: { args: [undefined, null] } })).toEqual([2, true, null]);
    });
  });
}
