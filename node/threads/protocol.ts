/**
 * The messages between the caller's thread and a worker thread that runs the core, and the slots of the
 * `SharedArrayBuffer` both read. Values never cross as themselves: they cross as the core's tapes (see crossing.ts).
 * @module
 */
import type {
  CodeExecutionError,
  CodeExecutionOptions,
  CodeExecutionStatus,
  SandboxOptions,
} from "../../src/core/types.js";

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

/** The function number of the `report` sink in a call (host functions are numbered from 0). */
export const REPORT = -1;

/** Name and arity of a host function, so its stand-in on the worker looks the same to the guest. */
export interface FunctionShape {
  name: string;
  length: number;
}

/** A value as it crosses: a tape, its side list (buffers; numbers are promise keys) and the new host functions. */
export interface Crossed {
  tape: string;
  side: (ArrayBuffer | number)[];
  functions: FunctionShape[];
}

/** Sandbox settings that cross: all but the wasm (sent once per worker) and the functions. */
export type ThreadSettings = Omit<SandboxOptions, "wasm" | "clock" | "interrupted">;

/** Options of a run that cross as they are; the rest (values, functions) crosses as {@link Crossed}. */
export type PlainOptions = Pick<CodeExecutionOptions, "modules" | "language" | "memoryLimitBytes" | "filename"> & {
  fn: string;
  script: boolean;
};

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
      options: PlainOptions;
      /** `[globals, imports]`. */
      values: Crossed;
      args: Crossed;
    }
  | Settle
  /** The caller stopped the run (its flag is raised too, for guest code that runs without yielding). */
  | { kind: "stop"; run: number };

/** A promise of one side, settled: the other side settles its stand-in. */
export interface Settle {
  kind: "settle";
  run: number;
  key: number;
  ok: boolean;
  value: Crossed;
}

/** Worker -> caller's thread. */
export type FromWorker =
  /** The worker's script loaded. */
  | { kind: "ready" }
  | { kind: "call"; run: number; call: number; fn: number; args: Crossed }
  /** A `console` entry of the run, as the guest made it (the caller's thread keeps the run's logs). */
  | { kind: "log"; run: number; entry: Crossed }
  | Settle
  | {
      kind: "done";
      run: number;
      status: CodeExecutionStatus;
      error?: CodeExecutionError;
      result: Crossed;
      memoryUsedBytes?: number;
      fuelUsed?: number;
    };

/** The answer to a synchronous call, posted on the worker's answer port: a value, or what the function threw. */
export interface Answer {
  call: number;
  ok: boolean;
  value: Crossed;
}
