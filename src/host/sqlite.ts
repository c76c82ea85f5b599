/**
 * The SQL both SQLite hosts run: the edge's Durable Objects (their synchronous `SqlStorage`) and `runcode serve`
 * (libSQL, a file or a server). Statements are text with bound values, never values spliced into SQL, so each host
 * runs them with its own driver: `sql.exec(sql, ...args)` there, `client.execute({ sql, args })` here.
 * @module
 */
import { type KeyValueQuota, type KeyValueQuotaError, type KeyValueUsage, overQuota } from "../tools/kv-store.js";
import { utf8Length } from "../values/json.js";
import type { ProcessFilter } from "./processes/storage.js";

/** One statement and its bound values. */
export interface Statement {
  sql: string;
  args: (string | number | null)[];
}

/** Each tenant's pid tag and how many pids it was handed (`pidOf`). */
export const PID_TAGS_TABLE =
  "CREATE TABLE IF NOT EXISTS pid_tags (tenant TEXT PRIMARY KEY, tag INTEGER NOT NULL UNIQUE, count INTEGER NOT NULL)";

/**
 * `tenant`'s next pid, as two statements to run in one transaction: the first gives a new tenant the drawn `tag`
 * unless another tenant has it; the second counts one more pid and answers `tag, count`, or no row when the tag was
 * taken (draw another and run both again).
 */
export function nextPidStatements(tenant: string, tag: number): [Statement, Statement] {
  return [
    {
      sql: `INSERT INTO pid_tags (tenant, tag, count) SELECT ?1, ?2, 0
            WHERE NOT EXISTS (SELECT 1 FROM pid_tags WHERE tenant = ?1 OR tag = ?2)`,
      args: [tenant, tag],
    },
    { sql: "UPDATE pid_tags SET count = count + 1 WHERE tenant = ? RETURNING tag, count", args: [tenant] },
  ];
}

/**
 * Indexes of a `processes` table with `tenant`, `state`, `exit_state` and `ref` columns and the pid as its rowid.
 * Every listing names its tenant: each index leads with it (and ends in the rowid, for the order).
 */
export const PROCESS_INDEXES = `
  CREATE INDEX IF NOT EXISTS processes_tenant_state ON processes (tenant, state);
  CREATE INDEX IF NOT EXISTS processes_tenant_exit_state ON processes (tenant, exit_state);
  CREATE INDEX IF NOT EXISTS processes_tenant_ref ON processes (tenant, ref);
  CREATE INDEX IF NOT EXISTS processes_active ON processes (state) WHERE state != 'idle';
`;

/**
 * `columns` of the `processes` rows matching `filter`, ascending by pid, at most `limit`. Only the conditions given
 * are written, so SQLite walks an index of the filtered columns in pid order and stops at the limit instead of
 * testing every row.
 */
export function processListStatement(columns: string, filter: ProcessFilter): Statement {
  const conditions: string[] = [];
  const args: (string | number)[] = [];
  for (const [column, value] of [
    ["pid >", filter.after],
    ["tenant =", filter.tenant],
    ["state =", filter.state],
    ["exit_state =", filter.exitState],
    ["ref =", filter.ref],
  ] as const) {
    if (value === undefined) continue;
    conditions.push(`${column} ?`);
    args.push(value);
  }
  const where = conditions.length === 0 ? "" : `WHERE ${conditions.join(" AND ")}`;
  return { sql: `SELECT ${columns} FROM processes ${where} ORDER BY pid LIMIT ?`, args: [...args, filter.limit ?? -1] };
}

/**
 * The smallest string above every string that starts with `prefix`, in SQLite's order (UTF-8 bytes, which is code
 * point order): `prefix` with its last code point raised by one. `undefined` when there is none. Not
 * `prefix + U+FFFF`, which keys continuing with a character beyond U+FFFF sort after (an emoji does, in UTF-8).
 */
function prefixEnd(prefix: string): string | undefined {
  const points = [...prefix];
  while (points.length > 0) {
    const last = (points.pop() as string).codePointAt(0) as number;
    if (last < 0x10ffff) {
      // Surrogate code points are not characters (and UTF-8 has none): skip over them.
      const next = last + 1 === 0xd800 ? 0xe000 : last + 1;
      return points.join("") + String.fromCodePoint(next);
    }
  }
  return undefined;
}

/**
 * Which rows of the `kv` and `kv_usage` tables are one store's, as column values: none and `{ id: 1 }` on the edge
 * (a table per tenant's object), `{ tenant }` and `{ tenant }` in `runcode serve`'s one database.
 */
interface KvScope {
  kv: Record<string, string | number>;
  usage: Record<string, string | number>;
}

/** UTF-8 bytes of a `kv` row: its key and its value's JSON text (what quotas count). */
const ROW_BYTES = "length(CAST(key AS BLOB)) + length(CAST(value AS BLOB))";

