/**
 * Restored instances at the memory level, on the platform running the suite: the allocator's break and the C stack
 * are found, a run's instance is restored (not dropped and booted fresh) and its memory then equals the booted image
 * byte for byte, whichever region the run wrote, and zeros above it when the run grew the memory; an instance that
 * cannot be restored is never lent again.
 * Platform-neutral: each host passes its compiled wasm.
 * @module
 */
import { describe, expect, it } from "vitest";
import { STACK_MARK } from "../../src/core/engine.js";
import {
  type Boot,
  BootedInstance,
  bootOf,
  C_STACK_BYTES,
  type Holder,
  MAX_KEPT_MEMORY_BYTES,
  type MemoryLayout,
  memoryLayout,
} from "../../src/core/instance.js";

const MiB = 1024 * 1024;

/** A tenant for driving an instance by hand: no interrupt, no host calls, no modules. */
const idleHolder: Holder = {
  poll: () => false,
  dateNow: () => Date.now(),
  hostCall: () => undefined,
  call: () => undefined,
  normalize: (_base, specifier) => specifier,
  load: () => ({ error: new Error("no modules") }),
};

/** Bytes at which `a` and `b` differ, lengths apart. */
function differingBytes(a: Uint8Array, b: Uint8Array): number {
  let differing = 0;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) differing++;
  return differing;
}

/** Where `text` (ASCII) occurs in `memory`: QuickJS keeps ASCII strings as 8-bit, so as these very bytes. */
function findInMemory(memory: WebAssembly.Memory, text: string): number {
  const bytes = new Uint8Array(memory.buffer);
  const needle = new TextEncoder().encode(text);
  const last = bytes.length - needle.length;
  next: for (
    let at = bytes.indexOf(needle[0] as number);
    at !== -1 && at <= last;
    at = bytes.indexOf(needle[0] as number, at + 1)
  ) {
    for (let i = 1; i < needle.length; i++) if (bytes[at + i] !== needle[i]) continue next;
    return at;
  }
  return -1;
}

/** The allocator's break in `instance`'s memory now. */
function breakOf(instance: BootedInstance, layout: MemoryLayout): number {
  return new Int32Array(instance.instance.memory.buffer, layout.breakAt, 1)[0] as number;
}

/** The engine's C stack pointer and its low-water mark: every platform runs the metered engine, which keeps them. */
function markOf(instance: BootedInstance): { pointer: WebAssembly.Global; low: WebAssembly.Global } {
  const { stack } = instance.instance;
  if (stack === undefined) throw new Error("The engine keeps no stack mark");
  return stack;
}

