/**
 * The host's storage ports on Durable Object SQLite. A `ProcessObject` keeps exactly one process record (its own);
 * the registry keeps the pid counter and a summary of every process for listing; the kv object keeps the `kv`
 * service's values. Every write goes to SQLite before the promise resolves, so a reader sees live output and a
 * restart loses nothing that was acknowledged.
 * @module
 */
import {
  chunkOf,
  type LargeField,
  type ProcessFilter,
  type ProcessPatch,
  type ProcessRecord,
  type ProcessStore,
  type ProcessSummary,
  storedBytesOf,
  summaryOf,
  type TextChunk,
} from "../src/host/processes/storage.js";
import { kvStatements, type Statement } from "../src/host/sqlite.js";
import {
  type KeyValueQuota,
  KeyValueQuotaError,
  type KeyValueStore,
  type KeyValueUsage,
} from "../src/tools/kv-store.js";

/** What a process object tells the registry whenever its record changes. */
export interface RegistryIndex {
  index(summary: ProcessSummary): Promise<void>;
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

  async nextPid(_tenant: string): Promise<number> {
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

  async summary(pid: number): Promise<ProcessSummary | undefined> {
    const record = this.#read(pid);
    return record === undefined ? undefined : summaryOf(record);
  }

  /** The object holds one record: SQLite hands over the one field, cut here in UTF-16 units as a live read is. */
  async read(pid: number, field: LargeField, at: number, size: number): Promise<TextChunk | undefined> {
    // The output and the modules are JSON text; a record without modules has none ('').
    const path =
      field === "output"
        ? "json(json_extract(record, '$.output'))"
        : field === "modules"
          ? "coalesce(json(json_extract(record, '$.modules')), '')"
          : `json_extract(record, '$.${field}')`;
    const row = this.#sql.exec<{ text: string }>(`SELECT ${path} AS text FROM process WHERE pid = ?`, pid).toArray()[0];
    return row === undefined ? undefined : chunkOf(row.text, at, size);
  }

  async update(pid: number, patch: ProcessPatch): Promise<boolean> {
    const record = this.#read(pid);
    if (record === undefined) return false;
    const next = { ...record, ...patch };
    this.#sql.exec("UPDATE process SET record = ? WHERE pid = ?", JSON.stringify(next), pid);
    if (next.state !== record.state || next.exitState !== record.exitState) await this.#registry.index(next);
    return true;
  }

  /** Filtered and limited by SQLite (values bound, never spliced), so only returned records are read and parsed. */
  async list(filter: ProcessFilter = {}): Promise<ProcessSummary[]> {
    const rows = this.#sql
      .exec<{ record: string }>(
        `SELECT record FROM process
         WHERE (?1 IS NULL OR json_extract(record, '$.state') = ?1)
           AND (?2 IS NULL OR json_extract(record, '$.exitState') = ?2)
           AND (?3 IS NULL OR json_extract(record, '$.ref') = ?3)
           AND (?4 IS NULL OR json_extract(record, '$.tenant') = ?4)
           AND pid > ?5
         ORDER BY pid LIMIT ?6`,
        filter.state ?? null,
        filter.exitState ?? null,
        filter.ref ?? null,
        filter.tenant ?? null,
        filter.after ?? 0,
        filter.limit ?? -1,
      )
      .toArray();
    return rows.map((row) => summaryOf(JSON.parse(row.record) as ProcessRecord));
  }

  async delete(pid: number): Promise<number | undefined> {
    const record = this.#read(pid);
    if (record === undefined) return undefined;
    this.#sql.exec("DELETE FROM process WHERE pid = ?", pid);
    await this.#registry.remove(pid);
    return storedBytesOf(record);
  }

  #read(pid: number): ProcessRecord | undefined {
    const row = this.#sql.exec<{ record: string }>("SELECT record FROM process WHERE pid = ?", pid).toArray()[0];
    return row === undefined ? undefined : (JSON.parse(row.record) as ProcessRecord);
  }
}

/** The object's whole tables are its tenant's store. */
const statements = kvStatements({ kv: {}, usage: { id: 1 } });

/** A write the store refused, as a value: it crosses RPC intact, where a thrown error would lose its fields. */
export interface KeyValueRefusal {
  quota: KeyValueQuotaError["quota"];
  limit: number;
  wouldBe: number;
}

/**
 * The `kv` service's values as JSON text by key, with a running count of keys and bytes (UTF-8 of every key and
 * value) kept in the same database, so quotas are checked in the write's own synchronous step.
 */
export class SqlKeyValueStore implements KeyValueStore {
  readonly #sql: SqlStorage;

  constructor(sql: SqlStorage) {
    this.#sql = sql;
    sql.exec("CREATE TABLE IF NOT EXISTS kv (key TEXT PRIMARY KEY, value TEXT NOT NULL)");
    sql.exec(
      "CREATE TABLE IF NOT EXISTS kv_usage (id INTEGER PRIMARY KEY CHECK (id = 1), keys INTEGER NOT NULL, bytes INTEGER NOT NULL)",
    );
    // Stores made before the usage row existed are counted once, here.
    this.#run(statements.seedUsage());
  }

  async get(key: string): Promise<unknown> {
    const row = this.#run<{ value: string }>(statements.get(key))[0];
    return row === undefined ? undefined : JSON.parse(row.value);
  }

  /** Throws the refusal of {@link setWithin} as a `KeyValueQuotaError`. */
  async set(key: string, value: unknown, quota?: KeyValueQuota): Promise<void> {
    const refusal = this.setWithin(key, value, quota);
    if (refusal !== null) throw refusalError(refusal);
  }

  /** Writes unless the write would take the store past `quota`; returns the refusal then, `null` when written. */
  setWithin(key: string, value: unknown, quota?: KeyValueQuota): KeyValueRefusal | null {
    const old = this.#run<{ bytes: number }>(statements.valueBytes(key))[0]?.bytes;
    const decided = statements.write(key, value, old, this.usageNow(), quota);
    if ("refusal" in decided) {
      const { quota: which, limit, wouldBe } = decided.refusal;
      return { quota: which, limit, wouldBe };
    }
    for (const statement of decided.statements) this.#run(statement);
    return null;
  }

  async delete(key: string): Promise<boolean> {
    const row = this.#run<{ bytes: number }>(statements.delete(key))[0];
    if (row === undefined) return false;
    this.#run(statements.count(-1, -row.bytes));
    return true;
  }

  /** Keys from the primary-key index, at most `limit` of them read. */
  async list(options: { prefix?: string; limit?: number } = {}): Promise<string[]> {
    return this.#run<{ key: string }>(statements.keys(options.prefix ?? "", options.limit ?? -1)).map((row) => row.key);
  }

  async usage(): Promise<KeyValueUsage> {
    return this.usageNow();
  }

  usageNow(): KeyValueUsage {
    return this.#run<{ keys: number; bytes: number }>(statements.usage())[0] as KeyValueUsage;
  }

  #run<T extends Record<string, SqlStorageValue>>({ sql, args }: Statement): T[] {
    return this.#sql.exec<T>(sql, ...args).toArray();
  }
}

/** The error a refusal stands for. */
export function refusalError(refusal: KeyValueRefusal): KeyValueQuotaError {
  return new KeyValueQuotaError(refusal.quota, refusal.limit, refusal.wouldBe);
}
