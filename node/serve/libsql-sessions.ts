/**
 * The host's `SessionStore` on libSQL, for `runcode serve`: a session is a row of `sessions` (its record as JSON,
 * with its tenant, id, name, last use and bytes in columns of their own for the lookups, the quota and the idle
 * sweep) and its snapshot rows of `session_chunks`, each at most {@link SNAPSHOT_CHUNK_BYTES}, so no row or statement
 * holds a whole 64 MiB state. A write replaces the row and its chunks in one transaction: a restart finds the old
 * state or the new, never a mix. Triggers keep each tenant's count and bytes in `session_usage` (the quotas' running
 * count) and drop a deleted session's chunks.
 * @module
 */
import type { Client, InStatement } from "@libsql/client";
import type { SessionInfo, SessionRequestOptions } from "../../src/host/sessions/backend.js";
import type { SessionStore, StoredSession } from "../../src/host/sessions/store.js";
import { roomIn } from "./libsql-stores.js";

/** Bytes of a snapshot one row of `session_chunks` holds at most. */
export const SNAPSHOT_CHUNK_BYTES = 262_144;

const SCHEMA = `
  CREATE TABLE IF NOT EXISTS sessions (
    tenant TEXT NOT NULL, id TEXT NOT NULL, name TEXT, last_used_at INTEGER NOT NULL, bytes INTEGER NOT NULL,
    record TEXT NOT NULL, PRIMARY KEY (tenant, id)
  );
  CREATE UNIQUE INDEX IF NOT EXISTS sessions_named ON sessions (tenant, name) WHERE name IS NOT NULL;
  CREATE INDEX IF NOT EXISTS sessions_idle ON sessions (last_used_at);
  CREATE TABLE IF NOT EXISTS session_chunks (
    tenant TEXT NOT NULL, id TEXT NOT NULL, seq INTEGER NOT NULL, bytes BLOB NOT NULL, PRIMARY KEY (tenant, id, seq)
  );
  CREATE TABLE IF NOT EXISTS session_usage (
    tenant TEXT PRIMARY KEY, count INTEGER NOT NULL, bytes INTEGER NOT NULL
  ) WITHOUT ROWID;
  CREATE TRIGGER IF NOT EXISTS sessions_counted AFTER INSERT ON sessions BEGIN
    INSERT OR IGNORE INTO session_usage (tenant, count, bytes) VALUES (new.tenant, 0, 0);
    UPDATE session_usage SET count = count + 1, bytes = bytes + new.bytes WHERE tenant = new.tenant;
  END;
  CREATE TRIGGER IF NOT EXISTS sessions_recounted AFTER UPDATE OF bytes ON sessions BEGIN
    UPDATE session_usage SET bytes = bytes + new.bytes - old.bytes WHERE tenant = new.tenant;
  END;
  CREATE TRIGGER IF NOT EXISTS sessions_dropped AFTER DELETE ON sessions BEGIN
    UPDATE session_usage SET count = count - 1, bytes = bytes - old.bytes WHERE tenant = old.tenant;
    DELETE FROM session_chunks WHERE tenant = old.tenant AND id = old.id;
  END;
`;

const SESSION_STORE = "session store";

/** What the `record` column holds: the session's fields besides its tenant and state. */
type SessionRow = SessionInfo & { options: SessionRequestOptions };

/** `runcode serve`'s sessions in `db`, whose tables it makes when they are missing. */
export async function libsqlSessionStore(db: Client): Promise<SessionStore> {
  await db.executeMultiple(SCHEMA);
  return new LibsqlSessionStore(db);
}

class LibsqlSessionStore implements SessionStore {
  readonly #db: Client;

  constructor(db: Client) {
    this.#db = db;
  }

