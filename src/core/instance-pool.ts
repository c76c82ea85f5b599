/**
 * Booted instances waiting for their next run, shared by the sandboxes given the same pool (`SandboxOptions.pool`:
 * a platform's entry gives every sandbox it makes its one pool). A run takes an idle instance of its wasm module,
 * memory class and boot modules (`BootedInstance.fits`), or boots one; when it ends the instance comes back restored
 * (see core/instance.ts), or is dropped when it cannot be restored or the pool has enough. The first run of the pool
 * does not wait for an image to be recorded (the engine's code is still cold then, and recording took it a third
 * longer): it gets an instance booted for it alone, unless the pool is told to keep it (`restoreFirst`). Each idle
 * instance holds its linear memory (16 MiB as booted, about 6 MB of it touched; up to 64 MiB when a run grew it: see
 * `BootedInstance.release`) and its image (about 0.5 MB). A run takes the idle instance whose memory grew the most,
 * and the pool drops those that grew the least first. Nothing is booted in the background: on Workers, work left after
 * a response may never run.
 *
 * The pool follows the load: it keeps as many idle instances as runs were recently in flight at once (at least
 * {@link MIN_IDLE_INSTANCES}, at most {@link MAX_IDLE_INSTANCES}, within {@link IDLE_BYTES_PER_INSTANCE} each and
 * {@link InstancePool.limitMemory}), so concurrent runs find restored instances rather than each booting one; once
 * fewer runs are in flight, for {@link DEMAND_WINDOW_MS} to twice that, the instances they no longer need are dropped.
 * @module
 */
import { linearMemoryBytes, memoryHolding } from "./engine.js";
import { type Boot, BootedInstance, MAX_KEPT_MEMORY_BYTES, PLAIN_BOOT } from "./instance.js";
import type { InstancePoolPort } from "./ports.js";

/** Idle instances kept whatever the load (the least recently used goes first past the pool's bound). */
export const MIN_IDLE_INSTANCES = 4;
/** Most idle instances kept, however many runs were in flight, across modules and memory classes. */
export const MAX_IDLE_INSTANCES = 32;
/**
 * The linear memory of an instance as booted: the idle instances hold together at most this much for each instance the
 * pool wants idle (see `#wanted`) and {@link GROWN_ROOM_BYTES}, so instances a run grew (up to 64 MiB each) take the
 * room of several, and the pool holds little more than as many booted instances did, whatever the demand (a worker
 * thread's pool wants {@link MIN_IDLE_INSTANCES}).
 */
export const IDLE_BYTES_PER_INSTANCE = memoryHolding(0);
/**
 * Room for one idle instance grown as far as an instance is kept ({@link MAX_KEPT_MEMORY_BYTES}): without it, a burst
 * of as many runs as can be idle beside one grown instance dropped an instance every burst and booted one in the next.
 */
const GROWN_ROOM_BYTES = MAX_KEPT_MEMORY_BYTES - IDLE_BYTES_PER_INSTANCE;
/** How long the pool remembers how many runs were in flight at once: between this and twice this. */
export const DEMAND_WINDOW_MS = 10_000;

/** The bytes of an instance's linear memory now: as booted, or as a run grew it. */
const lengthOf = (booted: BootedInstance): number => booted.instance.memory.buffer.byteLength;

/**
 * Which idle instance a run takes when several fit: the one whose memory grew the most (a run's default), or the least
 * (an attempt that a stop may end, and so drop its instance: Node's default path hands a run past its slice over).
 */
export type InstanceFit = "most-grown" | "least-grown";

