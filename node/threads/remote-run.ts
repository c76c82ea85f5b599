/**
 * One run on a worker thread, as the caller's thread holds it: the handle (settled at once by `terminate()`, as in
 * the core), the host functions the worker calls back, the live reports, and the stops: on `terminate()` the run's
 * flag raised, then, if the worker has not ended the run within {@link STOP_GRACE_MS}, the worker ended; and a
 * watchdog that ends the worker when its guest work outlasts the safety cap by {@link WATCHDOG_MARGIN_MS} (the
 * run's own cap stops polling code on time; this stops native work that never polls).
 * @module
 */
import { Execution } from "../../src/core/execution.js";
import type { ResolvedOptions } from "../../src/core/options.js";
import type { CodeExecutionError, CodeExecutionLog, CodeExecutionResult } from "../../src/core/types.js";
import { Crossing } from "./crossing.js";
import { asHostCall, type Holder, nestingDepth, type Thread, threadPool, type Waiting } from "./pool.js";
import { type Answer, type Crossed, type FromWorker, REPORT, type ThreadSettings, type ToWorker } from "./protocol.js";

/**
 * How long a stopped run's worker may take to end it on its own (its next interrupt poll) before the worker itself
 * is ended: guest work of any kind stops within this plus the worker's termination, under 50 ms.
 */
export const STOP_GRACE_MS = 20;
/** How far past `safetyCap.cpuTimeMs` a worker's guest work may go before the watchdog ends the worker. */
export const WATCHDOG_MARGIN_MS = 50;

/** What every run of one threaded sandbox shares. */
export interface ThreadedSandbox {
  settings: ThreadSettings;
  wasm: () => Promise<WebAssembly.Module>;
  /** The safety cap's `cpuTimeMs`, which the watchdog holds. */
  cpuTimeMs: number;
}

type RunRequest = Extract<ToWorker, { kind: "run" }>;
type Outcome = Pick<CodeExecutionResult, "status" | "result" | "error" | "memoryUsedBytes" | "fuelUsed">;

let lastRun = 0;

export class RemoteRun implements Waiting, Holder {
  readonly depth = nestingDepth();
  readonly #id = nextRunId();
  readonly #started: number;
  readonly #crossing = new Crossing((key, ok, value) => this.#post({ kind: "settle", run: this.#id, key, ok, value }));
  readonly #reports: unknown[] = [];
  /** The run's `console` entries, as they arrive: a stopped run settles with those made so far, as in the core. */
  readonly #logs: CodeExecutionLog[] = [];
  readonly #report: ((value: unknown) => void) | undefined;
  readonly #request: Omit<RunRequest, "wasm">;
  readonly #sandbox: ThreadedSandbox;
  /** Settlements of the caller's promises made before the run reached its worker. */
  #outbox: ToWorker[] = [];
  #thread: Thread | undefined;
  #posted = false;
  #grace: ReturnType<typeof setTimeout> | undefined;
  #watchdog: ReturnType<typeof setTimeout> | undefined;
  readonly execution: Execution;

  /**
   * Throws as the core's `runCode` does for a value that cannot cross, and a `RangeError` when the queue is full or
   * runs nest too deep.
   */
  constructor(source: string, options: ResolvedOptions, sandbox: ThreadedSandbox, started: number) {
    this.#started = started;
    this.#report = options.report;
    this.#sandbox = sandbox;
    const { fn, script, modules, language, memoryLimitBytes, filename } = options;
    this.#request = {
      kind: "run",
      run: this.#id,
      settings: sandbox.settings,
      source,
      options: { fn, script, modules, language, memoryLimitBytes, filename },
      // Encoded now, as the core does, so a value that cannot cross makes runCode throw before anything runs.
      values: this.#crossing.encode([options.globals, options.imports]),
      args: this.#crossing.encode(options.args),
    };
    this.execution = new Execution(this.#reports, (error) => this.#terminate(error));
    threadPool.submit(this);
  }

