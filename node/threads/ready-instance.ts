/**
 * The first run of a worker thread's pool with a restorable instance readied for it: the pool gives its first run an
 * instance booted for that run alone (the engine's code is cold then, and recording the image takes a third longer),
 * so the worker's second run booted again; a run on a worker readies one first instead, outside the time its watchdog
 * counts, and the next run restores it. (The caller's thread's pool boots its first run a restorable instance itself,
 * after the run's TypeScript is transpiled: node/index.ts.)
 * @module
 */
import { bindingBoot, type RunContext } from "../../src/core/runner-port.js";

/**
 * Readies a restorable instance in `context`'s pool for runs of `memoryLimitBytes` when it has none idle (one for
 * the runs whose globals do not name `console` or `report`: most). A wasm that fails to load is the run's to report.
 */
export async function readyInstance(context: RunContext, memoryLimitBytes: number): Promise<void> {
  const { pool, restore } = context;
  const boot = bindingBoot(context.boot);
  try {
    const module = await context.wasm();
    if (restore && !pool.hasIdle(module, memoryLimitBytes, boot)) await pool.prepare(module, memoryLimitBytes, boot);
  } catch {}
}
