/** §5.2 bridge reports: the built-in report global. */
import { describe, expect, it } from "vitest";
import type { CodeExecution, RunCode } from "../../src/core/types.js";
import { ok } from "./helpers.js";

export function reportSuite(runCode: RunCode): void {
  describe("§5.2 report", () => {
    it("the built-in report collects clones in call order", async () => {
      const r = await runCode("report(1);\nreport({ a: [2] });\nreport('three');\nexport default 'ok'");
      expect(r.status).toBe("success");
      expect(r.reports).toEqual([1, { a: [2] }, "three"]);
    });

    it("reports is an empty array when unused", async () => {
      const r = await runCode("export default 1");
      expect(r.reports).toEqual([]);
    });

    it("report is in scope but not on globalThis", async () => {
      const source = "export default [typeof report, typeof globalThis.report, 'report' in globalThis]";
      expect(await ok(runCode, source)).toEqual(["function", "undefined", false]);
    });

    it("a reported value is cloned when reported", async () => {
      const r = await runCode("const o = { n: 1 };\nreport(o);\no.n = 2;\nreport(o);\nexport default 0");
      expect(r.reports).toEqual([{ n: 1 }, { n: 2 }]);
    });

    it("reports keep structured types", async () => {
      const r = await runCode("report(new Map([[1, new Set(['s'])]]));\nreport(10n);\nexport default 0");
      const [map, big] = r.reports;
      expect(map).toBeInstanceOf(Map);
      expect(map).toEqual(new Map([[1, new Set(["s"])]]));
      expect(big).toBe(10n);
    });

    it("options.report is called synchronously with each value", async () => {
      const sink: unknown[] = [];
      const seenAtCall: unknown[][] = [];
      const r = await runCode("report('a');\ncheck();\nreport({ b: 1 });\ncheck();\nexport default 0", {
        report: (value) => {
          sink.push(value);
        },
        globals: {
          check: () => {
            seenAtCall.push([...sink]);
          },
        },
      });
      expect(r.status).toBe("success");
      expect(sink).toEqual(["a", { b: 1 }]);
      expect(seenAtCall).toEqual([["a"], ["a", { b: 1 }]]);
      expect(r.reports).toEqual(["a", { b: 1 }]);
    });

    it("handle.reports is live and equals result.reports at the end", async () => {
      let run: CodeExecution | undefined;
      const seen: unknown[] = [];
      run = runCode("report(1);\nexport default look()", {
        globals: {
          look: () => {
            seen.push(run ? run.reports.length : -1);
            return run ? [...run.reports] : null;
          },
        },
      });
      const r = await run;
      expect(seen).toEqual([1]);
      expect(r.result).toEqual([1]);
      expect([...run.reports]).toEqual(r.reports);
      expect(r.reports).toEqual([1]);
    });

    it("reports from modules and from async code arrive in call order", async () => {
      const source = "import './m.js';\nreport('entry');\nawait null;\nreport('after await');\nexport default 0";
      const r = await runCode(source, { modules: { "./m.js": "report('module')" } });
      expect(r.reports).toEqual(["module", "entry", "after await"]);
    });

    it("keeps reports made before an error", async () => {
      const r = await runCode("report(1);\nthrow new Error('x')");
      expect(r.status).toBe("error");
      expect(r.reports).toEqual([1]);
    });

    it("a caller global named report replaces the built-in", async () => {
      const mine: unknown[] = [];
      const r = await runCode("report(1);\nexport default 0", {
        globals: {
          report: (value: unknown) => {
            mine.push(value);
          },
        },
      });
      expect(r.status).toBe("success");
      expect(mine).toEqual([1]);
      expect(r.reports).toEqual([]);
    });

    it("an imported report binding goes to the host function, not the built-in", async () => {
      const flagged: unknown[] = [];
      const source = "import { report } from 'supervisor';\nfor (const row of rows) if (row.flagged) report(row.id);";
      const r = await runCode(`${source}\nexport default 0`, {
        globals: { rows: [{ id: 1, flagged: true }, { id: 2 }, { id: 3, flagged: true }] },
        imports: {
          supervisor: {
            report: (id: unknown) => {
              flagged.push(id);
            },
          },
        },
      });
      expect(r.status).toBe("success");
      expect(flagged).toEqual([1, 3]);
      expect(r.reports).toEqual([]);
    });
  });
}
