/**
 * The registry: one Durable Object that hands out pids (global, monotonic, never reused) and keeps a summary of
 * every process for `GET /processes`. Executions never pass through it: each runs in its own `ProcessObject`, which
 * reports state changes here (a few small writes per process).
 * @module
 */
import { DurableObject } from "cloudflare:workers";
import type { ProcessFilter, ProcessRecord } from "../src/host/index.js";
import { summaryOf } from "../src/host/index.js";

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
    `);
  }

  /** A new pid, or `null` when `maxActive` processes are active already (the caller answers 429). */
  async allocate(maxActive: number): Promise<number | null> {
    const active = this.#sql.exec<{ n: number }>("SELECT count(*) AS n FROM processes WHERE state != 'idle'").one().n;
    if (active >= maxActive) return null;
    const pid = this.#sql
      .exec<{ last_pid: number }>("UPDATE counter SET last_pid = last_pid + 1 RETURNING last_pid")
      .one().last_pid;
    // Counted as active until its object reports the real record (or the creation is withdrawn).
    const placeholder = JSON.stringify({ pid, state: "queued", exitState: null });
    this.#sql.exec("INSERT INTO processes (pid, state, summary) VALUES (?, 'queued', ?)", pid, placeholder);
    return pid;
  }

  async index(record: ProcessRecord): Promise<void> {
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
    this.#sql.exec("DELETE FROM processes WHERE pid = ?", pid);
  }

  /** Summaries matching `filter`, ascending by pid (values are bound parameters, never spliced into SQL). */
  async list(filter: ProcessFilter = {}): Promise<ProcessRecord[]> {
    const rows = this.#sql
      .exec<{ summary: string }>(
        `SELECT summary FROM processes
         WHERE (?1 IS NULL OR state = ?1) AND (?2 IS NULL OR exit_state = ?2) AND (?3 IS NULL OR ref = ?3)
         ORDER BY pid LIMIT ?4`,
        filter.state ?? null,
        filter.exitState ?? null,
        filter.ref ?? null,
        filter.limit ?? -1,
      )
      .toArray();
    return rows.map((row) => JSON.parse(row.summary) as ProcessRecord);
  }
}
