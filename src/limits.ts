/**
 * What stops one run, and the accounting behind it: the caller's terminate and an outside stop, the safety cap
 * (guest CPU time and interrupt polls), the bytes of logs and reports the host keeps for the run, and faults of the
 * host (an exception out of a VM call leaves the instance untrustworthy). The run asks here at every yield point;
 * the engine asks through the interrupt handler.
 * @module
 */
import { type Stop, Stopped } from "./outcome.js";
import type { CodeExecutionError, SafetyCap } from "./types.js";

export interface LimitSettings {
  safetyCap: SafetyCap;
  clock: () => number;
  /** An outside stop (see `SandboxOptions.interrupted`). */
  interrupted: () => boolean;
  /** `true` once the handle settled (terminated by the caller): everything after is ignored. */
  settled: () => boolean;
  memoryLimitBytes: number;
}

/**
 * Bookkeeping the host adds to each log entry and report it keeps, on top of its tape's length. Logs and reports
 * live in host memory, out of reach of the run's capped linear memory: without a budget a guest printing the same
 * 1 MB string in a loop made the host hold 800 MB in two seconds of guest time.
 */
const RETAINED_ENTRY_BYTES = 64;

const CALLER_TERMINATED: CodeExecutionError = Object.freeze({
  name: "TerminatedError",
  message: "Execution terminated by the caller",
});

export class Limits {
  readonly #settings: LimitSettings;
  #stop: Stop | undefined;
  #faulted = false;
  #fault: unknown;
  #polls = 0;
  #cpuMs = 0;
  #sliceStart = 0;
  #depth = 0;
  #retained = 0;

  constructor(settings: LimitSettings) {
    this.#settings = settings;
  }

  /** Why the host stopped the run, if it did. */
  get stop(): Stop | undefined {
    return this.#stop;
  }

  /** The first host exception out of a VM call, if any. */
  get hostFault(): unknown {
    return this.#fault;
  }

  get faulted(): boolean {
    return this.#faulted;
  }

  /** The caller's terminate (the handle has settled already). */
  terminate(error: CodeExecutionError): void {
    this.#stop ??= { kind: "terminated", error };
  }

  /** Records a host exception; the first one is the run's. */
  fault(error: unknown): void {
    if (this.#faulted) return;
    this.#faulted = true;
    this.#fault = error;
  }

  /** Whether the run must stop at this yield point (an outside stop is taken as the caller's terminate). */
  stopped(): boolean {
    if (this.#stop === undefined && this.#settings.interrupted())
      this.#stop = { kind: "terminated", error: CALLER_TERMINATED };
    return this.#stop !== undefined || this.#settings.settled();
  }

  /** Throws {@link Stopped} when the run must stop. */
  check(): void {
    if (this.stopped()) throw new Stopped();
  }

  /**
   * Enters the VM: accounts guest time for the safety cap and turns a host exception into a fault of the run, which
   * is thrown again on the way out (also when it happened in a nested host call and the VM returned normally).
   */
  enter<T>(call: () => T): T {
    if (this.#depth++ === 0) this.#sliceStart = this.#settings.clock();
    let result: T | undefined;
    try {
      result = call();
    } catch (fault) {
      this.fault(fault);
    } finally {
      if (--this.#depth === 0) this.#cpuMs += this.#settings.clock() - this.#sliceStart;
    }
    if (this.#faulted) throw this.#fault;
    return result as T;
  }

  /** The interrupt handler: polled about every 10,000 guest calls or loop iterations. */
  readonly poll = (): boolean => {
    this.#polls++;
    return this.#spent();
  };

  /** Throws {@link Stopped} when the run must stop, its safety cap included: after work the host did for it. */
  checkSpent(): void {
    if (this.#spent()) throw new Stopped();
  }

  #spent(): boolean {
    if (this.stopped() || this.#faulted) return true;
    const { interruptPolls, cpuTimeMs } = this.#settings.safetyCap;
    const cpuMs = this.#cpuMs + (this.#depth > 0 ? this.#settings.clock() - this.#sliceStart : 0);
    if (this.#polls > interruptPolls || cpuMs > cpuTimeMs) {
      const spent = this.#polls > interruptPolls ? `${interruptPolls} interrupt polls` : `${cpuTimeMs} ms of CPU time`;
      this.#stop = {
        kind: "terminated",
        error: { name: "TerminatedError", message: `Execution stopped by the safety cap after ${spent}` },
      };
      return true;
    }
    return false;
  }

  /** Native work the guest did, worth `polls` interrupt polls (see "Native work" in guest/core.ts), then one poll. */
  charge(polls: number): boolean {
    this.#polls += Math.max(0, polls - 1);
    return this.poll();
  }

  /**
   * Counts a log entry or report the host is about to keep; past `memoryLimitBytes` the run ends with `memory`
   * (the entry is dropped, and so is every later one: the guest's call throws until the interrupt stops it).
   */
  retain(bytes: number): boolean {
    const { memoryLimitBytes } = this.#settings;
    this.#retained += bytes + RETAINED_ENTRY_BYTES;
    if (this.#retained <= memoryLimitBytes) return true;
    this.#stop ??= {
      kind: "memory",
      error: {
        name: "MemoryError",
        message: `The run's logs and reports exceeded memoryLimitBytes (${memoryLimitBytes}): the host keeps them for the run`,
      },
    };
    return false;
  }
}
