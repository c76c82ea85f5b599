/**
 * The host's storage ports on libSQL, for `runcode serve`: an embedded database file, or a libSQL server. Every
 * process record is a row of one table (indexed as the edge's registry is, its summary as JSON and each large field
 * in a column of its own), every tenant's `kv` values rows of another, keyed by tenant; pids come from the `pid_tags`
 * table the edge's registry keeps. The shared statements are the edge's (src/host/sqlite.ts). Each write is awaited
 * before its promise resolves, so what the app acknowledged is in the database when it answers, and a restart keeps
 * it; a write the database or its disk has no room for is `507 storage_full`, naming the store.
 *
 * One server per database (node/serve/lock.ts): the server counts slots, rates and each tenant's stored bytes in
 * memory, keeps each tenant's `kv` writes in line, and on starting ends every run the database shows active
 * (src/host/restarts.ts).
 * @module
 */
import { type Client, createClient, type InStatement } from "@libsql/client";
import { HostError } from "../../src/host/errors.js";
import {
  LARGE_FIELDS,
  type LargeField,
  newPidTag,
  type ProcessFilter,
  type ProcessPatch,
  type ProcessRecord,
  type ProcessStore,
  type ProcessSummary,
  pidOf,
  summaryOf,
  type TextChunk,
} from "../../src/host/processes/storage.js";
import {
  kvStatements,
  nextPidStatements,
  PID_TAGS_TABLE,
  PROCESS_INDEXES,
  processListStatement,
} from "../../src/host/sqlite.js";
import type { KeyValueQuota, KeyValueStore, KeyValueUsage } from "../../src/tools/kv-store.js";
import { utf8Length } from "../../src/values/json.js";

/** When an idle row's process ended (the record's `finishedAt`): what retention's sweep finds rows by, indexed. */
const ENDED_AT = "json_extract(record, '$.finishedAt')";

/** How long a statement waits for a lock another connection holds (SQLite's busy timeout) before it fails. */
const BUSY_TIMEOUT_MS = 5_000;

/**
 * A row holds a record's summary as JSON (`record`) ahead of its large fields, one column each, so a listing reads
 * only the summary's few bytes, and a chunk of a large field only that field; `sizes` holds their UTF-8 bytes and
 * `bytes` their sum and the summary's (as `storedBytesOf` counts a record). Triggers keep each tenant's sum in
 * `process_usage` with every insert, update and delete (the retention's sweep too): the storage quota's running count.
 */
const PROCESSES_TABLE = `CREATE TABLE IF NOT EXISTS processes (
    pid INTEGER PRIMARY KEY, tenant TEXT NOT NULL, ref TEXT, state TEXT NOT NULL, exit_state TEXT, record TEXT NOT NULL,
    sizes TEXT NOT NULL DEFAULT '[0,0,0,0]', bytes INTEGER NOT NULL DEFAULT 0,
    code TEXT NOT NULL DEFAULT '', stdout TEXT NOT NULL DEFAULT '', stderr TEXT NOT NULL DEFAULT '',
    output TEXT NOT NULL DEFAULT '{}', modules TEXT NOT NULL DEFAULT ''
  )`;

const USAGE = `
  CREATE TABLE IF NOT EXISTS process_usage (tenant TEXT PRIMARY KEY, bytes INTEGER NOT NULL) WITHOUT ROWID;
  CREATE TRIGGER IF NOT EXISTS processes_counted AFTER INSERT ON processes BEGIN
    INSERT OR IGNORE INTO process_usage (tenant, bytes) VALUES (new.tenant, 0);
    UPDATE process_usage SET bytes = bytes + new.bytes WHERE tenant = new.tenant;
  END;
  CREATE TRIGGER IF NOT EXISTS processes_recounted AFTER UPDATE OF bytes ON processes BEGIN
    UPDATE process_usage SET bytes = bytes + new.bytes - old.bytes WHERE tenant = new.tenant;
  END;
  CREATE TRIGGER IF NOT EXISTS processes_uncounted AFTER DELETE ON processes BEGIN
    UPDATE process_usage SET bytes = bytes - old.bytes WHERE tenant = old.tenant;
  END;
`;

