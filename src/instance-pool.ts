/**
 * Booted instances waiting for their next run, shared by every sandbox of the process or isolate (a host that makes
 * a sandbox per process, as the environment module does, still reuses them). A run takes an idle instance of its
 * wasm module and memory size or boots one; when it ends the instance comes back restored (see instance.ts), or is
 * dropped when it cannot be restored or the pool is full. Each idle instance holds what boot and runs touched of its
 * linear memory (about 6 MB) and its image (about 0.5 MB).
 * @module
 */
import { linearMemoryBytes } from "./engine.js";
import { BootedInstance, type BootModules } from "./instance.js";

/** Most idle instances kept, across modules and memory sizes (the least recently used goes first). */
export const MAX_IDLE_INSTANCES = 4;

export class InstancePool {
  readonly #idle: BootedInstance[] = [];

  /**
   * An instance of `wasm` whose memory holds `heapLimitBytes` of heap and no more, booted with `boot`'s modules;
   * `restorable` instances come back to the pool after their run, others are booted for one run and dropped (for
   * comparison).
   */
  async take(
    wasm: WebAssembly.Module | undefined,
    heapLimitBytes: number,
    restorable: boolean,
    boot?: BootModules,
  ): Promise<BootedInstance> {
    if (restorable) {
      const bytes = linearMemoryBytes(heapLimitBytes);
      const key = boot?.key ?? "";
      // The most recently used first: its memory is the likeliest to be in cache.
      const index = this.#idle.findLastIndex(
        (idle) => idle.wasm === wasm && idle.instance.maxBytes === bytes && idle.boot.key === key,
      );
      const found = index < 0 ? undefined : this.#idle.splice(index, 1)[0];
      if (found !== undefined) return found;
    }
    return BootedInstance.boot(wasm, heapLimitBytes, restorable, boot);
  }

  /** Takes an instance back from its run; `sound` is `false` after a fault of the host or an abort. */
  give(booted: BootedInstance, sound: boolean): void {
    if (!booted.reclaim(sound)) return;
    this.#idle.push(booted);
    if (this.#idle.length > MAX_IDLE_INSTANCES) this.#idle.shift();
  }

  get idle(): number {
    return this.#idle.length;
  }
}

/** The pool of every sandbox in this process or isolate. */
export const sharedPool = new InstancePool();
