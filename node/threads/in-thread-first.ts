/**
 * Node's default path (`threads: "auto"`): each run starts on the caller's thread with a slice of fuel, and stays
 * there if it ends within it; a run that would go on past the slice, or do what the caller could observe, is handed
 * to a worker thread (remote-run.ts) and run there again from the start. The slice is the run's safety cap lowered to
 * {@link SLICE_FUEL}, so the engine's meter ends it where clocks stand still, and a timer the slice cannot pay for
 * stops it before it waits. The attempt leaves nothing behind: its host functions, `report` sink and `onLog` listener
 * are stand-ins that end it instead of being called, its reports and logs are kept apart, so the run on the worker
 * is the first the caller sees. Guest code given the same inputs does the same (`Math.random` and the clock aside,
 * which nobody saw), so the result is the one the worker would have given. Attempts take turns, one at a time, each
 * after a turn of the caller's event loop: runs at once neither hold the loop longer than a slice each nor take an
 * instance each.
 * @module
 */
import {
  type CodeExecutionError,
  type CodeExecutionLog,
  type Ending,
  FunctionTable,
  type PreparedRun,
  type RunChannel,
  type RunContext,
  type Runner,
  runSafetyCap,
  type StartedRun,
  safetyCapStopOf,
  type Tape,
} from "../../src/core/runner-port.js";
import { hostCaller } from "./pool.js";
import { readyInstance } from "./ready-instance.js";
import { onThreads } from "./remote-run.js";

/**
 * Fuel a run may spend on the caller's thread before it goes to a worker: what the engine's own loops do in 1.3-1.8 ms
 * of CPU (3.3-4.5 ms per 10^6 units, the rate src/core/host-fuel.ts charges the host's work at) and at most 2 ms at
 * the slowest rate measured over the fuel catalogue (5.1 ms per 10^6). A trivial run spends ~19,000 units.
 */
export const SLICE_FUEL = 400_000;

/** What a run's attempt was given instead of the caller's functions throws in the guest, if the guest is still on. */
const HANDED_OVER: CodeExecutionError = {
  name: "TerminatedError",
  message: "The run goes on on a worker thread",
};

/** Runs each run as {@link SLICE_FUEL} and the module comment say: `inThread` is the core's runner of the caller's thread. */
export function inThreadFirst(inThread: Runner): Runner {
  return (context, request, channel) => {
    // Runs nested in a threaded run's host calls stay with it (their pool's rules), and a run whose guest would wait
    // for the host's promises or make requests goes where it can wait without holding others' attempts.
    if (hostCaller() !== undefined || context.fetch !== undefined || holdsPromises(request)) {
      return onThreads(context, request, channel);
    }
    // A run whose own cap is within the slice can never hold the caller's thread longer: it runs there whole.
    if (runSafetyCap(context.safetyCap, request.options.timeoutMs).fuel <= SLICE_FUEL) {
      return inThread(context, request, channel);
    }
    return new Attempted(context, request, channel, inThread);
  };
}

/** Whether the run's values hold the caller's promises. */
function holdsPromises({ values, imports = [], args }: PreparedRun): boolean {
  const promise = (item: Tape["side"][number]) => item.kind === "promise";
  return [values, ...imports, args].some((tape) => tape.side.some(promise));
}

/** Attempts waiting for the caller's thread, the first come first. */
const waiting: Attempted[] = [];
/** Whether an attempt holds the caller's thread, or the next is about to take it. */
let busy = false;

/** Gives the caller's thread to the next attempt after a turn of its event loop (one stopped meanwhile is gone). */
function next(): void {
  busy = waiting.length > 0;
  if (!busy) return;
  setImmediate(() => {
    const attempt = waiting.shift();
    if (attempt === undefined) busy = false;
    else void attempt.attempt();
  });
}

