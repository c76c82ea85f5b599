/**
 * The messages between the caller's thread and a session worker (worker.ts), which keeps sessions' realms
 * for the caller's `threadedSessions` engine (engine.ts). Everything crosses by structured clone: cells'
 * results and logs are plain data once the core has cloned them out of the guest, and host functions never cross:
 * each stays on the caller's thread, numbered, and the worker puts a stub that calls it at every path it was at.
 * A session's stop is a `SharedArrayBuffer` flag of its own (see {@link STOP_ALL}), since no message reaches a worker
 * whose event loop is held by synchronous guest code.
 * @module
 */
import type { CodeExecutionLog, CodeExecutionResult } from "../index.js";

/** The stop flag's value that stops whatever cell of its session runs, now and later: the session was closed. */
export const STOP_ALL = -1;

/** Where host function `fn` (a number of the caller's thread) was in a session's options: keys from the root. */
export interface FunctionPlace {
  fn: number;
  path: (string | number)[];
}

/** A session's options as they cross: data only, with the places of the functions taken out of them. */
export interface CrossingOptions {
  options: Record<string, unknown>;
  functions: FunctionPlace[];
}

/** An error as it crosses: what a `SessionError` or `TypeError` needs to be made again on the other side. */
export interface CrossedError {
  name: string;
  message: string;
  code?: string;
}

/** What a made session tells the caller's thread, with every answer that may change it. */
export interface SessionState {
  cells: number;
  memoryBytes: number;
}

/** Caller's thread -> worker. */
export type ToSessionWorker =
  /** A new session numbered `session`, stopped through `stop` (an `Int32Array` of one slot over it). */
  | { kind: "create"; request: number; session: number; stop: SharedArrayBuffer; crossing: CrossingOptions }
  | {
      kind: "restore";
      request: number;
      session: number;
      stop: SharedArrayBuffer;
      crossing: CrossingOptions;
      bytes: Uint8Array;
    }
  | { kind: "snapshot"; request: number; session: number }
  | {
      kind: "run";
      session: number;
      /** The cell's number in its session, from 1: what its stop flag holds when it is stopped. */
      cell: number;
      source: string;
      options: { language?: "javascript" | "typescript"; timeoutMs?: number; filename?: string };
    }
  /** The caller stopped the cell (its flag is raised too, for guest code that runs without yielding). */
  | { kind: "stop"; session: number; cell: number; reason: string }
  | { kind: "close"; session: number }
  /** How host call `call` went: its value, or what it threw. */
  | { kind: "answer"; session: number; call: number; ok: true; value: unknown }
  | { kind: "answer"; session: number; call: number; ok: false; error: CrossedError };

/** Worker -> caller's thread. */
export type FromSessionWorker =
  | { kind: "made"; request: number; state: SessionState }
  | { kind: "snapshot"; request: number; bytes: Uint8Array; state: SessionState }
  | { kind: "failed"; request: number; error: CrossedError }
  | { kind: "log"; session: number; cell: number; entry: CodeExecutionLog }
  | { kind: "report"; session: number; cell: number; value: unknown }
  | { kind: "ended"; session: number; cell: number; result: CodeExecutionResult; state: SessionState }
  /** The guest called host function `fn` of its session. */
  | { kind: "call"; session: number; call: number; fn: number; args: unknown[] };

/** `error` as it crosses. */
export function crossedError(error: unknown): CrossedError {
  if (!(error instanceof Error)) return { name: "Error", message: String(error) };
  const { code } = error as { code?: unknown };
  return { name: error.name, message: error.message, ...(typeof code === "string" ? { code } : {}) };
}
