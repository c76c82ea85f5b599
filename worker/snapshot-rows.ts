/**
 * A session's snapshot in its Durable Object's SQLite, as rows of at most {@link SNAPSHOT_ROW_BYTES}: a row (and a
 * BLOB) may hold at most 2 MB there, and a snapshot holds a session's whole memory (up to its heap limit and more).
 * Its writer replaces every row within one synchronous transaction (`transactionSync`, with the record that describes
 * the state), so a reader (the object after an eviction) finds the old snapshot or the new one whole, never a mix.
 * @module
 */

/** Bytes of one row: half the platform's 2 MB cap on a row. */
export const SNAPSHOT_ROW_BYTES = 1 << 20;

export class SnapshotRows {
  readonly #sql: SqlStorage;

  constructor(sql: SqlStorage) {
    this.#sql = sql;
    sql.exec("CREATE TABLE IF NOT EXISTS snapshot (seq INTEGER PRIMARY KEY, bytes BLOB NOT NULL)");
  }

  /** Replaces the stored snapshot with `bytes` (within the caller's transaction). */
  write(bytes: Uint8Array): void {
    this.delete();
    for (let at = 0, seq = 0; at < bytes.length; at += SNAPSHOT_ROW_BYTES, seq++) {
      // `slice` copies: SQLite binds an ArrayBuffer whole, never a view's window.
      this.#sql.exec(
        "INSERT INTO snapshot (seq, bytes) VALUES (?, ?)",
        seq,
        bytes.slice(at, at + SNAPSHOT_ROW_BYTES).buffer,
      );
    }
  }

  /** The stored snapshot, or `undefined` when there is none. */
  read(): Uint8Array | undefined {
    const rows = this.#sql.exec<{ bytes: ArrayBuffer }>("SELECT bytes FROM snapshot ORDER BY seq").toArray();
    if (rows.length === 0) return undefined;
    const bytes = new Uint8Array(rows.reduce((sum, row) => sum + row.bytes.byteLength, 0));
    let at = 0;
    for (const row of rows) {
      bytes.set(new Uint8Array(row.bytes), at);
      at += row.bytes.byteLength;
    }
    return bytes;
  }

  delete(): void {
    this.#sql.exec("DELETE FROM snapshot");
  }
}
