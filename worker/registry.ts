/**
 * The registry: one Durable Object that hands out pids (never reused, ascending per tenant, telling nothing of other
 * tenants: `pidOf`), keeps a summary of every process with its tenant for `GET /processes` and for checking whose a
 * pid is before any process object is reached, and counts what tenants may start: active processes (theirs and the
 * deployment's), a token bucket of runs per minute and one of fuel, each tenant's share of CPU. Executions never pass through it: each runs in its own
 * `ProcessObject`, which reports state changes here (a few small writes per process). Sessions have rows here too
 * (session-index.ts): whose each id is and which object holds it, their names, counts and bytes, and each tenant's
 * cells per minute; their state is in their own `SessionObject`s.
 * @module
 */
import { DurableObject } from "cloudflare:workers";
import { type CpuBudget, type CpuShare, TenantCpuBudget } from "../src/host/admission/cpu-budget.js";
import { rateLimited, takeToken } from "../src/host/admission/quotas.js";
import { checkSlots, type SlotQuotas } from "../src/host/admission/slots.js";
import { HostError } from "../src/host/errors.js";
import { listedOf } from "../src/host/http/process-routes.js";
import { newPidTag, type ProcessFilter, type ProcessSummary, pidOf } from "../src/host/processes/storage.js";
import type { SessionInfo } from "../src/host/sessions/backend.js";
import { nextPidStatements, PID_TAGS_TABLE, PROCESS_INDEXES, processListStatement } from "../src/host/sqlite.js";
import { type Answer, answer, unwrap } from "./rpc-refusals.js";
import { type IndexedSession, SESSION_TABLES, SessionIndex, type SessionQuotas } from "./session-index.js";

/** How long a placeholder of an unfinished creation counts as active (a creation takes milliseconds). */
const PENDING_TTL_MS = 30_000;

