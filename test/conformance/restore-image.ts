/**
 * Restored instances at the memory level, on the platform running the suite: the allocator's break is found, a run's
 * instance is restored (not dropped and booted fresh) and its memory then equals the booted image byte for byte;
 * an instance that cannot be restored is never lent again. Platform-neutral: each host passes its compiled wasm.
 * @module
 */
import { describe, expect, it } from "vitest";
import { BootedInstance, breakWordOffset, type Tenant } from "../../src/instance.js";

const MiB = 1024 * 1024;

/** A tenant for driving an instance by hand: no interrupt, no host calls, no modules. */
const idleTenant: Tenant = {
  poll: () => false,
  hostCall: () => undefined,
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

/** Declares the memory-level restore tests against the platform's compiled QuickJS module. */
export function restoreImageSuite(wasm: () => Promise<WebAssembly.Module>): void {
  /** A restorable instance lent to {@link idleTenant}; `booted` is a copy of its memory as booted. */
  async function lent(heapLimitBytes = 64 * MiB): Promise<{ instance: BootedInstance; booted: Uint8Array }> {
    const instance = await BootedInstance.boot(await wasm(), heapLimitBytes, true);
    const booted = new Uint8Array(instance.instance.memory.buffer.slice(0));
    instance.lend(idleTenant, heapLimitBytes);
    return { instance, booted };
  }

  /** Evaluates a global script in the instance, returning its value dumped (or the error's). */
  function evaluate(instance: BootedInstance, source: string): unknown {
    const result = instance.ctx.evalCode(source, "/dirty.js", { type: "global" });
    return instance.ctx.dump(result.error ?? result.value);
  }

  describe("restored memory: the booted image byte for byte", () => {
    it("this platform finds the allocator's break, without which no instance is ever restored", async () => {
      const offset = await breakWordOffset(await wasm());
      expect(typeof offset).toBe("number");
      expect((offset as number) % 4).toBe(0);
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

    it("is zeroed wherever a run wrote, the deep C stack included", async () => {
      const { instance, booted: image } = await lent();
      const bytes = new Uint8Array(instance.instance.memory.buffer);
      // A byte in the middle of every 64 KiB below the break, as if a run had reached the bottom of the stack.
      const reached = image.findLastIndex((byte) => byte !== 0);
      for (let at = 32 * 1024; at < reached; at += 64 * 1024) bytes[at] = (bytes[at] as number) ^ 0xff;
      expect(differingBytes(bytes, image)).toBeGreaterThan(0);
      expect(instance.reclaim(true)).toBe(true);
      expect(differingBytes(new Uint8Array(instance.instance.memory.buffer), image)).toBe(0);
    });

    it("boots to the same state again: the next tenant sees none of the run before", async () => {
      const { instance } = await lent();
      evaluate(instance, "globalThis.leak = 'SECRET'; Object.prototype.polluted = 1; Math.max = () => 42;");
      expect(instance.reclaim(true)).toBe(true);
      instance.lend(idleTenant, 64 * MiB);
      expect(evaluate(instance, "[typeof leak, ({}).polluted, Math.max(1, 2)].join()")).toBe("undefined,,2");
      expect(instance.runtime.hasPendingJob()).toBe(false);
    });

    it("is refused to an instance that grew, faulted or changed the library's state", async () => {
      const { instance: grown } = await lent();
      evaluate(grown, "globalThis.big = new Uint8Array(24 * 1024 * 1024).fill(1); big.length");
      expect(grown.reclaim(true)).toBe(false);

      const { instance: faulted } = await lent();
      expect(faulted.reclaim(false)).toBe(false);

      const { instance: changed } = await lent();
      changed.ctx.newFunction("extra", () => undefined);
      expect(changed.reclaim(true)).toBe(false);
    });
  });
}