  async put(session: StoredSession): Promise<void> {
    const { tenant, snapshot, ...fields } = session;
    const record: SessionRow = fields;
    const statements: InStatement[] = [
      { sql: "DELETE FROM session_chunks WHERE tenant = ? AND id = ?", args: [tenant, session.id] },
      {
        sql: `INSERT INTO sessions (tenant, id, name, last_used_at, bytes, record) VALUES (?, ?, ?, ?, ?, ?)
              ON CONFLICT (tenant, id) DO UPDATE SET name = excluded.name, last_used_at = excluded.last_used_at,
                bytes = excluded.bytes, record = excluded.record`,
        args: [tenant, session.id, session.name ?? null, session.lastUsedAt, session.bytes, JSON.stringify(record)],
      },
    ];
    for (let at = 0, seq = 0; at < snapshot.byteLength; at += SNAPSHOT_CHUNK_BYTES, seq++) {
      statements.push({
        sql: "INSERT INTO session_chunks (tenant, id, seq, bytes) VALUES (?, ?, ?, ?)",
        args: [tenant, session.id, seq, snapshot.slice(at, at + SNAPSHOT_CHUNK_BYTES)],
      });
    }
    await roomIn(SESSION_STORE, () => this.#db.batch(statements, "write"));
  }

  async get(tenant: string, id: string): Promise<StoredSession | undefined> {
    // One read transaction: the record and the chunks of the same write.
    const [records, chunks] = await this.#db.batch(
      [
        { sql: "SELECT record FROM sessions WHERE tenant = ? AND id = ?", args: [tenant, id] },
        { sql: "SELECT bytes FROM session_chunks WHERE tenant = ? AND id = ? ORDER BY seq", args: [tenant, id] },
      ],
      "read",
    );
    const found = records?.rows[0];
    if (found === undefined) return undefined;
    const parts = (chunks?.rows ?? []).map((row) => new Uint8Array(row.bytes as ArrayBuffer));
    const snapshot = new Uint8Array(parts.reduce((sum, part) => sum + part.byteLength, 0));
    let at = 0;
    for (const part of parts) {
      snapshot.set(part, at);
      at += part.byteLength;
    }
    return { tenant, ...(JSON.parse(String(found.record)) as SessionRow), snapshot };
  }

  async info(tenant: string, id: string): Promise<SessionInfo | undefined> {
    const { rows } = await this.#db.execute({
      sql: "SELECT record FROM sessions WHERE tenant = ? AND id = ?",
      args: [tenant, id],
    });
    return rows[0] === undefined ? undefined : infoOf(String(rows[0].record));
  }

  async named(tenant: string, name: string): Promise<string | undefined> {
    const { rows } = await this.#db.execute({
      sql: "SELECT id FROM sessions WHERE tenant = ? AND name = ?",
      args: [tenant, name],
    });
    return rows[0] === undefined ? undefined : String(rows[0].id);
  }

  async list(tenant: string, page: { after?: string; limit: number }): Promise<SessionInfo[]> {
    const { rows } = await this.#db.execute({
      sql: "SELECT record FROM sessions WHERE tenant = ? AND id > ? ORDER BY id LIMIT ?",
      args: [tenant, page.after ?? "", page.limit],
    });
    return rows.map((row) => infoOf(String(row.record)));
  }

  async delete(tenant: string, id: string): Promise<boolean> {
    const { rowsAffected } = await this.#db.execute({
      sql: "DELETE FROM sessions WHERE tenant = ? AND id = ?",
      args: [tenant, id],
    });
    return rowsAffected > 0;
  }

  async usage(tenant: string): Promise<{ count: number; bytes: number }> {
    const { rows } = await this.#db.execute({
      sql: "SELECT count, bytes FROM session_usage WHERE tenant = ?",
      args: [tenant],
    });
    return { count: Number(rows[0]?.count ?? 0), bytes: Number(rows[0]?.bytes ?? 0) };
  }

  async expired(before: number, limit: number): Promise<{ tenant: string; id: string }[]> {
    const { rows } = await this.#db.execute({
      sql: "SELECT tenant, id FROM sessions WHERE last_used_at < ? LIMIT ?",
      args: [before, limit],
    });
    return rows.map((row) => ({ tenant: String(row.tenant), id: String(row.id) }));
  }
}

/** What the tenant sees of a `record` column. */
function infoOf(record: string): SessionInfo {
  const { options: _options, ...info } = JSON.parse(record) as SessionRow;
  return info;
}
