/**
 * Admission of runs by the linear memory their heap caps make them take: the runs in flight in one instance (an
 * isolate on the edge) never hold more together than a budget that fits it. A run that does not fit now waits in a
 * short line, in order, and gets 503 `overloaded` only when the line is full or its wait too long, never an
 * instance that runs out of memory. `POST /run` and MCP's `run_code` share one admission per app.
 * @module
 */
import { linearMemoryBytes } from "../engine.js";
import { retryLater } from "./errors.js";

/**
 * Linear memory the runs in flight in one instance may hold together. With a 128 MB Worker isolate: two runs at the
 * edge's 32 MiB default (36 MiB of linear memory each), one at the largest cap (64 MiB, 68 MiB of linear memory) or
 * four at 12 MiB or less (16 MiB, the least an instance takes), leaving 56 MiB to the host (the engine's code, the
 * TypeScript compiler, requests and answers). The edge bounds the booted instances kept idle for the next runs by
 * the same budget (`InstancePool.limitMemory`): they give way to runs in flight.
 */
export const RUN_MEMORY_BUDGET_BYTES = 72 * 1024 * 1024;
/** Runs that may wait for room at once; past them a run is refused at once. */
export const MAX_WAITING_RUNS = 64;
/** How long a run may wait for room before it is refused. */
export const MAX_ADMISSION_WAIT_MS = 10_000;
/** What a 503 `overloaded` asks the client to wait, in seconds: runs last seconds. */
const OVERLOADED_RETRY_SECONDS = 1;

export interface AdmissionLimits {
  /** Default {@link RUN_MEMORY_BUDGET_BYTES}. */
  memoryBudgetBytes: number;
  /** Default {@link MAX_WAITING_RUNS}. */
  maxWaiting: number;
  /** Default {@link MAX_ADMISSION_WAIT_MS}. */
  maxWaitMs: number;
}

/**
 * How often a waiting run looks for room. Each waiter takes room from its own timer, never from the release of
 * another run: on Workers a promise resumed from another request's handler could not touch its own request's I/O.
 */
const ADMISSION_POLL_MS = 5;

export class RunAdmission {
  readonly limits: AdmissionLimits;
  #held = 0;
  readonly #waiting: { memory: number }[] = [];

  constructor(limits: Partial<AdmissionLimits> = {}) {
    this.limits = {
      memoryBudgetBytes: limits.memoryBudgetBytes ?? RUN_MEMORY_BUDGET_BYTES,
      maxWaiting: limits.maxWaiting ?? MAX_WAITING_RUNS,
      maxWaitMs: limits.maxWaitMs ?? MAX_ADMISSION_WAIT_MS,
    };
  }

  /**
   * Holds the linear memory of a run capped at `heapLimitBytes` until the returned release, once it fits and every
   * run that waited before it was admitted; a 503 `overloaded` when the line is full or the wait runs out.
   */
  admit(heapLimitBytes: number): Promise<() => void> {
    const memory = linearMemoryBytes(heapLimitBytes);
    const { memoryBudgetBytes, maxWaiting, maxWaitMs } = this.limits;
    const refuse = (why: string) =>
      retryLater(
        "overloaded",
        `Runs in flight here hold ${this.#held} of ${memoryBudgetBytes} bytes of linear memory, and this one needs ${memory}: ${why}; retry shortly`,
        OVERLOADED_RETRY_SECONDS,
      );
    if (memory > memoryBudgetBytes) return Promise.reject(refuse("more than this host ever gives one run"));
    if (this.#waiting.length === 0 && this.#held + memory <= memoryBudgetBytes) {
      return Promise.resolve(this.#take(memory));
    }
    if (this.#waiting.length >= maxWaiting) return Promise.reject(refuse(`${maxWaiting} runs wait already`));
    const waiter = { memory };
    this.#waiting.push(waiter);
    return new Promise((resolve, reject) => {
      let polls = 0;
      const poll = () => {
        // In order: only the first in line takes room, so a large run is not passed over forever by small ones.
        if (this.#waiting[0] === waiter && this.#held + memory <= memoryBudgetBytes) {
          this.#waiting.shift();
          resolve(this.#take(memory));
        } else if (++polls * ADMISSION_POLL_MS >= maxWaitMs) {
          this.#waiting.splice(this.#waiting.indexOf(waiter), 1);
          reject(refuse(`no room within ${maxWaitMs} ms`));
        } else setTimeout(poll, ADMISSION_POLL_MS);
      };
      setTimeout(poll, ADMISSION_POLL_MS);
    });
  }

  #take(memory: number): () => void {
    this.#held += memory;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.#held -= memory;
    };
  }
}