const SCHEMA = `
  ${PID_TAGS_TABLE};
  ${PROCESSES_TABLE};
  ${PROCESS_INDEXES}
  CREATE INDEX IF NOT EXISTS processes_ended ON processes (${ENDED_AT}) WHERE state = 'idle';
  CREATE TABLE IF NOT EXISTS kv (
    tenant TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL, PRIMARY KEY (tenant, key)
  ) WITHOUT ROWID;
  CREATE TABLE IF NOT EXISTS kv_usage (tenant TEXT PRIMARY KEY, keys INTEGER NOT NULL, bytes INTEGER NOT NULL);
  ${USAGE}
`;

/** UTF-8 bytes of a column's text. */
const bytesOf = (column: string) => `length(CAST(${column} AS BLOB))`;

/**
 * A database whose rows hold whole records as JSON (before the large fields had columns) gets the columns, its
 * records split into them and its tenants counted: once, in one transaction, before the usage triggers exist.
 */
const SPLIT_RECORDS = [
  "ALTER TABLE processes ADD COLUMN sizes TEXT NOT NULL DEFAULT '[0,0,0,0]'",
  "ALTER TABLE processes ADD COLUMN bytes INTEGER NOT NULL DEFAULT 0",
  ...["code", "stdout", "stderr"].map((field) => `ALTER TABLE processes ADD COLUMN ${field} TEXT NOT NULL DEFAULT ''`),
  "ALTER TABLE processes ADD COLUMN output TEXT NOT NULL DEFAULT '{}'",
  `UPDATE processes SET code = json_extract(record, '$.code'), stdout = json_extract(record, '$.stdout'),
     stderr = json_extract(record, '$.stderr'), output = json_extract(record, '$.output'),
     record = json_remove(record, '$.code', '$.stdout', '$.stderr', '$.output')`,
  `UPDATE processes SET sizes = json_array(${LARGE_FIELDS.map(bytesOf).join(", ")}),
     bytes = ${LARGE_FIELDS.map(bytesOf).join(" + ")}`,
  "CREATE TABLE process_usage (tenant TEXT PRIMARY KEY, bytes INTEGER NOT NULL) WITHOUT ROWID",
  "INSERT INTO process_usage (tenant, bytes) SELECT tenant, sum(bytes) FROM processes GROUP BY tenant",
];

/** A database made before processes had modules gets their column, empty: none of its processes has any. */
const ADD_MODULES = "ALTER TABLE processes ADD COLUMN modules TEXT NOT NULL DEFAULT ''";

/** The `user_version` of a database whose rows' `bytes` count their summaries. */
const SUMMARIES_COUNTED = 1;

/**
 * A database whose rows' `bytes` counted the large fields only gets each summary's bytes added and its tenants
 * counted again, in the transaction that marks it done.
 */
const COUNT_SUMMARIES = [
  `UPDATE processes SET bytes = bytes + ${bytesOf("record")}`,
  "DELETE FROM process_usage",
  "INSERT INTO process_usage (tenant, bytes) SELECT tenant, sum(bytes) FROM processes GROUP BY tenant",
];

/**
 * The database at `url` (`file:runcode.db`, `libsql://...`), with runcode's tables. A file is switched to
 * write-ahead logging, whose commits are as durable as the default journal's (SQLite's `synchronous` stays `FULL`:
 * each commit is on disk before it returns) at a fraction of the writes; a statement waits up to
 * {@link BUSY_TIMEOUT_MS} for a lock.
 */
