/**
 * The storage ports' implementations, each held to the same tests: in memory, and on libSQL (`runcode serve`'s
 * stores, on a real database file). Then what only a database shows: reopening it, its SQL, writes that race.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Client } from "@libsql/client";
import { afterAll, describe, expect, test } from "vitest";
import { LibsqlProcessStore, libsqlKeyValueStores, openDatabase } from "../../node/serve/libsql-stores.js";
import type { HostError } from "../../src/host/errors.js";
import { CUT_OFF_BY_RESTART, failCutOffRuns } from "../../src/host/processes/restarts.js";
import {
  MemoryProcessStore,
  type ProcessRecord,
  type ProcessStore,
  summaryOf,
} from "../../src/host/processes/storage.js";
import { KeyValueQuotaError, type KeyValueStore, MemoryKeyValueStore } from "../../src/tools/kv-store.js";
import { processRecord } from "../host/processes/records.js";

const dir = mkdtempSync(join(tmpdir(), "runcode-stores-"));
const opened: Client[] = [];
afterAll(() => {
  for (const db of opened) db.close();
  rmSync(dir, { recursive: true });
});

let databases = 0;
/** A new database file; `open` opens it (again). */
function database() {
  const url = `file:${join(dir, `${++databases}.db`)}`;
  return async () => {
    const db = await openDatabase(url);
    opened.push(db);
    return db;
  };
}

const processStores: [string, () => Promise<ProcessStore>][] = [
  ["memory", async () => new MemoryProcessStore()],
  ["libSQL", async () => new LibsqlProcessStore(await database()())],
];
const kvStores: [string, () => Promise<KeyValueStore>][] = [
  ["memory", async () => new MemoryKeyValueStore()],
  ["libSQL", async () => libsqlKeyValueStores(await database()())("alpha")],
];

const record = processRecord;
/** UTF-8 bytes of a record's summary as JSON: what a store keeps of it besides its large fields. */
const summaryBytes = (r: ProcessRecord) => new TextEncoder().encode(JSON.stringify(summaryOf(r))).length;

describe.each(processStores)("ProcessStore: %s", (_name, make) => {
  test("pids ascend by one within a tenant and are never reused, even after a delete", async () => {
    const store = await make();
    const a = await store.nextPid("anonymous");
    await store.create(record(a));
    // The bytes it freed: the code's ("1"), the empty output's JSON ("{}") and the summary's JSON.
    expect(await store.delete(a)).toBe(3 + summaryBytes(record(a)));
    expect(await store.delete(a)).toBeUndefined();
    expect([await store.nextPid("anonymous"), await store.nextPid("anonymous")]).toEqual([a + 1, a + 2]);
  });

  test("a tenant's pids count its own processes only: another's 1,000 creations leave no trace in them", async () => {
    const quiet = await make();
    const busy = await make();
    for (let i = 0; i < 1_000; i++) await busy.nextPid("other");
    const pids = [quiet, busy].map(async (store) => [await store.nextPid("me"), await store.nextPid("me")]);
    const [inQuiet, inBusy] = (await Promise.all(pids)) as [number[], number[]];
    // Each is the tenant's random tag times 2^32 plus its own count: the same counts whatever others did.
    expect(inQuiet.map((pid) => pid % 2 ** 32)).toEqual([1, 2]);
    expect(inBusy.map((pid) => pid % 2 ** 32)).toEqual([1, 2]);
    const other = await busy.nextPid("other");
    expect([other % 2 ** 32, Math.floor(other / 2 ** 32) === Math.floor((inBusy[0] as number) / 2 ** 32)]).toEqual([
      1_001,
      false,
    ]);
    for (const pid of [...inQuiet, ...inBusy, other]) expect(Number.isSafeInteger(pid) && pid > 2 ** 32).toBe(true);
  });

  test("records are copied in and out; update patches; list filters and limits by ascending pid", async () => {
    const store = await make();
    const original = record(1, { ref: "x" });
    await store.create(original);
    original.stdout = "mutated";
    const got = (await store.get(1)) as ProcessRecord;
    got.output.a = 1;
    expect(await store.get(1)).toEqual(record(1, { ref: "x" }));
    await expect(store.create(record(1))).rejects.toThrow("Process 1 exists");
    const patch = { state: "queued", stdout: "s", output: { n: 1 } } as const;
    expect(await store.update(1, patch)).toBe(true);
    expect(await store.get(1)).toEqual(record(1, { ref: "x", ...patch }));
    expect(await store.update(9, { state: "queued" })).toBe(false);
    await store.create(record(3, { exitState: "failed" }));
    await store.create(record(2, { exitState: "success", ref: "x" }));
    expect((await store.list()).map((r) => r.pid)).toEqual([1, 2, 3]);
    expect((await store.list({ ref: "x" })).map((r) => r.pid)).toEqual([1, 2]);
    expect((await store.list({ exitState: "failed" })).map((r) => r.pid)).toEqual([3]);
    expect((await store.list({ state: "queued" })).map((r) => r.pid)).toEqual([1]);
    expect((await store.list({ limit: 2 })).map((r) => r.pid)).toEqual([1, 2]);
    expect((await store.list({ after: 1, limit: 1 })).map((r) => r.pid)).toEqual([2]);
  });

  test("records created out of pid order still list in pid order, and the limit stops the walk", async () => {
    const store = await make();
    for (const pid of [2, 5, 1, 4, 3]) await store.create(record(pid, { tenant: pid % 2 === 0 ? "even" : "odd" }));
    expect((await store.list()).map((r) => r.pid)).toEqual([1, 2, 3, 4, 5]);
    expect((await store.list({ limit: 2 })).map((r) => r.pid)).toEqual([1, 2]);
    expect((await store.list({ tenant: "odd", after: 1 })).map((r) => r.pid)).toEqual([3, 5]);
    expect(await store.list({ limit: 0 })).toEqual([]);
  });

  test("a restart's cut-off runs: every active record ends failed with the restart's message, idle ones are kept", async () => {
    const store = await make();
    await store.create(record(1, { state: "running", startedAt: 5, stdout: "half" }));
    await store.create(record(2, { state: "queued" }));
    await store.create(record(3, { state: "terminating" }));
    await store.create(record(4, { exitState: "success" }));
    expect((await failCutOffRuns(store, 77)).sort()).toEqual([1, 2, 3]);
    const cut = { state: "idle", exitState: "failed", error: CUT_OFF_BY_RESTART, finishedAt: 77 } as const;
    expect(await store.list()).toEqual(
      [
        record(1, { ...cut, startedAt: 5, stdout: "half" }),
        record(2, cut),
        record(3, cut),
        record(4, { exitState: "success" }),
      ].map(summaryOf),
    );
    expect(await failCutOffRuns(store, 78)).toEqual([]);
  });
});

