/**
 * The runner of the threaded sandbox: one run on a worker thread, as the caller's thread holds it. The core's
 * sandbox hands it the run checked and its values encoded and builds the result from what it reports; this sends
 * the run to a worker (the sandbox's settings once per worker, by number after), serves the host functions and the
 * `report` sink the worker calls back, keeps the run's logs and stops it: on a stop, the run's flag raised, then, if
 * the worker has not ended the run within {@link STOP_GRACE_MS}, the worker ended; and a watchdog that ends the
 * worker when its guest work outlasts the safety cap by {@link WATCHDOG_MARGIN_MS} (the run's own cap stops polling
 * code on time; this stops native work that never polls).
 * @module
 */
import {
  type CodeExecutionError,
  type CodeExecutionLog,
  type Ending,
  failureOf,
  internalFailure,
  ORPHANED as ORPHANED_ERROR,
  type PreparedRun,
  type Reading,
  type RunChannel,
  type RunContext,
  runSafetyCap,
  type StartedRun,
  type Tape,
  type ThreadSettings,
  threadSettingsOf,
} from "../../src/core/runner-port.js";
import { swcModule } from "../swc.js";
import { Crossing } from "./crossing.js";
import { type Replay, UNREPEATED } from "./host-call-record.js";
import { asHostCall, type Caller, hostCaller, type Nested } from "./host-calls.js";
import { STOP_GRACE_MS, WATCHDOG_MARGIN_MS } from "./limits.js";
import { threadPool, type Waiting } from "./pool.js";
import type { Call, CallOutcome, FromWorker, Settlement, ToWorker } from "./protocol.js";
import type { Holder, Thread } from "./thread.js";

/** What a run attempted on the caller's thread hands to its re-run (in-thread-first.ts). */
interface Attempted {
  /** Its host calls, answered from the record. */
  calls: Replay;
  /** Its other inputs (core/recording.ts), replayed on the worker. */
  readings: Reading[];
  /** How many reports it made: the caller has them, and the re-run's same first reports are not kept again. */
  reports: number;
  /** Its logs: the run's first, and the re-run's same first entries are not kept again. */
  logs: CodeExecutionLog[];
}

/** Runs each run on a worker thread of the process's pool; an attempted run's re-run, fed the attempt's record. */
export function onThreads(
  context: RunContext,
  request: PreparedRun,
  channel: RunChannel,
  attempted?: Attempted,
): StartedRun & Nested {
  return new RemoteRun(context, request, channel, attempted);
}

type RunMessage = Extract<ToWorker, { kind: "run" }>;

let lastRun = 0;

/** Each sandbox's settings as they cross to a worker, numbered (see `SettingsRef`). */
const sandboxSettings = new WeakMap<RunContext, { id: number; settings: ThreadSettings }>();
let lastSettings = 0;

function settingsOf(context: RunContext): { id: number; settings: ThreadSettings } {
  let known = sandboxSettings.get(context);
  if (known === undefined) {
    known = { id: ++lastSettings, settings: threadSettingsOf(context) };
    sandboxSettings.set(context, known);
  }
  return known;
}

/** How a re-run that ended short of its attempt's host calls fails (see `RemoteRun.receive`). */
const ENDED_SHORT = `${UNREPEATED}: it ended before the host calls its attempt made`;

/** How a nested run ends when the run that started it is over. */
const ORPHANED: Ending = { status: "terminated", error: ORPHANED_ERROR };

