/**
 * The host's storage ports on libSQL, for `runcode serve`: an embedded database file, or a libSQL server. Every
 * process record is a row of one table (indexed as the edge's registry is, the record itself as JSON), every
 * tenant's `kv` values rows of another, keyed by tenant; pids come from the `pid_tags` table the edge's registry
 * keeps. The statements are the edge's (src/host/sqlite.ts). Each write is awaited before its promise resolves, so
 * what the app acknowledged is in the database when it answers, and a restart keeps it.
 *
 * One server per database: the server counts slots and rates in memory, keeps each tenant's `kv` writes in line,
 * and on starting ends every run the database shows active (src/host/restarts.ts).
 * @module
 */
import { type Client, createClient, type InStatement } from "@libsql/client";
import {
  newPidTag,
  type ProcessFilter,
  type ProcessPatch,
  type ProcessRecord,
  type ProcessStore,
  pidOf,
} from "../../src/host/processes/storage.js";
import {
  kvStatements,
  nextPidStatements,
  PID_TAGS_TABLE,
  PROCESS_INDEXES,
  processListStatement,
} from "../../src/host/sqlite.js";
import type { KeyValueQuota, KeyValueStore, KeyValueUsage } from "../../src/tools/kv-store.js";

/** When an idle row's process ended (the record's `finishedAt`): what retention's sweep finds rows by, indexed. */
const ENDED_AT = "json_extract(record, '$.finishedAt')";

const SCHEMA = `
  ${PID_TAGS_TABLE};
  CREATE TABLE IF NOT EXISTS processes (
    pid INTEGER PRIMARY KEY, tenant TEXT NOT NULL, ref TEXT, state TEXT NOT NULL, exit_state TEXT, record TEXT NOT NULL
  );
  ${PROCESS_INDEXES}
  CREATE INDEX IF NOT EXISTS processes_ended ON processes (${ENDED_AT}) WHERE state = 'idle';
  CREATE TABLE IF NOT EXISTS kv (
    tenant TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL, PRIMARY KEY (tenant, key)
  ) WITHOUT ROWID;
  CREATE TABLE IF NOT EXISTS kv_usage (tenant TEXT PRIMARY KEY, keys INTEGER NOT NULL, bytes INTEGER NOT NULL);
`;

/**
 * The database at `url` (`file:runcode.db`, `libsql://...`), with runcode's tables. A file is switched to
 * write-ahead logging, whose commits are as durable as the default journal's (SQLite's `synchronous` stays `FULL`:
 * each commit is on disk before it returns) at a fraction of the writes.
 */
export async function openDatabase(url: string, authToken?: string): Promise<Client> {
  const db = createClient({ url, ...(authToken === undefined ? {} : { authToken }) });
  try {
    if (url.startsWith("file:")) await db.execute("PRAGMA journal_mode = WAL");
    await db.executeMultiple(SCHEMA);
  } catch (error) {
    db.close();
    throw error;
  }
  return db;
}

/** The columns a record is found by, and the record. */
const row = (record: ProcessRecord) => {
  const text = JSON.stringify(record);
  return { text, args: [record.ref ?? null, record.state, record.exitState, text] };
};

/** Every process record, in the `processes` table. */
export class LibsqlProcessStore implements ProcessStore {
  readonly #db: Client;

  constructor(db: Client) {
    this.#db = db;
  }

