/** §3 CodeExecutionOptions validation, §2.1 the source parameter. */
import { describe, expect, it } from "vitest";
import type { CodeExecutionOptions, RunCode } from "../../src/core/types.js";
import { nameAndMessage, ok, STATUSES, thrown } from "./helpers.js";

const invalid: [string, Record<string, unknown>, string][] = [
  ["an unknown key", { foo: 1 }, "foo"],
  ["execute as a string other than 'script'", { execute: "Script" }, "execute"],
  ["execute.fn as a number", { execute: { fn: 1 } }, "execute.fn"],
  ["execute.args as a string", { execute: { args: "x" } }, "execute.args"],
  ["an unknown execute key", { execute: { fn: "default", argz: [] } }, "argz"],
  ["imports entry as a number", { imports: { fs: 1 } }, "imports"],
  ["imports as an array", { imports: [] }, "imports"],
  ["a modules key that is not relative", { modules: { "x.js": "a" } }, "modules"],
  ["a modules value that is not a string", { modules: { "./a.js": 1 } }, "modules"],
  ["globals as an array", { globals: [] }, "globals"],
  ["globals as null", { globals: null }, "globals"],
  ["language 'python'", { language: "python" }, "language"],
  ["memoryLimitBytes -1", { memoryLimitBytes: -1 }, "memoryLimitBytes"],
  ["memoryLimitBytes as a string", { memoryLimitBytes: "x" }, "memoryLimitBytes"],
  ["memoryLimitBytes NaN", { memoryLimitBytes: Number.NaN }, "memoryLimitBytes"],
  ["filename as a number", { filename: 3 }, "filename"],
  ["report as a string", { report: "x" }, "report"],
  ["onLog as a string", { onLog: "x" }, "onLog"],
  ["timeoutMs 0", { timeoutMs: 0 }, "timeoutMs"],
  ["timeoutMs negative", { timeoutMs: -5 }, "timeoutMs"],
  ["timeoutMs NaN", { timeoutMs: Number.NaN }, "timeoutMs"],
  ["timeoutMs infinite", { timeoutMs: Number.POSITIVE_INFINITY }, "timeoutMs"],
  ["timeoutMs past the longest timer", { timeoutMs: 2 ** 31 }, "timeoutMs"],
  ["timeoutMs as a string", { timeoutMs: "100" }, "timeoutMs"],
];

export function optionsSuite(runCode: RunCode): void {
  describe("§3 options validation", () => {
    it.each(invalid)("%s throws a TypeError naming it", (_label, options, key) => {
      const error = thrown(() => runCode("export default 1", options as unknown as CodeExecutionOptions));
      expect(error).toBeInstanceOf(TypeError);
      expect(nameAndMessage(error).message).toContain(key);
    });

    it.each([
      ["a number", 42],
      ["undefined", undefined],
      ["null", null],
      ["an object", { source: "export default 1" }],
    ])("a source that is %s throws a TypeError", (_label, source) => {
      const error = thrown(() => runCode(source as unknown as string));
      expect(error).toBeInstanceOf(TypeError);
    });

    it("a timeoutMs that is not a number of milliseconds a timer can wait throws a TypeError saying what it may be", () => {
      const error = thrown(() => runCode("export default 1", { timeoutMs: 1.5e10 }));
      expect(error).toBeInstanceOf(TypeError);
      expect(nameAndMessage(error).message).toBe(
        "runCode: options.timeoutMs must be a number of milliseconds above 0 and at most 2147483647, got number",
      );
    });

    it("options may be omitted or empty", async () => {
      expect(await ok(runCode, "export default 1")).toBe(1);
      expect(await ok(runCode, "export default 2", {})).toBe(2);
      expect(await ok(runCode, "export default 3", { execute: {} })).toBe(3);
      expect(await ok(runCode, "export default 4", { imports: {}, modules: {}, globals: {} })).toBe(4);
    });

    it("accepts every documented option together", async () => {
      const sink: unknown[] = [];
      const source =
        "import { t } from 'tools';\nimport { m } from './m.js';\nexport function main(a) { report(a); return [t(), m, g]; }";
      const result = await ok(runCode, source, {
        execute: { fn: "main", args: ["arg"] },
        imports: { tools: { t: () => "t" } },
        modules: { "./m.js": "export const m = 'm';" },
        globals: { g: "g" },
        language: "javascript",
        memoryLimitBytes: 64 * 1024 * 1024,
        filename: "main.js",
        report: (v) => {
          sink.push(v);
        },
      });
      expect(result).toEqual(["t", "m", "g"]);
      expect(sink).toEqual(["arg"]);
    });
  });

  describe("§2.1 large sources", () => {
    it("a 10 MB comment followed by code runs or fails cleanly", async () => {
      const source = `//${"x".repeat(10 * 1024 * 1024)}\nexport default 1`;
      const r = await runCode(source);
      expect(STATUSES).toContain(r.status);
      if (r.status === "success") expect(r.result).toBe(1);
      else expect(typeof r.error?.name).toBe("string");
    }, 30_000);

    it("a 10 MB array literal runs or fails cleanly", async () => {
      const items = Array.from({ length: 1_400_000 }, (_, i) => i % 1000);
      const source = `export default ${JSON.stringify(items)}.length`;
      expect(source.length).toBeGreaterThan(5 * 1024 * 1024);
      const r = await runCode(source, { language: "javascript" });
      expect(STATUSES).toContain(r.status);
      if (r.status === "success") expect(r.result).toBe(items.length);
      else expect(typeof r.error?.name).toBe("string");
    }, 30_000);
  });
}
