/**
 * One worker thread of the pool, as the caller's thread sees it: the worker, its signals, its call channel, and the
 * compiled modules and sandbox settings it holds. It serves the worker's synchronous calls for the run holding it:
 * woken by the worker's message, it answers the waiting call, then watches the channel for the next one for
 * {@link WATCH_MS}, so a guest calling the host in a loop crosses no message and wakes no event loop, for at most
 * {@link SERVE_SLICE_MS} at a time, so the caller's event loop keeps its turns (a stop among them).
 * @module
 */
import { availableParallelism } from "node:os";
import { MessageChannel, Worker } from "node:worker_threads";
import type { ThreadSettings } from "../../src/core/runner-port.js";
import { builtFile } from "../built-files.js";
import { CallChannel } from "./call-channel.js";
import {
  type Call,
  type CallOutcome,
  COMPUTING,
  DOORBELL,
  type FromWorker,
  now,
  SETTINGS_KEPT,
  type SettingsRef,
  SIGNAL_BYTES,
  SLICE_STARTED,
  SLICES_SPENT,
  STOP,
  signalViews,
  type ToWorker,
  type WasmRef,
} from "./protocol.js";

/**
 * How long the caller's thread watches for a worker's next synchronous call after answering one: a guest calling the
 * host in a loop calls again within microseconds. Not on a single core, where watching would only hold up the worker.
 */
const WATCH_MS = availableParallelism() > 1 ? 0.05 : 0;
/** Most time the caller's thread spends serving one worker's calls before its event loop takes a turn. */
const SERVE_SLICE_MS = 2;

/**
 * The worker's stack: Node gives JavaScript all but 192 KiB of it, so this leaves the 984 KiB V8 gives the main
 * thread by default, and deep recursion and nesting end as they do in-thread. With a worker's default of 4 MiB,
 * guest recursion through host calls met the engine's own limit, where in-thread the host's stack runs out first.
 */
export const WORKER_STACK_MB = (984 + 192) / 1024;

const WORKER_SCRIPT = builtFile("threads/worker.js");

/** Numbers of the compiled wasm modules, so a worker receives each one once. */
const moduleIds = new WeakMap<WebAssembly.Module, number>();
let nextModule = 0;

/** What a run on a thread hears from it. */
export interface Holder {
  /** How deep the run is nested (see `hostCaller` in host-calls.ts). */
  readonly depth: number;
  /** See `Caller.root` in host-calls.ts. */
  readonly root: object;
  /** See `Waiting.tenant` in pool.ts. */
  readonly tenant: string | undefined;
  receive(message: Exclude<FromWorker, { kind: "ready" | "call" }>): void;
  /** Does what a synchronous call of the worker asks. */
  serve(call: Call): CallOutcome;
  /** The worker died under the run (crashed, or ended by the pool). */
  lost(reason: string): void;
}

/** One worker thread, as the caller's thread sees it. */
export class Thread {
  readonly #worker: Worker;
  readonly #flags: Int32Array;
  readonly #clock: Float64Array;
  readonly #calls: CallChannel;
  /** Numbers of the compiled wasm modules this worker holds. */
  readonly #modules = new Set<number>();
  /** Numbers of the sandbox settings this worker holds, the least recently used first (see `SETTINGS_KEPT`). */
  readonly #settings = new Set<number>();
  /** Whether the worker holds SWC's compiled wasm. */
  #swc = false;
  holder: Holder | undefined;
  alive = true;
  /** Whether the worker started; one that could not (its script failed to load) is not replaced in a loop. */
  started = false;
  /** Whether the worker was readied for runs (see `ThreadPool#warm`). */
  warmed = false;
  /** What ended the worker, when an uncaught error did. */
  #crash: unknown;
  /** Why the worker is gone, once it is. */
  exitReason = "";