/** `WHERE` conditions on `columns` (`TRUE` for none), followed by `more`. */
const where = (columns: Record<string, unknown>, ...more: string[]) =>
  `WHERE ${[...Object.keys(columns).map((column) => `${column} = ?`), ...more].join(" AND ") || "TRUE"}`;

/** The `kv` service's statements over a `kv (key, value)` table and a `kv_usage (keys, bytes)` row, within `scope`. */
export function kvStatements(scope: KvScope) {
  const kvColumns = Object.keys(scope.kv);
  const inKv = Object.values(scope.kv);
  const usageColumns = Object.keys(scope.usage);
  const inUsage = Object.values(scope.usage);
  const placeholders = (count: number) => Array.from({ length: count }, () => "?").join(", ");
  const put = (key: string, text: string): Statement => ({
    sql: `INSERT INTO kv (${[...kvColumns, "key", "value"].join(", ")}) VALUES (${placeholders(kvColumns.length + 2)})
          ON CONFLICT(${[...kvColumns, "key"].join(", ")}) DO UPDATE SET value = excluded.value`,
    args: [...inKv, key, text],
  });
  const count = (keys: number, bytes: number): Statement => ({
    sql: `UPDATE kv_usage SET keys = keys + ?, bytes = bytes + ? ${where(scope.usage)}`,
    args: [keys, bytes, ...inUsage],
  });
  return {
    get: (key: string): Statement => ({
      sql: `SELECT value FROM kv ${where(scope.kv, "key = ?")}`,
      args: [...inKv, key],
    }),
    /** The value's bytes (`bytes`), or no row. */
    valueBytes: (key: string): Statement => ({
      sql: `SELECT length(CAST(value AS BLOB)) AS bytes FROM kv ${where(scope.kv, "key = ?")}`,
      args: [...inKv, key],
    }),
    /**
     * Storing `value` under `key`, decided: the statements that write and count it (to run in one transaction), or
     * the refusal when it would take the store past `quota`. `old`: the stored value's bytes ({@link valueBytes}),
     * `undefined` for an absent key; `usage`: the store's, read with it.
     */
    write(
      key: string,
      value: unknown,
      old: number | undefined,
      usage: KeyValueUsage,
      quota?: KeyValueQuota,
    ): { refusal: KeyValueQuotaError } | { statements: Statement[] } {
      const text = JSON.stringify(value);
      if (text === undefined) throw new TypeError("kv values must be JSON values");
      const keyBytes = utf8Length(key);
      const size = keyBytes + utf8Length(text);
      const oldSize = old === undefined ? undefined : keyBytes + old;
      const refusal = overQuota(usage, oldSize, size, quota);
      if (refusal !== undefined) return { refusal };
      return { statements: [put(key, text), count(old === undefined ? 1 : 0, size - (oldSize ?? 0))] };
    },
    /** Deleting the row of `key`, whose value has `old` bytes ({@link valueBytes}), and counting it (one transaction). */
    removal: (key: string, old: number): Statement[] => [
      { sql: `DELETE FROM kv ${where(scope.kv, "key = ?")}`, args: [...inKv, key] },
      count(-1, -(utf8Length(key) + old)),
    ],
    /** Deletes the row and answers its size (`bytes`), or no row. */
    delete: (key: string): Statement => ({
      sql: `DELETE FROM kv ${where(scope.kv, "key = ?")} RETURNING ${ROW_BYTES} AS bytes`,
      args: [...inKv, key],
    }),
    /** Keys from the primary-key index, at most `limit` (-1: all) of them read. */
    keys(prefix: string, limit: number): Statement {
      const end = prefixEnd(prefix);
      // Two statements, not `(?2 IS NULL OR key < ?2)`: with the OR, the scan ran past the prefix to the table's end.
      return end === undefined
        ? {
            sql: `SELECT key FROM kv ${where(scope.kv, "key >= ?")} ORDER BY key LIMIT ?`,
            args: [...inKv, prefix, limit],
          }
        : {
            sql: `SELECT key FROM kv ${where(scope.kv, "key >= ?", "key < ?")} ORDER BY key LIMIT ?`,
            args: [...inKv, prefix, end, limit],
          };
    },
    /** Counts the store's rows into its usage row, unless it has one. */
    seedUsage: (): Statement => ({
      sql: `INSERT OR IGNORE INTO kv_usage (${[...usageColumns, "keys", "bytes"].join(", ")})
            SELECT ${placeholders(usageColumns.length)}, count(*), coalesce(sum(${ROW_BYTES}), 0) FROM kv ${where(scope.kv)}`,
      args: [...inUsage, ...inKv],
    }),
    usage: (): Statement => ({ sql: `SELECT keys, bytes FROM kv_usage ${where(scope.usage)}`, args: inUsage }),
    /** Adds `keys` and `bytes` to the usage row. */
    count,
  };
}
