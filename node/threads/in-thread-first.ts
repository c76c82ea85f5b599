/**
 * Node's default path (`threads: "auto"`): each run starts on the caller's thread with a slice of fuel, and stays
 * there if it ends within it; a run that would go on past the slice, or do what the caller could observe, is handed
 * to a worker thread (remote-run.ts, loaded only then: on-threads.ts) and run there again from the start. The slice
 * is the run's safety cap lowered to {@link SLICE_FUEL}, so the engine's meter ends it where clocks stand still, and
 * a timer the slice cannot pay for stops it before it waits. The attempt calls the caller's synchronous host
 * functions for real, and records what its guest got from them (host-call-record.ts) and every other input a second
 * run could read differently (its `Math.random` seed, clocks and random bytes: core/recording.ts); the re-run on the
 * worker is fed the record, so its guest takes the same path, and its first calls are answered from the record rather
 * than by the host: each host function is called once per call the guest made. The slice counts the engine's own
 * work, not the fees of its first {@link SLICE_CALLS} calls (up to the run's own cap): the caller's thread serves a
 * worker's synchronous calls too, and at a greater cost each.
 * What the attempt cannot record ends it: its `report` sink, `onLog` listener and the platform's `fetch` are
 * stand-ins that end it instead of being called (the worker's run calls them: a request is sent once), and so does a
 * wait for what the host settles (a host promise, `crypto.subtle`), whose order a re-run could not repeat. A run its host functions start goes to a worker and ends
 * with it. The attempt's reports and logs are the caller's as it makes them (its host
 * functions may read the reports), and the re-run's same first ones are not kept again. Attempts take turns, one at
 * a time, each after a turn of the caller's event loop, round robin by tenant (attempt-turns.ts): runs at once
 * neither hold the loop longer than a slice each nor take an instance each, and one tenant's backlog does not hold up
 * another's. A run handed over tells what its attempt spent as its result's `fuelRedone`, the work its host charges
 * besides `fuelUsed`.
 * @module
 */
import {
  type CodeExecutionError,
  type CodeExecutionLog,
  callingAs,
  type Ending,
  ForwardingRun,
  type Nesting,
  ORPHANED,
  type PreparedRun,
  Recording,
  type RunChannel,
  type RunContext,
  type Runner,
  runSafetyCap,
  type StartedRun,
  safetyCapStopOf,
  type Tape,
} from "../../src/core/runner-port.js";
import { AttemptTurns } from "./attempt-turns.js";
import { HostCallRecord, Replay } from "./host-call-record.js";
import { asHostCall, type Caller, hostCaller, type Nested } from "./host-calls.js";
import { onThreads } from "./on-threads.js";

/**
 * Fuel a run may spend on the caller's thread before it goes to a worker: what the engine's own loops do in 1.3-1.8 ms
 * of CPU (3.3-4.5 ms per 10^6 units, the rate src/core/host-fuel.ts charges the host's work at) and at most 2 ms at
 * the slowest rate measured over the fuel catalogue (5.1 ms per 10^6). A trivial run spends ~19,000 units.
 */
export const SLICE_FUEL = 400_000;

/**
 * Synchronous host calls of an attempt whose fees its slice does not count (see the module comment): with the
 * engine's work of each (76-168 units by the calls measured), at 7-13 us a call on the caller's thread, 10-20 ms of
 * its event loop at most; enough for the bench's 1,000 calls of a small function to stay on the caller's thread.
 */
export const SLICE_CALLS = 1_500;

/** What a run's attempt was given instead of the caller's functions throws in the guest, if the guest is still on. */
const HANDED_OVER: CodeExecutionError = {
  name: "TerminatedError",
  message: "The run goes on on a worker thread",
};

