/**
 * Restored instances: a run gets an instance as it was booted, byte for byte, whatever the run before did with it,
 * and an instance that cannot be restored is never lent again. The memory-level tests are shared with workerd and
 * Chromium (test/conformance/restore-image.ts), as are those through `runCode` (test/conformance/fresh-runs.ts);
 * the pool's own bookkeeping is tested here.
 */
import { describe, expect, it } from "vitest";
import { nodeWasm } from "../../node/index.js";
import { compiledModule } from "../../src/engine.js";
import type { BootedInstance } from "../../src/instance.js";
import { InstancePool, MAX_IDLE_INSTANCES } from "../../src/instance-pool.js";
import { restoreImageSuite } from "../conformance/restore-image.js";

const MiB = 1024 * 1024;
const wasm = compiledModule(nodeWasm);

restoreImageSuite(async () => (await wasm()) as WebAssembly.Module);

/** Waits until `pool` holds `count` idle instances (the background boots are done); a bound that only catches a hang. */
async function idleReaches(pool: InstancePool, count: number): Promise<number> {
  for (let i = 0; i < 500 && pool.idle < count; i++) await new Promise((resolve) => setTimeout(resolve, 10));
  return pool.idle;
}

describe("the pool", () => {
  it(`boots an instance for a run alone when none is idle, then up to ${MAX_IDLE_INSTANCES} with an image for the next runs`, async () => {
    const pool = new InstancePool();
    const module = await wasm();
    const taken = await Promise.all(Array.from({ length: MAX_IDLE_INSTANCES + 2 }, () => pool.take(module, MiB, true)));
    expect(new Set(taken).size).toBe(MAX_IDLE_INSTANCES + 2);
    // (Instances are compared by identity: a diff of two would print their whole memory.)
    for (const instance of taken) pool.give(instance, true);
    // Those were booted without an image and are dropped; the pool boots its own in the background, no more than it keeps.
    expect(pool.idle).toBe(0);
    expect(await idleReaches(pool, MAX_IDLE_INSTANCES)).toBe(MAX_IDLE_INSTANCES);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(pool.idle).toBe(MAX_IDLE_INSTANCES);
    // An idle instance of the size asked for is lent; another size gets one booted for it alone.
    const restorable = await pool.take(module, MiB, true);
    expect(taken.includes(restorable)).toBe(false);
    expect(pool.idle).toBe(MAX_IDLE_INSTANCES - 1);
    const larger = await pool.take(module, 64 * MiB, true);
    expect(larger.instance.maxBytes).toBe(68 * MiB);
    expect(pool.idle).toBe(MAX_IDLE_INSTANCES - 1);
    // A restorable instance comes back after a sound run, never after a fault.
    pool.give(restorable, true);
    expect(pool.idle).toBe(MAX_IDLE_INSTANCES);
    const again = await pool.take(module, MiB, true);
    expect(again === restorable).toBe(true);
    pool.give(again, false);
    expect(pool.idle).toBe(MAX_IDLE_INSTANCES - 1);
  });

  it("lends the instance booting for the pool to a run that asks meanwhile, rather than booting another", async () => {
    const pool = new InstancePool();
    const module = await wasm();
    const first = await pool.take(module, MiB, true);
    pool.give(first, true);
    const next = await pool.take(module, MiB, true);
    expect(next === first).toBe(false);
    // It was booted with an image: it comes back to the pool after its run.
    pool.give(next, true);
    expect(pool.idle).toBe(1);
  });

  it("never lends an instance booted without an image twice, and boots none for the pool in fresh mode", async () => {
    const pool = new InstancePool();
    const first = await pool.take(await wasm(), MiB, false);
    pool.give(first, true);
    expect(pool.idle).toBe(0);
    expect((await pool.take(await wasm(), MiB, false)) === first).toBe(false);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(pool.idle).toBe(0);
  });
});