class RemoteRun implements StartedRun, Waiting, Holder, Caller, Nested {
  readonly depth: number;
  readonly root: object;
  readonly tenant: string | undefined;
  readonly ended: Promise<Ending>;
  readonly #id = nextRunId();
  readonly #context: RunContext;
  /** The run's own CPU cap, the one the worker holds it to (within its `timeoutMs`). */
  readonly #cpuTimeMs: number;
  readonly #request: PreparedRun;
  readonly #channel: RunChannel;
  readonly #crossing: Crossing;
  /** The run's `console` entries, as they arrive: a stopped run settles with those made so far, as in the core. */
  readonly #logs: CodeExecutionLog[];
  readonly #message: Omit<RunMessage, "wasm" | "settings" | "alone">;
  /** The compiled QuickJS wasm, and SWC's for TypeScript: compiled while the run waits for a worker. */
  readonly #compiled: Promise<{ module: WebAssembly.Module; swc: WebAssembly.Module | undefined }>;
  #resolve!: (ending: Ending) => void;
  /** Whether the run is over (`ended` resolved), or stopped by its caller. */
  #over = false;
  /** The run whose host function started this one, if any. */
  readonly #caller: Caller | undefined;
  /** Runs this one's host functions started that are not over: they end with it. */
  readonly #nested = new Set<RemoteRun>();
  #fuelUsed: number | undefined;
  #memoryUsedBytes: number | undefined;
  /** Settlements of the caller's promises not yet posted: those of one turn of the event loop go together. */
  #settled: Settlement[] = [];
  /** Messages for the worker made before the run reached it. */
  #outbox: ToWorker[] = [];
  #thread: Thread | undefined;
  #posted = false;
  #grace: ReturnType<typeof setTimeout> | undefined;
  #watchdog: ReturnType<typeof setTimeout> | undefined;
  /** The attempt's host calls, while the re-run has recorded calls to make. */
  #replay: Replay | undefined;
  /** The attempt's reports and logs the re-run has yet to make again (see `Attempted`). */
  #reportsMade: number;
  #logsMade: number;