  async nextPid(tenant: string): Promise<number> {
    for (;;) {
      const [, counted] = await this.#db.batch(
        nextPidStatements(
          tenant,
          newPidTag(() => false),
        ),
        "write",
      );
      const found = counted?.rows[0];
      if (found !== undefined) return pidOf(Number(found.tag), Number(found.count));
    }
  }

  async create(record: ProcessRecord): Promise<void> {
    const { rowsAffected } = await this.#db.execute({
      sql: `INSERT INTO processes (pid, tenant, ref, state, exit_state, record) VALUES (?, ?, ?, ?, ?, ?)
            ON CONFLICT(pid) DO NOTHING`,
      args: [record.pid, record.tenant, ...row(record).args],
    });
    if (rowsAffected === 0) throw new Error(`Process ${record.pid} exists`);
  }

  async get(pid: number): Promise<ProcessRecord | undefined> {
    const { rows } = await this.#db.execute({ sql: "SELECT record FROM processes WHERE pid = ?", args: [pid] });
    return rows[0] === undefined ? undefined : (JSON.parse(String(rows[0].record)) as ProcessRecord);
  }

  /** Read, patched and written back: a record has one writer, the server that runs its process. */
  async update(pid: number, patch: ProcessPatch): Promise<ProcessRecord | undefined> {
    const record = await this.get(pid);
    if (record === undefined) return undefined;
    const { text, args } = row({ ...record, ...patch });
    await this.#db.execute({
      sql: "UPDATE processes SET ref = ?, state = ?, exit_state = ?, record = ? WHERE pid = ?",
      args: [...args, pid],
    });
    return JSON.parse(text) as ProcessRecord;
  }

  async list(filter: ProcessFilter = {}): Promise<ProcessRecord[]> {
    const { rows } = await this.#db.execute(processListStatement("record", filter));
    return rows.map((found) => JSON.parse(String(found.record)) as ProcessRecord);
  }

  async delete(pid: number): Promise<boolean> {
    const { rowsAffected } = await this.#db.execute({ sql: "DELETE FROM processes WHERE pid = ?", args: [pid] });
    return rowsAffected > 0;
  }

  /**
   * Deletes at most `limit` processes that ended before `time` (epoch milliseconds), as {@link delete} deletes one;
   * how many it deleted. Found by the `processes_ended` index, so one call costs what it deletes.
   */
  async deleteEndedBefore(time: number, limit: number): Promise<number> {
    const { rowsAffected } = await this.#db.execute({
      sql: `DELETE FROM processes WHERE pid IN (
              SELECT pid FROM processes WHERE state = 'idle' AND ${ENDED_AT} < ? LIMIT ?)`,
      args: [time, limit],
    });
    return rowsAffected;
  }
}

/** The `kv` service's stores, one per tenant, made on first use. */
export function libsqlKeyValueStores(db: Client): (tenant: string) => KeyValueStore {
  const stores = new Map<string, LibsqlKeyValueStore>();
  return (tenant) => {
    let store = stores.get(tenant);
    if (store === undefined) {
      store = new LibsqlKeyValueStore(db, tenant);
      stores.set(tenant, store);
    }
    return store;
  };
}

/**
 * One tenant's values, with its count of keys and bytes in a `kv_usage` row. Writes go one at a time, each read of
 * the usage and its write in line, so quotas hold exactly; each write and its count commit together.
 */
class LibsqlKeyValueStore implements KeyValueStore {
  readonly #db: Client;
  readonly #statements: ReturnType<typeof kvStatements>;
  /** The usage row, made (counting what the tenant holds) once, before anything is read or written. */
  readonly #counted: Promise<unknown>;
  #writes: Promise<unknown> = Promise.resolve();

  constructor(db: Client, tenant: string) {
    this.#db = db;
    this.#statements = kvStatements({ kv: { tenant }, usage: { tenant } });
    this.#counted = db.execute(this.#statements.seedUsage());
    // Every read and write awaits it and fails with it; unawaited, it is no unhandled rejection.
    this.#counted.catch(() => {});
  }

  async get(key: string): Promise<unknown> {
    const [found] = await this.#rows(this.#statements.get(key));
    return found === undefined ? undefined : JSON.parse(String(found.value));
  }

  set(key: string, value: unknown, quota?: KeyValueQuota): Promise<void> {
    return this.#inLine(async () => {
      const [old] = await this.#rows(this.#statements.valueBytes(key));
      const decided = this.#statements.write(
        key,
        value,
        old === undefined ? undefined : Number(old.bytes),
        await this.usage(),
        quota,
      );
      if ("refusal" in decided) throw decided.refusal;
      await this.#db.batch(decided.statements, "write");
    });
  }

  delete(key: string): Promise<boolean> {
    return this.#inLine(async () => {
      const [old] = await this.#rows(this.#statements.valueBytes(key));
      if (old === undefined) return false;
      await this.#db.batch(this.#statements.removal(key, Number(old.bytes)), "write");
      return true;
    });
  }

  async list(options: { prefix?: string; limit?: number } = {}): Promise<string[]> {
    const found = await this.#rows(this.#statements.keys(options.prefix ?? "", options.limit ?? -1));
    return found.map((entry) => String(entry.key));
  }

  async usage(): Promise<KeyValueUsage> {
    const [found] = await this.#rows(this.#statements.usage());
    return { keys: Number(found?.keys ?? 0), bytes: Number(found?.bytes ?? 0) };
  }

  async #rows(statement: InStatement) {
    await this.#counted;
    return (await this.#db.execute(statement)).rows;
  }

  /** `work` after every write before it has settled. */
  #inLine<T>(work: () => Promise<T>): Promise<T> {
    const done = this.#writes.then(work);
    this.#writes = done.catch(() => {});
    return done;
  }
}
