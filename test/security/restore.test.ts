/**
 * Restored instances: a run gets an instance as it was booted, byte for byte, whatever the run before did with it,
 * and an instance that cannot be restored is never lent again. The memory-level tests are shared with workerd and
 * Chromium (test/conformance/restore-image.ts), as are those through `runCode` (test/conformance/fresh-runs.ts);
 * the pool's own bookkeeping is tested here.
 */
import { describe, expect, it } from "vitest";
import { createSandbox, nodeWasm } from "../../node/index.js";
import { compiledModule } from "../../src/core/engine.js";
import type { BootedInstance } from "../../src/core/instance.js";
import { InstancePool, MAX_IDLE_INSTANCES } from "../../src/core/instance-pool.js";
import type { CodeExecutionOptions } from "../../src/core/types.js";
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
    // The instance given back last is lent next, capped at the memory size asked for; another size of its memory
    // class takes the next, capped at its own; a size of another class boots its own.
    expect((await pool.take(module, MiB, true)) === taken.at(-1)).toBe(true);
    const larger = await pool.take(module, 64 * MiB, true);
    expect(larger === taken.at(-2)).toBe(true);
    expect(larger.instance.maxBytes).toBe(68 * MiB);
    const largest = await pool.take(module, 200 * MiB, true);
    expect(taken.includes(largest)).toBe(false);
    expect([largest.instance.maxBytes, largest.instance.classBytes]).toEqual([204 * MiB, 256 * MiB]);
  });

  it("never lends an instance booted without an image twice", async () => {
    const pool = new InstancePool();
    const first = await pool.take(await wasm(), MiB, false);
    pool.give(first, true);
    expect(pool.idle).toBe(0);
    expect((await pool.take(await wasm(), MiB, false)) === first).toBe(false);
  });
});

/**
 * Runs `source` on a pool's restored instance (4 MiB of heap fits the engine's first 16 MiB of linear memory: the
 * instance never grows, so it is restored again); its status, and the bytes at which the instance then differs from
 * its memory as lent.
 */
async function restoredAfter(
  source: string,
  options: CodeExecutionOptions = {},
): Promise<{ status: string; result: unknown; differing: number }> {
  const module = (await wasm()) as WebAssembly.Module;
  const pool = new InstancePool();
  const limit = 4 * MiB;
  const { runCode } = createSandbox({
    threads: false,
    pool,
    wasm: module,
    clock: () => 0,
    safetyCap: { fuel: 5_000_000, cpuTimeMs: 1e12 },
  });
  // The pool's first run boots an instance of its own; the second's is restored and kept.
  for (let i = 0; i < 2; i++)
    expect((await runCode("export default 1", { memoryLimitBytes: limit })).status).toBe("success");
  const instance = await pool.take(module, limit, true);
  const image = new Uint8Array(instance.instance.memory.buffer.slice(0));
  pool.give(instance, true);
  const { status, result } = await runCode(source, { ...options, memoryLimitBytes: limit });
  const after = await pool.take(module, limit, true);
  expect(after === instance).toBe(true);
  return { status, result, differing: differingBytes(new Uint8Array(after.instance.memory.buffer), image) };
}

describe("a run stopped deep in the C stack gives back its instance as booted, byte for byte", () => {
  /** Recursion 500 calls deep, then what stops the run at the deepest frame. */
  const deep = (bottom: string) =>
    `const f = (n) => (n === 0 ? (() => { ${bottom} })() : f(n - 1) + 1);\nexport default f(500);`;
  const stops: [string, string, string][] = [
    ["fuel", deep("while (true) {}"), "terminated"],
    // (One allocation past the limit: the engine refuses it without asking the memory to grow, which drops an instance.)
    ["its memory limit", deep("return new Uint8Array(8 * 1024 * 1024).length;"), "memory"],
    ["a throw", deep('throw new Error("deep");'), "error"],
  ];
  for (const [stop, source, status] of stops) {
    it(`by ${stop}`, async () => {
      expect(await restoredAfter(source)).toEqual({ status, result: undefined, differing: 0 });
    }, 30_000);
  }
});

it("a run's imports and globals, taken by the internals module evaluated at boot, leave the instance as booted", async () => {
  const source = 'import { get } from "tools";\nexport default get() + hint;';
  const options = { imports: { tools: { get: () => 41 } }, globals: { hint: 1 } };
  expect(await restoredAfter(source, options)).toEqual({ status: "success", result: 42, differing: 0 });
}, 30_000);

/** Bytes at which `a` and `b` differ, lengths apart. */
function differingBytes(a: Uint8Array, b: Uint8Array): number {
  let differing = 0;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) differing++;
  return differing;
}

it("a run that needs the guarded natives' JS implementations finds them compiled in the image, not compiled again", async () => {
  const { runCode } = createSandbox({ threads: false, wasm: (await wasm()) as WebAssembly.Module });
  // `flat` always takes the JS implementation; `slice` of a short array never does.
  const flat = await runCode("export default [[1, 2], [3]].flat().length;");
  const slice = await runCode("export default [1, 2, 3].slice().length;");
  expect([flat.result, slice.result]).toEqual([3, 3]);
  // Compiling them took ~690,000 units of fuel of a run that otherwise spends ~20,000.
  expect(flat.fuelUsed as number).toBeLessThan(2 * (slice.fuelUsed as number));
});