  start(thread: Thread): void {
    this.#thread = thread;
    thread.holder = this;
    this.#sandbox.wasm().then(
      (module) => {
        if (thread.holder !== this) return;
        if (!this.execution.running) return threadPool.release(thread);
        threadPool.uses(module);
        thread.post({ ...this.#request, wasm: thread.wasmRef(module) });
        this.#posted = true;
        this.#watch(thread, this.#sandbox.cpuTimeMs + WATCHDOG_MARGIN_MS);
        for (const message of this.#outbox) thread.post(message);
        this.#outbox = [];
      },
      (bug: unknown) => {
        if (thread.holder === this) threadPool.release(thread);
        this.#settle({ status: "error", error: { name: "InternalError", message: String(bug) } });
      },
    );
  }

  receive(message: Exclude<FromWorker, { kind: "ready" }>): void {
    const thread = this.#thread as Thread;
    if (message.run !== this.#id) return;
    switch (message.kind) {
      case "call":
        thread.answer({ call: message.call, ...this.#call(message.fn, message.args) });
        break;
      case "settle":
        this.#crossing.settle(message.key, message.ok, message.value);
        break;
      case "log":
        if (this.execution.running) this.#logs.push(this.#crossing.decode(message.entry) as CodeExecutionLog);
        break;
      case "done": {
        this.#clearTimers();
        threadPool.release(thread);
        let result: unknown;
        try {
          result = this.#crossing.decode(message.result);
        } catch (bug) {
          this.#settle({ status: "error", error: { name: "InternalError", message: String(bug) } });
          break;
        }
        const { status, error, memoryUsedBytes, fuelUsed } = message;
        const outcome: Outcome = status === "success" ? { status, result } : { status, ...(error && { error }) };
        if (memoryUsedBytes !== undefined) outcome.memoryUsedBytes = memoryUsedBytes;
        if (fuelUsed !== undefined) outcome.fuelUsed = fuelUsed;
        this.#settle(outcome);
      }
    }
  }

  lost(reason: string): void {
    this.#clearTimers();
    this.#settle({ status: "error", error: { name: "InternalError", message: reason } });
  }

  /** A synchronous call of the worker: the host function (or the report sink) with its outcome, as the core calls it. */
  #call(fn: number, crossedArgs: Crossed): Omit<Answer, "call"> {
    const thrown = (error: unknown): Omit<Answer, "call"> => ({ ok: false, value: this.#crossing.encodeThrown(error) });
    if (!this.execution.running) return thrown(new Error("The run has ended"));
    let args: unknown[];
    try {
      args = this.#crossing.decode(crossedArgs) as unknown[];
    } catch (error) {
      return thrown(error);
    }
    if (fn === REPORT) this.#reports.push(args[0]);
    const target = fn === REPORT ? this.#report : this.#crossing.functionOf(fn);
    if (target === undefined) return { ok: true, value: this.#crossing.encode(undefined) };
    let returned: unknown;
    try {
      returned = asHostCall(this.depth, () => Reflect.apply(target, undefined, args));
    } catch (error) {
      return thrown(error);
    }
    // The core hands the guest what `report` returns only when it is a promise.
    if (fn === REPORT && !(returned instanceof Promise)) returned = undefined;
    try {
      return { ok: true, value: this.#crossing.encode(returned) };
    } catch (error) {
      return thrown(error);
    }
  }

  /** Checks when the guest's work could have outlasted the cap plus the margin, and again until the run is over. */
  #watch(thread: Thread, inMs: number): void {
    this.#watchdog = setTimeout(() => {
      if (thread.holder !== this) return;
      const { cpuTimeMs } = this.#sandbox;
      const left = cpuTimeMs + WATCHDOG_MARGIN_MS - thread.guestTime();
      if (left > 0) return this.#watch(thread, left);
      thread.end();
      // The core's own words for its CPU cap (src/core/limits.ts).
      const message = `Execution stopped by the safety cap after ${cpuTimeMs} ms of CPU time`;
      this.#settle({ status: "terminated", error: { name: "TerminatedError", message } });
    }, inMs);
    this.#watchdog.unref();
  }

  #clearTimers(): void {
    clearTimeout(this.#grace);
    clearTimeout(this.#watchdog);
  }

  #post(message: ToWorker): void {
    if (!this.execution.running) return;
    if (this.#posted) this.#thread?.post(message);
    else this.#outbox.push(message);
  }

  #terminate(error: CodeExecutionError): CodeExecutionResult {
    const thread = this.#thread;
    if (thread === undefined) threadPool.withdraw(this);
    else if (this.#posted && thread.holder === this) {
      clearTimeout(this.#watchdog);
      thread.stop(this.#id);
      this.#grace = setTimeout(() => {
        if (thread.holder === this) thread.end();
      }, STOP_GRACE_MS);
    }
    return this.#result({ status: "terminated", error });
  }

  #settle(outcome: Outcome): void {
    if (this.execution.running) this.execution.settle(this.#result(outcome));
  }

  /** The result as the core's sandbox builds it. */
  #result(outcome: Outcome): CodeExecutionResult {
    const { memoryUsedBytes, fuelUsed, ...rest } = outcome;
    const head = rest.status === "success" ? { status: rest.status, result: rest.result } : { ...rest };
    const durationMs = performance.now() - this.#started;
    const result: CodeExecutionResult = { ...head, reports: [...this.#reports], logs: [...this.#logs], durationMs };
    if (memoryUsedBytes !== undefined) result.memoryUsedBytes = memoryUsedBytes;
    if (fuelUsed !== undefined) result.fuelUsed = fuelUsed;
    return result;
  }
}

/** Run ids fit the signals' 32-bit slots; 0 stops nothing. */
function nextRunId(): number {
  lastRun = (lastRun % 0x7fffffff) + 1;
  return lastRun;
}
