/**
 * The page's side of the sandbox worker: starts runs and session requests (cells, opens, forks), streams their
 * reports, and stops any run at once by terminating the worker and starting a fresh one (the only stop that also
 * ends native-heavy loops, which never reach the engine's interrupt handler).
 * @module
 */
import { resultOf, terminatedError } from "../src/core/result.js";
import type { CodeExecutionResult } from "../src/core/types.js";
import type { JsonValue } from "../src/values/json.js";
import { fromWire } from "../src/values/wire.js";
import {
  type CellPayload,
  isOpened,
  isReady,
  isRejected,
  isReport,
  isResult,
  isSnapshot,
  isStopping,
  newNonce,
  type RunPayload,
  type SessionRequest,
  type ToWorker,
} from "./messages.js";

type Rejected = { kind: "rejected"; name: string; message: string };
/** How a run or a cell in the browser ended: a result, or a refusal. */
export type BrowserOutcome =
  | { kind: "result"; result: CodeExecutionResult; workerMs: number; roundTripMs: number }
  | Rejected;
/** How making a session (open, fork) ended. */
type Made = { kind: "opened" } | Rejected;

interface Pending {
  nonce: string;
  /** What answers it besides `rejected`: a `result` (runs, cells) or an `opened` (opens, forks). */
  answer: "result" | "opened";
  started: number;
  reports: unknown[];
  onReport: (value: unknown, index: number) => void;
  settle: (outcome: BrowserOutcome | Made) => void;
  /** Called when the worker answers a `stop-cell`. */
  stopping?: () => void;
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
  /** The snapshots cells' results promised, by the cells' nonces: they come after the results. */
  #snapshots = new Map<string, (snapshot: Uint8Array | undefined) => void>();
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
    if (isSnapshot(data)) return this.#snapshot(data.nonce, data.snapshot);
    const pending = this.#pending;
    if (pending === undefined) return false;
    if (pending.answer === "opened") {
      if (!isOpened(data, pending.nonce)) return this.#rejected(pending, data);
      this.#pending = undefined;
      pending.settle({ kind: "opened" });
      return true;
    }
    if (isStopping(data, pending.nonce)) {
      pending.stopping?.();
      return true;
    }
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
    return this.#rejected(pending, data);
  }

  /** Settles the snapshot promised to the cell `nonce`, if one is. */
  #snapshot(nonce: string, snapshot: Uint8Array | undefined): boolean {
    const settle = this.#snapshots.get(nonce);
    if (settle === undefined) return false;
    this.#snapshots.delete(nonce);
    settle(snapshot);
    return true;
  }

  #rejected(pending: Pending, data: unknown): boolean {
    if (!isRejected(data, pending.nonce)) return false;
    this.#pending = undefined;
    pending.settle({ kind: "rejected", name: data.name, message: data.message });
    return true;
  }

  /** Sends `request` with a fresh nonce; opens and forks are answered by `opened`, runs and cells by `result`. */
  #request(
    request: SessionRequest | { type: "run"; payload: RunPayload },
    onReport: (value: unknown, index: number) => void = () => {},
  ): Promise<BrowserOutcome | Made> {
    if (this.#pending !== undefined) throw new Error("SandboxRunner: a run is already going on");
    return new Promise((settle) => {
      const nonce = newNonce();
      const answer = request.type === "open" || request.type === "fork" ? "opened" : "result";
      this.#pending = { nonce, answer, started: performance.now(), reports: [], onReport, settle };
      this.#post({ ...request, nonce });
    });
  }

  /** Runs `payload`; `onReport` sees each reported value as the guest reports it. One run at a time. */
  run(payload: RunPayload, onReport?: (value: unknown, index: number) => void): Promise<BrowserOutcome> {
    return this.#request({ type: "run", payload }, onReport) as Promise<BrowserOutcome>;
  }

  /**
   * Runs one cell in the worker's session `session`, as {@link run} runs a payload; `snapshot` is the session's state
   * as the cell left it, which comes after the outcome (none when the cell was refused or its worker ended).
   */
  cell(
    session: string,
    cell: CellPayload,
    onReport?: (value: unknown, index: number) => void,
  ): { outcome: Promise<BrowserOutcome>; snapshot: Promise<Uint8Array | undefined> } {
    const outcome = this.#request({ type: "cell", session, cell }, onReport) as Promise<BrowserOutcome>;
    const { nonce } = this.#pending as Pending;
    const snapshot = new Promise<Uint8Array | undefined>((settle) => this.#snapshots.set(nonce, settle));
    void outcome.then((settled) => settled.kind === "rejected" && this.#snapshot(nonce, undefined));
    return { outcome, snapshot };
  }

  /** Makes a session in the worker: an `open` (empty or from a snapshot) or a `fork`. */
  make(request: Extract<SessionRequest, { type: "open" | "fork" }>): Promise<Made> {
    return this.#request(request) as Promise<Made>;
  }

  /** Closes the worker's session `session` (not answered; a worker replaced since has none to close). */
  close(session: string): void {
    this.#post({ type: "close", nonce: newNonce(), session });
  }

  /**
   * Asks the worker to terminate the cell going on, which it can only while the cell waits (a timer, a host
   * function): the session keeps the cell's effects. Resolves when the worker has (the result follows); never when
   * the cell holds the thread, which needs {@link stop}.
   */
  stopCell(): Promise<void> {
    const pending = this.#pending;
    if (pending === undefined) return new Promise(() => {});
    this.#post({ type: "stop-cell", nonce: pending.nonce });
    return new Promise((resolve) => (pending.stopping = resolve));
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
    for (const nonce of [...this.#snapshots.keys()]) this.#snapshot(nonce, undefined);
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
