/**
 * The `CodeExecution` handle: settles exactly once, with the run's result or, the moment `terminate()` is called,
 * with `status: 'terminated'` (the run notices at its next yield point and is dropped).
 * @module
 */
import { terminatedError } from "./result.js";
import type { CodeExecution, CodeExecutionError, CodeExecutionResult } from "./types.js";

export class Execution implements CodeExecution {
  readonly #reports: unknown[];
  readonly #result: Promise<CodeExecutionResult>;
  #settle!: (result: CodeExecutionResult) => void;
  #running = true;
  #onTerminate: (error: CodeExecutionError) => CodeExecutionResult;

  /** `onTerminate` stops the run and returns the result to settle with. */
  constructor(reports: unknown[], onTerminate: (error: CodeExecutionError) => CodeExecutionResult) {
    this.#reports = reports;
    this.#onTerminate = onTerminate;
    this.#result = new Promise((resolve) => {
      this.#settle = resolve;
    });
  }

  get running(): boolean {
    return this.#running;
  }

  /** A snapshot of the reports so far: the caller cannot change the run's own list. */
  get reports(): readonly unknown[] {
    return Object.freeze([...this.#reports]);
  }

  terminate(reason?: string): void {
    if (!this.#running) return;
    this.settle(this.#onTerminate(terminatedError(reason)));
  }

  /** Settles the handle once; later calls are ignored. */
  settle(result: CodeExecutionResult): void {
    if (!this.#running) return;
    this.#running = false;
    this.#settle(result);
  }

  // biome-ignore lint/suspicious/noThenProperty: the contract makes the handle a PromiseLike.
  then<T = CodeExecutionResult, E = never>(
    onFulfilled?: ((value: CodeExecutionResult) => T | PromiseLike<T>) | null,
    onRejected?: ((reason: unknown) => E | PromiseLike<E>) | null,
  ): Promise<T | E> {
    return this.#result.then(onFulfilled, onRejected);
  }
}
