/** §2.2 The CodeExecution handle: awaitable, terminatable, live reports. */
import { describe, expect, it } from "vitest";
import type { CodeExecution, RunCode } from "../../src/core/types.js";
import { deferred, never, now, sleep } from "./helpers.js";

export function handleSuite(runCode: RunCode): void {
  describe("§2.2 handle", () => {
    it("returns a thenable handle at once and settles with the result", async () => {
      const run = runCode("export default 1 + 1");
      expect(run.running).toBe(true);
      expect(typeof run.then).toBe("function");
      expect(typeof run.terminate).toBe("function");
      const r = await run;
      expect(r.status).toBe("success");
      expect(r.result).toBe(2);
      expect(run.running).toBe(false);
    });

    it("supports then(onFulfilled) as a PromiseLike", async () => {
      const run = runCode("export default 'x'");
      const status = await new Promise<string>((resolve) => {
        run.then((r) => resolve(`${r.status}:${String(r.result)}`));
      });
      expect(status).toBe("success:x");
    });

    it("can be awaited twice with the same outcome", async () => {
      const run = runCode("export default { n: 3 }");
      const a = await run;
      const b = await run;
      expect(a.status).toBe("success");
      expect(b.status).toBe("success");
      expect(b.result).toEqual(a.result);
      expect(b.result).toEqual({ n: 3 });
    });

    it("is running while the guest awaits the host and not after terminate settles it", async () => {
      const started = deferred<void>();
      const run = runCode("await wait(); export default 1", {
        globals: {
          wait: () => {
            started.resolve();
            return never<void>();
          },
        },
      });
      expect(run.running).toBe(true);
      await started.promise;
      expect(run.running).toBe(true);
      const t0 = now();
      run.terminate("budget");
      const r = await run;
      expect(now() - t0).toBeLessThan(1000);
      expect(run.running).toBe(false);
      expect(r.status).toBe("terminated");
      expect(r.error?.name).toBe("TerminatedError");
      expect(r.error?.message).toContain("budget");
      expect(r.error?.message).not.toContain("safety cap");
      expect("result" in r).toBe(false);
    });

    it("terminate() without a reason gives a non-empty message", async () => {
      const started = deferred<void>();
      const run = runCode("await wait(); export default 1", {
        globals: {
          wait: () => {
            started.resolve();
            return never<void>();
          },
        },
      });
      await started.promise;
      run.terminate();
      const r = await run;
      expect(r.status).toBe("terminated");
      expect(r.error?.name).toBe("TerminatedError");
      expect(typeof r.error?.message).toBe("string");
      expect((r.error?.message ?? "").length).toBeGreaterThan(0);
    });

    it("terminate twice is a no-op: the first reason wins", async () => {
      const started = deferred<void>();
      const run = runCode("await wait(); export default 1", {
        globals: {
          wait: () => {
            started.resolve();
            return never<void>();
          },
        },
      });
      await started.promise;
      run.terminate("first reason");
      run.terminate("second reason");
      const r = await run;
      run.terminate("third reason");
      const again = await run;
      expect(r.status).toBe("terminated");
      expect(r.error?.message).toContain("first reason");
      expect(r.error?.message).not.toContain("second reason");
      expect(again.status).toBe("terminated");
      expect(again.error).toEqual(r.error);
    });

    it("terminate right after runCode settles with 'terminated'", async () => {
      const run = runCode("export default 1");
      run.terminate("immediately");
      const r = await run;
      expect(r.status).toBe("terminated");
      expect(r.error?.name).toBe("TerminatedError");
      expect(r.error?.message).toContain("immediately");
    });

    it("terminate after settlement changes nothing", async () => {
      const run = runCode("export default 41 + 1");
      const r = await run;
      run.terminate("late");
      const again = await run;
      expect(r.status).toBe("success");
      expect(again.status).toBe("success");
      expect(again.result).toBe(42);
      expect(run.running).toBe(false);
    });

    it("ignores a host promise that resolves after termination", async () => {
      const started = deferred<void>();
      const host = deferred<number>();
      const run = runCode("export default await wait()", {
        globals: {
          wait: () => {
            started.resolve();
            return host.promise;
          },
        },
      });
      await started.promise;
      run.terminate("stop");
      const r = await run;
      host.resolve(5);
      await sleep(10);
      const again = await run;
      expect(r.status).toBe("terminated");
      expect(again.status).toBe("terminated");
      expect("result" in again).toBe(false);
    });

    it("ignores a host promise that rejects after termination", async () => {
      const started = deferred<void>();
      const host = deferred<number>();
      const run = runCode("export default await wait()", {
        globals: {
          wait: () => {
            started.resolve();
            return host.promise;
          },
        },
      });
      await started.promise;
      run.terminate("stop");
      const r = await run;
      host.reject(new Error("late failure"));
      await sleep(10);
      expect(r.status).toBe("terminated");
      expect(r.error?.message).toContain("stop");
    });

    it("keeps reports made before termination", async () => {
      const started = deferred<void>();
      const run = runCode("report(1); report('two'); await wait(); report(3)", {
        globals: {
          wait: () => {
            started.resolve();
            return never<void>();
          },
        },
      });
      await started.promise;
      expect(run.reports).toEqual([1, "two"]);
      run.terminate("enough");
      const r = await run;
      expect(r.status).toBe("terminated");
      expect(r.reports).toEqual([1, "two"]);
      expect(run.reports).toEqual([1, "two"]);
    });

    it("exposes reports live while the run is still going", async () => {
      const seen: unknown[][] = [];
      let run: CodeExecution | undefined;
      run = runCode("report('a'); peek(); report({ b: 2 }); peek(); export default 'done'", {
        globals: {
          peek: () => {
            seen.push(run ? [...run.reports] : ["no handle"]);
          },
        },
      });
      const r = await run;
      expect(r.status).toBe("success");
      expect(seen).toEqual([["a"], ["a", { b: 2 }]]);
      expect(run.reports).toEqual(["a", { b: 2 }]);
    });

    it("concurrent runs do not see each other", async () => {
      const runs = Array.from({ length: 12 }, (_, i) =>
        runCode(
          "globalThis.mark = (globalThis.mark ?? 0) + 1;\nawait null;\nreport(n);\nexport default [n, globalThis.mark]",
          {
            globals: { n: i },
          },
        ),
      );
      const results = await Promise.all(runs);
      expect(results.map((r) => [r.status, r.result, r.reports])).toEqual(
        Array.from({ length: 12 }, (_, i) => ["success", [i, 1], [i]]),
      );
    });

    it("terminating one run leaves a concurrent run untouched", async () => {
      const started = deferred<void>();
      const stuck = runCode("await wait();\nexport default 'stuck'", {
        globals: {
          wait: () => {
            started.resolve();
            return never<void>();
          },
        },
      });
      const gate = deferred<string>();
      const other = runCode("export default await gate()", { globals: { gate: () => gate.promise } });
      await started.promise;
      stuck.terminate("only this one");
      gate.resolve("other done");
      const [a, b] = await Promise.all([stuck, other]);
      expect(a.status).toBe("terminated");
      expect(b.status).toBe("success");
      expect(b.result).toBe("other done");
    });
  });
}
