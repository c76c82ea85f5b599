/**
 * The `SessionStore` port's implementations held to the same tests: in memory, and on libSQL (`runcode serve`'s, on a
 * real database file, its snapshots in chunks). Then what only a database shows: reopening it.
 */
import { randomFillSync } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Client } from "@libsql/client";
import { afterAll, describe, expect, test } from "vitest";
import { libsqlSessionStore, SNAPSHOT_CHUNK_BYTES } from "../../node/serve/libsql-sessions.js";
import { openDatabase } from "../../node/serve/libsql-stores.js";
import { MemorySessionStore, type SessionStore, type StoredSession } from "../../src/host/sessions/store.js";

const dir = mkdtempSync(join(tmpdir(), "runcode-session-stores-"));
const opened: Client[] = [];
afterAll(() => {
  for (const db of opened) db.close();
  rmSync(dir, { recursive: true });
});

let databases = 0;
async function libsql(url = `file:${join(dir, `${++databases}.db`)}`) {
  const db = await openDatabase(url);
  opened.push(db);
  return { store: await libsqlSessionStore(db), url };
}

const stores: [string, () => Promise<SessionStore>][] = [
  ["memory", async () => new MemorySessionStore()],
  ["libSQL", async () => (await libsql()).store],
];

function session(tenant: string, id: string, fields: Partial<StoredSession> = {}): StoredSession {
  const snapshot = fields.snapshot ?? new Uint8Array([1, 2, 3]);
  return {
    tenant,
    id,
    options: { memoryLimitBytes: 8_000_000, globals: { a: 1 } },
    createdAt: 10,
    lastUsedAt: 20,
    cells: 1,
    bytes: snapshot.byteLength + 40,
    snapshot,
    ...fields,
  };
}

const id = (n: number) => n.toString(16).padStart(32, "0");

describe.each(stores)("SessionStore (%s)", (_name, open) => {
  test("keeps a snapshot of several chunks byte for byte, and replaces it whole", async () => {
    const store = await open();
    const big = randomFillSync(new Uint8Array(2 * SNAPSHOT_CHUNK_BYTES + 5));
    await store.put(session("a", id(1), { name: "main", snapshot: big, bytes: big.byteLength }));
    const { snapshot, ...got } = (await store.get("a", id(1))) as StoredSession;
    // Compared as buffers: a deep equality of 512 KiB takes seconds.
    expect(Buffer.from(snapshot).equals(big)).toBe(true);
    const { snapshot: _s, ...expected } = session("a", id(1), { name: "main", snapshot: big, bytes: big.byteLength });
    expect(got).toEqual(expected);
    await store.put(session("a", id(1), { cells: 2, snapshot: new Uint8Array([9]), bytes: 1 }));
    expect(await store.get("a", id(1))).toEqual(
      session("a", id(1), { cells: 2, snapshot: new Uint8Array([9]), bytes: 1 }),
    );
    expect(await store.named("a", "main")).toBeUndefined();
    expect(await store.usage("a")).toEqual({ count: 1, bytes: 1 });
  });

  test("reads each tenant's own: info, names, pages, usage, deletes", async () => {
    const store = await open();
    for (const n of [3, 1, 2]) await store.put(session("a", id(n), { name: `s${n}` }));
    await store.put(session("b", id(1), { bytes: 7 }));
    expect(await store.info("a", id(2))).toEqual({
      id: id(2),
      name: "s2",
      createdAt: 10,
      lastUsedAt: 20,
      cells: 1,
      bytes: 43,
    });
    expect(await store.info("b", id(2))).toBeUndefined();
    expect(await store.get("b", id(2))).toBeUndefined();
    expect(await store.named("a", "s3")).toBe(id(3));
    expect(await store.named("b", "s3")).toBeUndefined();
    expect((await store.list("a", { limit: 2 })).map((s) => s.id)).toEqual([id(1), id(2)]);
    expect((await store.list("a", { after: id(2), limit: 2 })).map((s) => s.id)).toEqual([id(3)]);
    expect(await store.usage("a")).toEqual({ count: 3, bytes: 129 });
    expect(await store.usage("b")).toEqual({ count: 1, bytes: 7 });
    expect(await store.delete("b", id(2))).toBe(false);
    expect(await store.delete("a", id(2))).toBe(true);
    expect(await store.delete("a", id(2))).toBe(false);
    expect(await store.usage("a")).toEqual({ count: 2, bytes: 86 });
    expect(await store.usage("c")).toEqual({ count: 0, bytes: 0 });
  });

  test("finds the sessions last used before a time, at most a limit", async () => {
    const store = await open();
    await store.put(session("a", id(1), { lastUsedAt: 100 }));
    await store.put(session("b", id(2), { lastUsedAt: 50 }));
    await store.put(session("b", id(3), { lastUsedAt: 200 }));
    const found = await store.expired(101, 10);
    expect(found.sort((x, y) => (x.id < y.id ? -1 : 1))).toEqual([
      { tenant: "a", id: id(1) },
      { tenant: "b", id: id(2) },
    ]);
    expect(await store.expired(101, 1)).toHaveLength(1);
  });
});

test("libSQL: a reopened database holds the sessions, their snapshots and the usage", async () => {
  const first = await libsql();
  const bytes = randomFillSync(new Uint8Array(SNAPSHOT_CHUNK_BYTES + 1));
  await first.store.put(session("a", id(1), { snapshot: bytes, bytes: bytes.byteLength }));
  await first.store.put(session("a", id(2)));
  await first.store.delete("a", id(2));
  const again = await libsql(first.url);
  expect(Buffer.from((await again.store.get("a", id(1)))?.snapshot ?? []).equals(bytes)).toBe(true);
  expect(await again.store.usage("a")).toEqual({ count: 1, bytes: bytes.byteLength });
  const db = opened.at(-1) as Client;
  // The deleted session's chunks went with it.
  expect((await db.execute("SELECT count(*) AS n FROM session_chunks")).rows[0]?.n).toBe(2);
});
