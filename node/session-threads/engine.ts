/**
 * Sessions on worker threads: a `SessionEngine` whose realms live in session workers (worker.ts), so a cell's
 * synchronous guest work never holds the caller's event loop (`runcode serve`'s other requests go on meanwhile).
 *
 * - **Threads.** A few workers (default: the machine's cores, at most {@link MAX_SESSION_THREADS}), made as sessions
 *   need them; a new or restored session goes to the worker holding the fewest and stays there. A fork is its
 *   parent's snapshot restored, its bytes handed over rather than copied, on the least loaded worker: it is so as
 *   independent of its parent as a restored session (host functions bound anew, random streams reseeded) at the cost
 *   of a snapshot and a restore rather than the core's shared copy (the host's service never forks through the
 *   engine: it copies the stored record and restores it).
 * - **Cells.** `run` returns its handle at once; log entries and reports are posted as the guest makes them and reach
 *   `onLog` and `report` on this thread, in order (what they throw is not the guest's: it cannot be, across threads);
 *   the result crosses by structured clone. `terminate()` (or `signal`, or `timeoutMs` past a grace in which the
 *   worker's own timer normally ends the cell) settles the handle at once and raises the session's stop flag, which
 *   the core reads at its next interrupt poll or fuel refill, so the worker's event loop need not be free: the cell
 *   ends there shortly, and the session goes on.
 * - **Host functions** stay here: each crosses as its place in the options, and the worker calls it through a stub
 *   (an async function: arguments and value structured-cloned, a thrown error crossing as its name and message), at
 *   most {@link MAX_HOST_CALLS_PER_SESSION} in flight per session; a closed session's calls are refused.
 * - **A worker that dies** (an uncaught error, or ended) takes its sessions with it: their cells under way end as an
 *   `InternalError`, their pending snapshots reject, and they act closed from then on (calls throw `SessionError`
 *   "closed"); the host's service restores them from storage. The next session needing a worker makes a new one.
 * @module
 */
import { availableParallelism } from "node:os";
import { Worker } from "node:worker_threads";
import { Execution } from "../../src/core/execution.js";
import { resultOf } from "../../src/core/result.js";
import type {
  EngineCellOptions,
  EngineSession,
  EngineSessionOptions,
  SessionEngine,
} from "../../src/host/sessions/engine.js";
import { builtFile } from "../built-files.js";
import {
  type CodeExecution,
  type CodeExecutionError,
  type CodeExecutionLog,
  type CodeExecutionResult,
  MAX_QUEUED_CELLS,
  type SandboxOptions,
  SessionError,
  type SessionErrorCode,
} from "../index.js";
import { WORKER_STACK_MB } from "../threads/thread.js";
import {
  type CrossedError,
  type CrossingOptions,
  crossedError,
  type FromSessionWorker,
  type FunctionPlace,
  type SessionState,
  STOP_ALL,
  type ToSessionWorker,
} from "./protocol.js";

/** Most session workers: each holds its sessions' realms (16 MiB of linear memory and up each). */
const MAX_SESSION_THREADS = 4;
/** Host calls a session's cells may have in flight at once; past it a call throws a `RangeError` in the guest. */
export const MAX_HOST_CALLS_PER_SESSION = 256;
/** How long past a cell's `timeoutMs` the host ends it, if the worker's own timer has not (its event loop held). */
const TIMEOUT_GRACE_MS = 50;

const SCRIPT = builtFile("session-threads/worker.js");
/** Sandbox settings that are functions of this thread (or objects of it): they cannot cross to a worker. */
const UNCROSSABLE = ["clock", "interrupted", "onLog", "transpiler", "pool"] as const;
const CELL_OPTIONS = new Set(["language", "timeoutMs", "signal", "filename", "report", "onLog"]);
/** A cell's end when its session was closed under it (the core's words). */
const CLOSED: CodeExecutionError = { name: "TerminatedError", message: "Execution terminated: the session was closed" };

type HostFunction = (...args: unknown[]) => unknown;

interface ThreadedSessionsOptions {
  /** Worker threads at most. Default: the machine's cores, at most {@link MAX_SESSION_THREADS}. */
  threads?: number;
}

/** The engine of {@link threadedSessions}, and a hook for tests. */
interface ThreadedSessions extends SessionEngine {
  /** Ends the worker holding `session` as a crash would; resolves once it has exited. For tests. */
  endThreadOf(session: EngineSession): Promise<void>;
}

