/**
 * A short soak: 2,000 runs mixing every status in one process. Every run settles with its expected status and the
 * host heap stays flat (the full 100,000-run version is `npm run bench:soak`).
 */
import v8 from "node:v8";
import vm from "node:vm";
import { describe, expect, it } from "vitest";
import type { CodeExecution, CodeExecutionStatus } from "../../src/types.js";
import { sandbox } from "./helpers.js";

v8.setFlagsFromString("--expose-gc");
const gc = vm.runInNewContext("gc") as () => void;
const heapUsed = () => {
  gc();
  gc();
  return process.memoryUsage().heapUsed;
};

const run = sandbox({ safetyCap: { interruptPolls: 20 } });
const never = () => new Promise(() => {});

/** One run of kind `i % 8`, with the status it must settle with. */
function start(i: number): [CodeExecution, CodeExecutionStatus] {
  const js = { language: "javascript" } as const;
  switch (i % 8) {
    case 0:
      return [run(`export default input.map((x) => x * ${i});`, { ...js, globals: { input: [1, 2, 3] } }), "success"];
    case 1:
      return [
        run(`report(${i}); console.log("x"); export default await tool(${i});`, {
          ...js,
          globals: { tool: async (n: number) => ({ n }) },
        }),
        "success",
      ];
    case 2:
      return [run(`throw new TypeError("bad ${i}");`, js), "error"];
    case 3:
      return [
        run("const keep = []; for (;;) keep.push(new Uint8Array(1 << 20));", { ...js, memoryLimitBytes: 1 << 20 }),
        "memory",
      ];
    case 4:
      return [run("let i = 0; for (;;) i++;", js), "terminated"];
    case 5: {
      const handle = run("export default await never();", { ...js, globals: { never } });
      setTimeout(() => handle.terminate("soak"), 0);
      return [handle, "terminated"];
    }
    case 6:
      return [run(`import { x } from "missing-${i % 3}";`, js), "link_error"];
    default:
      return [run("export default fn(() => 1);", { ...js, globals: { fn: (x: unknown) => x } }), "error"];
  }
}

describe("soak", () => {
  it("2,000 runs of every status settle as expected; the host heap stays flat", async () => {
    for (let i = 0; i < 80; i++) await start(i)[0];
    const before = heapUsed();
    const counts: Record<string, number> = {};
    for (let i = 0; i < 2_000; i += 4) {
      const batch = [start(i), start(i + 1), start(i + 2), start(i + 3)];
      const results = await Promise.all(batch.map(([handle]) => handle));
      results.forEach((result, k) => {
        const [handle, expected] = batch[k] as [CodeExecution, CodeExecutionStatus];
        expect(handle.running).toBe(false);
        if (result.status !== expected) expect({ i: i + k, result }).toEqual({ i: i + k, status: expected });
        counts[result.status] = (counts[result.status] ?? 0) + 1;
      });
    }
    const growth = heapUsed() - before;
    expect(counts).toEqual({ success: 500, error: 500, memory: 250, terminated: 500, link_error: 250 });
    expect(growth).toBeLessThan(24 * 1024 * 1024);
  }, 90_000);
});
