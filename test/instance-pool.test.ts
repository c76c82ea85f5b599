/**
 * The pool's memory bound: idle instances and lent ones together stay within what a host admits, idle ones giving
 * way (the edge sets the admission's budget: a 128 MB isolate).
 */
import { describe, expect, it } from "vitest";
import { nodeWasm } from "../node/index.js";
import { compiledModule } from "../src/engine.js";
import { InstancePool } from "../src/instance-pool.js";

const MiB = 1024 * 1024;
const wasm = compiledModule(nodeWasm);

/** Waits until `pool` holds `count` idle instances (the background boots are done); a bound that only catches a hang. */
async function idleReaches(pool: InstancePool, count: number): Promise<number> {
  for (let i = 0; i < 500 && pool.idle < count; i++) await new Promise((resolve) => setTimeout(resolve, 10));
  return pool.idle;
}

describe("the instance pool's memory bound", () => {
  it("drops idle instances, least recently used first, when lent and idle memory would pass it", async () => {
    const pool = new InstancePool();
    const module = await wasm();
    // Four runs capped at 12 MiB (16 MiB of linear memory each, lent or idle) leave four restorable instances.
    const standIns = await Promise.all(Array.from({ length: 4 }, () => pool.take(module, 12 * MiB, true)));
    for (const instance of standIns) pool.give(instance, true);
    expect(await idleReaches(pool, 4)).toBe(4);
    pool.limitMemory(48 * MiB);
    expect(pool.idle).toBe(3);
    // Lending one of them moves its 16 MiB from idle to lent: nothing else has to go.
    const lent = await pool.take(module, 12 * MiB, true);
    expect(pool.idle).toBe(2);
    // A run capped at 28 MiB takes 32 MiB: 16 + 32 lent leave no room for idle ones.
    const large = await pool.take(module, 28 * MiB, true);
    expect(pool.idle).toBe(0);
    pool.give(lent, true);
    expect(pool.idle).toBe(1);
    // The large run's instance was booted for it alone; one with an image boots for its next run, and fits.
    pool.give(large, true);
    expect(await idleReaches(pool, 2)).toBe(2);
  });
});
