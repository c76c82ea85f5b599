/**
 * The engine port of the host's sessions: how a `SessionService` makes, restores and drives a session's realm. A
 * platform hands in the core's `createSession` and `restoreSession` bound to its sandbox settings (the wasm, the Web
 * APIs, `fetch`, the safety cap), so the service never reaches for a platform; Node puts the realms on worker
 * threads behind the same port (node/session-threads/).
 * @module
 */
import type { CellOptions, Session } from "../../core/types.js";

/** A cell's options as the engine takes them: the core's. */
export type EngineCellOptions = CellOptions;

/**
 * A live session: the core's `Session`, wherever its realm lives (its forks are engine sessions too). `closed` is also
 * `true` once the realm is lost with the thread that held it: then the store has its state.
 */
export interface EngineSession extends Omit<Session, "fork"> {
  fork(): Promise<EngineSession>;
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