/** Sessions on worker threads, made with `sandbox`'s settings (which must cross to a worker: data, or wasm). */
export function threadedSessions(sandbox: SandboxOptions, options: ThreadedSessionsOptions = {}): ThreadedSessions {
  for (const key of UNCROSSABLE) {
    if (sandbox[key] !== undefined) throw new TypeError(`threadedSessions: ${key} cannot cross to a worker thread`);
  }
  if (typeof sandbox.wasm === "function" || sandbox.fetch?.fetch !== undefined) {
    throw new TypeError("threadedSessions: a function (wasm's loader, fetch.fetch) cannot cross to a worker thread");
  }
  const { threads = Math.min(availableParallelism(), MAX_SESSION_THREADS) } = options;
  if (!Number.isInteger(threads) || threads < 1)
    throw new TypeError("threadedSessions: threads must be a positive integer");
  return new Engine(sandbox, threads);
}

let lastSession = 0;
let lastRequest = 0;

class Engine implements ThreadedSessions {
  readonly #sandbox: SandboxOptions;
  readonly #threads: (SessionThread | undefined)[];

  constructor(sandbox: SandboxOptions, threads: number) {
    this.#sandbox = sandbox;
    this.#threads = Array.from({ length: threads }, () => undefined);
  }

  create(options: EngineSessionOptions): Promise<EngineSession> {
    return this.#make(options, { kind: "create" });
  }

  restore(snapshot: Uint8Array, options: EngineSessionOptions): Promise<EngineSession> {
    if (!(snapshot instanceof Uint8Array)) {
      return Promise.reject(new TypeError("restoreSession: bytes must be a Uint8Array"));
    }
    // The caller's bytes are copied as they cross (they stay the caller's), with the whole buffer under them: a view
    // of a part is copied out first.
    const bytes = snapshot.byteLength === snapshot.buffer.byteLength ? snapshot : snapshot.slice();
    return this.#make(options, { kind: "restore", bytes });
  }

  /** A restore of bytes this engine owns (a fork's): they are handed over. */
  restoreOwned(snapshot: Uint8Array, options: EngineSessionOptions): Promise<EngineSession> {
    const transfer = snapshot.buffer instanceof ArrayBuffer ? [snapshot.buffer] : [];
    return this.#make(options, { kind: "restore", bytes: snapshot }, transfer);
  }

  async endThreadOf(session: EngineSession): Promise<void> {
    await (session as ThreadSession).thread.end();
  }

  async #make(
    options: EngineSessionOptions,
    how: { kind: "create" } | { kind: "restore"; bytes: Uint8Array },
    transfer: ArrayBuffer[] = [],
  ): Promise<EngineSession> {
    const { crossing, functions } = crossingOf(options);
    const thread = this.#leastLoaded();
    const stop = new SharedArrayBuffer(4);
    const session = new ThreadSession(this, thread, ++lastSession, stop, functions, options);
    thread.sessions.set(session.id, session);
    try {
      const made = await thread.request(
        (request) => ({ ...how, request, session: session.id, stop, crossing }),
        transfer,
      );
      session.update((made as { state: SessionState }).state);
      return session;
    } catch (error) {
      thread.sessions.delete(session.id);
      throw error;
    }
  }

  /** The live worker holding the fewest sessions, made anew in a free or dead slot first. */
  #leastLoaded(): SessionThread {
    let least: SessionThread | undefined;
    for (const [slot, thread] of this.#threads.entries()) {
      if (thread === undefined || !thread.alive) {
        const made = new SessionThread(this.#sandbox);
        this.#threads[slot] = made;
        return made;
      }
      if (least === undefined || thread.sessions.size < least.sessions.size) least = thread;
    }
    return least as SessionThread;
  }
}

/**
 * `options` as they cross: copies of their plain objects and arrays with `null` where each host function was, and
 * the functions, numbered (a function at two places has one number). What else they hold crosses by structured
 * clone, or is refused as it is posted.
 */
