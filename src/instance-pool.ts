/**
 * Booted instances waiting for their next run, shared by every sandbox of the process or isolate (a host that makes
 * a sandbox per process, as the environment module does, still reuses them). A run takes an idle instance of its
 * wasm module, memory size and boot modules, or one being booted for the pool; when there is neither, it gets an
 * instance booted for it alone (no image to record: a run never waits for one), and when that run ends an instance
 * with an image is booted for the next, in the background. Instances come back restored (see instance.ts), or are
 * dropped when they cannot be restored or the pool is full. Each idle instance holds its linear memory as booted
 * (16 MiB, about 6 MB of it touched) and its image (about 0.5 MB).
 * @module
 */
import { linearMemoryBytes } from "./engine.js";
import { BootedInstance, type BootModules, NO_BOOT_MODULES } from "./instance.js";

/** Most idle instances kept, and booting for the pool, across modules and memory sizes (the oldest idle goes first). */
export const MAX_IDLE_INSTANCES = 4;

/** What tells instances apart for a run. */
interface Kind {
  wasm: WebAssembly.Module | undefined;
  heapLimitBytes: number;
  boot: BootModules;
}

const sameKinds = (a: Kind, b: Kind) =>
  a.wasm === b.wasm &&
  linearMemoryBytes(a.heapLimitBytes) === linearMemoryBytes(b.heapLimitBytes) &&
  a.boot.key === b.boot.key;

const sameKind = (kind: Kind, instance: BootedInstance) =>
  instance.wasm === kind.wasm &&
  instance.instance.maxBytes === linearMemoryBytes(kind.heapLimitBytes) &&
  instance.boot.key === kind.boot.key;

export class InstancePool {
  readonly #idle: BootedInstance[] = [];
  /** Restorable instances booting for the pool; a run that finds one waits for it rather than booting its own. */
  readonly #booting: { kind: Kind; instance: Promise<BootedInstance | undefined>; claimed: boolean }[] = [];
  /** Instances booted for one run in place of a restorable one, with what to boot for the pool when it ends. */
  readonly #standIns = new WeakMap<BootedInstance, Kind>();
  /** Linear memory lent instances may grow to (their runs' caps). */
  #lentBytes = 0;
  #memoryBudget = Number.POSITIVE_INFINITY;

  /**
   * An instance of `wasm` whose memory holds `heapLimitBytes` of heap and no more, booted with `boot`'s modules;
   * `restorable` instances come back to the pool after their run, others are booted for one run and dropped (for
   * comparison).
   */
  async take(
    wasm: WebAssembly.Module | undefined,
    heapLimitBytes: number,
    restorable: boolean,
    boot: BootModules = NO_BOOT_MODULES,
  ): Promise<BootedInstance> {
    const kind: Kind = { wasm, heapLimitBytes, boot };
    const bytes = linearMemoryBytes(heapLimitBytes);
    this.#lentBytes += bytes;
    try {
      if (restorable) {
        // The most recently used first: its memory is the likeliest to be in cache.
        const index = this.#idle.findLastIndex((idle) => sameKind(kind, idle));
        if (index >= 0) return this.#idle.splice(index, 1)[0] as BootedInstance;
        const booting = this.#booting.find((entry) => !entry.claimed && sameKinds(entry.kind, kind));
        if (booting !== undefined) {
          booting.claimed = true;
          const instance = await booting.instance;
          if (instance !== undefined) return instance;
        }
      }
      this.#trim();
      const instance = await BootedInstance.boot(wasm, heapLimitBytes, false, boot);
      if (restorable) this.#standIns.set(instance, kind);
      return instance;
    } catch (error) {
      this.#lentBytes -= bytes;
      throw error;
    }
  }

  /** Takes an instance back from its run; `sound` is `false` after a fault of the host or an abort. */
  give(booted: BootedInstance, sound: boolean): void {
    this.#lentBytes -= booted.instance.maxBytes;
    const standIn = this.#standIns.get(booted);
    if (standIn !== undefined) this.#bootForPool(standIn);
    if (!booted.reclaim(sound)) return;
    this.#idle.push(booted);
    this.#trim();
  }

  /**
   * Bounds the linear memory of lent and idle instances together, for a host that admits runs by the memory their
   * caps make them take (see host/run-admission.ts) and must stay within an isolate's limit: idle instances give way
   * to lent ones.
   */
  limitMemory(bytes: number): void {
    this.#memoryBudget = bytes;
    this.#trim();
  }

  get idle(): number {
    return this.#idle.length;
  }

  /** Boots a restorable instance of `kind` after the current task, for the next run (within the pool's bounds). */
  #bootForPool(kind: Kind): void {
    if (this.#idle.length + this.#booting.length >= MAX_IDLE_INSTANCES) return;
    const entry = {
      kind,
      claimed: false,
      instance: new Promise<void>((resolve) => setTimeout(resolve, 0))
        .then(() => BootedInstance.boot(kind.wasm, kind.heapLimitBytes, true, kind.boot))
        .then(
          (instance) => {
            this.#booting.splice(this.#booting.indexOf(entry), 1);
            if (entry.claimed) return instance;
            this.#idle.push(instance);
            this.#trim();
            return undefined;
          },
          () => {
            this.#booting.splice(this.#booting.indexOf(entry), 1);
            return undefined;
          },
        ),
    };
    this.#booting.push(entry);
  }

  /** Drops the least recently used idle instances past the count or the memory budget. */
  #trim(): void {
    let idleBytes = this.#idle.reduce((sum, idle) => sum + idle.instance.memory.buffer.byteLength, 0);
    while (
      this.#idle.length > MAX_IDLE_INSTANCES ||
      (this.#idle.length > 0 && this.#lentBytes + idleBytes > this.#memoryBudget)
    ) {
      idleBytes -= (this.#idle.shift() as BootedInstance).instance.memory.buffer.byteLength;
    }
  }
}

/** The pool of every sandbox in this process or isolate. */
export const sharedPool = new InstancePool();
