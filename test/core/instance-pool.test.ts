/**
 * The pool's memory bound: idle instances and lent ones together stay within what a host admits, idle ones giving
 * way (the edge sets the admission's budget: a 128 MB isolate).
 */
import { describe, expect, it } from "vitest";
import { nodeWasm } from "../../node/index.js";
import { compiledModule } from "../../src/core/engine.js";
import { InstancePool } from "../../src/core/instance-pool.js";

const MiB = 1024 * 1024;
const wasm = compiledModule(nodeWasm);

describe("the instance pool's memory bound", () => {
  it("drops idle instances, least recently used first, when lent and idle memory would pass it", async () => {
    const pool = new InstancePool();
    const module = await wasm();
    // The pool's first run gets an instance booted for it alone; the next four (12 MiB caps: 16 MiB of linear memory
    // each, lent or idle) leave four restorable instances.
    pool.give(await pool.take(module, 12 * MiB, true), true);
    const taken = await Promise.all(Array.from({ length: 4 }, () => pool.take(module, 12 * MiB, true)));
    for (const instance of taken) pool.give(instance, true);
    expect(pool.idle).toBe(4);
    pool.limitMemory(48 * MiB);
    expect(pool.idle).toBe(3);
    // Lending one of them moves its 16 MiB from idle to lent: nothing else has to go.
    const lent = await pool.take(module, 12 * MiB, true);
    expect(lent === taken[3]).toBe(true);
    expect(pool.idle).toBe(2);
    // A run capped at 28 MiB takes 32 MiB and boots its own instance: 16 + 32 lent leave no room for idle ones.
    const large = await pool.take(module, 28 * MiB, true);
    expect(pool.idle).toBe(0);
    pool.give(large, true);
    expect(pool.idle).toBe(1);
    pool.give(lent, true);
    expect(pool.idle).toBe(2);
  });
});
