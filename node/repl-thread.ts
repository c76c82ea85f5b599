/**
 * The REPL's session on a worker thread of its own (node/repl-worker.ts), so that the REPL's thread stays free to
 * read Ctrl-C while a cell runs: a session runs its cells on the thread that holds it, and synchronous guest code
 * would block the REPL's event loop until its time limit. Ctrl-C raises a shared flag the session reads at every
 * yield point (`SessionOptions.interrupted`), which stops guest code however it runs, and posts a terminate for a
 * cell waiting on a timer or a fetch. One request at a time, as the REPL makes them.
 * @module
 */
import { Worker } from "node:worker_threads";
import type { CodeExecutionLog, CodeExecutionResult, FetchOptions } from "../src/core/types.js";
import { builtFile } from "./built-files.js";

/** The session's settings, data only: what crosses to the worker. */
interface ReplSessionSettings {
  webApis: boolean;
  fetch?: FetchOptions;
  memoryLimitBytes?: number;
}

/** One cell, as the REPL runs it. */
interface ReplCell {
  source: string;
  language: "javascript" | "typescript";
  timeoutMs: number;
}

/** What the REPL's thread asks of the worker. */
export type ToReplWorker =
  /** Make the session (a new one, or `snapshot` restored), closing the one before it once the new one stands. */
  | { type: "open"; snapshot?: Uint8Array }
  | { type: "run"; cell: ReplCell }
  | { type: "terminate" }
  | { type: "snapshot" };

/** What the worker answers; `log` entries come while a cell runs, before its `result`. */
export type FromReplWorker =
  | { type: "opened" }
  | { type: "log"; entry: CodeExecutionLog }
  | { type: "result"; result: CodeExecutionResult }
  | { type: "snapshot"; bytes: Uint8Array }
  /** The request failed: the error's name, message and code (a `SessionError`'s), copied. */
  | { type: "failed"; error: { name: string; message: string; code?: string } };

/** What `workerData` holds. */
export interface ReplWorkerData {
  settings: ReplSessionSettings;
  /** One Int32: 1 while the running cell is to stop. */
  interrupt: SharedArrayBuffer;
}

const WORKER_SCRIPT = builtFile("repl-worker.js");

/** The REPL's handle on its session's thread. */
export class ReplThread {
  readonly #worker: Worker;
  readonly #interrupt = new Int32Array(new SharedArrayBuffer(4));
  #onLog: (entry: CodeExecutionLog) => void = () => {};
  #pending: { resolve: (message: FromReplWorker) => void; reject: (error: Error) => void } | undefined;

  constructor(settings: ReplSessionSettings) {
    const data: ReplWorkerData = { settings, interrupt: this.#interrupt.buffer as SharedArrayBuffer };
    this.#worker = new Worker(WORKER_SCRIPT, { workerData: data });
    this.#worker.on("message", (message: FromReplWorker) => {
      if (message.type === "log") return this.#onLog(message.entry);
      const pending = this.#pending;
      this.#pending = undefined;
      pending?.resolve(message);
    });
    this.#worker.on("error", (error) => this.#fail(error));
    this.#worker.on("exit", (code) => this.#fail(new Error(`The session's thread exited (code ${code})`)));
  }

  /** Makes the session: a new one, or `snapshot` restored in place of the current one. */
  async open(snapshot?: Uint8Array): Promise<void> {
    await this.#request(snapshot === undefined ? { type: "open" } : { type: "open", snapshot });
  }

  /** Runs one cell, handing its console entries to `onLog` as they come. */
  async run(cell: ReplCell, onLog: (entry: CodeExecutionLog) => void): Promise<CodeExecutionResult> {
    this.#onLog = onLog;
    Atomics.store(this.#interrupt, 0, 0);
    try {
      const answer = await this.#request({ type: "run", cell });
      return (answer as Extract<FromReplWorker, { type: "result" }>).result;
    } finally {
      this.#onLog = () => {};
    }
  }

  /** Stops the running cell, if any: the session keeps what it did before it stopped. */
  interrupt(): void {
    if (this.#pending === undefined) return;
    Atomics.store(this.#interrupt, 0, 1);
    this.#worker.postMessage({ type: "terminate" } satisfies ToReplWorker);
  }

  /** The session's snapshot. */
  async snapshot(): Promise<Uint8Array> {
    const answer = await this.#request({ type: "snapshot" });
    return (answer as Extract<FromReplWorker, { type: "snapshot" }>).bytes;
  }

  /** Ends the thread and its session. */
  async close(): Promise<void> {
    this.#worker.removeAllListeners("exit");
    await this.#worker.terminate();
  }

  #request(message: ToReplWorker): Promise<FromReplWorker> {
    if (this.#pending !== undefined) throw new Error("ReplThread: one request at a time");
    const answer = new Promise<FromReplWorker>((resolve, reject) => {
      this.#pending = { resolve, reject };
    });
    this.#worker.postMessage(message);
    return answer.then((reply) => {
      if (reply.type === "failed") throw Object.assign(new Error(reply.error.message), reply.error);
      return reply;
    });
  }

  #fail(error: Error): void {
    const pending = this.#pending;
    this.#pending = undefined;
    pending?.reject(error);
  }
}
