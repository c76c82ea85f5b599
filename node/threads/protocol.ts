/**
 * The messages between the caller's thread and a worker thread that runs the core, and the slots of the
 * `SharedArrayBuffer` both read. Values never cross as themselves: host values as the tapes the caller's thread
 * encoded ({@link Crossed}), guest values as the tapes the guest encoded (`GuestTape`), each decoded once, where it
 * is used (see crossing.ts).
 * @module
 */
import type { RunOptions } from "../../src/core/request.js";
import type {
  CodeExecutionError,
  CodeExecutionLog,
  CodeExecutionStatus,
  FetchOptions,
  SafetyCap,
} from "../../src/core/types.js";
import type { GuestTape } from "../../src/values/to-host.js";

/** Bytes of a worker's signals: two `Int32Array` slots, then two `Float64Array` slots. */
export const SIGNAL_BYTES = 24;
/**
 * Int32 slot: the number of the latest synchronous call the caller's thread answered; the worker waits on it. Calls
 * are numbered so that a call whose answer the worker could not read (its stack ran out mid-call) never hands its
 * answer to the next.
 */
export const ANSWERED = 0;
/** Int32 slot: the id of the run the caller stopped; the worker's run reads it through `SandboxOptions.interrupted`. */
export const STOP = 1;
/** Float64 slot: when the worker's current slice of synchronous guest work began (see {@link now}), 0 between slices. */
export const SLICE_STARTED = 0;
/** Float64 slot: milliseconds of the current run's earlier slices. */
export const SLICES_SPENT = 1;

/** A worker's signals as both threads read them. */
export function signalViews(buffer: SharedArrayBuffer): { flags: Int32Array; clock: Float64Array } {
  return { flags: new Int32Array(buffer, 0, 2), clock: new Float64Array(buffer, 8, 2) };
}

/** Milliseconds on a time line both threads share (each thread's `performance.now()` has its own origin). */
export function now(): number {
  return performance.timeOrigin + performance.now();
}

/**
 * A host value as the caller's thread encoded it (`encodeForGuest`): its tape and side list, buffers as they are and
 * promises by the number of the `settle` message that settles them later.
 */
export interface Crossed {
  tape: string;
  side: (ArrayBuffer | number)[];
}

/** The sandbox settings a worker's core runs with (the functions, the transpiler and the pool are its own). */
export interface ThreadSettings {
  safetyCap: SafetyCap;
  instances: "restore" | "fresh";
  bootModules: Readonly<Record<string, string>>;
  webApis: boolean;
  /** The guest's `fetch`, made on the worker by its own platform `fetch` (so a stop there aborts its requests). */
  fetch: FetchOptions | undefined;
}

/** The compiled QuickJS wasm by number: `module` only the first time a worker meets it. */
export interface WasmRef {
  id: number;
  module?: WebAssembly.Module;
}

/** Caller's thread -> worker. */
export type ToWorker =
  /** Boot an instance and load the type stripper now, so the worker's first run does not wait for them. */
  | { kind: "warm"; wasm: WasmRef }
  | {
      kind: "run";
      run: number;
      wasm: WasmRef;
      settings: ThreadSettings;
      source: string;
      options: RunOptions;
      /**
       * Whether the caller listens to the run's `console` entries (`onLog`): then each entry is a synchronous `log`
       * request, so what the listener throws reaches the guest; else each is posted as a `log` message.
       */
      listened: boolean;
      /** `[globals, imports]`. */
      values: Crossed;
      args: Crossed;
    }
  /** The caller's promise number `key` settled. */
  | { kind: "settle"; run: number; key: number; ok: boolean; value: Crossed }
  /** The caller stopped the run (its flag is raised too, for guest code that runs without yielding). */
  | { kind: "stop"; run: number };

/** What the guest asks of the caller's thread, and waits for. */
export type HostRequest =
  /** A call of the caller's host function number `fn`. */
  | { op: "call"; fn: number; args: GuestTape }
  /** A `report(value)`: the caller keeps it and calls its `report` sink. */
  | { op: "report"; value: GuestTape }
  /** A `console` entry of a run the caller listens to: the caller keeps it and calls the run's `onLog`. */
  | { op: "log"; level: CodeExecutionLog["level"]; timestamp: number; args: GuestTape }
  /** The guest settled its promise number `promise`, handed to the caller in an earlier call. */
  | { op: "settle"; promise: number; ok: boolean; value: GuestTape };

/** Worker -> caller's thread. */
export type FromWorker =
  /** The worker's script loaded. */
  | { kind: "ready" }
  | { kind: "call"; run: number; call: number; request: HostRequest }
  /** A `console` entry of a run nobody listens to, as the guest made it (the caller's thread keeps the run's logs). */
  | { kind: "log"; run: number; level: CodeExecutionLog["level"]; timestamp: number; args: GuestTape }
  | {
      kind: "done";
      run: number;
      status: CodeExecutionStatus;
      error?: CodeExecutionError;
      /** On `success`. */
      result?: GuestTape;
      memoryUsedBytes?: number;
      fuelUsed?: number;
    };

/**
 * How a synchronous call went: a value, what the function threw, or a `SerializationError`'s message when what the
 * guest handed over could not be decoded (a fault of the host, as in-thread).
 */
export type CallOutcome = { ok: boolean; value: Crossed } | { fault: string };

/** The answer to synchronous call number `call`, posted on the worker's answer port. */
export type Answer = { call: number } & CallOutcome;