  /** Throws a `RangeError` when the queue is full or runs nest too deep. */
  constructor(context: RunContext, request: PreparedRun, channel: RunChannel, attempted?: Attempted) {
    // Runs of this module, and attempts on the caller's thread (in-thread-first.ts), call host functions here.
    const caller = hostCaller();
    this.depth = caller === undefined ? 0 : caller.depth + 1;
    this.root = caller?.root ?? this;
    this.tenant = request.tenant;
    this.#caller = caller;
    this.#context = context;
    this.#cpuTimeMs = runSafetyCap(context.safetyCap, request.options.timeoutMs).cpuTimeMs;
    this.#request = request;
    this.#channel = channel;
    this.ended = new Promise((resolve) => {
      this.#resolve = resolve;
    });
    this.#crossing = new Crossing(request.functions, (key, ok, value) => this.#settle({ key, ok, value }));
    this.#message = {
      kind: "run",
      run: this.#id,
      source: request.source,
      options: request.options,
      listened: request.onLog !== undefined,
      values: this.#crossing.cross(request.values),
      imports: request.imports?.map((tape) => this.#crossing.cross(tape)),
      args: this.#crossing.cross(request.args),
      ...(attempted === undefined ? {} : { readings: attempted.readings }),
    };
    this.#replay = attempted?.calls.pending ? attempted.calls : undefined;
    this.#reportsMade = attempted?.reports ?? 0;
    this.#logs = attempted?.logs ?? [];
    this.#logsMade = this.#logs.length;
    const typescript = request.options.language === "typescript";
    this.#compiled = Promise.all([context.wasm(), typescript ? swcModule() : undefined]).then(([module, swc]) => {
      if (module === undefined) throw new TypeError("The threaded sandbox needs the QuickJS wasm (settings.wasm)");
      return { module, swc };
    });
    // Its failure is the run's, reported once a worker takes it.
    this.#compiled.catch(() => {});
    if (caller !== undefined && !caller.adopt(this)) {
      this.#end(ORPHANED);
      return;
    }
    threadPool.submit(this);
  }

  adopt(nested: Nested): boolean {
    if (this.#over) return false;
    this.#nested.add(nested as RemoteRun);
    return true;
  }

  orphan(): void {
    this.stop();
    this.#end(ORPHANED);
  }

  /** Ends the run with `ending` (the first ending wins), and the runs nested under it with it. */
  #end(ending: Ending): void {
    this.#replay = undefined;
    this.#resolve(ending);
    if (this.#caller instanceof RemoteRun) this.#caller.#nested.delete(this);
    this.#orphanNested();
  }

  #orphanNested(): void {
    this.#over = true;
    const nested = [...this.#nested];
    this.#nested.clear();
    for (const run of nested) run.orphan();
  }

  get logs(): readonly CodeExecutionLog[] {
    return this.#logs;
  }

  /** Known once the worker reported the run over. */
  get fuelUsed(): number | undefined {
    return this.#fuelUsed;
  }

  get memoryUsedBytes(): number | undefined {
    return this.#memoryUsedBytes;
  }

  start(thread: Thread): void {
    this.#thread = thread;
    thread.holder = this;
    this.#compiled.then(
      ({ module, swc }) => {
        if (thread.holder !== this) return;
        if (this.#over || this.#channel.settled()) return threadPool.release(thread);
        const { id, settings } = settingsOf(this.#context);
        const { restore, boot } = this.#context;
        const memoryLimitBytes = this.#request.options.memoryLimitBytes;
        threadPool.uses({ wasm: module, instance: restore ? { boot, memoryLimitBytes } : undefined, swc });
        thread.post({
          ...this.#message,
          wasm: thread.wasmRef(module),
          settings: thread.settingsRef(id, settings),
          ...(swc === undefined ? {} : thread.swcRef(swc)),
          alone: threadPool.alone(thread),
        });
        this.#posted = true;
        this.#watch(thread, this.#cpuTimeMs + WATCHDOG_MARGIN_MS);
        for (const message of this.#outbox) thread.post(message);
        this.#outbox = [];
      },
      (bug: unknown) => {
        if (thread.holder === this) threadPool.release(thread);
        this.#end(internalFailure(String(bug)));
      },
    );
  }

  receive(message: Exclude<FromWorker, { kind: "ready" | "call" }>): void {
    const thread = this.#thread as Thread;
    if (message.run !== this.#id) return;
    switch (message.kind) {
      case "log":
        if (this.#logsMade > 0) this.#logsMade--;
        else if (!this.#channel.settled()) this.#logs.push(this.#logEntry(message));
        break;
      case "done": {
        this.#clearTimers();
        threadPool.release(thread);
        const { status, error, result, memoryUsedBytes, fuelUsed } = message;
        this.#memoryUsedBytes = memoryUsedBytes;
        this.#fuelUsed = fuelUsed;
        // A re-run that succeeded short of its attempt's calls went its own way: the host saw calls it did not make.
        if (status === "success" && this.#replay !== undefined) {
          this.#end(internalFailure(ENDED_SHORT));
          break;
        }
        this.#end(
          status === "success" ? this.#decoded(result as Tape<ArrayBuffer>) : { status, ...(error && { error }) },
        );
      }
    }
  }

  /** A `console` entry as the worker relayed it, its arguments decoded as the in-thread core decodes them. */
  #logEntry(entry: { level: CodeExecutionLog["level"]; timestamp: number; args: Tape<ArrayBuffer> }): CodeExecutionLog {
    const { level, timestamp } = entry;
    return { level, args: this.#crossing.decode(entry.args, true) as unknown[], timestamp };
  }

  /** The run's result, decoded as the in-thread core decodes it: what cannot be decoded is the run's error. */
  #decoded(result: Tape<ArrayBuffer>): Ending {
    try {
      return { status: "success", result: this.#crossing.decode(result) };
    } catch (failure) {
      return failureOf(failure);
    }
  }

  lost(reason: string): void {
    this.#clearTimers();
    this.#end(internalFailure(reason));
  }

  /**
   * Stops the run: off the queue, or its flag raised and, past the grace, its worker ended; and the runs nested under
   * it ended at once.
   */
  stop(_error?: CodeExecutionError): void {
    this.#orphanNested();
    const thread = this.#thread;
    if (thread === undefined) threadPool.withdraw(this);
    else if (this.#posted && thread.holder === this) {
      clearTimeout(this.#watchdog);
      thread.stop(this.#id);
      this.#grace = setTimeout(() => {
        if (thread.holder === this) thread.end();
      }, STOP_GRACE_MS);
    }
  }

  /**
   * What the guest asks of the caller's thread, done as the core does it in-thread: a host function (or the report
   * sink, or the log listener) called with the decoded arguments and its outcome encoded, or a guest promise settled.
   */
  serve({ run, request, value }: Call): CallOutcome {
    if (run !== this.#id) return { fault: "The call is not the run's" };
    const crossing = this.#crossing;
    const thrown = (error: unknown): CallOutcome => ({ ok: false, value: crossing.encodeThrown(error) });
    if (request.op === "settle") {
      try {
        crossing.settle(request.promise, request.ok, value);
      } catch (failure) {
        return { fault: (failure as Error).message };
      }
      return { ok: true, value: crossing.encode(undefined) };
    }
    if (this.#over || this.#channel.settled()) return thrown(new Error("The run has ended"));
    let args: unknown[];
    try {
      if (request.op === "call") args = crossing.decode(value) as unknown[];
      else args = [request.op === "log" ? this.#logEntry({ ...request, args: value }) : crossing.decode(value)];
    } catch (failure) {
      return { fault: (failure as Error).message };
    }
    const report = request.op === "report";
    const log = request.op === "log";
    if (report && this.#reportsMade > 0) {
      // Made again by the re-run: an attempt that made it had no sink to call (its first report ended it).
      this.#reportsMade--;
      return { ok: true, value: crossing.encode(undefined) };
    }
    if (report) this.#channel.reports.push(args[0]);
    if (log) this.#logs.push(args[0] as CodeExecutionLog);
    if (request.op === "call" && this.#replay !== undefined) return this.#replayed(request.fn, args);
    const target = report ? this.#request.report : log ? this.#request.onLog : crossing.functionOf(request.fn);
    if (target === undefined) return { ok: true, value: crossing.encode(undefined) };
    let returned: unknown;
    try {
      returned = asHostCall(this, () => Reflect.apply(target, undefined, args));
    } catch (error) {
      return thrown(error);
    }
    // The core hands the guest what `report` returns only when it is a promise, and nothing of what `onLog` returns.
    if ((report && !(returned instanceof Promise)) || log) returned = undefined;
    try {
      return { ok: true, value: crossing.encode(returned) };
    } catch (error) {
      return thrown(error);
    }
  }

  /**
   * A call of the re-run answered from its attempt's record (host-call-record.ts): what the attempt's guest got, when
   * it is the call the attempt made; else the run ends with the mismatch, and the host is not called.
   */
  #replayed(fn: number, args: unknown[]): CallOutcome {
    const replay = this.#replay as Replay;
    const answer = replay.answer(fn, args);
    if (!replay.pending) this.#replay = undefined;
    if ("mismatch" in answer) return this.#diverged(answer.mismatch);
    const crossing = this.#crossing;
    // The answer names functions as the attempt's table numbered them by then: this run's numbers them alike first.
    if (!crossing.numberedAs(replay.numbering, answer.numbered)) {
      return this.#diverged(`${UNREPEATED}: the functions of a host call's answer were numbered otherwise`);
    }
    const { outcome } = answer;
    if ("thrown" in outcome) return { ok: false, value: crossing.encodeThrown(outcome.thrown) };
    if ("encoded" in outcome) return { ok: outcome.ok, value: crossing.cross(outcome.encoded) };
    try {
      return { ok: true, value: crossing.encode(outcome.returned) };
    } catch (error) {
      return { ok: false, value: crossing.encodeThrown(error) };
    }
  }

  /** Ends the run that went its own way in its replay, saying how; the host is not called. */
  #diverged(message: string): CallOutcome {
    this.stop();
    this.#end(internalFailure(message));
    return { fault: message };
  }

  /** Checks when the guest's work could have outlasted the cap plus the margin, and again until the run is over. */
  #watch(thread: Thread, inMs: number): void {
    this.#watchdog = setTimeout(() => {
      if (thread.holder !== this) return;
      const cpuTimeMs = this.#cpuTimeMs;
      const left = cpuTimeMs + WATCHDOG_MARGIN_MS - thread.guestTime();
      if (left > 0) return this.#watch(thread, left);
      thread.end();
      // The core's own words for its CPU cap (src/core/limits.ts).
      const message = `Execution stopped by the safety cap after ${cpuTimeMs} ms of CPU time`;
      this.#end({ status: "terminated", error: { name: "TerminatedError", message } });
    }, inMs);
    this.#watchdog.unref();
  }

  #clearTimers(): void {
    clearTimeout(this.#grace);
    clearTimeout(this.#watchdog);
  }

  /** Posts a settlement with the others of this turn of the event loop. */
  #settle(settlement: Settlement): void {
    if (this.#settled.push(settlement) > 1) return;
    setImmediate(() => {
      const settled = this.#settled;
      this.#settled = [];
      if (this.#channel.settled()) return;
      const message: ToWorker = { kind: "settle", run: this.#id, settled };
      if (this.#posted) this.#thread?.post(message);
      else this.#outbox.push(message);
    });
  }
}

/** Run ids fit the signals' 32-bit slots; 0 stops nothing. */
function nextRunId(): number {
  lastRun = (lastRun % 0x7fffffff) + 1;
  return lastRun;
}