export async function openDatabase(url: string, authToken?: string): Promise<Client> {
  const db = createClient({ url, timeout: BUSY_TIMEOUT_MS, ...(authToken === undefined ? {} : { authToken }) });
  try {
    if (url.startsWith("file:")) await db.execute("PRAGMA journal_mode = WAL");
    const { rows } = await db.execute("SELECT name FROM pragma_table_info('processes')");
    const columns = rows.map((found) => String(found.name));
    const version = Number((await db.execute("PRAGMA user_version")).rows[0]?.user_version ?? 0);
    if (columns.length > 0 && !columns.includes("modules")) await db.execute(ADD_MODULES);
    if (columns.length > 0 && !columns.includes("code")) await db.batch(SPLIT_RECORDS, "write");
    await db.executeMultiple(SCHEMA);
    if (version < SUMMARIES_COUNTED) {
      await db.batch(
        [...(columns.length > 0 ? COUNT_SUMMARIES : []), `PRAGMA user_version = ${SUMMARIES_COUNTED}`],
        "write",
      );
    }
  } catch (error) {
    db.close();
    throw error;
  }
  return db;
}

/** Whether `error` is SQLite's (or the system's) "no room left": the database or its disk is full. */
const isFull = (error: unknown) =>
  /SQLITE_FULL|ENOSPC/.test(String((error as { code?: unknown } | undefined)?.code)) ||
  /database or disk is full|no space left/i.test(String((error as Error | undefined)?.message));

/** `work`, a full database or disk answering 507 `storage_full` that names `store`. */
export async function roomIn<T>(store: string, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (isFull(error)) {
      throw new HostError("storage_full", `The ${store} is full: its database or disk has no room for this write`);
    }
    throw error;
  }
}

/** The row's columns of a record or patch: its summary, and each large field given, with their sizes. */
function columnsOf(summary: ProcessSummary, large: Partial<Pick<ProcessRecord, LargeField>>, sizes: number[]) {
  const record = JSON.stringify(summary);
  const set: Record<string, string | number | null> = {
    ref: summary.ref ?? null,
    state: summary.state,
    exit_state: summary.exitState,
    record,
  };
  for (const [i, field] of LARGE_FIELDS.entries()) {
    const value = large[field];
    if (value === undefined) continue;
    const text = typeof value === "string" ? value : JSON.stringify(value);
    set[field] = text;
    sizes[i] = utf8Length(text);
  }
  set.sizes = JSON.stringify(sizes);
  // A row written before processes had modules holds four sizes.
  set.bytes = sizes.reduce((sum, size) => sum + (size ?? 0), utf8Length(record));
  return set;
}

/** The large fields `fields` gives. */
const largeOf = (fields: ProcessPatch | ProcessRecord): Partial<Pick<ProcessRecord, LargeField>> =>
  Object.fromEntries(
    LARGE_FIELDS.filter((field) => field in fields).map((field) => [field, (fields as ProcessRecord)[field]]),
  );

const PROCESS_STORE = "process store";

/** Every process record, in the `processes` table. */
export class LibsqlProcessStore implements ProcessStore {
  readonly #db: Client;

  constructor(db: Client) {
    this.#db = db;
  }