function crossingOf(options: EngineSessionOptions): { crossing: CrossingOptions; functions: HostFunction[] } {
  const functions: HostFunction[] = [];
  const numbers = new Map<HostFunction, number>();
  const places: FunctionPlace[] = [];
  const copies = new Map<object, unknown>();
  const copy = (value: unknown, path: (string | number)[]): unknown => {
    if (typeof value === "function") {
      let fn = numbers.get(value as HostFunction);
      if (fn === undefined) {
        fn = functions.push(value as HostFunction) - 1;
        numbers.set(value as HostFunction, fn);
      }
      places.push({ fn, path });
      return null;
    }
    if (typeof value !== "object" || value === null) return value;
    const known = copies.get(value);
    if (known !== undefined) return known;
    const proto = Object.getPrototypeOf(value);
    if (Array.isArray(value)) {
      const out: unknown[] = new Array(value.length);
      copies.set(value, out);
      value.forEach((item, index) => {
        out[index] = copy(item, [...path, index]);
      });
      return out;
    }
    if (proto !== Object.prototype && proto !== null) return value;
    const out: Record<string, unknown> = {};
    copies.set(value, out);
    for (const key of Object.keys(value)) {
      // Defined, not assigned: a key `__proto__` (JSON can hold one) stays a key.
      const item = copy((value as Record<string, unknown>)[key], [...path, key]);
      Object.defineProperty(out, key, { value: item, enumerable: true, writable: true, configurable: true });
    }
    return out;
  };
  const crossed = copy(options, []) as Record<string, unknown>;
  return { crossing: { options: crossed, functions: places }, functions };
}

/** `error` as it was on the worker: a `SessionError` or `TypeError` again, else an `Error` of its name. */
function errorOf(error: CrossedError): Error {
  if (error.name === "SessionError") return new SessionError(error.code as SessionErrorCode, error.message);
  if (error.name === "TypeError") return new TypeError(error.message);
  return Object.assign(new Error(error.message), { name: error.name });
}

/** One session worker, as this thread sees it. */
class SessionThread {
  readonly #worker: Worker;
  readonly sessions = new Map<number, ThreadSession>();
  readonly #requests = new Map<number, { resolve(message: FromSessionWorker): void; reject(error: Error): void }>();
  /** Requests and cells under way: while any is, the worker keeps the process alive. */
  #holds = 0;
  #crash: unknown;
  #exited: Promise<void>;
  alive = true;

  constructor(sandbox: SandboxOptions) {
    this.#worker = new Worker(SCRIPT, {
      workerData: { sandbox },
      // The worker needs none of the process's options, and some (`--input-type`) keep a worker from starting.
      execArgv: [],
      resourceLimits: { stackSizeMb: WORKER_STACK_MB },
    });
    this.#worker.unref();
    this.#worker.on("message", (message: FromSessionWorker) => this.#receive(message));
    this.#worker.on("error", (error) => {
      this.#crash = error;
    });
    this.#exited = new Promise((resolve) => {
      this.#worker.on("exit", () => {
        this.#lost();
        resolve();
      });
    });
  }

  post(message: ToSessionWorker, transfer: ArrayBuffer[] = []): void {
    this.#worker.postMessage(message, transfer);
  }

  /** Posts the message `make` gives a new request number, and resolves with the worker's answer. */
  request(make: (request: number) => ToSessionWorker, transfer: ArrayBuffer[] = []): Promise<FromSessionWorker> {
    if (!this.alive) return Promise.reject(new Error("The session's worker thread has exited"));
    const request = ++lastRequest;
    return new Promise((resolve, reject) => {
      this.post(make(request), transfer);
      this.#requests.set(request, { resolve, reject });
      this.hold(1);
    });
  }

  /** Counts work under way up or down: the worker keeps the process alive while there is some. */
  hold(change: number): void {
    const before = this.#holds;
    this.#holds += change;
    if (before === 0 && this.#holds > 0) this.#worker.ref();
    else if (before > 0 && this.#holds === 0) this.#worker.unref();
  }

  end(): Promise<void> {
    void this.#worker.terminate();
    return this.#exited;
  }

  #receive(message: FromSessionWorker): void {
    if (message.kind === "made" || message.kind === "snapshot" || message.kind === "failed") {
      const waiting = this.#requests.get(message.request);
      this.#requests.delete(message.request);
      this.hold(-1);
      if (message.kind === "failed") waiting?.reject(errorOf(message.error));
      else waiting?.resolve(message);
      return;
    }
    this.sessions.get(message.session)?.receive(message);
  }

  #lost(): void {
    this.alive = false;
    const why = this.#crash === undefined ? "" : `: ${String(this.#crash)}`;
    const reason = `The worker thread holding the session exited${why}`;
    for (const { reject } of this.#requests.values()) reject(new Error(reason));
    this.#requests.clear();
    for (const session of this.sessions.values()) session.lost(reason);
    this.sessions.clear();
  }
}