describe.each(processStores)("ProcessStore's large fields: %s", (_name, make) => {
  test("a listing and a summary carry no large field; a chunk of one is read from where the last ended", async () => {
    const store = await make();
    const big = record(1, { code: "c", stdout: `${"é".repeat(5)}😀z`, output: { a: "x".repeat(8) } });
    await store.create(big);
    expect(await store.list()).toEqual([summaryOf(big)]);
    expect(await store.summary(1)).toEqual(summaryOf(big));
    expect(await store.summary(2)).toBeUndefined();
    expect(await store.read(1, "stdout", 0, 5)).toEqual({ text: "ééééé", next: 5 });
    const rest = await store.read(1, "stdout", 5, 5);
    expect(rest?.text).toBe("😀z");
    expect(rest?.next).toBeUndefined();
    expect(await store.read(1, "output", 0, 1000)).toEqual({ text: `{"a":"${"x".repeat(8)}"}`, next: undefined });
    expect(await store.read(1, "stderr", 0, 10)).toEqual({ text: "", next: undefined });
    expect(await store.read(2, "code", 0, 10)).toBeUndefined();
  });

  test("usage: each tenant's UTF-8 bytes of code, streams, output's JSON and summaries, counted with every create, update and delete", async () => {
    const store = await make();
    const usage = (tenant: string) => (store.usage as NonNullable<ProcessStore["usage"]>).call(store, tenant);
    expect(await usage("alpha")).toBe(0);
    const alpha = record(1, { tenant: "alpha", code: "é", stdout: "ab" });
    const beta = record(2, { tenant: "beta", code: "1" });
    await store.create(alpha);
    await store.create(beta);
    // "é" 2, "ab" 2, "{}" 2.
    expect([await usage("alpha"), await usage("beta")]).toEqual([6 + summaryBytes(alpha), 3 + summaryBytes(beta)]);
    await store.update(1, { stdout: "", stderr: "😀", output: { k: 1 } });
    // "é" 2, "😀" 4, '{"k":1}' 7.
    expect(await usage("alpha")).toBe(13 + summaryBytes(alpha));
    await store.update(1, { state: "queued" });
    expect(await usage("alpha")).toBe(13 + summaryBytes({ ...alpha, state: "queued" }));
    expect(await store.delete(1)).toBe(13 + summaryBytes({ ...alpha, state: "queued" }));
    expect([await usage("alpha"), await usage("beta")]).toEqual([0, 3 + summaryBytes(beta)]);
  });

  test("usage counts a summary as stored: its error's JSON text, escapes included, grown and freed by updates", async () => {
    const store = await make();
    const usage = () => (store.usage as NonNullable<ProcessStore["usage"]>).call(store, "anonymous");
    const empty = await usage();
    await store.create(record(1));
    const summary = summaryBytes(record(1));
    // A summary alone is a few hundred bytes: `null` for an error.
    expect(await usage()).toBe(empty + 3 + summary);
    // 10,000 characters of error, each a quote stored as `\"`, and a two-byte one: 20,002 bytes in place of `null`.
    const error = `${'"'.repeat(10_000)}é`;
    await store.update(1, { state: "idle", exitState: "failed", error });
    const failed = record(1, { exitState: "failed", error });
    expect(summaryBytes(failed) - summary).toBe(20_002 + 2 - 4 + "failed".length + 2 - 4);
    expect(await usage()).toBe(empty + 3 + summaryBytes(failed));
    expect(await store.get(1)).toEqual(failed);
    await store.update(1, { error: null, exitState: null });
    expect(await usage()).toBe(empty + 3 + summary);
    await store.update(1, { error });
    expect(await store.delete(1)).toBe(3 + summaryBytes({ ...record(1), error }));
    expect(await usage()).toBe(empty);
  });
});