  constructor(onReady: () => void, onExit: () => void) {
    const signals = new SharedArrayBuffer(SIGNAL_BYTES);
    const { port1, port2 } = new MessageChannel();
    ({ flags: this.#flags, clock: this.#clock } = signalViews(signals));
    this.#calls = new CallChannel(port1);
    this.#worker = new Worker(WORKER_SCRIPT, {
      workerData: { signals, calls: this.#calls.buffer, port: port2 },
      transferList: [port2],
      // The worker needs none of the process's options, and some (`--input-type`) keep a worker from starting.
      execArgv: [],
      resourceLimits: { stackSizeMb: WORKER_STACK_MB },
    });
    // Until a run waits for it (see `hold`), a worker keeps no process alive.
    this.#worker.unref();
    this.#worker.on("message", (message: FromWorker) => {
      if (message.kind === "call") this.#serve();
      else if (message.kind !== "ready") this.holder?.receive(message);
      else {
        this.started = true;
        onReady();
      }
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

  /** Posts `message` and rings the worker's doorbell, in case it watches it (see `DOORBELL`). */
  post(message: ToWorker): void {
    this.#worker.postMessage(message);
    Atomics.store(this.#flags, DOORBELL, 1);
  }

  /** `module` as this worker needs it: by number once it has it. */
  wasmRef(module: WebAssembly.Module): WasmRef {
    const id = moduleIds.get(module) ?? nextModule++;
    moduleIds.set(module, id);
    const known = this.#modules.has(id);
    this.#modules.add(id);
    return known ? { id } : { id, module };
  }

  /** A sandbox's settings as this worker needs them: by number while it holds them. */
  settingsRef(id: number, settings: ThreadSettings): SettingsRef {
    const held = this.#settings.delete(id);
    this.#settings.add(id);
    if (this.#settings.size > SETTINGS_KEPT) this.#settings.delete(this.#settings.values().next().value as number);
    return held ? { id } : { id, settings };
  }

  /** SWC's compiled wasm as this worker needs it: only the first time. */
  swcRef(module: WebAssembly.Module): { swc?: WebAssembly.Module } {
    const known = this.#swc;
    this.#swc = true;
    return known ? {} : { swc: module };
  }

  /** Stops run `run` where it stands: its flag for guest code running, a message for a run awaiting the host. */
  stop(run: number): void {
    Atomics.store(this.#flags, STOP, run);
    this.post({ kind: "stop", run });
  }

  /** Whether the worker's run is doing guest work now, rather than waiting for the host (see `COMPUTING`). */
  get computing(): boolean {
    return this.holder !== undefined && Atomics.load(this.#flags, COMPUTING) === 1;
  }

  /** Milliseconds the current run has spent in synchronous guest work so far, the slice under way included. */
  guestTime(): number {
    const started = this.#clock[SLICE_STARTED] as number;
    return (this.#clock[SLICES_SPENT] as number) + (started === 0 ? 0 : now() - started);
  }

  /**
   * A busy worker (or a starting one a run waits for) keeps the process alive, as a run on the caller's thread would;
   * an idle one does not. A run given the worker counts as computing until the worker says otherwise.
   */
  hold(busy: boolean): void {
    if (busy) {
      Atomics.store(this.#flags, COMPUTING, 1);
      this.#worker.ref();
    } else this.#worker.unref();
  }

  /** Ends the worker at once, wherever its code is; the pool replaces it once it has exited. */
  end(): void {
    this.alive = false;
    this.holder = undefined;
    void this.#worker.terminate();
  }

  /**
   * Answers the worker's waiting synchronous call, then the next ones while it makes them (see the module comment).
   * A call answered with a promise ends the watch: the guest awaits it, and it settles only once this returns. A watch
   * that ran its slice goes on after a turn of the event loop, still watching meanwhile, so the guest's next call
   * waits for that turn rather than for a message.
   */
  #serve(resumed = false): void {
    const calls = this.#calls;
    const started = performance.now();
    let answered = resumed ? started : undefined;
    calls.watch(true);
    for (;;) {
      const number = calls.pending();
      if (number !== 0) {
        if (this.#answer(number)) break;
        answered = performance.now();
        if (answered - started > SERVE_SLICE_MS) {
          setImmediate(() => this.#serve(true));
          return;
        }
      } else if (answered === undefined || performance.now() - answered > WATCH_MS) break;
    }
    calls.watch(false);
    // A call published as the watch ended found nobody to wake it.
    if (calls.pending() !== 0) setImmediate(() => this.#serve());
  }

  /** Answers call `number`; whether the answer hands the guest a promise of the host. */
  #answer(number: number): boolean {
    let outcome: CallOutcome;
    try {
      const call = this.#calls.call(number);
      outcome = this.holder?.serve(call) ?? { fault: "The run has ended" };
    } catch (error) {
      outcome = { fault: error instanceof Error ? error.message : String(error) };
    }
    this.#calls.answer(number, outcome);
    return "value" in outcome && outcome.value.side.some((item) => typeof item === "number");
  }
}