/** A cell not yet over on the worker. */
interface Cell {
  execution: Execution;
  reports: unknown[];
  logs: CodeExecutionLog[];
  started: number;
  options: EngineCellOptions;
  timer?: ReturnType<typeof setTimeout>;
  unlisten?: () => void;
}

/** A session on a worker thread, as this thread drives it. */
class ThreadSession implements EngineSession {
  readonly #engine: Engine;
  readonly thread: SessionThread;
  readonly id: number;
  readonly #stop: Int32Array;
  readonly #functions: HostFunction[];
  readonly #options: EngineSessionOptions;
  /** Cells posted and not yet over on the worker, in order: the first is running there, or about to. */
  readonly #cells = new Map<number, Cell>();
  #state: SessionState = { cells: 0, memoryBytes: 0 };
  #lastCell = 0;
  #calls = 0;
  #closed = false;

  constructor(
    engine: Engine,
    thread: SessionThread,
    id: number,
    stop: SharedArrayBuffer,
    functions: HostFunction[],
    options: EngineSessionOptions,
  ) {
    this.#engine = engine;
    this.thread = thread;
    this.id = id;
    this.#stop = new Int32Array(stop);
    this.#functions = functions;
    this.#options = options;
  }

  get closed(): boolean {
    return this.#closed;
  }

  get cells(): number {
    return this.#state.cells;
  }

  get memoryBytes(): number {
    return this.#state.memoryBytes;
  }

  update(state: SessionState): void {
    this.#state = state;
  }

  run(source: string, options: EngineCellOptions = {}): CodeExecution {
    this.#open("run");
    if (typeof source !== "string") throw new TypeError("Session.run: the cell must be a string");
    if (typeof options !== "object" || options === null) throw new TypeError("Session.run: options must be an object");
    for (const key of Object.keys(options)) {
      if (!CELL_OPTIONS.has(key)) throw new TypeError(`Session.run: unknown option '${key}'`);
    }
    const { signal, report: _report, onLog: _onLog, ...crossing } = options;
    if (signal !== undefined && !(signal instanceof AbortSignal)) {
      throw new TypeError("Session.run: signal must be an AbortSignal");
    }
    if (this.#cells.size >= MAX_QUEUED_CELLS) {
      throw new SessionError("busy", `${MAX_QUEUED_CELLS} steps are queued on this session: wait for one to end`);
    }
    const number = ++this.#lastCell;
    const reports: unknown[] = [];
    const logs: CodeExecutionLog[] = [];
    const started = performance.now();
    const execution = new Execution(reports, (error) => {
      this.#stopCell(number, error.message);
      return resultOf({ status: "terminated", error }, { reports, logs, durationMs: performance.now() - started });
    });
    const cell: Cell = { execution, reports, logs, started, options };
    this.#cells.set(number, cell);
    this.thread.hold(1);
    this.thread.post({ kind: "run", session: this.id, cell: number, source, options: crossing });
    const { timeoutMs } = options;
    if (typeof timeoutMs === "number" && timeoutMs >= 0 && Number.isFinite(timeoutMs)) {
      const ranOut = () => execution.terminate(`The run's time limit of ${timeoutMs} ms ran out`);
      cell.timer = setTimeout(ranOut, timeoutMs + TIMEOUT_GRACE_MS);
    }
    if (signal !== undefined) {
      const abort = () => execution.terminate(abortReason(signal));
      if (signal.aborted) abort();
      else {
        signal.addEventListener("abort", abort, { once: true });
        cell.unlisten = () => signal.removeEventListener("abort", abort);
      }
    }
    return execution;
  }

  /** As the core's: throws `SessionError` "closed" at once on a closed session. */
  snapshot(): Promise<Uint8Array> {
    this.#open("snapshot");
    return this.thread
      .request((request) => ({ kind: "snapshot", request, session: this.id }))
      .then((answer) => {
        const { bytes, state } = answer as Extract<FromSessionWorker, { kind: "snapshot" }>;
        this.#state = state;
        return bytes;
      });
  }

