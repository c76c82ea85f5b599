/**
 * The page's side of the sandbox worker: starts runs, streams their reports, and stops any run at once by
 * terminating the worker and starting a fresh one (the only stop that also ends native-heavy loops, which never
 * reach the engine's interrupt handler).
 * @module
 */
import { resultOf, terminatedError } from "../src/core/result.js";
import type { CodeExecutionResult } from "../src/core/types.js";
import type { JsonValue } from "../src/values/json.js";
import { fromWire } from "../src/values/wire.js";
import { isReady, isRejected, isReport, isResult, newNonce, type RunPayload, type ToWorker } from "./messages.js";

/** How a run in the browser ended: a result, or options the worker refused before starting. */
type BrowserOutcome =
  | { kind: "result"; result: CodeExecutionResult; workerMs: number; roundTripMs: number }
  | { kind: "rejected"; name: string; message: string };

interface Pending {
  nonce: string;
  started: number;
  reports: unknown[];
  onReport: (value: unknown, index: number) => void;
  settle: (outcome: BrowserOutcome) => void;
}

interface Spawned {
  worker: Worker;
  ready: Promise<number>;
}

/**
 * Owns the sandbox worker, and keeps one warm spare so that after Stop the next run starts at once instead of
 * waiting for a new worker to load and compile the engine.
 */
export class SandboxRunner {
  #current!: Spawned;
  #spare: Spawned | undefined;
  #pending: Pending | undefined;
  /** Messages that reached the page but matched nothing it waits for (forged or stale). */
  ignored = 0;

  constructor(
    private readonly createWorker: () => Worker,
    private readonly keepSpare = true,
  ) {
    this.#promote(this.#spawn());
  }

  /** Resolves with the worker's warm-up time once it can run code. */
  get ready(): Promise<number> {
    return this.#current.ready;
  }

  get running(): boolean {
    return this.#pending !== undefined;
  }

  #spawn(): Spawned {
    const worker = this.createWorker();
    const hello = newNonce();
    const ready = new Promise<number>((resolve) => {
      worker.addEventListener("message", (event: MessageEvent) => {
        const data: unknown = event.data;
        if (isReady(data, hello)) return resolve(data.warmupMs);
        // Only the current worker's run messages count; anything else (a spare, a forged message) is ignored.
        if (worker !== this.#current.worker || !this.#handle(data)) this.ignored++;
      });
    });
    worker.postMessage({ type: "hello", nonce: hello } satisfies ToWorker);
    return { worker, ready };
  }

  #promote(next: Spawned): void {
    this.#current = next;
    if (!this.keepSpare) return;
    // The spare starts once the current worker is warm, so the two never compete for the first run.
    void next.ready.then(() => {
      if (this.#current === next && this.#spare === undefined) this.#spare = this.#spawn();
    });
  }

  #post(message: ToWorker): void {
    this.#current.worker.postMessage(message);
  }

  #handle(data: unknown): boolean {
    const pending = this.#pending;
    if (pending === undefined) return false;
    if (isReport(data, pending.nonce)) {
      const value = fromWire(data.value);
      pending.reports.push(value);
      pending.onReport(value, pending.reports.length - 1);
      return true;
    }
    if (isResult(data, pending.nonce)) {
      this.#pending = undefined;
      const roundTripMs = performance.now() - pending.started;
      pending.settle({
        kind: "result",
        result: fromWire(data.result as JsonValue) as CodeExecutionResult,
        workerMs: data.workerMs,
        roundTripMs,
      });
      return true;
    }
    if (isRejected(data, pending.nonce)) {
      this.#pending = undefined;
      pending.settle({ kind: "rejected", name: data.name, message: data.message });
      return true;
    }
    return false;
  }

  /** Runs `payload`; `onReport` sees each reported value as the guest reports it. One run at a time. */
  run(payload: RunPayload, onReport: (value: unknown, index: number) => void = () => {}): Promise<BrowserOutcome> {
    if (this.#pending !== undefined) throw new Error("SandboxRunner: a run is already going on");
    return new Promise((settle) => {
      const nonce = newNonce();
      this.#pending = { nonce, started: performance.now(), reports: [], onReport, settle };
      this.#post({ type: "run", nonce, payload });
    });
  }

  /**
   * Ends the current run now: the worker is terminated (whatever it is doing) and replaced, and the run settles
   * with `status: 'terminated'` and the reports that arrived so far.
   */
  stop(reason = "Stopped by the user"): void {
    this.#current.worker.terminate();
    const pending = this.#pending;
    this.#pending = undefined;
    const spare = this.#spare;
    this.#spare = undefined;
    this.#promote(spare ?? this.#spawn());
    if (pending === undefined) return;
    const durationMs = performance.now() - pending.started;
    pending.settle({
      kind: "result",
      result: resultOf(
        { status: "terminated", error: terminatedError(reason) },
        { reports: pending.reports, logs: [], durationMs },
      ),
      workerMs: durationMs,
      roundTripMs: durationMs,
    });
  }
}
