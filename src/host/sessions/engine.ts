/**
 * The engine port of the host's sessions: how a `SessionService` makes, restores and drives a session's realm. A
 * platform hands in the core's `createSession` and `restoreSession` bound to its sandbox settings (the wasm, the Web
 * APIs, `fetch`, the safety cap), so the service never reaches for a platform; Node may later put the realms on a
 * worker thread behind the same port.
 * @module
 */
import type { CodeExecution, CodeExecutionLog } from "../../core/types.js";

/** A cell's options as the engine takes them (the core's `CellOptions`). */
export interface EngineCellOptions {
  language?: "javascript" | "typescript";
  timeoutMs?: number;
  signal?: AbortSignal;
  filename?: string;
  report?: (value: unknown) => void;
  onLog?: (entry: CodeExecutionLog) => void;
}

/** A live session (the core's `Session`): one realm, its cells run one at a time. */
export interface EngineSession {
  /** One cell; the handle settles with the cell's `CodeExecutionResult` and never rejects. */
  run(cell: string, options?: EngineCellOptions): CodeExecution;
  /** The whole state as bytes, once the cells queued before it have run. */
  snapshot(): Promise<Uint8Array>;
  /** An independent session with the same state. */
  fork(): Promise<EngineSession>;
  /** Frees the realm; idempotent. */
  close(): void;
  /** Cells run so far (forks and restores keep the count). */
  readonly cells: number;
  /** Bytes of linear memory the state spans: what the session holds in memory while live. */
  readonly memoryBytes: number;
}

/**
 * What a session is created or restored with, besides the platform's sandbox settings: the client's data-only
 * options (decoded from the wire), its tenant, and the host modules its cells may import (the tenant's tools). A
 * restore is given the same as the creation, so host functions are bound again at the same paths.
 */
export interface EngineSessionOptions {
  tenant: string;
  memoryLimitBytes?: number;
  modules?: Record<string, string>;
  globals?: Record<string, unknown>;
  imports?: Record<string, Record<string, unknown>>;
}

/** Makes sessions: `createSession` and `restoreSession` of the core, with the platform's sandbox settings. */
export interface SessionEngine {
  create(options: EngineSessionOptions): Promise<EngineSession>;
  /** Rejects (the core's `SessionError` "invalid_snapshot" or "snapshot_mismatch") when the bytes cannot be restored. */
  restore(snapshot: Uint8Array, options: EngineSessionOptions): Promise<EngineSession>;
}
