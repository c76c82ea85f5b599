/**
 * A short soak: 2,000 runs mixing every status in one process. Every run settles with its expected status and the
 * host heap stays flat (the full 100,000-run version is `npm run bench:soak`).
 */
import v8 from "node:v8";
import vm from "node:vm";
import { describe, expect, it } from "vitest";
import { startMixed } from "../../bench/soak-mix.js";
import { sandbox } from "./helpers.js";

v8.setFlagsFromString("--expose-gc");
const gc = vm.runInNewContext("gc") as () => void;
const heapUsed = () => {
  gc();
  gc();
  return process.memoryUsage().heapUsed;
};

const run = sandbox({ safetyCap: { fuel: 1_000_000 } });

describe("soak", () => {
  it("2,000 runs of every status settle as expected; the host heap stays flat", async () => {
    for (let i = 0; i < 80; i++) await startMixed(run, i)[0];
    const before = heapUsed();
    const counts: Record<string, number> = {};
    for (let i = 0; i < 2_000; i += 4) {
      const batch = [startMixed(run, i), startMixed(run, i + 1), startMixed(run, i + 2), startMixed(run, i + 3)];
      const results = await Promise.all(batch.map(([handle]) => handle));
      results.forEach((result, k) => {
        const [handle, expected] = batch[k] as ReturnType<typeof startMixed>;
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