/** Settings of an {@link InstancePool}. */
interface InstancePoolOptions {
  /**
   * Restore an instance given back when {@link InstancePool.restoreReturned} is called or when the pool lends it
   * again, rather than at once: a runner that hands the run's result over first (a worker thread) takes the restore
   * out of the caller's wait. Default `false`.
   */
  deferRestore?: boolean;
  /**
   * Boot the pool's first run a restorable instance too, for a host whose second run must not boot again (Node's
   * caller's thread). It is booted where the run takes it, after the run's TypeScript is transpiled (see
   * docs/performance.md, "The boot, round four"). Default `false`.
   */
  restoreFirst?: boolean;
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
  /** Whether no run has taken an instance yet (and the pool boots that run's instance for it alone). */
  #first: boolean;
  /** Most instances lent at once in the current window of {@link DEMAND_WINDOW_MS}, and in the one before. */
  #peak = 0;
  #peakBefore = 0;
  #windowStart = Date.now();
  /** Drops what the demand no longer needs once the pool goes quiet. */
  #release: ReturnType<typeof setTimeout> | undefined;

  constructor(options: InstancePoolOptions = {}) {
    this.#deferRestore = options.deferRestore ?? false;
    this.#first = !(options.restoreFirst ?? false);
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
    fit: InstanceFit = "most-grown",
  ): Promise<BootedInstance> {
    const bytes = linearMemoryBytes(heapLimitBytes);
    this.#lent++;
    this.#lentBytes += bytes;
    this.#observe();
    const first = this.#first;
    this.#first = false;
    if (restorable) {
      const idle = this.#idleFor(wasm, bytes, boot, fit);
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
   * The idle instance fit for the run, restored: of those, the one whose memory grew the most (or the least, as `fit`
   * says), then the most recently used (its memory the likeliest in cache). A grown memory costs a run nothing more to
   * restore (the restore reaches only as far as the run's heap did), and a run that needs the room skips the growth
   * and its fresh pages, as it would on the raw engine, whose memory stays grown; a run given a smaller one grew it
   * again (and a run capped lower cannot take a grown one: see `BootedInstance.fits`). A run likely to be stopped
   * takes the least grown, so that the instance dropped after it is not the one another run grew.
   */
  #idleFor(
    wasm: WebAssembly.Module | undefined,
    bytes: number,
    boot: Boot,
    fit: InstanceFit,
  ): BootedInstance | undefined {
    const better = (a: BootedInstance, b: BootedInstance) =>
      fit === "most-grown" ? lengthOf(a) > lengthOf(b) : lengthOf(a) < lengthOf(b);
    for (;;) {
      let chosen: BootedInstance | undefined;
      for (let index = this.#idle.length - 1; index >= 0; index--) {
        const idle = this.#idle[index] as BootedInstance;
        if (idle.wasm !== wasm || !idle.fits(bytes) || idle.boot.key !== boot.key) continue;
        if (chosen === undefined || better(idle, chosen)) chosen = idle;
      }
      if (chosen === undefined) return undefined;
      // #restore drops an instance it cannot restore: then look again.
      if (!this.#unrestored.has(chosen) || this.#restore(chosen)) {
        this.#idle.splice(this.#idle.indexOf(chosen), 1);
        return chosen;
      }
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

  /**
   * Drops idle instances past the demand, {@link IDLE_BYTES_PER_INSTANCE} for each instance it wants (and
   * {@link GROWN_ROOM_BYTES}) or the memory cap: those at the smallest memory first (a grown one spares a run that needs
   * the room its growth, see {@link #idleFor}), the least recently used of them first.
   */
  #trim(): void {
    const wanted = this.#wanted();
    const bound = wanted * IDLE_BYTES_PER_INSTANCE + GROWN_ROOM_BYTES;
    let idleBytes = this.#idle.reduce((sum, idle) => sum + lengthOf(idle), 0);
    const over = () => idleBytes > bound || this.#lentBytes + idleBytes > this.#memoryCap;
    while (this.#idle.length > wanted || (this.#idle.length > 0 && over())) {
      let index = 0;
      for (let at = 1; at < this.#idle.length; at++)
        if (lengthOf(this.#idle[at] as BootedInstance) < lengthOf(this.#idle[index] as BootedInstance)) index = at;
      const [dropped] = this.#idle.splice(index, 1) as [BootedInstance];
      this.#unrestored.delete(dropped);
      idleBytes -= lengthOf(dropped);
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
