/**
 * Booted instances waiting for their next run, shared by the sandboxes given the same pool (`SandboxOptions.pool`:
 * a platform's entry gives every sandbox it makes its one pool). A run takes an idle instance of its
 * wasm module, memory class and boot modules (`BootedInstance.fits`), or boots one; when it ends the instance comes
 * back restored (see core/instance.ts), or is dropped when it cannot be restored or the pool has enough. The first run of the pool does
 * not wait for an image to be recorded (the engine's code is still cold then, and recording took it a third longer):
 * it gets an instance booted for it alone. Each idle instance holds its linear memory (16 MiB as booted, about 6 MB
 * of it touched; up to 64 MiB when a run grew it: see `BootedInstance.release`) and its image (about 0.5 MB). Nothing
 * is booted in the background: on Workers, work left after a response may never run.
 *
 * The pool follows the load: it keeps as many idle instances as runs were recently in flight at once (at least
 * {@link MIN_IDLE_INSTANCES}, at most {@link MAX_IDLE_INSTANCES}, within {@link MAX_IDLE_BYTES} and
 * {@link InstancePool.limitMemory}), so
 * concurrent runs find restored instances rather than each booting one; once fewer runs are in flight, for
 * {@link DEMAND_WINDOW_MS} to twice that, the instances they no longer need are dropped.
 * @module
 */
import { linearMemoryBytes } from "./engine.js";
import { type Boot, BootedInstance, PLAIN_BOOT } from "./instance.js";
import type { InstancePoolPort } from "./ports.js";

/** Idle instances kept whatever the load (the least recently used goes first past the pool's bound). */
export const MIN_IDLE_INSTANCES = 4;
/** Most idle instances kept, however many runs were in flight, across modules and memory classes. */
export const MAX_IDLE_INSTANCES = 32;
/**
 * Most linear memory the idle instances hold together: what {@link MAX_IDLE_INSTANCES} held as booted (16 MiB each),
 * so instances a run grew (up to 64 MiB each) take the room of several, never more in all.
 */
export const MAX_IDLE_BYTES = MAX_IDLE_INSTANCES * 16 * 1024 * 1024;
/** How long the pool remembers how many runs were in flight at once: between this and twice this. */
export const DEMAND_WINDOW_MS = 10_000;

/** Settings of an {@link InstancePool}. */
interface InstancePoolOptions {
  /**
   * Restore an instance given back when {@link InstancePool.restoreReturned} is called or when the pool lends it
   * again, rather than at once: a runner that hands the run's result over first (a worker thread) takes the restore
   * out of the caller's wait. Default `false`.
   */
  deferRestore?: boolean;
}

/** Booted instances for the runs of the sandboxes given it (see the module comment). */
export class InstancePool implements InstancePoolPort {
  readonly #deferRestore: boolean;
  /** Idle instances, the most recently given back last. */
  readonly #idle: BootedInstance[] = [];
  /** Idle instances whose memory is still their last run's (see `deferRestore`). */
  readonly #unrestored = new Set<BootedInstance>();
  /** Instances lent to runs, and the linear memory they may grow to (their runs' memory limits). */
  #lent = 0;
  #lentBytes = 0;
  #memoryCap = Number.POSITIVE_INFINITY;
  /** Whether no run has taken an instance yet. */
  #first = true;
  /** Most instances lent at once in the current window of {@link DEMAND_WINDOW_MS}, and in the one before. */
  #peak = 0;
  #peakBefore = 0;
  #windowStart = Date.now();
  /** Drops what the demand no longer needs once the pool goes quiet. */
  #release: ReturnType<typeof setTimeout> | undefined;

