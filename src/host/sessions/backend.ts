/**
 * What the session routes (`POST /sessions`, `/sessions/:id/run`, ...) and MCP's `run_code` `session` ask of the
 * host's sessions: the `SessionService` over a `SessionStore` in one process (`runcode serve`), or whatever an edge
 * keeps them in. Every method acts for one tenant: another tenant's id is refused exactly as an unknown one (404
 * `not_found`), and a listing shows the caller's sessions only. Refusals are `HostError`s.
 * @module
 */
import type { RunAnswer, RunEvent } from "../runs/run-once.js";

/** A session id: 32 lowercase hex digits (128 random bits), telling nothing of anyone's sessions. */
export const SESSION_ID_PATTERN = /^[0-9a-f]{32}$/;

/** A session's name: unique within its tenant, 1 to 64 of letters, digits, `_`, `-`, `.` and `:`. */
export const SESSION_NAME_PATTERN = /^[A-Za-z0-9_.:-]{1,64}$/;

/**
 * The options a client may give a session at its creation, as sent: data only, values JSON cannot carry in the wire
 * encoding (`src/values/wire.ts`), like `POST /run`'s options. `imports` are modules of plain values (the host's own
 * tool modules are added by the host).
 */
export interface SessionRequestOptions {
  memoryLimitBytes?: number | undefined;
  modules?: Record<string, string> | undefined;
  /** Wire values (`JsonValue`s as sent; the host decodes them). */
  globals?: Record<string, unknown> | undefined;
  imports?: Record<string, Record<string, unknown>> | undefined;
}

export interface CreateSessionInput {
  /** Unique within the tenant ({@link SESSION_NAME_PATTERN}); a taken one is refused (`open` gets or creates). */
  name?: string | undefined;
  options?: SessionRequestOptions | undefined;
}

/** One cell as a client sent it. */
export interface CellRequest {
  source: string;
  language?: "javascript" | "typescript" | undefined;
  /** Milliseconds the cell may take, checked as `POST /run`'s `timeoutMs` (`timeoutWithin`). */
  timeoutMs?: unknown;
}

/** Who runs a cell, and how to reach them while it runs. */
export interface CellCaller {
  /** Aborts when the caller goes away: the cell stops (the session keeps what it did before it stopped). */
  signal?: AbortSignal;
  /** Hears each console entry and report as it is made, as `POST /run`'s stream does. */
  onEvent?: (event: RunEvent) => void;
}

/** A session as its tenant sees it. */
export interface SessionInfo {
  id: string;
  name?: string;
  /** Epoch milliseconds. */
  createdAt: number;
  /** Epoch milliseconds of its last cell (its creation before any): the idle TTL counts from it. */
  lastUsedAt: number;
  /** Cells run so far. */
  cells: number;
  /** Bytes of storage it takes (its snapshot and options): what the tenant's storage quota counts. */
  bytes: number;
}

export interface SessionPage {
  sessions: SessionInfo[];
  /** The cursor of the next page, `null` on the last. */
  next: string | null;
}

export interface SessionBackend {
  /**
   * Throws 429 `too_many_sessions` at the tenant's count, 413 `session_storage_full` when its snapshot would pass the
   * tenant's bytes, 400 `invalid_request`/`invalid_options` on bad options or a taken name.
   */
  create(tenant: string, input: CreateSessionInput): Promise<{ id: string }>;
  /** The tenant's session named `name`, created with `options` when there is none (MCP's `run_code` `session`). */
  open(tenant: string, name: string, options?: SessionRequestOptions): Promise<{ id: string; created: boolean }>;
  /**
   * Checks and admits one cell of session `id` and starts it, after the cells before it; `answer` settles when it
   * ends and never rejects. Throws a `HostError` (400, 404, 413, 429), having run nothing, when refused.
   */
  run(tenant: string, id: string, cell: CellRequest, caller?: CellCaller): Promise<{ answer: Promise<RunAnswer> }>;
  /** A new session with the state of `id` (after its queued cells); counted against the quotas as a creation. */
  fork(tenant: string, id: string): Promise<{ id: string }>;
  /** The tenant's sessions ascending by id, `limit` (default 100) from after `cursor`. */
  list(tenant: string, page?: { cursor?: string; limit?: number }): Promise<SessionPage>;
  /** Throws 404 `not_found` for an unknown or foreign id. */
  get(tenant: string, id: string): Promise<SessionInfo>;
  /** Ends a running cell of it and deletes it; throws 404 `not_found` for an unknown or foreign id. */
  delete(tenant: string, id: string): Promise<void>;
}