  async nextPid(tenant: string): Promise<number> {
    for (;;) {
      const [, counted] = await roomIn(PROCESS_STORE, () =>
        this.#db.batch(
          nextPidStatements(
            tenant,
            newPidTag(() => false),
          ),
          "write",
        ),
      );
      const found = counted?.rows[0];
      if (found !== undefined) return pidOf(Number(found.tag), Number(found.count));
    }
  }

  async create(record: ProcessRecord): Promise<void> {
    const columns = {
      pid: record.pid,
      tenant: record.tenant,
      ...columnsOf(summaryOf(record), largeOf(record), [0, 0, 0, 0]),
    };
    const names = Object.keys(columns);
    const { rowsAffected } = await roomIn(PROCESS_STORE, () =>
      this.#db.execute({
        sql: `INSERT INTO processes (${names.join(", ")}) VALUES (${names.map(() => "?").join(", ")})
              ON CONFLICT(pid) DO NOTHING`,
        args: Object.values(columns),
      }),
    );
    if (rowsAffected === 0) throw new Error(`Process ${record.pid} exists`);
  }

  async get(pid: number): Promise<ProcessRecord | undefined> {
    const { rows } = await this.#db.execute({
      sql: `SELECT record, ${LARGE_FIELDS.join(", ")} FROM processes WHERE pid = ?`,
      args: [pid],
    });
    const found = rows[0];
    if (found === undefined) return undefined;
    return {
      ...(JSON.parse(String(found.record)) as ProcessSummary),
      code: String(found.code),
      stdout: String(found.stdout),
      stderr: String(found.stderr),
      output: JSON.parse(String(found.output)) as Record<string, unknown>,
      ...(found.modules === "" ? {} : { modules: JSON.parse(String(found.modules)) as Record<string, string> }),
    };
  }

  async summary(pid: number): Promise<ProcessSummary | undefined> {
    const { rows } = await this.#db.execute({ sql: "SELECT record FROM processes WHERE pid = ?", args: [pid] });
    return rows[0] === undefined ? undefined : (JSON.parse(String(rows[0].record)) as ProcessSummary);
  }

  /**
   * `substr` counts characters (code points) and hands over only the chunk, and one character more: whether it came
   * says whether another chunk follows, without counting the whole field.
   */
  async read(pid: number, field: LargeField, at: number, size: number): Promise<TextChunk | undefined> {
    const { rows } = await this.#db.execute({
      sql: `SELECT substr(${field}, ?, ?) AS text FROM processes WHERE pid = ?`,
      args: [at + 1, size + 1, pid],
    });
    const found = rows[0];
    if (found === undefined) return undefined;
    const text = String(found.text);
    // Without surrogates, UTF-16 units are characters.
    const characters = /[\uD800-\uDFFF]/.test(text) ? [...text] : undefined;
    if ((characters?.length ?? text.length) <= size) return { text, next: undefined };
    return { text: characters?.slice(0, size).join("") ?? text.slice(0, size), next: at + size };
  }

  /** The summary and sizes read, patched and written back: a record has one writer, the server that runs it. */
  async update(pid: number, patch: ProcessPatch): Promise<boolean> {
    const { rows } = await this.#db.execute({ sql: "SELECT record, sizes FROM processes WHERE pid = ?", args: [pid] });
    const found = rows[0];
    if (found === undefined) return false;
    const summary = summaryOf({ ...(JSON.parse(String(found.record)) as ProcessSummary), ...patch } as ProcessRecord);
    const columns = columnsOf(summary, largeOf(patch), JSON.parse(String(found.sizes)) as number[]);
    const set = Object.keys(columns).map((name) => `${name} = ?`);
    await roomIn(PROCESS_STORE, () =>
      this.#db.execute({
        sql: `UPDATE processes SET ${set.join(", ")} WHERE pid = ?`,
        args: [...Object.values(columns), pid],
      }),
    );
    return true;
  }

  async list(filter: ProcessFilter = {}): Promise<ProcessSummary[]> {
    const { rows } = await this.#db.execute(processListStatement("record", filter));
    return rows.map((found) => JSON.parse(String(found.record)) as ProcessSummary);
  }

  async delete(pid: number): Promise<number | undefined> {
    const { rows } = await this.#db.execute({
      sql: "DELETE FROM processes WHERE pid = ? RETURNING bytes",
      args: [pid],
    });
    return rows[0] === undefined ? undefined : Number(rows[0].bytes);
  }

  async usage(tenant: string): Promise<number> {
    const { rows } = await this.#db.execute({
      sql: "SELECT bytes FROM process_usage WHERE tenant = ?",
      args: [tenant],
    });
    return Number(rows[0]?.bytes ?? 0);
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
      await roomIn("kv store", () => this.#db.batch(decided.statements, "write"));
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