export class RegistryObject extends DurableObject {
  readonly #sql: SqlStorage;
  readonly #sessions: SessionIndex;
  /** The tenants' shares by their figures: one, the deployment's settings. */
  readonly #cpu = new Map<string, TenantCpuBudget>();

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.#sql = ctx.storage.sql;
    this.#sql.exec(`
      ${PID_TAGS_TABLE};
      CREATE TABLE IF NOT EXISTS processes (
        pid INTEGER PRIMARY KEY, ref TEXT, state TEXT NOT NULL, exit_state TEXT, summary TEXT NOT NULL
      );
      CREATE TABLE IF NOT EXISTS pending (pid INTEGER PRIMARY KEY, at INTEGER NOT NULL);
      CREATE TABLE IF NOT EXISTS rates (tenant TEXT PRIMARY KEY, tokens REAL NOT NULL, at INTEGER NOT NULL);
      CREATE TABLE IF NOT EXISTS fuel (tenant TEXT PRIMARY KEY, tokens REAL NOT NULL, at INTEGER NOT NULL);
      ${SESSION_TABLES}
    `);
    // Registries from before tenants: their processes were everyone's, now the anonymous tenant's.
    const columns = this.#sql.exec<{ name: string }>("SELECT name FROM pragma_table_info('processes')").toArray();
    if (!columns.some((c) => c.name === "tenant")) {
      this.#sql.exec("ALTER TABLE processes ADD COLUMN tenant TEXT NOT NULL DEFAULT 'anonymous'");
    }
    // Indexes from before tenants, replaced by ones that lead with the tenant.
    this.#sql.exec(`
      DROP INDEX IF EXISTS processes_state;
      DROP INDEX IF EXISTS processes_exit_state;
      DROP INDEX IF EXISTS processes_ref;
      ${PROCESS_INDEXES}
    `);
    // A queued row without a createdAt is a placeholder no object ever reported, even with no `pending` row: it expires too.
    this.#sql.exec(`INSERT OR IGNORE INTO pending (pid, at) SELECT pid, 0 FROM processes
      WHERE state = 'queued' AND json_extract(summary, '$.createdAt') IS NULL`);
    this.#sessions = new SessionIndex(this.#sql);
  }

  /** The session index (session-index.ts), by RPC: each method one synchronous step of this object. */
  async indexSession(entry: IndexedSession, limits: SessionQuotas): Promise<Answer<null>> {
    return answer(() => this.#sessions.put(entry, limits));
  }

  async removeSession(tenant: string, id: string): Promise<void> {
    this.#sessions.remove(tenant, id);
  }

  async sessionEntry(tenant: string, id: string): Promise<IndexedSession | null> {
    return this.#sessions.entry(tenant, id) ?? null;
  }

  async sessionNamed(tenant: string, name: string): Promise<string | null> {
    return this.#sessions.named(tenant, name) ?? null;
  }

  async sessionUsage(tenant: string): Promise<{ count: number; bytes: number }> {
    return this.#sessions.usage(tenant);
  }

  async listSessions(tenant: string, after: string, limit: number): Promise<SessionInfo[]> {
    return this.#sessions.list(tenant, after, limit);
  }

  /**
   * The tenant's session `id` with one of its cells counted against `perMinute` (refused with `Retry-After` when
   * over); `null`, nothing counted, for an unknown or another tenant's id. One request for both, as every cell asks.
   */
  async admitCell(tenant: string, id: string, perMinute: number): Promise<Answer<IndexedSession | null>> {
    return answer(() => {
      const entry = this.#sessions.entry(tenant, id);
      if (entry === undefined) return null;
      this.#sessions.admitCell(tenant, perMinute, Date.now());
      return entry;
    });
  }

  /**
   * Drops placeholders whose creation never finished. A Worker that restarts between `allocate` and the object's
   * first report (wrangler dev reloads, isolate restarts under load: seen in e2e/abuse.spec.ts) never calls
   * `remove`, and its placeholder would stay `queued` for ever, holding one of the `maxActive` slots; enough of
   * them and every creation would be 429. A creation that does finish late re-inserts its row through `index`.
   */
  #expirePending(now: number): void {
    const before = now - PENDING_TTL_MS;
    this.#sql.exec("DELETE FROM processes WHERE pid IN (SELECT pid FROM pending WHERE at < ?)", before);
    this.#sql.exec("DELETE FROM pending WHERE at < ?", before);
  }

  /** Throws the 429 when the deployment or `tenant` has no free slot. */
  #checkSlots(tenant: string, limits: SlotQuotas): void {
    this.#expirePending(Date.now());
    const active = (where: string, ...values: string[]) =>
      this.#sql
        .exec<{ n: number }>(`SELECT count(*) AS n FROM processes WHERE state != 'idle' ${where}`, ...values)
        .one().n;
    checkSlots(active(""), active("AND tenant = ?", tenant), limits);
  }

  /** A new pid for `tenant`; refused (429 with `Retry-After`) when the deployment or the tenant has no free slot. */
  async allocate(tenant: string, limits: SlotQuotas): Promise<Answer<number>> {
    return answer(() => {
      this.#checkSlots(tenant, limits);
      const pid = this.#nextPid(tenant);
      // Counted as active until its object reports the real record (or the creation is withdrawn).
      const placeholder = JSON.stringify({ pid, state: "queued", exitState: null });
      this.#sql.exec(
        "INSERT INTO processes (pid, tenant, state, summary) VALUES (?, ?, 'queued', ?)",
        pid,
        tenant,
        placeholder,
      );
      this.#sql.exec("INSERT INTO pending (pid, at) VALUES (?, ?)", pid, Date.now());
      return pid;
    });
  }

  /** `tenant`'s next pid (this method runs in one synchronous step: one transaction). */
  #nextPid(tenant: string): number {
    for (;;) {
      const [claim, count] = nextPidStatements(
        tenant,
        newPidTag(() => false),
      );
      this.#sql.exec(claim.sql, ...claim.args);
      const row = this.#sql.exec<{ tag: number; count: number }>(count.sql, ...count.args).toArray()[0];
      if (row !== undefined) return pidOf(row.tag, row.count);
    }
  }

  /**
   * Takes a slot for running idle process `pid` again (its summary turns `queued`), refused like a creation. The
   * process object reports the run from then on; if it refuses, the caller indexes its record again.
   */
  async reserveRun(pid: number, limits: SlotQuotas): Promise<Answer<null>> {
    return answer(() => {
      const row = this.#sql
        .exec<{ tenant: string; state: string }>("SELECT tenant, state FROM processes WHERE pid = ?", pid)
        .toArray()[0];
      if (row === undefined) throw new HostError("not_found", `No process ${pid}`);
      if (row.state !== "idle") throw new HostError("process_active", `Process ${pid} is not idle`);
      this.#checkSlots(row.tenant, limits);
      this.#sql.exec("UPDATE processes SET state = 'queued' WHERE pid = ?", pid);
      return null;
    });
  }

  /** Counts one process creation or `/run` of `tenant` against `perMinute`; refused with `Retry-After` when over. */
  async admit(tenant: string, perMinute: number): Promise<Answer<null>> {
    return answer(() => {
      const row = this.#sql
        .exec<{ tokens: number; at: number }>("SELECT tokens, at FROM rates WHERE tenant = ?", tenant)
        .toArray()[0];
      const { bucket, retryAfterSeconds } = takeToken(row, perMinute, Date.now());
      this.#sql.exec(
        "INSERT INTO rates (tenant, tokens, at) VALUES (?, ?, ?) ON CONFLICT(tenant) DO UPDATE SET tokens = excluded.tokens, at = excluded.at",
        tenant,
        bucket.tokens,
        bucket.at,
      );
      if (retryAfterSeconds !== null) throw rateLimited(perMinute, retryAfterSeconds);
      return null;
    });
  }

  /**
   * Reserves the fuel of a run that may spend `fuel` from `tenant`'s share (cpu-budget.ts), waiting briefly in the
   * tenant's line: the amount reserved, or the 429 with `Retry-After` when the tenant's bucket cannot pay in time.
   */
  async reserveCpu(tenant: string, fuel: number, share: CpuShare): Promise<Answer<number>> {
    return answer(() => this.#cpuOf(share).reserve(tenant, fuel));
  }

  /** Settles a reservation of `reserved` whose run spent `used` fuel, waking the tenant's line. */
  async settleCpu(tenant: string, reserved: number, used: number, share: CpuShare): Promise<void> {
    await this.#cpuOf(share).settle(tenant, reserved, used);
  }

  /** The tenants' shares of `share`'s figures, their buckets in this object's SQLite. */
  #cpuOf(share: CpuShare): TenantCpuBudget {
    const key = `${share.fuelPerMinute}/${share.burstFuel}`;
    const known = this.#cpu.get(key);
    if (known !== undefined) return known;
    const budget = new TenantCpuBudget(share, {
      buckets: {
        get: (tenant) =>
          this.#sql
            .exec<{ tokens: number; at: number }>("SELECT tokens, at FROM fuel WHERE tenant = ?", tenant)
            .toArray()[0],
        set: (tenant, bucket) =>
          this.#sql.exec(
            "INSERT INTO fuel (tenant, tokens, at) VALUES (?, ?, ?) ON CONFLICT(tenant) DO UPDATE SET tokens = excluded.tokens, at = excluded.at",
            tenant,
            bucket.tokens,
            bucket.at,
          ),
      },
    });
    this.#cpu.set(key, budget);
    return budget;
  }

  /** Whose process `pid` is; `null` for none. */
  async tenantOf(pid: number): Promise<string | null> {
    return (
      this.#sql.exec<{ tenant: string }>("SELECT tenant FROM processes WHERE pid = ?", pid).toArray()[0]?.tenant ?? null
    );
  }

  async index(record: ProcessSummary): Promise<void> {
    this.#sql.exec("DELETE FROM pending WHERE pid = ?", record.pid);
    this.#sql.exec(
      `INSERT INTO processes (pid, tenant, ref, state, exit_state, summary) VALUES (?, ?, ?, ?, ?, ?)
       ON CONFLICT(pid) DO UPDATE SET ref = excluded.ref, state = excluded.state, exit_state = excluded.exit_state,
       summary = excluded.summary`,
      record.pid,
      record.tenant,
      record.ref ?? null,
      record.state,
      record.exitState,
      JSON.stringify(listedOf(record)),
    );
  }

  async remove(pid: number): Promise<void> {
    this.#sql.exec("DELETE FROM pending WHERE pid = ?", pid);
    this.#sql.exec("DELETE FROM processes WHERE pid = ?", pid);
  }

  /** Summaries matching `filter`, ascending by pid, at most `limit`, each with its tenant. */
  async list(filter: ProcessFilter = {}): Promise<ProcessSummary[]> {
    const { sql, args } = processListStatement("tenant, summary", filter);
    const rows = this.#sql.exec<{ tenant: string; summary: string }>(sql, ...args).toArray();
    return rows.map((row) => ({ ...(JSON.parse(row.summary) as ProcessSummary), tenant: row.tenant }));
  }
}

/** Each tenant's share of CPU counted in the registry, so every isolate and process object draws on one bucket. */
export function registryCpuBudget(env: Env, share: CpuShare): CpuBudget {
  const registry = () => env.REGISTRY.get(env.REGISTRY.idFromName("registry"));
  return {
    reserve: async (tenant, fuel) => unwrap(await registry().reserveCpu(tenant, fuel, share)),
    settle: (tenant, reserved, used) => registry().settleCpu(tenant, reserved, used, share),
  };
}
