/**
 * Admission of runs by their heap caps: the runs in flight in one instance (an isolate on the edge) never hold more
 * caps together than a budget that fits it. `POST /run` and MCP's `run_code` share one admission per app.
 * @module
 */
import type { RunCode } from "../index.js";
import { retryLater } from "./errors.js";

/**
 * Heap caps the runs in flight in one instance may hold together. With a 128 MB Worker isolate: one run at the
 * largest cap or two at the edge's 32 MiB default, leaving half the isolate to the host (the engine's code, the
 * TypeScript compiler, requests and answers).
 */
export const RUN_MEMORY_BUDGET_BYTES = 64 * 1024 * 1024;
/** What a 503 `overloaded` asks the client to wait, in seconds: runs last seconds. */
const OVERLOADED_RETRY_SECONDS = 1;

export class RunAdmission {
  readonly budget: number;
  #held = 0;

  constructor(budget = RUN_MEMORY_BUDGET_BYTES) {
    this.budget = budget;
  }

  /** Holds `memory` bytes of the budget until the returned release; a 503 `overloaded` when they do not fit. */
  admit(memory: number): () => void {
    if (this.#held + memory > this.budget) {
      throw retryLater(
        "overloaded",
        `Runs in flight here hold ${this.#held} of ${this.budget} bytes of heap caps, and this one asks for ${memory}: retry shortly`,
        OVERLOADED_RETRY_SECONDS,
      );
    }
    this.#held += memory;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.#held -= memory;
    };
  }

  /** `runCode` whose every run is admitted first, counting `defaultMemory` for a run that sets no cap. */
  wrap(runCode: RunCode, defaultMemory: number): RunCode {
    return (source, options) => {
      const asked = options?.memoryLimitBytes;
      const release = this.admit(typeof asked === "number" && asked > 0 ? asked : defaultMemory);
      try {
        const run = runCode(source, options);
        run.then(release, release);
        return run;
      } catch (error) {
        release();
        throw error;
      }
    };
  }
}
