/**
 * Booted instances waiting for their next run, shared by the sandboxes given the same pool (`SandboxOptions.pool`:
 * a platform's entry gives every sandbox it makes its one pool). A run takes an idle instance of its
 * wasm module, memory size and boot modules, or boots one; when it ends the instance comes back restored (see
 * core/instance.ts), or is dropped when it cannot be restored or the pool is full. The first run of the pool does not
 * wait for an image to be recorded (the engine's code is still cold then, and recording took it a third longer): it
 * gets an instance booted for it alone. Each idle instance holds its linear memory as booted (16 MiB, about 6 MB of
 * it touched) and its image (about 0.5 MB). Nothing is booted in the background: on Workers, work left after a
 * response may never run.
 * @module
 */
import { linearMemoryBytes } from "./engine.js";
import { type Boot, BootedInstance, PLAIN_BOOT } from "./instance.js";

/** Most idle instances kept, across modules and memory sizes (the least recently used goes first). */
export const MAX_IDLE_INSTANCES = 4;

/** Booted instances for the runs of the sandboxes given it (see the module comment). */
export class InstancePool {
  readonly #idle: BootedInstance[] = [];
  /** Linear memory lent instances may grow to (their runs' memory limits). */
  #lentBytes = 0;
  #memoryCap = Number.POSITIVE_INFINITY;
  /** Whether no run has taken an instance yet. */
  #first = true;

  /**
   * An instance of `wasm` whose memory holds `heapLimitBytes` of heap and no more, booted with `boot`'s modules;
   * `restorable` instances come back to the pool after their run, others are booted for one run and dropped (for
   * comparison, and for the pool's first run).
   */
  async take(
    wasm: WebAssembly.Module | undefined,
    heapLimitBytes: number,
    restorable: boolean,
    boot: Boot = PLAIN_BOOT,
  ): Promise<BootedInstance> {
    const bytes = linearMemoryBytes(heapLimitBytes);
    this.#lentBytes += bytes;
    const first = this.#first;
    this.#first = false;
    if (restorable) {
      // The most recently used first: its memory is the likeliest to be in cache.
      const index = this.#idle.findLastIndex(
        (idle) => idle.wasm === wasm && idle.instance.maxBytes === bytes && idle.boot.key === boot.key,
      );
      if (index >= 0) return this.#idle.splice(index, 1)[0] as BootedInstance;
    }
    this.#trim();
    try {
      return await BootedInstance.boot(wasm, heapLimitBytes, restorable && !first, boot);
    } catch (error) {
      this.#lentBytes -= bytes;
      throw error;
    }
  }

  /** Takes an instance back from its run; `sound` is `false` after a fault of the host or an abort. */
  give(booted: BootedInstance, sound: boolean): void {
    this.#lentBytes -= booted.instance.maxBytes;
    if (!booted.reclaim(sound)) return;
    this.#idle.push(booted);
    this.#trim();
  }

  /**
   * Bounds the linear memory of lent and idle instances together, for a host that admits runs by the memory their
   * caps make them take (see host/admission/run-admission.ts) and must stay within an isolate's limit: idle instances give way
   * to lent ones.
   */
  limitMemory(bytes: number): void {
    this.#memoryCap = bytes;
    this.#trim();
  }

  get idle(): number {
    return this.#idle.length;
  }

  /** Drops the least recently used idle instances past the count or the memory cap. */
  #trim(): void {
    let idleBytes = this.#idle.reduce((sum, idle) => sum + idle.instance.memory.buffer.byteLength, 0);
    while (
      this.#idle.length > MAX_IDLE_INSTANCES ||
      (this.#idle.length > 0 && this.#lentBytes + idleBytes > this.#memoryCap)
    ) {
      idleBytes -= (this.#idle.shift() as BootedInstance).instance.memory.buffer.byteLength;
    }
  }
}
