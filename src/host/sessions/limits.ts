/**
 * A host's bounds on sessions, per tenant (settings.ts reads them from `RUNCODE_SESSIONS_PER_TENANT`,
 * `RUNCODE_SESSION_BYTES_PER_TENANT`, `RUNCODE_SESSION_CELLS_PER_MINUTE` and `RUNCODE_SESSION_IDLE_DAYS`), and what a
 * host keeps live in memory (the rest wait in storage as snapshots).
 * @module
 */
import { HostError } from "../errors.js";
import { SETTING_DEFAULTS } from "../limits.js";

const DAY_MS = 86_400_000;

/** The idle TTL of `days`. */
export function idleMsOf(days: number): number {
  return days * DAY_MS;
}

export interface SessionLimits {
  /** Sessions a tenant may keep; a creation or fork at the count is 429 `too_many_sessions`. */
  perTenant: number;
  /** Bytes of storage a tenant's sessions may take; past them 413 `session_storage_full`. */
  bytesPerTenant: number;
  /** Cells a tenant may start per minute, all its sessions together; past them 429 `rate_limited`. */
  cellsPerMinute: number;
  /** Milliseconds a session may stay unused before the sweep deletes it. */
  idleMs: number;
}

/**
 * Throws when a tenant whose other sessions (all but the one being written) number `others.count` and take
 * `others.bytes` has no room for a session of `bytes`: 429 `too_many_sessions` for a new one at the count, 413
 * `session_storage_full` past the bytes.
 */
export function checkRoom(
  others: { count: number; bytes: number },
  bytes: number,
  isNew: boolean,
  limits: Pick<SessionLimits, "perTenant" | "bytesPerTenant">,
): void {
  const { perTenant, bytesPerTenant } = limits;
  if (isNew && others.count >= perTenant) {
    throw new HostError(
      "too_many_sessions",
      `This tenant keeps ${others.count} sessions, its most (${perTenant}): delete one first`,
    );
  }
  if (others.bytes + bytes > bytesPerTenant) {
    throw new HostError(
      "session_storage_full",
      `The session's state (${bytes} bytes) would pass this tenant's storage for sessions (${others.bytes} of ${bytesPerTenant} bytes used)`,
    );
  }
}

/** {@link SessionLimits} of a host that sets none. */
export const DEFAULT_SESSION_LIMITS: SessionLimits = Object.freeze({
  perTenant: Number(SETTING_DEFAULTS.RUNCODE_SESSIONS_PER_TENANT),
  bytesPerTenant: Number(SETTING_DEFAULTS.RUNCODE_SESSION_BYTES_PER_TENANT),
  cellsPerMinute: Number(SETTING_DEFAULTS.RUNCODE_SESSION_CELLS_PER_MINUTE),
  idleMs: idleMsOf(Number(SETTING_DEFAULTS.RUNCODE_SESSION_IDLE_DAYS)),
});

/** Sessions kept live in memory at once by a host that sets no number; the least recently used go back to storage. */
export const DEFAULT_LIVE_SESSIONS = 32;
/** Bytes of linear memory the live sessions may span together by default (`EngineSession.memoryBytes`). */
export const DEFAULT_LIVE_SESSION_BYTES = 512 * 1024 * 1024;