  fork(): Promise<EngineSession> {
    this.#open("fork");
    return this.snapshot().then((bytes) => this.#engine.restoreOwned(bytes, this.#options));
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    Atomics.store(this.#stop, 0, STOP_ALL);
    this.thread.post({ kind: "close", session: this.id });
    this.thread.sessions.delete(this.id);
    this.#endCells((cell) => resultOf({ status: "terminated", error: CLOSED }, cell));
  }

  /** The worker died: the session's cells end as an `InternalError`, and it is closed. */
  lost(reason: string): void {
    this.#closed = true;
    const error = { name: "InternalError", message: reason };
    this.#endCells((cell) => resultOf({ status: "error", error }, cell));
  }

  receive(message: Extract<FromSessionWorker, { session: number }>): void {
    if (message.kind === "call") {
      this.#call(message);
      return;
    }
    const cell = this.#cells.get(message.cell);
    if (cell === undefined) return;
    if (message.kind === "log") {
      if (!cell.execution.running) return;
      cell.logs.push(message.entry);
      heard(cell.options.onLog, message.entry);
    } else if (message.kind === "report") {
      if (!cell.execution.running) return;
      cell.reports.push(message.value);
      heard(cell.options.report, message.value);
    } else {
      this.#state = message.state;
      this.#forget(message.cell, cell);
      cell.execution.settle({ ...message.result, durationMs: performance.now() - cell.started });
      // A cell stopped while the one before it ran has its turn now: its flag is raised.
      const [next] = this.#cells;
      if (next !== undefined && !next[1].execution.running) Atomics.store(this.#stop, 0, next[0]);
    }
  }

  #open(what: string): void {
    if (this.#closed) throw new SessionError("closed", `Session.${what}: the session is closed`);
  }

  /**
   * Stops cell `number` on the worker: a message, read when the worker's event loop turns, and, when it is the cell
   * running there (the first not over), the flag the core reads however the cell runs. A later cell's flag waits
   * for its turn (see `receive`), so it never lowers the running cell's.
   */
  #stopCell(number: number, reason: string): void {
    const cell = this.#cells.get(number);
    if (cell === undefined) return;
    this.#unwatch(cell);
    if (this.#cells.keys().next().value === number) Atomics.store(this.#stop, 0, number);
    this.thread.post({ kind: "stop", session: this.id, cell: number, reason });
  }

  #unwatch(cell: Cell): void {
    if (cell.timer !== undefined) clearTimeout(cell.timer);
    cell.unlisten?.();
  }

  #forget(number: number, cell: Cell): void {
    this.#unwatch(cell);
    this.#cells.delete(number);
    this.thread.hold(-1);
  }

  /** Settles every cell not over with what `end` makes of it, and forgets them. */
  #endCells(end: (left: { reports: unknown[]; logs: CodeExecutionLog[]; durationMs: number }) => CodeExecutionResult) {
    for (const [number, cell] of [...this.#cells]) {
      this.#forget(number, cell);
      const { reports, logs, started } = cell;
      cell.execution.settle(end({ reports, logs, durationMs: performance.now() - started }));
    }
  }

  /** Calls host function `fn` for the guest, and posts how it went, unless the session closed meanwhile. */
  #call({ call, fn, args }: Extract<FromSessionWorker, { kind: "call" }>): void {
    const answer = (outcome: { ok: true; value: unknown } | { ok: false; error: CrossedError }) => {
      if (this.#closed) return;
      try {
        this.thread.post({ kind: "answer", session: this.id, call, ...outcome });
      } catch (error) {
        const message = `The host function's value cannot cross to the worker thread: ${(error as Error).message}`;
        this.thread.post({ kind: "answer", session: this.id, call, ok: false, error: { name: "TypeError", message } });
      }
    };
    const host = this.#functions[fn];
    if (this.#closed || host === undefined) return;
    if (this.#calls >= MAX_HOST_CALLS_PER_SESSION) {
      const message = `${MAX_HOST_CALLS_PER_SESSION} host calls of this session are in flight: await some first`;
      answer({ ok: false, error: { name: "RangeError", message } });
      return;
    }
    this.#calls++;
    Promise.resolve()
      .then(() => host(...args))
      .then(
        (value) => answer({ ok: true, value }),
        (error: unknown) => answer({ ok: false, error: crossedError(error) }),
      )
      .finally(() => this.#calls--);
  }
}

/**
 * Hands `value` to a cell's listener. What it throws cannot reach the guest, whose call returned long ago on its
 * thread, and must not end this thread's message handling: it is dropped.
 */
function heard<T>(listener: ((value: T) => void) | undefined, value: T): void {
  try {
    listener?.(value);
  } catch {}
}

function abortReason(signal: AbortSignal): string {
  const { reason } = signal as { reason?: unknown };
  return reason instanceof Error ? reason.message : reason === undefined ? "The cell's signal aborted" : String(reason);
}