/** Runs each run as {@link SLICE_FUEL} and the module comment say: `inThread` is the core's runner of the caller's thread. */
export function inThreadFirst(inThread: Runner): Runner {
  return (context, request, channel) => {
    // Runs nested in a run's host calls (an attempt's too, also after the host function's own awaits) go to a worker,
    // where their pool's rules bound them and they end with that run, and a run whose guest would wait for the host's
    // promises, or make requests (see namesFetch), goes where it can wait without holding others' attempts.
    if (hostCaller() !== undefined || holdsPromises(request) || (context.fetch !== undefined && namesFetch(request))) {
      return onThreads(context, request, channel);
    }
    // A run whose own cap is within the slice can never hold the caller's thread longer: it runs there whole.
    if (runSafetyCap(context.safetyCap, request.options.timeoutMs).fuel <= SLICE_FUEL) {
      return inThread(context, request, channel);
    }
    // A tenant with as many attempts waiting as it may have goes straight to the workers' queue, bounded in its turn.
    if (!turns.hasRoom(request.tenant)) return onThreads(context, request, channel);
    return new Attempted(context, request, channel, inThread);
  };
}

/** Whether the run's values hold the caller's promises. */
function holdsPromises({ values, imports = [], args }: PreparedRun): boolean {
  const promise = (item: Tape["side"][number]) => item.kind === "promise";
  return [values, ...imports, args].some((tape) => tape.side.some(promise));
}

/**
 * Whether a run's code names `fetch`: it likely makes requests, which its attempt could not (see `#fetchStandIn`), so
 * it goes to a worker at once rather than after an attempt. Only a choice of path: a run of a sandbox with `fetch`
 * that reaches it without naming it is attempted, and its attempt ends before a request is sent.
 */
function namesFetch({ source, options }: PreparedRun): boolean {
  return source.includes("fetch") || Object.values(options.modules).some((module) => module.includes("fetch"));
}

/** The caller's thread's turns between attempts. */
const turns = new AttemptTurns<Attempted>();
/** Gives the caller's thread to the next attempt after a turn of its event loop (see {@link AttemptTurns.next}). */
const next = () => turns.next();

/** A run started by one of a run's host functions. */
type NestedRun = Parameters<Nesting["nest"]>[0];

/** What an attempt records for its re-run: its host calls, and the other inputs a re-run could read differently. */
interface AttemptRecord {
  calls: HostCallRecord;
  recording: Recording;
}

/**
 * A run attempted on the caller's thread, then, if need be, run on a worker (its `current` run: the attempt, then the
 * run on a worker once it is handed over). Its host functions are called as a root run's (a {@link Caller} at depth
 * 0): the runs they start are nested in it, as a threaded run's are.
 */
class Attempted extends ForwardingRun implements StartedRun, Nesting, Caller {
  readonly depth = 0;
  readonly root = this;
  readonly ended: Promise<Ending>;
  readonly #context: RunContext;
  readonly #request: PreparedRun;
  readonly #channel: RunChannel;
  readonly #inThread: Runner;
  #resolve!: (ending: Ending) => void;
  /**
   * Runs the attempt's host functions started that are not over, on the caller's thread or a worker, and whether this
   * run is: they end with it, not with the attempt.
   */
  readonly #nested = new Set<NestedRun>();
  #over = false;
  /** Whether the attempt reached something the caller would see: it ends, and the run goes to a worker. */
  #observable = false;
  /**
   * Whether the `onLog` listener's stand-in ended the attempt: the entry it was not called for, the attempt's last,
   * is the worker's to make. So is a report the sink's stand-in was not called for.
   */
  #listened = false;
  /** How the caller stopped the run, if it did. */
  #stopped: CodeExecutionError | undefined;
  /** What the attempt spent, once the run went on to a worker. */
  #fuelRedone: number | undefined;

  constructor(context: RunContext, request: PreparedRun, channel: RunChannel, inThread: Runner) {
    super();
    this.#context = context;
    this.#request = request;
    this.#channel = channel;
    this.#inThread = inThread;
    this.ended = new Promise((resolve) => {
      this.#resolve = (ending) => {
        resolve(ending);
        this.#over = true;
        for (const run of this.#nested) run.stop(ORPHANED);
      };
    });
    turns.take(request.tenant, this);
  }

  get fuelRedone(): number | undefined {
    return this.#fuelRedone;
  }

