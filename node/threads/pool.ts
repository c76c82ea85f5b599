/**
 * The worker threads of the threaded sandbox, shared by every threaded sandbox of the process: one run per worker
 * at a time (so ending a worker never takes another run with it), idle workers kept warm, a run that finds none
 * waiting in a queue (bounded by {@link MAX_QUEUED_RUNS}) for the first worker free, more spawned on demand up
 * to {@link MAX_THREADS}, and a replacement spawned for every worker that was ended or crashed.
 *
 * A run started inside a host call of a run on a thread is nested one level deeper (told by the caller's thread's
 * async context, as host functions run there). Its parent holds a worker while it awaits, so nested runs never wait
 * for the workers of unrelated runs: they have up to {@link MAX_NESTING_DEPTH} workers of their own, of which runs
 * nested `d` deep or less hold fewer than `d`, and the deepest waiting run goes first. A deeper run can then always
 * get a worker, so a chain of nested runs always ends; and unrelated runs keep their {@link MAX_THREADS}. Idle
 * workers beyond {@link MAX_THREADS} are ended once no nested run holds or waits for one.
 * @module
 */
import { AsyncLocalStorage } from "node:async_hooks";
import { MessageChannel, type MessagePort, Worker } from "node:worker_threads";
import {
  ANSWERED,
  type Answer,
  type FromWorker,
  now,
  SIGNAL_BYTES,
  SLICE_STARTED,
  SLICES_SPENT,
  STOP,
  signalViews,
  type ToWorker,
  type WasmRef,
} from "./protocol.js";

/**
 * Worker threads for unrelated runs (nested runs have {@link MAX_NESTING_DEPTH} more); each holds one run's wasm
 * instance (16 MiB of linear memory and up) while it is warm.
 */
export const MAX_THREADS = 8;
/** Runs that may wait for a worker, unrelated and nested runs each; past it `runCode` throws a `RangeError`. */
export const MAX_QUEUED_RUNS = 1_000;
/** How deep runs may nest through host functions; a run deeper makes `runCode` throw a `RangeError`. */
export const MAX_NESTING_DEPTH = 8;

/** The nesting depth of the run whose host function is being called on this thread. */
const hostCalls = new AsyncLocalStorage<number>();

/** Calls `fn` as a host function of a run nested `depth` deep: runs it starts are nested one level deeper. */
export function asHostCall<T>(depth: number, fn: () => T): T {
  return hostCalls.run(depth, fn);
}

/** The nesting depth of a run started here: 0 outside host calls. Throws a `RangeError` past {@link MAX_NESTING_DEPTH}. */
export function nestingDepth(): number {
  const caller = hostCalls.getStore();
  const depth = caller === undefined ? 0 : caller + 1;
  if (depth > MAX_NESTING_DEPTH) {
    throw new RangeError(
      `runCode: runs nest at most ${MAX_NESTING_DEPTH} deep through host functions; this one would be ${depth} deep`,
    );
  }
  return depth;
}

/**
 * The worker's stack: Node gives JavaScript all but 192 KiB of it, so this leaves the 984 KiB V8 gives the main
 * thread by default, and deep recursion and nesting end as they do in-thread. With a worker's default of 4 MiB,
 * guest recursion through host calls met the engine's own limit, where in-thread the host's stack runs out first.
 */
const WORKER_STACK_MB = (984 + 192) / 1024;

/**
 * The worker's script: the build's JavaScript, also when this module runs from its TypeScript source (the tests),
 * since worker threads cannot load TypeScript.
 */
const WORKER_SCRIPT = import.meta.url.endsWith(".ts")
  ? new URL("../../dist/node/threads/worker.js", import.meta.url)
  : new URL("./worker.js", import.meta.url);

/** Numbers of the compiled wasm modules, so a worker receives each one once. */
const moduleIds = new WeakMap<WebAssembly.Module, number>();
let nextModule = 0;

/** What a run on a thread hears from it. */
export interface Holder {
  /** How deep the run is nested (see {@link nestingDepth}). */
  readonly depth: number;
  receive(message: Exclude<FromWorker, { kind: "ready" }>): void;
  /** The worker died under the run (crashed, or ended by the pool). */
  lost(reason: string): void;
}

