/**
 * The host's storage ports on Durable Object SQLite. A `ProcessObject` keeps exactly one process record (its own);
 * the registry keeps the pid counter and a summary of every process for listing; the kv object keeps the `kv`
 * service's values. Every write goes to SQLite before the promise resolves, so a reader sees live output and a
 * restart loses nothing that was acknowledged.
 * @module
 */
import type { KeyValueStore, ProcessFilter, ProcessPatch, ProcessRecord, ProcessStore } from "../src/host/index.js";

/** What a process object tells the registry whenever its record changes. */
export interface RegistryIndex {
  index(summary: ProcessRecord): Promise<void>;
  remove(pid: number): Promise<void>;
}

/** The one record of a process object, as JSON in a single-row table. */
export class ObjectProcessStore implements ProcessStore {
  readonly #sql: SqlStorage;
  readonly #pid: () => number;
  readonly #registry: RegistryIndex;

  /** `pid`: the pid the registry allocated for this object (read when the process is created). */
  constructor(sql: SqlStorage, pid: () => number, registry: RegistryIndex) {
    this.#sql = sql;
    this.#pid = pid;
    this.#registry = registry;
    sql.exec("CREATE TABLE IF NOT EXISTS process (pid INTEGER PRIMARY KEY, record TEXT NOT NULL)");
  }

  async nextPid(): Promise<number> {
    return this.#pid();
  }

  async create(record: ProcessRecord): Promise<void> {
    if (this.#read(record.pid) !== undefined) throw new Error(`Process ${record.pid} exists`);
    this.#sql.exec("INSERT INTO process (pid, record) VALUES (?, ?)", record.pid, JSON.stringify(record));
    await this.#registry.index(record);
  }

  async get(pid: number): Promise<ProcessRecord | undefined> {
    return this.#read(pid);
  }

  async update(pid: number, patch: ProcessPatch): Promise<ProcessRecord | undefined> {
    const record = this.#read(pid);
    if (record === undefined) return undefined;
    const next = { ...record, ...patch };
    this.#sql.exec("UPDATE process SET record = ? WHERE pid = ?", JSON.stringify(next), pid);
    if (next.state !== record.state || next.exitState !== record.exitState) await this.#registry.index(next);
    return next;
  }

  async list(filter: ProcessFilter = {}): Promise<ProcessRecord[]> {
    const rows = this.#sql.exec<{ record: string }>("SELECT record FROM process ORDER BY pid").toArray();
    return rows
      .map((row) => JSON.parse(row.record) as ProcessRecord)
      .filter(
        (r) =>
          (filter.state === undefined || r.state === filter.state) &&
          (filter.exitState === undefined || r.exitState === filter.exitState) &&
          (filter.ref === undefined || r.ref === filter.ref),
      )
      .slice(0, filter.limit);
  }

  async delete(pid: number): Promise<boolean> {
    const deleted = this.#sql.exec("DELETE FROM process WHERE pid = ?", pid).rowsWritten > 0;
    if (deleted) await this.#registry.remove(pid);
    return deleted;
  }

  #read(pid: number): ProcessRecord | undefined {
    const row = this.#sql.exec<{ record: string }>("SELECT record FROM process WHERE pid = ?", pid).toArray()[0];
    return row === undefined ? undefined : (JSON.parse(row.record) as ProcessRecord);
  }
}

/** The `kv` service's values as JSON text by key. */
export class SqlKeyValueStore implements KeyValueStore {
  readonly #sql: SqlStorage;

  constructor(sql: SqlStorage) {
    this.#sql = sql;
    sql.exec("CREATE TABLE IF NOT EXISTS kv (key TEXT PRIMARY KEY, value TEXT NOT NULL)");
  }

  async get(key: string): Promise<unknown> {
    const row = this.#sql.exec<{ value: string }>("SELECT value FROM kv WHERE key = ?", key).toArray()[0];
    return row === undefined ? undefined : JSON.parse(row.value);
  }

  async set(key: string, value: unknown): Promise<void> {
    const text = JSON.stringify(value);
    if (text === undefined) throw new TypeError("kv values must be JSON values");
    this.#sql.exec(
      "INSERT INTO kv (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
      key,
      text,
    );
  }

  async delete(key: string): Promise<boolean> {
    return this.#sql.exec("DELETE FROM kv WHERE key = ?", key).rowsWritten > 0;
  }

  async list(options: { prefix?: string; limit?: number } = {}): Promise<string[]> {
    const prefix = options.prefix ?? "";
    // Prefix match without LIKE, whose wildcards would have to be escaped: keys in [prefix, prefix + U+FFFF).
    const rows = this.#sql
      .exec<{ key: string }>(
        "SELECT key FROM kv WHERE key >= ? AND key < ? ORDER BY key LIMIT ?",
        prefix,
        `${prefix}\uffff`,
        options.limit ?? -1,
      )
      .toArray();
    return rows.map((row) => row.key);
  }
}