describe.each(processStores)("ProcessStore's modules: %s", (_name, make) => {
  test("a record's modules are kept, read as their JSON, counted in its tenant's usage; none is an empty field", async () => {
    const store = await make();
    const modules = { "./util.js": "export const n = 'é';" };
    const usage = (tenant: string) => (store.usage as NonNullable<ProcessStore["usage"]>).call(store, tenant);
    await store.create(record(1, { modules }));
    await store.create(record(2));
    expect([await store.get(1), await store.get(2)]).toEqual([record(1, { modules }), record(2)]);
    expect(await store.list()).toEqual([summaryOf(record(1)), summaryOf(record(2))]);
    const json = JSON.stringify(modules);
    expect(await store.read(1, "modules", 0, 1000)).toEqual({ text: json, next: undefined });
    expect(await store.read(2, "modules", 0, 1000)).toEqual({ text: "", next: undefined });
    // "1" 1, "{}" 2, the modules' JSON (its "é" 2 bytes), and the summaries.
    const summaries = summaryBytes(record(1)) + summaryBytes(record(2));
    expect(await usage("anonymous")).toBe(3 + json.length + 1 + 3 + summaries);
    await store.update(1, { state: "queued", stdout: "s" });
    expect(await store.get(1)).toEqual(record(1, { modules, state: "queued", stdout: "s" }));
    expect(await store.delete(1)).toBe(3 + json.length + 1 + 1 + summaryBytes(record(1, { state: "queued" })));
  });
});

