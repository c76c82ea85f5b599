/**
 * Restored instances: a run gets an instance as it was booted, byte for byte, whatever the run before did with it,
 * and an instance that cannot be restored is never lent again. The memory-level tests are shared with workerd and
 * Chromium (test/conformance/restore-image.ts), as are those through `runCode` (test/conformance/fresh-runs.ts);
 * the pool's own bookkeeping is tested here.
 */
import { describe, expect, it } from "vitest";
import { nodeWasm } from "../../node/index.js";
import { compiledModule } from "../../src/core/engine.js";
import type { BootedInstance } from "../../src/core/instance.js";
import { InstancePool, MAX_IDLE_INSTANCES } from "../../src/core/instance-pool.js";
import { restoreImageSuite } from "../conformance/restore-image.js";

const MiB = 1024 * 1024;
const wasm = compiledModule(nodeWasm);

restoreImageSuite(async () => (await wasm()) as WebAssembly.Module);

describe("the pool", () => {
  it(`keeps at most ${MAX_IDLE_INSTANCES} idle instances and drops what cannot be restored`, async () => {
    const pool = new InstancePool();
    const module = await wasm();
    // The pool's first run gets an instance booted for it alone (no image recorded while the engine is cold).
    const first = await pool.take(module, MiB, true);
    pool.give(first, true);
    expect(pool.idle).toBe(0);
    const taken = await Promise.all(Array.from({ length: MAX_IDLE_INSTANCES + 2 }, () => pool.take(module, MiB, true)));
    expect(new Set([first, ...taken]).size).toBe(MAX_IDLE_INSTANCES + 3);
    // (Instances are compared by identity: a diff of two would print their whole memory.)
    pool.give(taken[0] as BootedInstance, false);
    expect(pool.idle).toBe(0);
    for (const instance of taken.slice(1)) pool.give(instance, true);
    expect(pool.idle).toBe(MAX_IDLE_INSTANCES);
    // The instance given back last is lent next, with the memory size asked for: another size boots its own.
    expect((await pool.take(module, MiB, true)) === taken.at(-1)).toBe(true);
    const larger = await pool.take(module, 64 * MiB, true);
    expect(taken.includes(larger)).toBe(false);
    expect(larger.instance.maxBytes).toBe(68 * MiB);
  });

  it("never lends an instance booted without an image twice", async () => {
    const pool = new InstancePool();
    const first = await pool.take(await wasm(), MiB, false);
    pool.give(first, true);
    expect(pool.idle).toBe(0);
    expect((await pool.take(await wasm(), MiB, false)) === first).toBe(false);
  });
});