/** A run attempted on the caller's thread, then, if need be, run on a worker. */
class Attempted implements StartedRun {
  readonly ended: Promise<Ending>;
  readonly #context: RunContext;
  readonly #request: PreparedRun;
  readonly #channel: RunChannel;
  readonly #inThread: Runner;
  #resolve!: (ending: Ending) => void;
  /** The attempt, then the run on a worker once it is handed over. */
  #run: StartedRun | undefined;
  /** The attempt's reports, the caller's once the attempt's result or stop is. */
  readonly #reports: unknown[] = [];
  /** Whether the run went on to a worker. */
  #handedOver = false;
  /** Whether the attempt reached something the caller would see: it ends, and the run goes to a worker. */
  #observable = false;
  /** How the caller stopped the run, if it did. */
  #stopped: CodeExecutionError | undefined;

  constructor(context: RunContext, request: PreparedRun, channel: RunChannel, inThread: Runner) {
    this.#context = context;
    this.#request = request;
    this.#channel = channel;
    this.#inThread = inThread;
    this.ended = new Promise((resolve) => {
      this.#resolve = resolve;
    });
    if (busy) waiting.push(this);
    else {
      busy = true;
      void this.attempt();
    }
  }

  get logs(): readonly CodeExecutionLog[] {
    return this.#run?.logs ?? [];
  }

  get fuelUsed(): number | undefined {
    return this.#run?.fuelUsed;
  }

  get memoryUsedBytes(): number | undefined {
    return this.#run?.memoryUsedBytes;
  }

  /** Stops the run; stopped during its attempt, it settles with the reports made so far, as in-thread. */
  stop(error: CodeExecutionError): void {
    this.#stopped = error;
    const at = waiting.indexOf(this);
    if (at !== -1) {
      waiting.splice(at, 1);
      this.#resolve({ status: "terminated", error });
      return;
    }
    if (!this.#handedOver) this.#channel.reports.push(...this.#reports);
    this.#run?.stop(error);
  }

  /**
   * Runs the attempt on the caller's thread, on an instance readied for it; whatever ends it, the next attempt's turn
   * comes after it.
   */
  async attempt(): Promise<void> {
    const context = this.#context;
    const request = this.#request;
    await readyInstance(context, request.options.memoryLimitBytes);
    if (this.#stopped !== undefined) {
      next();
      return this.#resolve({ status: "terminated", error: this.#stopped });
    }
    const { cpuTimeMs } = runSafetyCap(context.safetyCap, request.options.timeoutMs);
    const attempt = this.#inThread(
      { ...context, safetyCap: { cpuTimeMs, fuel: SLICE_FUEL } },
      {
        ...request,
        functions: this.#standIns(request.functions),
        report: request.report && this.#standIn,
        onLog: request.onLog && this.#standIn,
      },
      { reports: this.#reports, settled: () => this.#observable || this.#channel.settled() },
    );
    this.#run = attempt;
    const ending = await attempt.ended;
    next();
    if (this.#stopped !== undefined || this.#channel.settled()) return this.#resolve(ending);
    const stop = safetyCapStopOf(ending.error);
    if (this.#observable || (stop?.limit === "fuel" && stop.value === SLICE_FUEL)) return this.#handOver();
    this.#channel.reports.push(...this.#reports);
    this.#resolve(ending);
  }

  /** The run, from the start, on a worker thread. */
  #handOver(): void {
    this.#handedOver = true;
    let run: StartedRun;
    try {
      run = onThreads(this.#context, this.#request, this.#channel);
    } catch (full) {
      // The workers' queue is full (see MAX_QUEUED_RUNS): the run cannot go on.
      const { name, message } = full as Error;
      this.#resolve({ status: "error", error: { name, message } });
      return;
    }
    this.#run = run;
    void run.ended.then(this.#resolve);
  }

  /** Ends the attempt where the guest would reach the caller: in place of a host function, the sink, the listener. */
  readonly #standIn = (): never => {
    this.#observable = true;
    this.#run?.stop(HANDED_OVER);
    throw new Error(HANDED_OVER.message);
  };

  /** `functions` numbered alike, each a {@link #standIn}. */
  #standIns(functions: FunctionTable): FunctionTable {
    const standIns = new FunctionTable();
    for (let id = 0; id < functions.size; id++) standIns.idOf(() => this.#standIn());
    return standIns;
  }
}