  constructor(options: InstancePoolOptions = {}) {
    this.#deferRestore = options.deferRestore ?? false;
  }

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
    this.#lent++;
    this.#lentBytes += bytes;
    this.#observe();
    const first = this.#first;
    this.#first = false;
    if (restorable) {
      const idle = this.#idleFor(wasm, bytes, boot);
      if (idle !== undefined) {
        // Its run's cap may pass the memory it held idle: other idle instances give way to it.
        this.#trim();
        return idle.capMemory(bytes);
      }
    }
    this.#trim();
    try {
      return await BootedInstance.boot(wasm, heapLimitBytes, restorable && !first, boot);
    } catch (error) {
      this.#lent--;
      this.#lentBytes -= bytes;
      throw error;
    }
  }

  /**
   * Boots a restorable instance for runs like `heapLimitBytes` and `boot` into the idle ones, for a host that has
   * time before its runs come (a worker thread just started).
   */
  async prepare(wasm: WebAssembly.Module | undefined, heapLimitBytes: number, boot: Boot = PLAIN_BOOT): Promise<void> {
    this.#first = false;
    this.#idle.push(await BootedInstance.boot(wasm, heapLimitBytes, true, boot));
    this.#trim();
  }

  /** Takes an instance back from its run; `sound` is `false` after a fault of the host or an abort. */
  give(booted: BootedInstance, sound: boolean): void {
    this.#lent--;
    this.#lentBytes -= booted.instance.maxBytes;
    this.#observe();
    if (!booted.release(sound)) return;
    if (this.#deferRestore) this.#unrestored.add(booted);
    else if (!booted.restore()) return;
    this.#idle.push(booted);
    this.#trim();
    this.#releaseWhenQuiet();
  }

  /** Restores every idle instance given back since the last call (see `InstancePoolOptions.deferRestore`). */
  restoreReturned(): void {
    for (const booted of this.#unrestored) this.#restore(booted);
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

  /** Whether an instance for runs like `heapLimitBytes` and `boot` is idle. */
  hasIdle(wasm: WebAssembly.Module | undefined, heapLimitBytes: number, boot: Boot = PLAIN_BOOT): boolean {
    const bytes = linearMemoryBytes(heapLimitBytes);
    return this.#idle.some((idle) => idle.wasm === wasm && idle.fits(bytes) && idle.boot.key === boot.key);
  }

  /**
   * The idle instance fit for the run, restored: the one whose memory an earlier run grew most (a run capped lower
   * cannot take it, so runs that can leave the others to those runs rather than grow them too), then the most recently
   * used, its memory the likeliest in cache.
   */
  #idleFor(wasm: WebAssembly.Module | undefined, bytes: number, boot: Boot): BootedInstance | undefined {
    for (;;) {
      let best: BootedInstance | undefined;
      for (let index = this.#idle.length - 1; index >= 0; index--) {
        const idle = this.#idle[index] as BootedInstance;
        if (idle.wasm !== wasm || !idle.fits(bytes) || idle.boot.key !== boot.key) continue;
        if (best === undefined || idle.instance.memory.buffer.byteLength > best.instance.memory.buffer.byteLength)
          best = idle;
      }
      if (best === undefined) return undefined;
      if (!this.#unrestored.has(best) || this.#restore(best)) {
        this.#idle.splice(this.#idle.indexOf(best), 1);
        return best;
      }
      // #restore dropped it: look again among the others.
    }
  }

  /** Restores an idle instance given back unrestored, or drops it; whether it is still idle. */
  #restore(booted: BootedInstance): boolean {
    this.#unrestored.delete(booted);
    if (booted.restore()) return true;
    this.#idle.splice(this.#idle.indexOf(booted), 1);
    return false;
  }

  /** Counts the instances lent now into the demand, moving the window on as time passes. */
  #observe(): void {
    const now = Date.now();
    const elapsed = now - this.#windowStart;
    if (elapsed >= DEMAND_WINDOW_MS) {
      // A whole window without a take or a give had this many lent all along.
      this.#peakBefore = elapsed >= 2 * DEMAND_WINDOW_MS ? this.#lent : this.#peak;
      this.#peak = this.#lent;
      this.#windowStart = now;
    }
    this.#peak = Math.max(this.#peak, this.#lent);
  }

  /** Idle instances the recent demand needs besides those lent. */
  #wanted(): number {
    const demand = Math.max(this.#peak, this.#peakBefore) - this.#lent;
    return Math.min(MAX_IDLE_INSTANCES, Math.max(MIN_IDLE_INSTANCES, demand));
  }

  /** Drops the least recently used idle instances past the demand, {@link MAX_IDLE_BYTES} or the memory cap. */
  #trim(): void {
    const wanted = this.#wanted();
    let idleBytes = this.#idle.reduce((sum, idle) => sum + idle.instance.memory.buffer.byteLength, 0);
    const over = () => idleBytes > MAX_IDLE_BYTES || this.#lentBytes + idleBytes > this.#memoryCap;
    while (this.#idle.length > wanted || (this.#idle.length > 0 && over())) {
      const dropped = this.#idle.shift() as BootedInstance;
      this.#unrestored.delete(dropped);
      idleBytes -= dropped.instance.memory.buffer.byteLength;
    }
  }

  /**
   * Once no run takes or gives back an instance for two windows, the demand they left is forgotten: a timer then
   * trims the idle instances above {@link MIN_IDLE_INSTANCES}. It never keeps a process alive.
   */
  #releaseWhenQuiet(): void {
    if (this.#release !== undefined || this.#idle.length <= MIN_IDLE_INSTANCES) return;
    this.#release = setTimeout(() => {
      this.#release = undefined;
      this.#observe();
      this.#trim();
      this.#releaseWhenQuiet();
    }, 2 * DEMAND_WINDOW_MS);
    (this.#release as { unref?: () => void }).unref?.();
  }
}
