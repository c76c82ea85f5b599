/**
 * The messages between the caller's thread and a worker thread that runs the core, and the slots of the
 * `SharedArrayBuffer` both read. Values never cross as themselves: host values as the tapes the caller's thread
 * encoded (`Tape<ArrayBuffer | number>`), guest values as the tapes the guest encoded (`Tape<ArrayBuffer>`), each decoded once, where it
 * is used (see crossing.ts). Synchronous calls go through the shared memory of call-channel.ts.
 * @module
 */
import type {
  Boot,
  CodeExecutionError,
  CodeExecutionLog,
  CodeExecutionStatus,
  Reading,
  RunOptions,
  Tape,
  ThreadSettings,
} from "../../src/core/runner-port.js";

/** Bytes of a worker's signals: four `Int32Array` slots, then two `Float64Array` slots. */
export const SIGNAL_BYTES = 32;
/** Int32 slot: the id of the run the caller stopped; the worker's run reads it through `SandboxOptions.interrupted`. */
export const STOP = 0;
/**
 * Int32 slot: 1 while the worker's run works (from the moment it is handed over until it waits for promises of the
 * caller's thread, and again from the next slice of guest work, to its end), 0 while it waits for them: how the pool
 * tells workers at work from those waiting for the host.
 */
export const COMPUTING = 1;
/**
 * Int32 slot: the worker's doorbell, rung (set to 1) by the caller's thread after each message it posts. A worker
 * whose run was alone in flight watches it a moment for the caller's next run, and then takes its messages from its
 * port itself, rather than let its thread sleep until the event loop delivers them.
 */
export const DOORBELL = 2;
/** Float64 slot: when the worker's current slice of synchronous guest work began (see {@link now}), 0 between slices. */
export const SLICE_STARTED = 0;
/** Float64 slot: milliseconds of the current run's earlier slices. */
export const SLICES_SPENT = 1;

/** A worker's signals as both threads read them. */
export function signalViews(buffer: SharedArrayBuffer): { flags: Int32Array; clock: Float64Array } {
  return { flags: new Int32Array(buffer, 0, 4), clock: new Float64Array(buffer, 16, 2) };
}

/** Milliseconds on a time line both threads share (each thread's `performance.now()` has its own origin). */
export function now(): number {
  return performance.timeOrigin + performance.now();
}

/**
 * How many sandboxes' settings a worker keeps, the least recently used dropped first. Both threads keep the same
 * list (it changes only with `run` messages, which the worker reads in the order they were posted), so the caller's
 * thread knows which settings the worker still holds.
 */
export const SETTINGS_KEPT = 16;

/**
 * A sandbox's settings by number: `settings`, as the core derived them on the caller's thread, only when the worker
 * does not hold them.
 */
export interface SettingsRef {
  id: number;
  settings?: ThreadSettings;
}

/** The compiled QuickJS wasm by number: `module` only the first time a worker meets it. */
export interface WasmRef {
  id: number;
  module?: WebAssembly.Module;
}

/** What a worker boots ahead of runs: an instance like theirs. */
export interface WarmInstance {
  boot: Boot;
  memoryLimitBytes: number;
}

/** The caller's promise number `key` settled. */
export interface Settlement {
  key: number;
  ok: boolean;
  value: Tape<ArrayBuffer | number>;
}

/** Caller's thread -> worker. */
export type ToWorker =
  /**
   * Readies the worker for runs like the latest: an instance booted into its pool (unless their instances are not
   * restored), and SWC loaded when the caller's thread has it compiled.
   */
  | { kind: "warm"; wasm: WasmRef; instance?: WarmInstance; swc?: WebAssembly.Module }
  | {
      kind: "run";
      run: number;
      wasm: WasmRef;
      settings: SettingsRef;
      /** SWC's compiled wasm, the first time a worker gets a TypeScript run. */
      swc?: WebAssembly.Module;
      source: string;
      options: RunOptions;
      /**
       * Whether the caller listens to the run's `console` entries (`onLog`): then each entry is a synchronous `log`
       * request, so what the listener throws reaches the guest; else each is posted as a `log` message.
       */
      listened: boolean;
      /**
       * Whether no other run was in flight when this one was handed over: the worker then watches its doorbell for
       * the caller's next run once this one is over. Never with others in flight, whose workers' cores it would take.
       */
      alone: boolean;
      /** `PreparedRun.values` and `PreparedRun.imports`. */
      values: Tape<ArrayBuffer | number>;
      imports: Tape<ArrayBuffer | number>[] | undefined;
      args: Tape<ArrayBuffer | number>;
      /** The readings of the run's attempt on the caller's thread, replayed first (see core/recording.ts). */
      readings?: Reading[];
    }
  /** Promises of the caller settled since the last of these, in the order they settled. */
  | { kind: "settle"; run: number; settled: Settlement[] }
  /** The caller stopped the run (its flag is raised too, for guest code that runs without yielding). */
  | { kind: "stop"; run: number };

/** What the guest asks of the caller's thread, and waits for; the guest value it hands over travels beside it. */
export type HostRequest =
  /** A call of the caller's host function number `fn` with the arguments. */
  | { op: "call"; fn: number }
  /** A `report(value)`: the caller keeps it and calls its `report` sink. */
  | { op: "report" }
  /** A `console` entry of a run the caller listens to: the caller keeps it and calls the run's `onLog`. */
  | { op: "log"; level: CodeExecutionLog["level"]; timestamp: number }
  /** The guest settled its promise number `promise`, handed to the caller in an earlier call. */
  | { op: "settle"; promise: number; ok: boolean };

/** A synchronous request of run `run`, with the guest value it hands over. */
export interface Call {
  run: number;
  request: HostRequest;
  value: Tape<ArrayBuffer>;
}

/** Worker -> caller's thread. */
export type FromWorker =
  /** The worker's script loaded. */
  | { kind: "ready" }
  /** A synchronous call waits in the worker's call channel, and nobody on the caller's thread watches it. */
  | { kind: "call" }
  /** A `console` entry of a run nobody listens to, as the guest made it (the caller's thread keeps the run's logs). */
  | { kind: "log"; run: number; level: CodeExecutionLog["level"]; timestamp: number; args: Tape<ArrayBuffer> }
  | {
      kind: "done";
      run: number;
      status: CodeExecutionStatus;
      error?: CodeExecutionError;
      /** On `success`. */
      result?: Tape<ArrayBuffer>;
      memoryUsedBytes?: number;
      fuelUsed?: number;
    };

/**
 * How a synchronous call went: a value, what the function threw, or a `SerializationError`'s message when what the
 * guest handed over could not be decoded (a fault of the host, as in-thread).
 */
export type CallOutcome = { ok: boolean; value: Tape<ArrayBuffer | number> } | { fault: string };
