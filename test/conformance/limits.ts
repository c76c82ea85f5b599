/** §6.4 runaway execution and §6.5 memory caps. */
import { describe, expect, it } from "vitest";
import type { RunCode } from "../../src/core/types.js";
import { type ConformanceOptions, ok, sleep } from "./helpers.js";

const MiB = 1024 * 1024;
const ALLOCATE_FOREVER = "const keep = [];\nwhile (true) keep.push(new Uint8Array(1024 * 1024));";

export function limitsSuite(runCode: RunCode, options: ConformanceOptions = {}): void {
  describe("§6.5 memory", () => {
    it("exceeding memoryLimitBytes settles with 'memory'", async () => {
      const r = await runCode(ALLOCATE_FOREVER, { memoryLimitBytes: 32 * MiB });
      expect(r.status).toBe("memory");
      expect(r.error?.name).toBe("MemoryError");
      expect("result" in r).toBe(false);
      expect(typeof r.memoryUsedBytes).toBe("number");
      expect(r.memoryUsedBytes ?? Number.POSITIVE_INFINITY).toBeLessThanOrEqual(40 * MiB);
    }, 20_000);

    it("live strings past memoryLimitBytes settles with 'memory'", async () => {
      // Flat 1 MiB strings: `s += s` would only build ropes and hit the string length limit instead.
      const source = "const keep = [];\nwhile (true) keep.push('x'.repeat(1024 * 1024 - keep.length));";
      const r = await runCode(source, { memoryLimitBytes: 32 * MiB });
      expect(r.status).toBe("memory");
      expect(r.error?.name).toBe("MemoryError");
    }, 20_000);

    it("a run within memoryLimitBytes succeeds", async () => {
      const source = "const a = new Uint8Array(4 * 1024 * 1024);\nexport default a.length";
      expect(await ok(runCode, source, { memoryLimitBytes: 32 * MiB })).toBe(4 * MiB);
    });

    it("memoryUsedBytes is the heap's high-water mark: it counts what the run freed before it ended", async () => {
      for (let i = 0; i < 2; i++) {
        const r = await runCode("let a = new Uint8Array(4 * 1024 * 1024);\na = null;\nexport default 1", {
          memoryLimitBytes: 32 * MiB,
        });
        expect(r.status).toBe("success");
        expect(r.memoryUsedBytes ?? 0).toBeGreaterThan(4 * MiB);
      }
    });

    it("keeps reports and logs made before running out of memory", async () => {
      const r = await runCode(`report('start');\nconsole.log('log');\n${ALLOCATE_FOREVER}`, {
        memoryLimitBytes: 32 * MiB,
      });
      expect(r.status).toBe("memory");
      expect(r.reports).toEqual(["start"]);
      expect(r.logs.map((l) => l.args)).toEqual([["log"]]);
    }, 20_000);

    it("a normal run works after a run ran out of memory", async () => {
      const r = await runCode(ALLOCATE_FOREVER, { memoryLimitBytes: 32 * MiB });
      expect(r.status).toBe("memory");
      expect(await ok(runCode, "export default [1, 2, 3].map((x) => x * 2)")).toEqual([2, 4, 6]);
    }, 20_000);
  });

  describe("§6.4 stalled runs", () => {
    it("awaiting a promise that can never settle ends with 'error' instead of hanging", async () => {
      const r = await runCode("await new Promise(() => {});\nexport default 1");
      expect(r.status).toBe("error");
      expect((r.error?.message ?? "").length).toBeGreaterThan(0);
    });

    it("an exported function stalled forever ends with 'error'", async () => {
      const r = await runCode("export default async () => { await new Promise(() => {}); return 1; }");
      expect(r.status).toBe("error");
    });

    it("a guest awaiting a slow host promise is not stalled", async () => {
      const slow = async () => {
        await sleep(50);
        return "slow";
      };
      expect(await ok(runCode, "export default await slow()", { globals: { slow } })).toBe("slow");
    });
  });

  describe("runcode's extension: a run's timeoutMs", () => {
    const forever = () => new Promise(() => {});

    it("ends a run awaiting the host terminated, with the time limit's message", async () => {
      const r = await runCode("await forever();", { globals: { forever }, timeoutMs: 200 });
      expect([r.status, r.error]).toEqual([
        "terminated",
        { name: "TerminatedError", message: "The run's time limit of 200 ms ran out" },
      ]);
    }, 20_000);

    it("a run that ends in time is not stopped, and the next run has its own limit", async () => {
      expect(await ok(runCode, "export default 1", { timeoutMs: 20_000 })).toBe(1);
      const r = await runCode("await forever();", { globals: { forever }, timeoutMs: 150 });
      expect(r.error?.message).toBe("The run's time limit of 150 ms ran out");
    }, 20_000);
  });

  const sandbox = options.sandbox;
  describe.skipIf(sandbox === undefined)("§6.4 safety cap and default memory limit (sandbox settings)", () => {
    const make = (settings: Parameters<NonNullable<ConformanceOptions["sandbox"]>>[0]): RunCode => {
      if (sandbox === undefined) throw new Error("no sandbox factory");
      return sandbox(settings);
    };

    it("a cpuTimeMs safety cap stops a synchronous endless loop", async () => {
      const capped = make({ safetyCap: { cpuTimeMs: 200 } });
      const r = await capped("while (true) {}");
      expect(r.status).toBe("terminated");
      expect(r.error?.name).toBe("TerminatedError");
      expect(r.error?.message).toContain("safety cap");
    }, 20_000);

    it("the safety cap cannot be caught by guest code", async () => {
      const capped = make({ safetyCap: { cpuTimeMs: 200 } });
      const r = await capped("let n = 0;\ntry { while (true) {} } catch { n = 1 } finally { n = 2 }\nexport default n");
      expect(r.status).toBe("terminated");
    }, 20_000);

    it("a fuel safety cap stops the loop where the clock stands still", async () => {
      const capped = make({ safetyCap: { fuel: 2_500_000, cpuTimeMs: 1e9 }, clock: () => 0 });
      const r = await capped("while (true) {}");
      expect(r.status).toBe("terminated");
      expect(r.error?.name).toBe("TerminatedError");
      expect(r.error?.message).toContain("safety cap");
    }, 20_000);

    it("onLog hears every console entry as it is made; what it throws, the console call throws", async () => {
      const heard: unknown[] = [];
      const listening = make({
        onLog: (entry) => {
          if (entry.args[0] === "refused") throw new TypeError("no more");
          heard.push([entry.level, entry.args, typeof entry.timestamp]);
        },
      });
      const r = await listening(
        "console.log('a', 1); console.warn({ b: [2n] });\nlet caught = '';\ntry { console.log('refused'); } catch (e) { caught = e.name + ': ' + e.message; }\nexport default caught;",
        { language: "javascript" },
      );
      expect(r.status).toBe("success");
      expect(r.result).toBe("TypeError: no more");
      expect(heard).toEqual([
        ["log", ["a", 1], "number"],
        ["warn", [{ b: [2n] }], "number"],
      ]);
      expect(r.logs.map((l) => l.args)).toEqual([["a", 1], [{ b: [2n] }], ["refused"]]);
    });

    it("an interrupted() flag stops a synchronous endless loop as the caller's terminate", async () => {
      let polls = 0;
      const flagged = make({ interrupted: () => ++polls > 20 });
      const r = await flagged("let n = 0;\ntry { while (true) n++; } finally { n = -1 }\nexport default n");
      expect(r.status).toBe("terminated");
      expect(r.error).toEqual({ name: "TerminatedError", message: "Execution terminated by the caller" });
      expect(polls).toBe(21);
    }, 20_000);

    it("an interrupted() flag raised while the run awaits the host ends it at the next yield point", async () => {
      let raised = false;
      const flagged = make({ interrupted: () => raised });
      const pause = () =>
        new Promise((resolve) => {
          raised = true;
          setTimeout(resolve, 10);
        });
      const r = await flagged("await pause();\nexport default 1", { globals: { pause } });
      expect(r.status).toBe("terminated");
      expect(r.error?.message).toBe("Execution terminated by the caller");
    }, 20_000);

    it("fuel stops natives that never poll where the clock stands still; the next run is clean", async () => {
      const FUEL = 20_000_000;
      const capped = make({ safetyCap: { fuel: FUEL, cpuTimeMs: 1e9 }, clock: () => 0 });
      const js = { language: "javascript" } as const;
      const runaways = [
        "let x = 3n ** 200000n; for (;;) x = (x * x) % (3n ** 200000n);",
        "const big = Array.from({ length: 10000 }, (_, i) => ({ i, s: 'x' + i })); for (;;) JSON.parse(JSON.stringify(big));",
        "const s = 'a'.repeat(2 * 1024 * 1024); for (;;) s.replace(/a/g, 'a');",
        "const a = Array.from({ length: 1 << 20 }, (_, i) => i); for (;;) [...a];",
      ];
      for (const source of runaways) {
        const r = await capped(source, js);
        expect(r.status).toBe("terminated");
        expect(r.error).toEqual({
          name: "TerminatedError",
          message: `Execution stopped by the safety cap after ${FUEL} units of fuel`,
        });
        expect(await ok(capped, "export default [1, 2].map((n) => n * 2)", js)).toEqual([2, 4]);
      }
    }, 30_000);

    it("a program spends exactly the same fuel on every run, in every thread mode and on every platform", async () => {
      const js = { language: "javascript" } as const;
      const source = "let s = 0;\nfor (let i = 0; i < 1000; i++) s += JSON.stringify({ i }).length;\nexport default s";
      const frozen = make({ safetyCap: { fuel: 20_000_000, cpuTimeMs: 1e9 }, clock: () => 0 });
      for (const run of [runCode, frozen]) {
        const spent = [];
        for (let i = 0; i < 3; i++) spent.push((await run(source, js)).fuelUsed as number);
        // Every platform evaluates the same guest text (src/guest/sources.generated.ts) in the same engine.
        expect(spent).toEqual(Array(3).fill(1_032_277));
      }
    }, 30_000);

    it("a program that grows the memory spends the same fuel on an instance an earlier run left grown", async () => {
      const js = { language: "javascript", memoryLimitBytes: 64 * MiB } as const;
      const grows = (mib: number) => `export default new Uint8Array(${mib} * 1024 * 1024).fill(1).length`;
      const frozen = make({ safetyCap: { fuel: 20_000_000, cpuTimeMs: 1e9 }, clock: () => 0 });
      const spent = [];
      // An instance is kept grown after its run (up to 64 MiB): the later runs find the memory already grown.
      for (const mib of [16, 24, 16, 24]) spent.push((await frozen(grows(mib), js)).fuelUsed as number);
      expect(spent).toEqual([1_063_001, 1_587_289, 1_063_001, 1_587_289]);
    }, 30_000);

    it("the fuel safety cap also stops a loop in an async export", async () => {
      const capped = make({ safetyCap: { fuel: 2_500_000, cpuTimeMs: 1e9 }, clock: () => 0 });
      const r = await capped("export default async () => { await null; for (;;) {} }");
      expect(r.status).toBe("terminated");
      expect(r.error?.name).toBe("TerminatedError");
    }, 20_000);

    it("a cpuTimeMs safety cap stops an endless microtask loop", async () => {
      const capped = make({ safetyCap: { cpuTimeMs: 200 } });
      const r = await capped("for (;;) await null;");
      expect(r.status).toBe("terminated");
      expect(r.error?.name).toBe("TerminatedError");
      expect(r.error?.message).toContain("safety cap");
    }, 20_000);

    it("a cpuTimeMs safety cap stops an endless loop in an executed export", async () => {
      const capped = make({ safetyCap: { cpuTimeMs: 200 } });
      const r = await capped("export function spin(n) { for (;;) n++; }", { execute: { fn: "spin", args: [0] } });
      expect(r.status).toBe("terminated");
      expect(r.error?.name).toBe("TerminatedError");
    }, 20_000);

    it("time spent awaiting the host does not count against cpuTimeMs", async () => {
      const capped = make({ safetyCap: { cpuTimeMs: 100 } });
      const slow = async () => {
        await sleep(300);
        return "waited";
      };
      const r = await capped("export default await slow()", { globals: { slow } });
      expect(r.status).toBe("success");
      expect(r.result).toBe("waited");
    });

    it("a normal run under a small safety cap succeeds", async () => {
      const capped = make({ safetyCap: { cpuTimeMs: 200, fuel: 2_500_000 } });
      expect(await ok(capped, "let s = 0;\nfor (let i = 0; i < 1000; i++) s += i;\nexport default s")).toBe(499500);
    });

    it("defaultMemoryLimitBytes applies to a run that sets none", async () => {
      const small = make({ defaultMemoryLimitBytes: 16 * MiB });
      const r = await small(ALLOCATE_FOREVER);
      expect(r.status).toBe("memory");
      expect(r.error?.name).toBe("MemoryError");
      expect(r.memoryUsedBytes ?? Number.POSITIVE_INFINITY).toBeLessThanOrEqual(24 * MiB);
    }, 20_000);

    it("memoryLimitBytes of a run overrides defaultMemoryLimitBytes", async () => {
      const small = make({ defaultMemoryLimitBytes: 16 * MiB });
      const source = "const a = new Uint8Array(24 * 1024 * 1024);\nexport default a.length";
      expect(await ok(small, source, { memoryLimitBytes: 64 * MiB })).toBe(24 * MiB);
      const r = await small(source);
      expect(r.status).toBe("memory");
    }, 20_000);

    it("timeoutMs lowers the run's fuel where the clock stands still: synchronous code stops on time", async () => {
      const frozen = make({ clock: () => 0 });
      const js = { language: "javascript" } as const;
      // Warm: the timer, which a synchronous loop keeps from firing, must not fire before the loop starts.
      expect(await ok(frozen, "export default 1", js)).toBe(1);
      const r = await frozen("while (true) {}", { ...js, timeoutMs: 300 });
      expect([r.status, r.error]).toEqual([
        "terminated",
        { name: "TerminatedError", message: "Execution stopped by the safety cap after 300000000 units of fuel" },
      ]);
      // The same sandbox, another run: its own timeoutMs, its own fuel.
      const next = await frozen("while (true) {}", { ...js, timeoutMs: 200 });
      expect(next.error?.message).toBe("Execution stopped by the safety cap after 200000000 units of fuel");
    }, 30_000);

    it("timeoutMs lowers the sandbox's safety cap, never raises it", async () => {
      const capped = make({ safetyCap: { fuel: 2_500_000, cpuTimeMs: 1e9 }, clock: () => 0 });
      const r = await capped("while (true) {}", { language: "javascript", timeoutMs: 60_000 });
      expect(r.error?.message).toBe("Execution stopped by the safety cap after 2500000 units of fuel");
    }, 20_000);

    it("a clock standing still gives durationMs 0", async () => {
      const frozen = make({ clock: () => 0 });
      const r = await frozen("export default 1");
      expect(r.status).toBe("success");
      expect(r.durationMs).toBe(0);
    });
  });
}
