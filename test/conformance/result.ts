/** §4 CodeExecutionResult and §4.1 status values. */
import { describe, expect, it } from "vitest";
import type { CodeExecutionResult, RunCode } from "../../src/core/types.js";
import { STATUSES } from "./helpers.js";

function expectCommonShape(r: CodeExecutionResult): void {
  expect(STATUSES).toContain(r.status);
  expect(Array.isArray(r.reports)).toBe(true);
  expect(Array.isArray(r.logs)).toBe(true);
  expect(typeof r.durationMs).toBe("number");
  expect(Number.isFinite(r.durationMs)).toBe(true);
  expect(r.durationMs).toBeGreaterThanOrEqual(0);
  expect(typeof r.memoryUsedBytes).toBe("number");
  expect(r.memoryUsedBytes ?? 0).toBeGreaterThan(0);
  expect(Number.isFinite(r.memoryUsedBytes)).toBe(true);
  expect(Number.isSafeInteger(r.fuelUsed)).toBe(true);
  expect(r.fuelUsed ?? 0).toBeGreaterThan(0);
}

export function resultSuite(runCode: RunCode): void {
  describe("§4 result", () => {
    it("a success has exactly status, result, reports, logs, durationMs, fuelUsed, memoryUsedBytes", async () => {
      const r = await runCode("export default { ok: true }");
      expectCommonShape(r);
      expect(Object.keys(r).sort()).toEqual([
        "durationMs",
        "fuelUsed",
        "logs",
        "memoryUsedBytes",
        "reports",
        "result",
        "status",
      ]);
      expect(r).toEqual({
        status: "success",
        result: { ok: true },
        reports: [],
        logs: [],
        durationMs: r.durationMs,
        fuelUsed: r.fuelUsed,
        memoryUsedBytes: r.memoryUsedBytes,
      });
    });

    it("an error has error and no result key", async () => {
      const r = await runCode("throw new Error('boom')");
      expectCommonShape(r);
      expect(r.status).toBe("error");
      expect("result" in r).toBe(false);
      expect(Object.keys(r).sort()).toEqual([
        "durationMs",
        "error",
        "fuelUsed",
        "logs",
        "memoryUsedBytes",
        "reports",
        "status",
      ]);
      expect(r.error?.name).toBe("Error");
      expect(r.error?.message).toBe("boom");
    });

    it("a link_error has error, empty reports and logs, and no result key", async () => {
      const r = await runCode("import 'nowhere';\nreport(1);\nconsole.log(1);\nexport default 1");
      expectCommonShape(r);
      expect(r.status).toBe("link_error");
      expect("result" in r).toBe(false);
      expect(r.reports).toEqual([]);
      expect(r.logs).toEqual([]);
      expect(r.error?.name).toBe("LinkError");
    });

    it("a success carries no error key", async () => {
      const r = await runCode("export default null");
      expect("error" in r).toBe(false);
      expect(r.result).toBeNull();
    });

    it("error fields have the documented types", async () => {
      const r = await runCode("export default () => { null.x }");
      const error = r.error;
      expect(r.status).toBe("error");
      expect(error?.name).toBe("TypeError");
      expect(typeof error?.message).toBe("string");
      for (const key of ["stack", "specifier", "filename"] as const) {
        if (error && key in error) expect(typeof error[key]).toBe("string");
      }
      for (const key of ["line", "column"] as const) {
        if (error && key in error) {
          expect(Number.isInteger(error[key])).toBe(true);
          expect(error[key] ?? 0).toBeGreaterThanOrEqual(1);
        }
      }
    });

    it("memoryUsedBytes reflects a large live allocation", async () => {
      const r = await runCode(
        "const keep = new Uint8Array(4 * 1024 * 1024);\nkeep[0] = 1;\nexport default keep.length",
      );
      expect(r.status).toBe("success");
      expect(r.result).toBe(4 * 1024 * 1024);
      expect(r.memoryUsedBytes ?? 0).toBeGreaterThanOrEqual(4 * 1024 * 1024);
    });

    it("each run gives a fresh result value", async () => {
      const a = await runCode("export default { n: 1 }");
      const b = await runCode("export default { n: 1 }");
      expect(a.result).toEqual(b.result);
      expect(a.result).not.toBe(b.result);
    });
  });
}
