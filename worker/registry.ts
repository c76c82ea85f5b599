/**
 * The registry: one Durable Object that hands out pids (global, monotonic, never reused) and keeps a summary of
 * every process for `GET /processes`. Executions never pass through it: each runs in its own `ProcessObject`, which
 * reports state changes here (a few small writes per process).
 * @module
 */
import { DurableObject } from "cloudflare:workers";
import type { ProcessFilter, ProcessRecord } from "../src/host/index.js";
import { summaryOf } from "../src/host/index.js";

/** How long a placeholder of an unfinished creation counts as active (a creation takes milliseconds). */
export const PENDING_TTL_MS = 30_000;

export class RegistryObject extends DurableObject {
  readonly #sql: SqlStorage;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.#sql = ctx.storage.sql;
    this.#sql.exec(`
      CREATE TABLE IF NOT EXISTS counter (id INTEGER PRIMARY KEY CHECK (id = 1), last_pid INTEGER NOT NULL);
      INSERT OR IGNORE INTO counter (id, last_pid) VALUES (1, 0);
      CREATE TABLE IF NOT EXISTS processes (
        pid INTEGER PRIMARY KEY, ref TEXT, state TEXT NOT NULL, exit_state TEXT, summary TEXT NOT NULL
      );
      CREATE INDEX IF NOT EXISTS processes_state ON processes (state);
      CREATE INDEX IF NOT EXISTS processes_exit_state ON processes (exit_state);
      CREATE INDEX IF NOT EXISTS processes_ref ON processes (ref);
      CREATE TABLE IF NOT EXISTS pending (pid INTEGER PRIMARY KEY, at INTEGER NOT NULL);
    `);
    // Placeholders left behind before `pending` existed (no object ever reported them: no createdAt) expire too.
    this.#sql.exec(`INSERT OR IGNORE INTO pending (pid, at) SELECT pid, 0 FROM processes
      WHERE state = 'queued' AND json_extract(summary, '$.createdAt') IS NULL`);
  }

  /**
   * Drops placeholders whose creation never finished. A Worker that restarts between `allocate` and the object's
   * first report (wrangler dev reloads, isolate restarts under load: seen in e2e/abuse.spec.ts) never calls
   * `remove`, and its placeholder used to stay `queued` for ever, holding one of the `maxActive` slots; enough of
   * them and every creation was 429. A creation that does finish late re-inserts its row through `index`.
   */
  #expirePending(now: number): void {
    const before = now - PENDING_TTL_MS;
    this.#sql.exec("DELETE FROM processes WHERE pid IN (SELECT pid FROM pending WHERE at < ?)", before);
    this.#sql.exec("DELETE FROM pending WHERE at < ?", before);
  }

  /** A new pid, or `null` when `maxActive` processes are active already (the caller answers 429). */
  async allocate(maxActive: number): Promise<number | null> {
    this.#expirePending(Date.now());
    const active = this.#sql.exec<{ n: number }>("SELECT count(*) AS n FROM processes WHERE state != 'idle'").one().n;
    if (active >= maxActive) return null;
    const pid = this.#sql
      .exec<{ last_pid: number }>("UPDATE counter SET last_pid = last_pid + 1 RETURNING last_pid")
      .one().last_pid;
    // Counted as active until its object reports the real record (or the creation is withdrawn).
    const placeholder = JSON.stringify({ pid, state: "queued", exitState: null });
    this.#sql.exec("INSERT INTO processes (pid, state, summary) VALUES (?, 'queued', ?)", pid, placeholder);
    this.#sql.exec("INSERT INTO pending (pid, at) VALUES (?, ?)", pid, Date.now());
    return pid;
  }

  async index(record: ProcessRecord): Promise<void> {
    this.#sql.exec("DELETE FROM pending WHERE pid = ?", record.pid);
    this.#sql.exec(
      `INSERT INTO processes (pid, ref, state, exit_state, summary) VALUES (?, ?, ?, ?, ?)
       ON CONFLICT(pid) DO UPDATE SET ref = excluded.ref, state = excluded.state, exit_state = excluded.exit_state,
       summary = excluded.summary`,
      record.pid,
      record.ref ?? null,
      record.state,
      record.exitState,
      JSON.stringify(summaryOf(record)),
    );
  }

  async remove(pid: number): Promise<void> {
    this.#sql.exec("DELETE FROM pending WHERE pid = ?", pid);
    this.#sql.exec("DELETE FROM processes WHERE pid = ?", pid);
  }

  /**
   * Summaries matching `filter`, ascending by pid, at most `limit`. Values are bound parameters, never spliced into
   * SQL; only the conditions given are written, so SQLite walks an index of the filtered column in pid order (each
   * index ends in the rowid, the pid) and stops at the limit instead of testing every row.
   */
  async list(filter: ProcessFilter = {}): Promise<ProcessRecord[]> {
    const conditions: string[] = [];
    const values: (string | number)[] = [];
    for (const [column, value] of [
      ["state", filter.state],
      ["exit_state", filter.exitState],
      ["ref", filter.ref],
    ] as const) {
      if (value === undefined) continue;
      conditions.push(`${column} = ?`);
      values.push(value);
    }
    const where = conditions.length === 0 ? "" : `WHERE ${conditions.join(" AND ")}`;
    const rows = this.#sql
      .exec<{ summary: string }>(
        `SELECT summary FROM processes ${where} ORDER BY pid LIMIT ?`,
        ...values,
        filter.limit ?? -1,
      )
      .toArray();
    return rows.map((row) => JSON.parse(row.summary) as ProcessRecord);
  }
}