describe.each(kvStores)("KeyValueStore: %s", (_name, make) => {
  test("JSON values by key, sorted prefix listing, delete", async () => {
    const kv = await make();
    await kv.set("b", { n: 1 });
    await kv.set("a/1", [1, "x"]);
    await kv.set("a/2", null);
    expect(await kv.get("b")).toEqual({ n: 1 });
    expect(await kv.get("a/2")).toBeNull();
    expect(await kv.get("none")).toBeUndefined();
    expect(await kv.list()).toEqual(["a/1", "a/2", "b"]);
    expect(await kv.list({ prefix: "a/", limit: 1 })).toEqual(["a/1"]);
    expect(await kv.delete("b")).toBe(true);
    expect(await kv.delete("b")).toBe(false);
    await expect(kv.set("u", undefined)).rejects.toThrow("kv values must be JSON values");
  });

  test("keys stay sorted, prefixes list exactly (emoji included), usage follows every write", async () => {
    const kv = await make();
    for (const key of ["b", "a😀", "a", "ab", "a\uffff"]) await kv.set(key, key.length);
    // Code point order, as UTF-8 and SQLite have it: U+FFFF before U+1F600.
    expect(await kv.list({ prefix: "a" })).toEqual(["a", "ab", "a\uffff", "a😀"]);
    expect(await kv.list({ prefix: "a", limit: 2 })).toEqual(["a", "ab"]);
    expect(await kv.list({ prefix: "c" })).toEqual([]);
    expect(await kv.usage?.()).toEqual({ keys: 5, bytes: 1 + 1 + 5 + 1 + 1 + 1 + 2 + 1 + 4 + 1 });
    await kv.set("ab", "xyz");
    expect(await kv.delete("a😀")).toBe(true);
    expect(await kv.usage?.()).toEqual({ keys: 4, bytes: 2 + 2 + 2 + 5 + 4 + 1 });
    await expect(kv.set("c", 1, { maxKeys: 4, maxBytes: 1000 })).rejects.toThrow(
      "quota exceeded: the store may hold at most 4 keys",
    );
    await kv.set("ab", 1, { maxKeys: 4, maxBytes: 1000 });
  });

  test("quotas count UTF-8 bytes of keys and JSON values; a refused write writes nothing; shrinking is allowed", async () => {
    const kv = await make();
    const quota = { maxKeys: 3, maxBytes: 100 };
    await kv.set("a", "€".repeat(13), quota);
    await kv.set("a😀", 1, quota);
    expect(await kv.usage?.()).toEqual({ keys: 2, bytes: 1 + 41 + 5 + 1 });
    await expect(kv.set("b", "y".repeat(60), quota)).rejects.toThrow(new KeyValueQuotaError("bytes", 100, 48 + 1 + 62));
    expect(await kv.get("b")).toBeUndefined();
    await kv.set("b", 2, quota);
    await expect(kv.set("c", 3, quota)).rejects.toThrow("quota exceeded: the store may hold at most 3 keys");
    await kv.set("a", "", { maxKeys: 3, maxBytes: 1 });
    expect(await kv.usage?.()).toEqual({ keys: 3, bytes: 3 + 5 + 1 + 2 });
  });

  test("writes racing for the last room: exactly as many land as fit, and usage counts them", async () => {
    const kv = await make();
    const quota = { maxKeys: 5, maxBytes: 1_000_000 };
    const writes = await Promise.allSettled(Array.from({ length: 20 }, (_, i) => kv.set(`k${i}`, i, quota)));
    expect(writes.filter((w) => w.status === "fulfilled")).toHaveLength(5);
    expect((await kv.list()).length).toBe(5);
    expect((await kv.usage?.())?.keys).toBe(5);
  });
});