/** Declares the memory-level restore tests against the platform's compiled QuickJS module. */
export function restoreImageSuite(wasm: () => Promise<WebAssembly.Module>): void {
  /**
   * A restorable instance, with `boot`'s modules, lent to {@link idleHolder}; `booted` is a copy of its memory as
   * booted.
   */
  async function lent(
    heapLimitBytes = 64 * MiB,
    boot?: Boot,
  ): Promise<{ instance: BootedInstance; booted: Uint8Array }> {
    const instance = await BootedInstance.boot(await wasm(), heapLimitBytes, true, boot);
    const booted = new Uint8Array(instance.instance.memory.buffer.slice(0));
    instance.lend(idleHolder, heapLimitBytes);
    return { instance, booted };
  }

  /** Evaluates a global script in the instance, returning its value dumped (or the error's). */
  function evaluate(instance: BootedInstance, source: string): unknown {
    const result = instance.ctx.evalCode(source, "/dirty.js", { type: "global" });
    return instance.ctx.dump(result.error ?? result.value);
  }

  describe("restored memory: the booted image byte for byte", () => {
    it("this platform finds the allocator's break and the C stack below it, without which no instance is restored", async () => {
      const layout = await memoryLayout(await wasm());
      if (layout === undefined) throw new Error("no memory layout found");
      expect(layout.breakAt % 4).toBe(0);
      expect(layout.stackTop % 16).toBe(0);
      const { instance } = await lent();
      const bootedBreak = breakOf(instance, layout);
      expect(layout.stackTop).toBeLessThanOrEqual(bootedBreak);
      // The high-water mark: a run that allocates and frees moves it up, and it stays there.
      evaluate(instance, "let big = new Uint8Array(4 * 1024 * 1024).fill(1); big = null;");
      expect(breakOf(instance, layout)).toBeGreaterThan(bootedBreak + 3 * MiB);
    });

    it("equals the booted memory byte for byte after a run that dirtied heap, stack, atoms and jobs", async () => {
      const { instance, booted: image } = await lent();
      expect(
        evaluate(
          instance,
          `globalThis.kept = Array.from({ length: 20000 }, (_, i) => ({ i, s: "SECRET_HEAP_" + i }));
           globalThis[Symbol.for("SECRET_ATOM_" + 1)] = 1;
           Array.prototype.polluted = "SECRET_PROTO";
           const deep = (n) => (n === 0 ? 0 : 1 + deep(n - 1));
           Promise.resolve().then(() => { globalThis.late = "SECRET_JOB"; });
           new Promise(() => {});
           String(deep(500)) + kept.length;`,
        ),
      ).toBe("50020000");
      expect(findInMemory(instance.instance.memory, "SECRET_HEAP_19999")).toBeGreaterThan(0);
      expect(instance.runtime.hasPendingJob()).toBe(true);
      // Restored, not refused: a platform that dropped the instance here would boot every run fresh.
      expect(instance.reclaim(true)).toBe(true);
      const restored = new Uint8Array(instance.instance.memory.buffer);
      expect(restored.length).toBe(image.length);
      expect(differingBytes(restored, image)).toBe(0);
      for (const secret of ["SECRET_HEAP_", "SECRET_ATOM_1", "SECRET_PROTO", "SECRET_JOB"])
        expect(findInMemory(instance.instance.memory, secret)).toBe(-1);
    });

    it("equals the booted memory after a run that freed what it wrote above the booted break (the top chunk came back down)", async () => {
      const { instance, booted: image } = await lent();
      expect(evaluate(instance, "let big = new Uint8Array(8 * 1024 * 1024).fill(0x53); big = null; 1")).toBe(1);
      expect(findInMemory(instance.instance.memory, "SSSSSSSSSSSSSSSS")).toBeGreaterThan(0);
      expect(instance.reclaim(true)).toBe(true);
      expect(differingBytes(new Uint8Array(instance.instance.memory.buffer), image)).toBe(0);
    });

    /**
     * Bytes planted at every 64 KiB of a region, as a run's native frames or allocations would leave them, each region
     * on an instance of its own: the restore knows where a run can write from the allocator and the stack pointer,
     * not from what the booted memory holds. In the C stack, the run's frames reached the lowest planted byte: where
     * the engine keeps the stack pointer's low-water mark, it is set as such a run leaves it, the lowest byte in the
     * red zone below the deepest frame.
     */
    const regions: [
      string,
      (layout: MemoryLayout, bootedBreak: number) => [from: number, to: number],
      stack: boolean,
    ][] = [
      ["static data (from 1 KiB, below the stack)", () => [1024, 64 * 1024], false],
      [
        "the C stack at depth, far below what JS recursion reaches",
        (layout) => [128 * 1024, layout.stackTop - 2 * MiB],
        true,
      ],
      ["the C stack near its top", (layout) => [layout.stackTop - 2 * MiB, layout.stackTop], true],
      ["the booted heap", (layout, bootedBreak) => [layout.stackTop, bootedBreak], false],
    ];
    for (const [region, bounds, stack] of regions) {
      it(`is the booted image again after bytes were planted in ${region}`, async () => {
        const layout = (await memoryLayout(await wasm())) as MemoryLayout;
        const { instance, booted: image } = await lent();
        const [from, to] = bounds(layout, breakOf(instance, layout));
        expect(to - from).toBeGreaterThan(32 * 1024);
        const bytes = new Uint8Array(instance.instance.memory.buffer);
        for (let at = from + 1024; at < to; at += 64 * 1024) bytes[at] = (bytes[at] as number) ^ 0x53;
        const { low } = markOf(instance);
        if (stack) low.value = Math.min(low.value, from + 1024 + STACK_MARK.redZoneBytes);
        expect(differingBytes(bytes, image)).toBeGreaterThan(0);
        expect(instance.reclaim(true)).toBe(true);
        expect(differingBytes(new Uint8Array(instance.instance.memory.buffer), image)).toBe(0);
      });
    }

    /**
     * Runs whose native frames reach deep into the C stack (recursion in C, `alloca`-like buffers), each ending its
     * own way; after each, the restored memory is the booted image byte for byte, the dead stack zero in both.
     */
    const deepRuns: [what: string, source: string, reach: number][] = [
      [
        "recursion 1,000 calls deep, ended by a throw from the deepest frame",
        'const f = (n) => (n === 0 ? JSON.parse("{") : f(n - 1) + 1); try { f(1000); } catch (e) { e.name; }',
        64 * 1024,
      ],
      [
        "a backtracking regex over a long string",
        'String(/^(a|ab)*c$/.test("ab".repeat(20000) + "c")) + "a".repeat(100000).replace(/(a)(?=a)/g, "$1").length',
        1024,
      ],
      [
        "JSON.parse of 1,000 levels of nesting",
        'String(JSON.parse("[".repeat(1000) + "]".repeat(1000)).length)',
        8 * 1024,
      ],
      [
        "a sort with a comparator",
        "String(Array.from({ length: 20000 }, (_, i) => (i * 7919) % 10007).sort((a, b) => a - b)[19999])",
        1024,
      ],
    ];
    for (const [what, source, reach] of deepRuns) {
      it(`equals the booted memory after ${what}`, async () => {
        const layout = (await memoryLayout(await wasm())) as MemoryLayout;
        const { instance, booted: image } = await lent();
        const bytes = new Uint8Array(instance.instance.memory.buffer);
        // The dead stack is zero in the image (a booted instance's stack holds nothing live at rest).
        expect(image.subarray(layout.stackTop - C_STACK_BYTES, layout.stackTop).every((byte) => byte === 0)).toBe(true);
        expect(typeof evaluate(instance, source)).toBe("string");
        expect(differingBytes(bytes.subarray(0, layout.stackTop), image.subarray(0, layout.stackTop))).toBeGreaterThan(
          0,
        );
        const { low } = markOf(instance);
        expect(layout.stackTop - low.value).toBeGreaterThan(reach);
        expect(instance.reclaim(true)).toBe(true);
        expect(differingBytes(new Uint8Array(instance.instance.memory.buffer), image)).toBe(0);
        expect(low.value).toBe(layout.stackTop);
      });
    }

    it("equals the booted memory after a run wrote into a boot module's 6 MiB of zeros, longer than the C stack", async () => {
      const boot = bootOf({ state: "globalThis.state = new Uint8Array(6 << 20);" }, false);
      const { instance, booted: image } = await lent(64 * MiB, boot);
      expect(evaluate(instance, "state.fill(0x53, 1 << 16, 1 << 20).indexOf(0x53)")).toBe(1 << 16);
      expect(instance.reclaim(true)).toBe(true);
      expect(differingBytes(new Uint8Array(instance.instance.memory.buffer), image)).toBe(0);
    });

    it("boots to the same state again: the next tenant sees none of the run before", async () => {
      const { instance } = await lent();
      evaluate(instance, "globalThis.leak = 'SECRET'; Object.prototype.polluted = 1; Math.max = () => 42;");
      expect(instance.reclaim(true)).toBe(true);
      instance.lend(idleHolder, 64 * MiB);
      expect(evaluate(instance, "[typeof leak, ({}).polluted, Math.max(1, 2)].join()")).toBe("undefined,,2");
      expect(instance.runtime.hasPendingJob()).toBe(false);
    });

    it("is refused to an instance whose C stack pointer is not back at its top (a frame would still be open)", async () => {
      const { instance } = await lent();
      const stack = markOf(instance);
      stack.pointer.value = (stack.pointer.value as number) - 16;
      expect(instance.reclaim(true)).toBe(false);
    });

    it("keeps an instance whose run grew its memory: the booted image, then zeros to the grown length", async () => {
      const layout = (await memoryLayout(await wasm())) as MemoryLayout;
      const { instance, booted: image } = await lent();
      const { memory } = instance.instance;
      expect(evaluate(instance, "globalThis.big = new Uint8Array(24 * 1024 * 1024).fill(0x53); big.length")).toBe(
        24 * MiB,
      );
      const grown = memory.buffer.byteLength;
      expect(grown).toBeGreaterThan(image.length + 8 * MiB);
      expect(grown).toBeLessThanOrEqual(MAX_KEPT_MEMORY_BYTES);
      const reached = breakOf(instance, layout);
      expect(instance.reclaim(true)).toBe(true);
      const restored = new Uint8Array(memory.buffer);
      expect(restored.length).toBe(grown);
      expect(differingBytes(restored.subarray(0, image.length), image)).toBe(0);
      // Above the booted length: what the run wrote is zero again, and past the break nothing was ever written.
      expect(reached).toBeGreaterThan(image.length);
      expect(restored.subarray(image.length).every((byte) => byte === 0)).toBe(true);
      expect(findInMemory(memory, "SSSSSSSSSSSSSSSS")).toBe(-1);
      instance.lend(idleHolder, 64 * MiB);
      expect(evaluate(instance, "[typeof big, new Uint8Array(24 * 1024 * 1024).indexOf(0x53)].join()")).toBe(
        "undefined,-1",
      );
    });

    it("is refused to an instance that grew past what is kept, or to within a page of its maximum", async () => {
      const { instance: large } = await lent(128 * MiB);
      evaluate(large, "globalThis.big = new Uint8Array(72 * 1024 * 1024); big.length");
      expect(large.instance.memory.buffer.byteLength).toBeGreaterThan(MAX_KEPT_MEMORY_BYTES);
      expect(large.reclaim(true)).toBe(false);

      // A maximum of 308 pages: the engine's first growth asks 16 MiB x 1.2, rounded up to a page, and gets it all.
      const layout = (await memoryLayout(await wasm())) as MemoryLayout;
      const { instance: full } = await lent(308 * 65_536 - 4 * MiB);
      const { memory, maxBytes } = full.instance;
      const past = memory.buffer.byteLength - breakOf(full, layout) + MiB;
      evaluate(full, `globalThis.big = new Uint8Array(${past}); big.length`);
      expect([memory.buffer.byteLength, full.instance.growthRefused]).toEqual([maxBytes, false]);
      expect(full.reclaim(true)).toBe(false);
    });

    it("is refused to an instance that faulted or changed the library's state", async () => {
      const { instance: faulted } = await lent();
      expect(faulted.reclaim(false)).toBe(false);

      const { instance: changed } = await lent();
      changed.ctx.newFunction("extra", () => undefined);
      expect(changed.reclaim(true)).toBe(false);
    });
  });
}