  nest(run: NestedRun): boolean {
    if (this.#over) return false;
    this.#nested.add(run);
    void run.ended.then(() => this.#nested.delete(run));
    return true;
  }

  /** Ends `run`, started on a worker by one of this run's host functions, with this run. */
  adopt(run: Nested): boolean {
    return this.nest({ ended: run.ended, stop: () => run.orphan() });
  }

  /**
   * Calls `call` as this attempt's host call: runs it starts are this run's, not the attempt's (see {@link nest} and
   * {@link adopt}), so that they go on when the run goes on to a worker. (Runs it starts after its awaits are this
   * run's too: the attempt runs as its host calls, see {@link attempt}.)
   */
  readonly #calling = <T>(call: () => T): T => callingAs(this, call);

  /** Stops the run; stopped during its attempt, it settles with the reports made so far, as in-thread. */
  stop(error: CodeExecutionError): void {
    this.#stopped = error;
    if (turns.leave(this)) {
      this.#resolve({ status: "terminated", error });
      return;
    }
    this.current?.stop(error);
  }

  /** Runs the attempt on the caller's thread; whatever ends it, the next attempt's turn comes after it. */
  async attempt(): Promise<void> {
    const context = this.#context;
    const request = this.#request;
    const { cpuTimeMs, fuel } = runSafetyCap(context.safetyCap, request.options.timeoutMs);
    const record = {
      calls: new HostCallRecord(request.functions, this.#calling),
      recording: Recording.attempt(this.#endAttempt, fuel, SLICE_CALLS),
    };
    // Made as this run's host call (the pool's async context, which the run's every step and host call inherits), so a
    // run its host functions start, then or after their awaits, is nested in this one, as on threads.
    const attempt = asHostCall(this, () =>
      this.#inThread(
        // A run past its slice stops here and its instance is dropped: it takes the least grown.
        {
          ...context,
          safetyCap: { cpuTimeMs, fuel: SLICE_FUEL },
          fit: "least-grown",
          fetch: context.fetch && { ...context.fetch, exchange: this.#fetchStandIn },
        },
        {
          ...request,
          functions: record.calls,
          recording: record.recording,
          report: request.report && this.#reportStandIn,
          onLog: request.onLog && this.#standIn,
        },
        { reports: this.#channel.reports, settled: () => this.#observable || this.#channel.settled() },
      ),
    );
    this.current = attempt;
    const ending = await attempt.ended;
    next();
    if (this.#stopped !== undefined || this.#channel.settled()) return this.#resolve(ending);
    const stop = safetyCapStopOf(ending.error);
    if (this.#observable || (stop?.limit === "fuel" && stop.value === SLICE_FUEL))
      return this.#handOver(record, attempt.logs);
    this.#resolve(ending);
  }

  /** The run, from the start, on a worker thread, fed the attempt's record. */
  #handOver({ calls, recording }: AttemptRecord, logs: readonly CodeExecutionLog[]): void {
    let run: StartedRun;
    try {
      run = onThreads(this.#context, this.#request, this.#channel, {
        calls: new Replay(calls),
        readings: recording.readings,
        reports: this.#channel.reports.length,
        logs: logs.slice(0, this.#listened ? logs.length - 1 : logs.length),
      });
    } catch (full) {
      // The workers' queue is full (see MAX_QUEUED_RUNS): the run cannot go on.
      const { name, message } = full as Error;
      this.#resolve({ status: "error", error: { name, message } });
      return;
    }
    this.#fuelRedone = this.current?.fuelUsed;
    this.current = run;
    void run.ended.then(this.#resolve);
  }

  /** Ends the attempt: the run goes on on a worker. */
  readonly #endAttempt = (): void => {
    this.#observable = true;
    this.current?.stop(HANDED_OVER);
  };

  /** Ends the attempt where the guest would reach the caller: in place of the `onLog` listener. */
  readonly #standIn = (): never => {
    this.#listened = true;
    this.#endAttempt();
    throw new Error(HANDED_OVER.message);
  };

  /**
   * Ends the attempt where its guest's request would be sent, in place of the platform's client: after the host's
   * checks, before any byte leaves. A request is made by the run on the worker only, so never twice.
   */
  readonly #fetchStandIn = (): Promise<never> => {
    this.#endAttempt();
    return Promise.reject(new Error(HANDED_OVER.message));
  };

  /** As {@link #standIn}, in place of the `report` sink. */
  readonly #reportStandIn = (): never => {
    this.#channel.reports.pop();
    this.#endAttempt();
    throw new Error(HANDED_OVER.message);
  };
}
