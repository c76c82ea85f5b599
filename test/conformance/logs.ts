/** §4.3 CodeExecutionLog: the capturing console. */
import { describe, expect, it } from "vitest";
import type { RunCode } from "../../src/core/types.js";
import { fails, now, ok } from "./helpers.js";

export function logsSuite(runCode: RunCode): void {
  describe("§4.3 logs (capturing console)", () => {
    it("captures console.log with cloned args and a host timestamp", async () => {
      const t0 = now();
      const r = await runCode("console.log('a', 1, { x: [1n] });\nexport default 0");
      const t1 = now();
      expect(r.status).toBe("success");
      expect(r.logs).toEqual([{ level: "log", args: ["a", 1, { x: [1n] }], timestamp: expect.any(Number) }]);
      const ts = r.logs[0]?.timestamp ?? Number.NaN;
      expect(ts).toBeGreaterThanOrEqual(t0);
      expect(ts).toBeLessThanOrEqual(t1);
    });

    it("a run terminated by the caller settles with the entries it made before", async () => {
      let run: ReturnType<RunCode> | undefined;
      const wait = () => {
        setTimeout(() => run?.terminate("enough"), 0);
        return new Promise(() => {});
      };
      run = runCode("console.log('before', 1);\nawait wait();\nconsole.log('after');", {
        language: "javascript",
        globals: { wait },
      });
      const r = await run;
      expect(r.status).toBe("terminated");
      expect(r.logs.map((l) => [l.level, l.args])).toEqual([["log", ["before", 1]]]);
    });

    it("options.onLog hears each entry as it is made; what it throws, the console call throws", async () => {
      const heard: unknown[] = [];
      const r = await runCode(
        "console.log('a', 1n);\nheard();\nlet caught = '';\ntry { console.warn('refused'); } catch (e) { caught = e.name + ': ' + e.message; }\nexport default caught;",
        {
          language: "javascript",
          globals: { heard: () => heard.push("checked") },
          onLog: (entry) => {
            if (entry.args[0] === "refused") throw new RangeError("no more");
            heard.push([entry.level, entry.args, typeof entry.timestamp]);
          },
        },
      );
      expect([r.status, r.result]).toEqual(["success", "RangeError: no more"]);
      expect(heard).toEqual([["log", ["a", 1n], "number"], "checked"]);
      expect(r.logs.map((l) => l.args)).toEqual([["a", 1n], ["refused"]]);
    });

    it("captures the five levels in call order", async () => {
      const source =
        "console.log(1); console.info(2); console.warn(3); console.error(4); console.debug(5);\nexport default 0";
      const r = await runCode(source);
      expect(r.logs.map((l) => [l.level, l.args])).toEqual([
        ["log", [1]],
        ["info", [2]],
        ["warn", [3]],
        ["error", [4]],
        ["debug", [5]],
      ]);
    });

    it("the console is in scope but not on globalThis", async () => {
      const source = "export default [typeof globalThis.console, typeof console, 'console' in globalThis]";
      expect(await ok(runCode, source)).toEqual(["undefined", "object", false]);
    });

    it("console.log() with no args logs an empty args list", async () => {
      const r = await runCode("console.log();\nexport default 0");
      expect(r.logs.map((l) => l.args)).toEqual([[]]);
    });

    it("snapshots args at call time", async () => {
      const r = await runCode("const o = { n: 1 };\nconsole.log(o);\no.n = 2;\nexport default o.n");
      expect(r.result).toBe(2);
      expect(r.logs.map((l) => l.args)).toEqual([[{ n: 1 }]]);
    });

    it("captures logs from modules", async () => {
      const r = await runCode("import './m.js';\nconsole.log('entry');\nexport default 0", {
        modules: { "./m.js": "console.info('module')" },
      });
      expect(r.logs.map((l) => [l.level, l.args])).toEqual([
        ["info", ["module"]],
        ["log", ["entry"]],
      ]);
    });

    it("keeps logs made before an error", async () => {
      const r = await runCode("console.log('before');\nthrow new Error('x')");
      expect(r.status).toBe("error");
      expect(r.logs.map((l) => l.args)).toEqual([["before"]]);
    });

    it("logs is an empty array when nothing was logged", async () => {
      const r = await runCode("export default 1");
      expect(r.logs).toEqual([]);
    });

    it("a caller-supplied console receives the args and logs stay empty", async () => {
      const seen: unknown[][] = [];
      const r = await runCode("console.log('hi', 2, { a: [1] });\nexport default typeof globalThis.console", {
        globals: {
          console: {
            log: (...args: unknown[]) => {
              seen.push(args);
            },
          },
        },
      });
      expect(r.status).toBe("success");
      expect(r.result).toBe("undefined");
      expect(r.logs).toEqual([]);
      expect(seen).toEqual([["hi", 2, { a: [1] }]]);
    });

    it("runs with and without a caller-supplied console, in turn, each bind their own, which no code can assign", async () => {
      const seen: unknown[][] = [];
      const own = { globals: { console: { log: (...args: unknown[]) => void seen.push(args) }, n: 1 } };
      const source = "console.log(typeof n);\ntry { console = 1 } catch (e) { report(e.name) }\nexport default 0";
      for (let i = 0; i < 2; i++) {
        const supplied = await runCode(source, own);
        const builtIn = await runCode(source);
        expect([supplied.logs, supplied.reports, builtIn.reports]).toEqual([[], ["TypeError"], ["TypeError"]]);
        expect(builtIn.logs.map((l) => l.args)).toEqual([["undefined"]]);
      }
      expect(seen).toEqual([["number"], ["number"]]);
    });

    it("a caller-supplied console without a level makes that call fail", async () => {
      const error = await fails(runCode, "error", "console.warn('w');\nexport default 1", {
        globals: { console: { log: () => undefined } },
      });
      expect(error.name).toBe("TypeError");
    });

    it("preserves cycles in logged values and keeps timestamps in order", async () => {
      const r = await runCode("const o = { n: 1 };\no.o = o;\nconsole.log(o);\nconsole.log(2);\nexport default 0");
      const first = r.logs[0]?.args[0] as { o?: unknown } | undefined;
      expect(first?.o).toBe(first);
      const [a, b] = r.logs.map((l) => l.timestamp);
      expect(b ?? 0).toBeGreaterThanOrEqual(a ?? Number.POSITIVE_INFINITY);
    });
  });
}
