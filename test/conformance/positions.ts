/** §4.2 CodeExecutionError positions: 1-based, in the original source, per module. */
import { describe, expect, it } from "vitest";
import type { RunCode } from "../../src/core/types.js";
import { expectNoHostPaths, fails } from "./helpers.js";

export function positionsSuite(runCode: RunCode): void {
  describe("§4.2 error positions", () => {
    it("a runtime TypeError in TypeScript points at the original line and column", async () => {
      const source = "const x: number = 1;\ninterface A { a: string }\nconst o: any = undefined;\nconsole.log(o.foo);";
      const error = await fails(runCode, "error", source);
      // Bellard QuickJS points at the `.` of `o.foo`: column 14 of `console.log(o.foo);`.
      expect({ name: error.name, filename: error.filename, line: error.line, column: error.column }).toEqual({
        name: "TypeError",
        filename: "<runCode>",
        line: 4,
        column: 14,
      });
    });

    it("columns are those of the original TypeScript after erased annotations on the same line", async () => {
      const source =
        "type T = { a: number };\nconst o: T | undefined = undefined as T | undefined; const n: number = o!.a;";
      const error = await fails(runCode, "error", source);
      const column = source.split("\n")[1]?.indexOf("!.a") ?? -1;
      expect({ name: error.name, line: error.line, column: error.column }).toEqual({
        name: "TypeError",
        line: 2,
        column: column + 2,
      });
    });

    it("a TypeScript multi-line type before the error keeps line numbers", async () => {
      const source =
        "interface Big {\n  a: string;\n  b: number;\n}\nenum E { A }\nexport default function f(): void {\n  throw new RangeError('r' + E.A);\n}";
      const error = await fails(runCode, "error", source);
      expect({ name: error.name, message: error.message, line: error.line, column: error.column }).toEqual({
        name: "RangeError",
        message: "r0",
        line: 7,
        column: 23,
      });
    });

    it("a JavaScript parse error is a link_error SyntaxError with the exact position", async () => {
      const error = await fails(runCode, "link_error", "const x = 1;\nlet y = ;", { language: "javascript" });
      expect({ name: error.name, filename: error.filename, line: error.line, column: error.column }).toEqual({
        name: "SyntaxError",
        filename: "<runCode>",
        line: 2,
        column: 9,
      });
    });

    it("a TypeScript parse error is a link_error SyntaxError with the exact position", async () => {
      const error = await fails(runCode, "link_error", "const x: number = 1;\nlet y = ;");
      expect({ name: error.name, filename: error.filename, line: error.line, column: error.column }).toEqual({
        name: "SyntaxError",
        filename: "<runCode>",
        line: 2,
        column: 9,
      });
    });

    it("a ReferenceError inside an executed function points into it", async () => {
      const source = "export function f() {\n  return missingVar;\n}";
      const error = await fails(runCode, "error", source, { execute: { fn: "f" }, language: "javascript" });
      expect({ name: error.name, filename: error.filename, line: error.line, column: error.column }).toEqual({
        name: "ReferenceError",
        filename: "<runCode>",
        line: 2,
        column: 10,
      });
    });

    it("an error in a module reports that module's key as filename", async () => {
      const source = "import { boom } from './lib/a.js';\nexport default boom()";
      const modules = { "./lib/a.js": "export function boom() {\n  const o = null;\n  return o.x;\n}" };
      const error = await fails(runCode, "error", source, { modules });
      expect({ name: error.name, filename: error.filename, line: error.line, column: error.column }).toEqual({
        name: "TypeError",
        filename: "./lib/a.js",
        line: 3,
        column: 11,
      });
      expect(error.stack ?? "").toContain("./lib/a.js");
    });

    it("an error in a TypeScript module keeps that module's original positions", async () => {
      const source = "import { boom } from './b.ts';\nexport default boom()";
      const modules = {
        "./b.ts": "type X = number;\nexport function boom(): X {\n  const o: any = null;\n  return o.x;\n}",
      };
      const error = await fails(runCode, "error", source, { modules });
      expect({ name: error.name, filename: error.filename, line: error.line, column: error.column }).toEqual({
        name: "TypeError",
        filename: "./b.ts",
        line: 4,
        column: 11,
      });
    });

    it("a parse error in a module is a link_error with that module's position", async () => {
      const source = "import { a } from './bad.js';\nexport default a";
      const error = await fails(runCode, "link_error", source, {
        modules: { "./bad.js": "export const a = 1;\n\nexport const = ;" },
        language: "javascript",
      });
      expect({ name: error.name, filename: error.filename, line: error.line }).toEqual({
        name: "SyntaxError",
        filename: "./bad.js",
        line: 3,
      });
      expect(typeof error.column).toBe("number");
    });

    it("the stack mentions the filename and no host path", async () => {
      const error = await fails(runCode, "error", "function inner() {\n  throw new Error('deep');\n}\ninner();");
      const stack = error.stack ?? "";
      expect(stack).toContain("<runCode>");
      expect(stack).toContain("inner");
      expectNoHostPaths(stack);
    });

    it("a custom filename appears in error.filename and the stack", async () => {
      const error = await fails(runCode, "error", "const a: number = 1;\nthrow new Error('x' + a);", {
        filename: "agent.ts",
      });
      expect({ filename: error.filename, line: error.line }).toEqual({ filename: "agent.ts", line: 2 });
      expect(error.stack ?? "").toContain("agent.ts");
      expectNoHostPaths(error.stack ?? "");
    });

    it("an error after an await keeps its position", async () => {
      const source = "await null;\nawait Promise.resolve();\nconst o = undefined;\no.y;";
      const error = await fails(runCode, "error", source);
      expect({ name: error.name, line: error.line, column: error.column }).toEqual({
        name: "TypeError",
        line: 4,
        column: 2,
      });
    });

    it("a TypeScript-only syntax error is a link_error SyntaxError at the original position", async () => {
      const error = await fails(runCode, "link_error", "const a = 1;\nlet b: = 2;");
      expect({ name: error.name, filename: error.filename, line: error.line, column: error.column }).toEqual({
        name: "SyntaxError",
        filename: "<runCode>",
        line: 2,
        column: 8,
      });
    });
  });
}
