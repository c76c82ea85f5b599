/**
 * The registry's rows of sessions: for each session, its tenant, the Durable Object that holds it and what its tenant
 * sees of it (`SessionInfo`), so that whose an id is, a tenant's count and bytes (its quotas), its names and its
 * listing are answered without reaching any session object; and each tenant's bucket of session cells per minute.
 * A session object reports its row on every write of its state.
 * @module
 */
import { type Bucket, takeToken } from "../src/host/admission/quotas.js";
import { HostError, retryLater } from "../src/host/errors.js";
import type { SessionInfo } from "../src/host/sessions/backend.js";
import { checkRoom, type SessionLimits } from "../src/host/sessions/limits.js";

/** A session's row: what its tenant sees, and the id (`DurableObjectId.toString()`) of the object that holds it. */
export interface IndexedSession {
  tenant: string;
  object: string;
  info: SessionInfo;
}

/** The quotas a row is checked against. */
export type SessionQuotas = Pick<SessionLimits, "perTenant" | "bytesPerTenant">;

export const SESSION_TABLES = `
  CREATE TABLE IF NOT EXISTS sessions (
    tenant TEXT NOT NULL, id TEXT NOT NULL, object TEXT NOT NULL, name TEXT, bytes INTEGER NOT NULL,
    info TEXT NOT NULL, PRIMARY KEY (tenant, id)
  );
  CREATE UNIQUE INDEX IF NOT EXISTS sessions_tenant_name ON sessions (tenant, name) WHERE name IS NOT NULL;
  CREATE TABLE IF NOT EXISTS session_cells (tenant TEXT PRIMARY KEY, tokens REAL NOT NULL, at INTEGER NOT NULL);
`;

export class SessionIndex {
  readonly #sql: SqlStorage;

  constructor(sql: SqlStorage) {
    this.#sql = sql;
  }

  /**
   * Adds or replaces the row of `entry`'s session, in one synchronous step with the checks of the tenant's quotas
   * against every other row of it: objects of one tenant writing at once are counted one after another here, so
   * none passes the count or the bytes (the session's object checked the same before, against what it last read).
   * A name another session of the tenant has is refused.
   */
  put(entry: IndexedSession, limits: SessionQuotas): null {
    const { tenant, object, info } = entry;
    const holder = info.name === undefined ? undefined : this.named(tenant, info.name);
    if (holder !== undefined && holder !== info.id) {
      throw new HostError("invalid_request", `This tenant has a session named ${JSON.stringify(info.name)}`);
    }
    const others = this.#sql
      .exec<{ count: number; bytes: number }>(
        "SELECT count(*) AS count, coalesce(sum(bytes), 0) AS bytes FROM sessions WHERE tenant = ? AND id != ?",
        tenant,
        info.id,
      )
      .one();
    const isNew = this.entry(tenant, info.id) === undefined;
    checkRoom(others, info.bytes, isNew, limits);
    this.#sql.exec(
      `INSERT INTO sessions (tenant, id, object, name, bytes, info) VALUES (?, ?, ?, ?, ?, ?)
       ON CONFLICT (tenant, id) DO UPDATE SET object = excluded.object, name = excluded.name, bytes = excluded.bytes,
       info = excluded.info`,
      tenant,
      info.id,
      object,
      info.name ?? null,
      info.bytes,
      JSON.stringify(info),
    );
    return null;
  }

  remove(tenant: string, id: string): void {
    this.#sql.exec("DELETE FROM sessions WHERE tenant = ? AND id = ?", tenant, id);
  }

  /** The tenant's session `id`; `undefined` for an unknown or another tenant's one alike. */
  entry(tenant: string, id: string): IndexedSession | undefined {
    const row = this.#sql
      .exec<{ object: string; info: string }>(
        "SELECT object, info FROM sessions WHERE tenant = ? AND id = ?",
        tenant,
        id,
      )
      .toArray()[0];
    return row === undefined ? undefined : { tenant, object: row.object, info: JSON.parse(row.info) as SessionInfo };
  }

  named(tenant: string, name: string): string | undefined {
    return this.#sql
      .exec<{ id: string }>("SELECT id FROM sessions WHERE tenant = ? AND name = ?", tenant, name)
      .toArray()[0]?.id;
  }

  usage(tenant: string): { count: number; bytes: number } {
    return this.#sql
      .exec<{ count: number; bytes: number }>(
        "SELECT count(*) AS count, coalesce(sum(bytes), 0) AS bytes FROM sessions WHERE tenant = ?",
        tenant,
      )
      .one();
  }

  /** The tenant's sessions ascending by id, only ids above `after`, at most `limit` (by the primary key's order). */
  list(tenant: string, after: string, limit: number): SessionInfo[] {
    return this.#sql
      .exec<{ info: string }>(
        "SELECT info FROM sessions WHERE tenant = ? AND id > ? ORDER BY id LIMIT ?",
        tenant,
        after,
        limit,
      )
      .toArray()
      .map((row) => JSON.parse(row.info) as SessionInfo);
  }

  /** Takes one of `tenant`'s cells per minute; throws the 429 with `Retry-After` when its bucket is empty. */
  admitCell(tenant: string, perMinute: number, now: number): null {
    const row = this.#sql
      .exec<Bucket & Record<string, number>>("SELECT tokens, at FROM session_cells WHERE tenant = ?", tenant)
      .toArray()[0];
    const { bucket, retryAfterSeconds } = takeToken(row, perMinute, now);
    this.#sql.exec(
      `INSERT INTO session_cells (tenant, tokens, at) VALUES (?, ?, ?)
       ON CONFLICT (tenant) DO UPDATE SET tokens = excluded.tokens, at = excluded.at`,
      tenant,
      bucket.tokens,
      bucket.at,
    );
    if (retryAfterSeconds !== null) {
      throw retryLater(
        "rate_limited",
        `This tenant may start ${perMinute} session cells per minute: retry in ${Math.max(1, Math.ceil(retryAfterSeconds))} s`,
        retryAfterSeconds,
      );
    }
    return null;
  }
}