describe("libSQL stores", () => {
  test("everything written is there when the database is opened again; tenants' kv values stay apart", async () => {
    const open = database();
    const first = await open();
    const store = new LibsqlProcessStore(first);
    const pid = await store.nextPid("alpha");
    await store.create(record(pid, { tenant: "alpha", ref: "r" }));
    // Streams are decoded from UTF-8, so never hold a lone surrogate: a pair and a line separator survive.
    await store.update(pid, { state: "running", stdout: "é\u2028\ud83d\ude00" });
    await libsqlKeyValueStores(first)("alpha").set("k", { deep: [1, "two"] });
    await libsqlKeyValueStores(first)("beta").set("k", 2);
    first.close();

    const again = await open();
    const reopened = new LibsqlProcessStore(again);
    expect(await reopened.get(pid)).toEqual(
      record(pid, { tenant: "alpha", ref: "r", state: "running", stdout: "é\u2028\ud83d\ude00" }),
    );
    expect(await reopened.nextPid("alpha")).toBe(pid + 1);
    const stores = libsqlKeyValueStores(again);
    expect([await stores("alpha").get("k"), await stores("beta").get("k"), await stores("gamma").get("k")]).toEqual([
      { deep: [1, "two"] },
      2,
      undefined,
    ]);
    expect(await stores("alpha").usage?.()).toEqual({ keys: 1, bytes: 1 + 18 });
    expect(await stores("alpha").list()).toEqual(["k"]);
  });

  test("filter values are bound, never spliced: SQL in a ref or tenant matches nothing and changes nothing", async () => {
    const db = await database()();
    const store = new LibsqlProcessStore(db);
    await store.create(record(1, { ref: "x" }));
    for (const hostile of ["x' OR '1'='1", "'; DROP TABLE processes; --"]) {
      expect(await store.list({ ref: hostile })).toEqual([]);
      expect(await store.list({ tenant: hostile })).toEqual([]);
    }
    expect((await store.list()).map((r) => r.pid)).toEqual([1]);
  });

  test("deleteEndedBefore deletes ended processes that ended before the time, any tenant's, at most `limit`, by an index", async () => {
    const db = await database()();
    const store = new LibsqlProcessStore(db);
    const ended = (finishedAt: number, tenant = "alpha") =>
      ({ tenant, state: "idle", exitState: "success", finishedAt }) as const;
    await store.create(record(1, ended(999)));
    await store.create(record(2, ended(1_000)));
    await store.create(record(3, ended(5_000)));
    await store.create(record(4, { state: "running", startedAt: 0 }));
    await store.create(record(5, { state: "queued", runs: 2 }));
    await store.create(record(6, { state: "terminating", startedAt: 0 }));
    await store.create(record(7, ended(0, "beta")));
    await store.create(record(8, ended(2_000, "beta")));
    expect(await store.deleteEndedBefore(1_000, 1)).toBe(1);
    expect(await store.deleteEndedBefore(1_000, 500)).toBe(1);
    expect(await store.deleteEndedBefore(1_000, 500)).toBe(0);
    expect((await store.list()).map((r) => r.pid)).toEqual([2, 3, 4, 5, 6, 8]);
    expect([await store.get(1), await store.get(7)]).toEqual([undefined, undefined]);
    // The sweep's deletes are counted off each tenant's storage as any delete is (3 bytes and the summary a record).
    const kept = async (pids: number[]) => {
      let bytes = 0;
      for (const pid of pids) bytes += 3 + summaryBytes((await store.get(pid)) as ProcessRecord);
      return bytes;
    };
    expect([await store.usage("alpha"), await store.usage("beta"), await store.usage("anonymous")]).toEqual([
      await kept([2, 3]),
      await kept([8]),
      await kept([4, 5, 6]),
    ]);
    const plan = await db.execute(
      "EXPLAIN QUERY PLAN SELECT pid FROM processes WHERE state = 'idle' AND json_extract(record, '$.finishedAt') < 1 LIMIT 1",
    );
    expect(plan.rows.map((row) => String(row.detail))).toEqual([
      "SEARCH processes USING INDEX processes_ended (<expr><?)",
    ]);
  });

  test("a tenant's usage is counted from its rows when it has no usage row", async () => {
    const db = await database()();
    await libsqlKeyValueStores(db)("alpha").set("kk", "v");
    await db.execute("DELETE FROM kv_usage");
    expect(await libsqlKeyValueStores(db)("alpha").usage?.()).toEqual({ keys: 1, bytes: 2 + 3 });
  });

  test("a listing selects each row's summary only, never a large column", async () => {
    const db = await database()();
    const store = new LibsqlProcessStore(db);
    for (let pid = 1; pid <= 3; pid++) await store.create(record(pid, { stdout: "s".repeat(1_048_576) }));
    const sql: string[] = [];
    const spied = new Proxy(db, {
      get: (target, name) =>
        name === "execute"
          ? (statement: { sql: string }) => {
              sql.push(statement.sql);
              return target.execute(statement);
            }
          : Reflect.get(target, name),
    });
    const summaries = await new LibsqlProcessStore(spied).list({ limit: 2 });
    expect(summaries.map((found) => found.pid)).toEqual([1, 2]);
    expect(sql).toEqual(["SELECT record FROM processes  ORDER BY pid LIMIT ?"]);
    expect(JSON.stringify(summaries).length).toBeLessThan(1_000);
  });

  test("a full database is 507 storage_full naming the process store, and what was stored stays", async () => {
    const db = await database()();
    const store = new LibsqlProcessStore(db);
    await store.create(record(1, { stdout: "kept" }));
    const { rows } = await db.execute("PRAGMA page_count");
    await db.execute(`PRAGMA max_page_count = ${Number(rows[0]?.page_count)}`);
    const error = (await store
      .create(record(2, { stdout: "x".repeat(1_048_576) }))
      .catch((e: unknown) => e)) as HostError;
    expect([error.code, error.status, error.message]).toEqual([
      "storage_full",
      507,
      "The process store is full: its database or disk has no room for this write",
    ]);
    expect(await store.get(1)).toEqual(record(1, { stdout: "kept" }));
    expect(await store.get(2)).toBeUndefined();
  });

  test("a database of whole-record rows (before large fields had columns) is split once on opening, nothing lost", async () => {
    const open = database();
    const old = await open();
    // openDatabase made the table as it is now: remake it as it was, triggers, usage and version gone with it.
    const before = [
      record(1, { tenant: "alpha", ref: "r", code: "é", stdout: "out", output: { a: [1] }, exitState: "success" }),
      record(2, { tenant: "beta", stderr: "err" }),
    ];
    await old.execute("DROP TABLE processes");
    await old.execute(
      "CREATE TABLE processes (pid INTEGER PRIMARY KEY, tenant TEXT NOT NULL, ref TEXT, state TEXT NOT NULL, exit_state TEXT, record TEXT NOT NULL)",
    );
    await old.execute("DROP TABLE process_usage");
    await old.execute("PRAGMA user_version = 0");
    for (const r of before) {
      await old.execute({
        sql: "INSERT INTO processes (pid, tenant, ref, state, exit_state, record) VALUES (?, ?, ?, ?, ?, ?)",
        args: [r.pid, r.tenant, r.ref ?? null, r.state, r.exitState, JSON.stringify(r)],
      });
    }
    old.close();
    const store = new LibsqlProcessStore(await open());
    expect([await store.get(1), await store.get(2)]).toEqual(before);
    expect(await store.list()).toEqual(before.map(summaryOf));
    // "é" 2, "out" 3, '{"a":[1]}' 9; "1" 1, "err" 3, "{}" 2; and the summaries.
    const [alpha, beta] = before.map(summaryBytes) as [number, number];
    expect([await store.usage("alpha"), await store.usage("beta")]).toEqual([14 + alpha, 6 + beta]);
    await store.update(2, { stderr: "" });
    expect(await store.usage("beta")).toBe(3 + beta);
  });

  test("a database made before processes had modules gets their column on opening, its records without any", async () => {
    const open = database();
    const old = await open();
    await old.execute("ALTER TABLE processes DROP COLUMN modules");
    await new LibsqlProcessStore(old).create(record(1, { stdout: "kept" }));
    old.close();
    const store = new LibsqlProcessStore(await open());
    expect(await store.get(1)).toEqual(record(1, { stdout: "kept" }));
    await store.create(record(2, { modules: { "./a.js": "1" } }));
    expect(await store.get(2)).toEqual(record(2, { modules: { "./a.js": "1" } }));
    await store.update(1, { stderr: "e" });
    // "1" 1, "kept" 4, "e" 1, "{}" 2; "1" 1, "{}" 2, '{"./a.js":"1"}' 14; and the summaries.
    expect(await store.usage("anonymous")).toBe(8 + 17 + summaryBytes(record(1)) + summaryBytes(record(2)));
  });

  test("a database whose rows counted large fields only gets their summaries counted on opening, once, nothing lost", async () => {
    const open = database();
    const old = await open();
    const failed = record(1, { tenant: "alpha", exitState: "failed", error: "e".repeat(10_000), stdout: "out" });
    await new LibsqlProcessStore(old).create(failed);
    await new LibsqlProcessStore(old).create(record(2, { tenant: "beta" }));
    // As such a database was: each row's `bytes` and its tenant's usage its large fields' alone, no version.
    await old.batch(
      ["UPDATE processes SET bytes = bytes - length(CAST(record AS BLOB))", "PRAGMA user_version = 0"],
      "write",
    );
    const before = new LibsqlProcessStore(old);
    expect([await before.usage("alpha"), await before.usage("beta")]).toEqual([1 + 3 + 2, 1 + 2]);
    old.close();
    const counted = [1 + 3 + 2 + summaryBytes(failed), 1 + 2 + summaryBytes(record(2, { tenant: "beta" }))];
    for (let opening = 0; opening < 2; opening++) {
      const store = new LibsqlProcessStore(await open());
      expect([await store.usage("alpha"), await store.usage("beta")]).toEqual(counted);
      expect([await store.get(1), await store.get(2)]).toEqual([failed, record(2, { tenant: "beta" })]);
    }
    const store = new LibsqlProcessStore(await open());
    expect(await store.delete(1)).toBe(counted[0]);
    expect([await store.usage("alpha"), await store.usage("beta")]).toEqual([0, counted[1]]);
  });

  test("a database that cannot be opened is an error that says why", async () => {
    await expect(openDatabase(`file:${join(dir, "missing", "x.db")}`)).rejects.toThrow(/unable to open/i);
    await expect(openDatabase("ftp://example.com/db")).rejects.toThrow(
      'supports only "libsql:", "wss:", "ws:", "https:", "http:" and "file:" URLs, got "ftp:"',
    );
  });
});