/** One worker thread, as the caller's thread sees it. */
export class Thread {
  readonly #worker: Worker;
  readonly #flags: Int32Array;
  readonly #clock: Float64Array;
  readonly #answers: MessagePort;
  /** Numbers of the compiled wasm modules this worker holds. */
  readonly #modules = new Set<number>();
  holder: Holder | undefined;
  alive = true;
  /** Whether the worker started; one that could not (its script failed to load) is not replaced in a loop. */
  started = false;
  /** What ended the worker, when an uncaught error did. */
  #crash: unknown;
  /** Why the worker is gone, once it is. */
  exitReason = "";

  constructor(onReady: () => void, onExit: () => void) {
    const signals = new SharedArrayBuffer(SIGNAL_BYTES);
    const { port1, port2 } = new MessageChannel();
    ({ flags: this.#flags, clock: this.#clock } = signalViews(signals));
    this.#answers = port1;
    this.#worker = new Worker(WORKER_SCRIPT, {
      workerData: { signals, answers: port2 },
      transferList: [port2],
      // The worker needs none of the process's options, and some (`--input-type`) keep a worker from starting.
      execArgv: [],
      resourceLimits: { stackSizeMb: WORKER_STACK_MB },
    });
    this.#worker.on("message", (message: FromWorker) => {
      if (message.kind !== "ready") {
        this.holder?.receive(message);
        return;
      }
      this.started = true;
      onReady();
    });
    // An uncaught error ends the worker; 'exit' follows.
    this.#worker.on("error", (error) => {
      this.#crash = error;
    });
    this.#worker.on("exit", () => {
      const why = this.#crash === undefined ? "" : `: ${String(this.#crash)}`;
      this.exitReason = `The worker thread running the code exited${why}`;
      if (this.alive) this.holder?.lost(this.exitReason);
      this.alive = false;
      this.holder = undefined;
      onExit();
    });
  }

  post(message: ToWorker): void {
    this.#worker.postMessage(message);
  }

  /** `module` as this worker needs it: by number once it has it. */
  wasmRef(module: WebAssembly.Module): WasmRef {
    const id = moduleIds.get(module) ?? nextModule++;
    moduleIds.set(module, id);
    const known = this.#modules.has(id);
    this.#modules.add(id);
    return known ? { id } : { id, module };
  }

  /** Answers the worker's pending synchronous call and wakes it. */
  answer(answer: Answer): void {
    this.#answers.postMessage(answer);
    Atomics.store(this.#flags, ANSWERED, answer.call);
    Atomics.notify(this.#flags, ANSWERED);
  }

  /** Stops run `run` where it stands: its flag for guest code running, a message for a run awaiting the host. */
  stop(run: number): void {
    Atomics.store(this.#flags, STOP, run);
    this.post({ kind: "stop", run });
  }

  /** Milliseconds the current run has spent in synchronous guest work so far, the slice under way included. */
  guestTime(): number {
    const started = this.#clock[SLICE_STARTED] as number;
    return (this.#clock[SLICES_SPENT] as number) + (started === 0 ? 0 : now() - started);
  }

  /** A busy worker keeps the process alive, as a run on the caller's thread would; an idle one does not. */
  hold(busy: boolean): void {
    if (busy) this.#worker.ref();
    else this.#worker.unref();
  }

  /** Ends the worker at once, wherever its code is; the pool replaces it once it has exited. */
  end(): void {
    this.alive = false;
    this.holder = undefined;
    void this.#worker.terminate();
  }
}

/** A run waiting for a thread. */
export interface Waiting {
  readonly depth: number;
  start(thread: Thread): void;
  /** No thread will come: the worker spawned for it could not start. */
  lost(reason: string): void;
}

class ThreadPool {
  readonly #threads = new Set<Thread>();
  readonly #idle: Thread[] = [];
  /** Runs waiting for a thread, the deepest first, then in the order they came. */
  readonly #queue: Waiting[] = [];
  /** Workers spawned that have not loaded yet. */
  #starting = 0;
  /** The wasm of the latest run: a new worker boots it before its first run. */
  #latest: WebAssembly.Module | undefined;

  /**
   * Gives `run` an idle thread, or queues it for the first thread free: a run that finishes or a worker spawned for
   * it (the run takes whichever comes first, a warm worker usually). Throws a `RangeError` when the queue is full.
   */
  submit(run: Waiting): void {
    const at = this.#queue.findIndex((waiting) => waiting.depth < run.depth);
    this.#queue.splice(at === -1 ? this.#queue.length : at, 0, run);
    this.#dispatch();
    // Unrelated and nested runs wait within a bound each, so a guest's fan-out of nested runs never fills the line
    // of unrelated ones. Runs a starting worker will take are not beyond the bound.
    const nested = run.depth > 0;
    let waiting = 0;
    for (const other of this.#queue) if (other.depth > 0 === nested) waiting++;
    if (waiting > MAX_QUEUED_RUNS + this.#starting && this.#queue.includes(run)) {
      this.withdraw(run);
      throw new RangeError(
        nested
          ? `runCode: ${MAX_QUEUED_RUNS} nested runs are already waiting for the workers of nested runs: await some before starting more`
          : `runCode: ${MAX_QUEUED_RUNS} runs are already waiting for the ${MAX_THREADS} worker threads: await some before starting more`,
      );
    }
  }

  /** Takes a run that has not got a thread off the queue. */
  withdraw(run: Waiting): void {
    const at = this.#queue.indexOf(run);
    if (at !== -1) this.#queue.splice(at, 1);
  }

  /** A thread whose run is over, fit for the next: the next run takes the thread that ran last (the warmest). */
  release(thread: Thread, warm = true): void {
    thread.holder = undefined;
    if (!thread.alive) return;
    thread.hold(false);
    if (warm) this.#idle.push(thread);
    else this.#idle.unshift(thread);
    this.#dispatch();
  }

  /** Notes the wasm runs use, for warming new workers. */
  uses(module: WebAssembly.Module): void {
    this.#latest = module;
  }

  /**
   * Gives idle threads to the waiting runs that may hold one, spawns workers for those left, and ends idle workers
   * beyond {@link MAX_THREADS} once nesting is over.
   */
  #dispatch(): void {
    const held = new Array<number>(MAX_NESTING_DEPTH + 1).fill(0);
    for (const thread of this.#threads) if (thread.holder !== undefined) (held[thread.holder.depth] as number)++;
    let unserved = 0;
    for (let i = 0; i < this.#queue.length; i++) {
      const run = this.#queue[i] as Waiting;
      if (!mayHold(held, run.depth)) continue;
      (held[run.depth] as number)++;
      const thread = this.#idle.pop();
      if (thread === undefined) {
        unserved++;
        continue;
      }
      this.#queue.splice(i--, 1);
      thread.hold(true);
      run.start(thread);
    }
    while (this.#starting < unserved && this.#alive() < MAX_THREADS + MAX_NESTING_DEPTH) this.#spawn();
    // Once no nested run holds or waits for a worker, those beyond MAX_THREADS are ended: a burst of nesting does
    // not keep their memory, and workers are not ended and spawned again between the nested runs of one burst.
    const nesting = held.some((count, depth) => depth > 0 && count > 0) || this.#queue.some((run) => run.depth > 0);
    while (!nesting && this.#idle.length > 0 && this.#alive() > MAX_THREADS) this.#idle.shift()?.end();
  }

  #alive(): number {
    let alive = 0;
    for (const thread of this.#threads) if (thread.alive) alive++;
    return alive;
  }

  #spawn(): void {
    this.#starting++;
    const thread: Thread = new Thread(
      () => {
        this.#starting--;
        if (this.#latest !== undefined) thread.post({ kind: "warm", wasm: thread.wasmRef(this.#latest) });
        this.release(thread, false);
      },
      () => this.#replace(thread),
    );
    this.#threads.add(thread);
  }

  /**
   * A worker that had started is replaced while fewer than {@link MAX_THREADS} remain; one that could not start is
   * only when runs wait (so a script that fails to load is not spawned in a loop), and the first waiting run gets
   * the error.
   */
  #replace(gone: Thread): void {
    this.#threads.delete(gone);
    const at = this.#idle.indexOf(gone);
    if (at !== -1) this.#idle.splice(at, 1);
    if (!gone.started) {
      this.#starting--;
      this.#queue.shift()?.lost(gone.exitReason);
    }
    if (gone.started && this.#alive() < MAX_THREADS) this.#spawn();
    this.#dispatch();
  }
}

/**
 * Whether a run nested `depth` deep may hold one more worker, `held` counting the workers held at each depth:
 * unrelated runs (depth 0) share {@link MAX_THREADS}; runs nested `depth` deep or less hold fewer than `depth`.
 */
function mayHold(held: number[], depth: number): boolean {
  if (depth === 0) return (held[0] as number) < MAX_THREADS;
  let nested = 0;
  for (let d = 1; d <= depth; d++) nested += held[d] as number;
  return nested < depth;
}

/** The process's pool. */
export const threadPool = new ThreadPool();
