/**
 * A process object's store (worker/sql-stores.ts) inside workerd: what it answers for a deleted record is every byte
 * the record kept as the quota counts it, its summary's JSON (the error's text with its escapes) included, measured
 * here by SQLite on the stored row.
 */
import { env, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { LARGE_FIELDS, type ProcessRecord, storedBytesOf } from "../../src/host/processes/storage.js";
import { ObjectProcessStore } from "../../worker/sql-stores.js";
import { processRecord } from "../host/processes/records.js";

const unindexed = { index: async () => {}, remove: async () => {} };

describe("ObjectProcessStore", () => {
  it("a delete answers the bytes of the large fields and of the summary as stored, the error's included", async () => {
    const pid = 7;
    // 10,000 characters of error, each a quote stored as `\"`, with a newline and a two-byte character.
    const record: ProcessRecord = processRecord(pid, {
      state: "idle",
      exitState: "failed",
      error: `${'"'.repeat(10_000)}\né`,
      code: "throw 1",
      stdout: "out",
      output: { a: [1] },
      modules: { "./a.js": "export {}" },
      finishedAt: 1,
    });
    const object = env.PROCESSES.get(env.PROCESSES.idFromName("process-store-bytes"));
    const { freed, measured } = await runInDurableObject(object, async (_object, state) => {
      const store = new ObjectProcessStore(state.storage.sql, () => pid, unindexed);
      await store.create(record);
      // SQLite's own count of the row: each large field's text and the JSON of the rest.
      const fields = LARGE_FIELDS.map((field) =>
        field === "code" || field === "stdout" || field === "stderr"
          ? `json_extract(record, '$.${field}')`
          : `json(json_extract(record, '$.${field}'))`,
      );
      const rest = `json_remove(record, ${LARGE_FIELDS.map((field) => `'$.${field}'`).join(", ")})`;
      const measured = state.storage.sql
        .exec<{ bytes: number }>(
          `SELECT ${[...fields, rest].map((text) => `length(CAST(${text} AS BLOB))`).join(" + ")} AS bytes
           FROM process WHERE pid = ?`,
          pid,
        )
        .one().bytes;
      return { freed: await store.delete(pid), measured };
    });
    expect(freed).toBe(measured);
    expect(freed).toBe(storedBytesOf(record));
    // The error alone is over 20,000 of them.
    expect(freed).toBeGreaterThan(20_004);
  });
});
