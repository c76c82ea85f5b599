/**
 * Failures of the host's API as values with a stable `code` and the HTTP status the app answers with. Compared by
 * `name` as well as class, because `instanceof` fails across realms.
 * @module
 */

export const ERROR_STATUS = {
  invalid_json: 400,
  invalid_request: 400,
  invalid_options: 400,
  invalid_pid: 400,
  unauthenticated: 401,
  /**
   * An unsafe method (POST, PUT, PATCH, DELETE) from a browser page of another origin: neither the host's own nor
   * on the CORS list, or marked `Sec-Fetch-Site: cross-site`.
   */
  forbidden_origin: 403,
  not_found: 404,
  method_not_allowed: 405,
  /** A `POST /mcp` whose `Accept` does not list both `application/json` and `text/event-stream`. */
  not_acceptable: 406,
  process_active: 409,
  process_not_active: 409,
  payload_too_large: 413,
  /** A session's snapshot would pass its tenant's storage for sessions (`RUNCODE_SESSION_BYTES_PER_TENANT`). */
  session_storage_full: 413,
  unsupported_media_type: 415,
  /** A `Host` that is not one of the host's own origins (a DNS-rebound page, a deployment not configured for it). */
  misdirected_request: 421,
  /** Processes active across the host (`maxActiveProcesses`, `MAX_ACTIVE_PROCESSES` on the edge). */
  too_many_processes: 429,
  /** Processes one tenant has active at once. */
  tenant_too_many_processes: 429,
  /** Process creations and `/run` calls one tenant makes per minute. */
  rate_limited: 429,
  too_many_subscribers: 429,
  /** Sessions one tenant keeps (`RUNCODE_SESSIONS_PER_TENANT`): delete one first. */
  too_many_sessions: 429,
  /** Cells waiting for one session's turn (its cells run one at a time). */
  session_busy: 429,
  internal: 500,
  /** `/run` executions in this instance hold as much memory as it may give them: retry shortly. */
  overloaded: 503,
  no_environment: 503,
  /** A store has no room for the write: the tenant's storage quota is full, or the store's database or disk. */
  storage_full: 507,
} as const;

export type HostErrorCode = keyof typeof ERROR_STATUS;

export class HostError extends Error {
  override name = "HostError";
  readonly code: HostErrorCode;
  /** Headers the answer carries (`Retry-After` on a 429 or 503, `WWW-Authenticate` on a 401). */
  readonly headers: Readonly<Record<string, string>>;
  constructor(code: HostErrorCode, message: string, headers: Record<string, string> = {}) {
    super(message);
    this.code = code;
    this.headers = headers;
  }
  get status(): (typeof ERROR_STATUS)[HostErrorCode] {
    return ERROR_STATUS[this.code];
  }
}

export function isHostError(value: unknown): value is HostError {
  return (
    value instanceof HostError ||
    (typeof value === "object" &&
      value !== null &&
      (value as { name?: unknown }).name === "HostError" &&
      typeof (value as { code?: unknown }).code === "string" &&
      (value as { code: string }).code in ERROR_STATUS)
  );
}

/** A refusal the caller may retry after `seconds` (at least 1). */
export function retryLater(code: HostErrorCode, message: string, seconds: number): HostError {
  return new HostError(code, message, { "retry-after": String(Math.max(1, Math.ceil(seconds))) });
}
