/**
 * Sessions on the edge, inside workerd: each session in a `SessionObject` of its own, its state kept in the object's
 * SQLite after every cell (so an object restarted resumes where the answers left it), forks in objects of their own,
 * ids that only their tenant reaches, the tenant's quotas counted in the registry, and the idle TTL by the object's
 * alarm. Quotas are reached by seeding the registry's rows rather than by changing the deployment's figures; each
 * test removes what it seeded and the sessions it made.
 */
import { env, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { safetyCapWithin } from "../../src/core/limits.js";
import { SETTING_DEFAULTS } from "../../src/host/limits.js";
import type { SessionInfo, SessionPage } from "../../src/host/sessions/backend.js";
import { DEFAULT_SESSION_LIMITS } from "../../src/host/sessions/limits.js";
import type { JsonValue } from "../../src/values/json.js";
import { fromWire } from "../../src/values/wire.js";
import type { RegistryObject } from "../../worker/registry.js";
import { edgeSessions } from "../../worker/sessions.js";
import { SNAPSHOT_ROW_BYTES } from "../../worker/snapshot-rows.js";
import { as } from "./client.js";
import { holdKvGets } from "./hold-kv.js";

const alpha = as("alpha");
const beta = as("beta");
type Fetcher = typeof alpha;
const DAY = 86_400_000;
const IDLE_MS = Number(SETTING_DEFAULTS.RUNCODE_SESSION_IDLE_DAYS) * DAY;

const registry = () => env.REGISTRY.get(env.REGISTRY.idFromName("registry"));
const post = (
  fetcher: Fetcher,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
  signal?: AbortSignal,
) =>
  fetcher(path, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    ...(signal === undefined ? {} : { signal }),
  });

async function create(fetcher: Fetcher = alpha, body: unknown = {}): Promise<string> {
  const response = await post(fetcher, "/sessions", body);
  expect(response.status).toBe(201);
  return ((await response.json()) as { id: string }).id;
}

interface CellResult {
  status: string;
  result?: unknown;
  error?: { name: string; message: string };
  logs: { level: string; args: unknown[] }[];
}

async function cell(id: string, source: string, fetcher: Fetcher = alpha): Promise<CellResult> {
  const response = await post(fetcher, `/sessions/${id}/run`, { source, language: "javascript" });
  expect(response.status).toBe(200);
  return fromWire((await response.json()) as JsonValue) as CellResult;
}

const value = async (id: string, source: string, fetcher: Fetcher = alpha) => {
  const answered = await cell(id, source, fetcher);
  expect(answered.status).toBe("success");
  return answered.result;
};

const remove = async (id: string, fetcher: Fetcher = alpha) =>
  expect((await fetcher(`/sessions/${id}`, { method: "DELETE" })).status).toBe(204);

/** The object that holds the tenant's session `id`, by the registry's row. */
async function objectOf(tenant: string, id: string) {
  const entry = await registry().sessionEntry(tenant, id);
  if (entry === null) throw new Error(`no session ${id}`);
  return env.SESSIONS.get(env.SESSIONS.idFromString(entry.object));
}

/** What is left in a session's object: its record and snapshot rows, its alarm. */
const traces = (object: Awaited<ReturnType<typeof objectOf>>) =>
  runInDurableObject(object, async (_object, state) => ({
    records: state.storage.sql.exec<{ n: number }>("SELECT count(*) AS n FROM session").one().n,
    snapshotRows: state.storage.sql.exec<{ n: number }>("SELECT count(*) AS n FROM snapshot").one().n,
    alarm: await state.storage.getAlarm(),
  }));

/** Rows in the registry for `tenant` that stand for sessions it does not have: its quotas' usage, seeded. */
const seedRows = (tenant: string, rows: { id: string; bytes: number }[]) =>
  runInDurableObject(registry(), (_object, state) => {
    for (const { id, bytes } of rows) {
      state.storage.sql.exec(
        "INSERT INTO sessions (tenant, id, object, name, bytes, info) VALUES (?, ?, 'none', NULL, ?, '{}')",
        tenant,
        id,
        bytes,
      );
    }
  });
const unseed = (tenant: string) =>
  runInDurableObject(registry(), (_object, state) => {
    state.storage.sql.exec("DELETE FROM sessions WHERE tenant = ? AND object = 'none'", tenant);
  });

const notFound = (id: string) => ({ error: { code: "not_found", message: `No session ${JSON.stringify(id)}` } });

describe("sessions on the edge", () => {
  it("keeps a cell's declarations for the next request: let x = 41, then x + 1 is 42; GET and the listing tell its cells", async () => {
    const id = await create();
    expect(id).toMatch(/^[0-9a-f]{32}$/);
    expect(await cell(id, "let x = 41")).toMatchObject({ status: "success", result: undefined });
    expect(await value(id, "x + 1")).toBe(42);
    const info = (await (await alpha(`/sessions/${id}`)).json()) as SessionInfo;
    expect(info).toMatchObject({ id, cells: 2 });
    expect(info.bytes).toBeGreaterThan(0);
    expect(info.lastUsedAt).toBeGreaterThanOrEqual(info.createdAt);
    const listed = (await (await alpha("/sessions?limit=1000")).json()) as SessionPage;
    expect(listed.sessions.find((s) => s.id === id)).toEqual(info);
    await remove(id);
  });

  it("streams a cell's events as Server-Sent Events, then its result", async () => {
    const id = await create();
    await value(id, "let n = 1");
    const response = await post(
      alpha,
      `/sessions/${id}/run`,
      { source: "console.log('seen', n); report(n + 1); n + 2", language: "javascript" },
      { accept: "text/event-stream" },
    );
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toMatch(/^text\/event-stream\b/);
    const events = (await response.text())
      .trim()
      .split("\n\n")
      .map((block) => {
        const [event, data] = block.split("\n") as [string, string];
        return { event: event.slice("event: ".length), data: JSON.parse(data.slice("data: ".length)) };
      });
    expect(events.map((e) => e.event)).toEqual(["log", "report", "result"]);
    expect(events[0]?.data).toMatchObject({ level: "log", args: ["seen", 1] });
    expect(events[1]?.data).toBe(2);
    expect(events[2]?.data).toMatchObject({ status: "success", result: 3 });
    await remove(id);
  });

  it("a fork lives in an object of its own with the parent's state; changing one never changes the other", async () => {
    const parent = await create();
    await value(parent, "const list = [1]; let label = 'parent'");
    const response = await post(alpha, `/sessions/${parent}/fork`);
    expect(response.status).toBe(201);
    const { id: child } = (await response.json()) as { id: string };
    expect(child).not.toBe(parent);
    const [parentObject, childObject] = await Promise.all([objectOf("alpha", parent), objectOf("alpha", child)]);
    expect(parentObject.id.equals(childObject.id)).toBe(false);

    expect(await value(child, "list.push(2); label = 'child'; list.join()")).toBe("1,2");
    expect(await value(parent, "list.join() + ' ' + label")).toBe("1 parent");
    expect(await value(child, "list.join() + ' ' + label")).toBe("1,2 child");
    await remove(parent);
    expect(await value(child, "list.length")).toBe(2);
    await remove(child);
  });

  it("DELETE leaves nothing: 404 after on every route, no registry row, no rows or alarm in its object", async () => {
    const id = await create();
    await value(id, "let kept = 1");
    const object = await objectOf("alpha", id);
    expect(await traces(object)).toMatchObject({ records: 1 });
    await remove(id);
    for (const response of [
      await alpha(`/sessions/${id}`),
      await post(alpha, `/sessions/${id}/run`, { source: "kept" }),
      await post(alpha, `/sessions/${id}/fork`),
      await alpha(`/sessions/${id}`, { method: "DELETE" }),
    ]) {
      expect([response.status, await response.json()]).toEqual([404, notFound(id)]);
    }
    expect(await registry().sessionEntry("alpha", id)).toBeNull();
    expect(await traces(object)).toEqual({ records: 0, snapshotRows: 0, alarm: null });
  });

  it("another tenant's id answers 404 exactly as an unknown one, on every route, and is in no listing of theirs", async () => {
    const id = await create(alpha);
    await value(id, "let secret = 'alpha'");
    const unknown = "0".repeat(32);
    for (const probe of [id, unknown]) {
      for (const response of [
        await beta(`/sessions/${probe}`),
        await post(beta, `/sessions/${probe}/run`, { source: "secret" }),
        await post(beta, `/sessions/${probe}/fork`),
        await beta(`/sessions/${probe}`, { method: "DELETE" }),
      ]) {
        expect([response.status, await response.json()]).toEqual([404, notFound(probe)]);
      }
    }
    const listed = (await (await beta("/sessions?limit=1000")).json()) as SessionPage;
    expect(listed.sessions.map((s) => s.id)).not.toContain(id);
    expect(await value(id, "secret")).toBe("alpha");
    await remove(id);
  });

  it("an object restarted (its memory gone) resumes from its stored snapshot: the next cell sees the same state", async () => {
    const id = await create();
    await value(id, "let x = 41; var seen = []; function more(n) { seen.push(n); return x + n; }");
    expect(await value(id, "more(1)")).toBe(42);
    const object = await objectOf("alpha", id);
    const before = await traces(object);
    expect(before.snapshotRows).toBeGreaterThan(0);
    // The object goes away as an eviction or a deploy takes it: its next request constructs it anew.
    const first = await runInDurableObject(object, (instance) => instance);
    await runInDurableObject(object, (_object, state) => state.abort("evicted by the test")).catch(() => {});
    expect(await value(id, "more(2) + ' ' + seen.join()")).toBe("43 1,2");
    // A stub of the aborted object stays broken: a new one reaches its new instance.
    expect(await runInDurableObject(await objectOf("alpha", id), (instance) => instance === first)).toBe(false);
    const info = (await (await alpha(`/sessions/${id}`)).json()) as SessionInfo;
    expect(info.cells).toBe(3);
    await remove(id);
  });

  it("a snapshot larger than a row is stored in rows of SNAPSHOT_ROW_BYTES, read back whole after a restart and forked whole", async () => {
    const id = await create();
    // Random bytes do not compress: the snapshot takes more than one row.
    const sum = await value(
      id,
      "const data = new Uint8Array(1536 * 1024); for (let at = 0; at < data.length; at += 65536) crypto.getRandomValues(data.subarray(at, at + 65536)); const sumOf = (d) => d.reduce((s, b) => (s * 31 + b) >>> 0, 7); sumOf(data)",
    );
    const object = await objectOf("alpha", id);
    const rows = await runInDurableObject(object, (_object, state) =>
      state.storage.sql.exec<{ size: number }>("SELECT length(bytes) AS size FROM snapshot ORDER BY seq").toArray(),
    );
    expect(rows.length).toBeGreaterThanOrEqual(2);
    expect(rows.slice(0, -1).every((row) => row.size === SNAPSHOT_ROW_BYTES)).toBe(true);
    await runInDurableObject(object, (_object, state) => state.abort("evicted by the test")).catch(() => {});
    expect(await value(id, "sumOf(data)")).toBe(sum);
    // A fork's copy crosses to its new object as a stream, whatever its size.
    const { id: child } = (await (await post(alpha, `/sessions/${id}/fork`)).json()) as { id: string };
    expect(await value(child, "sumOf(data)")).toBe(sum);
    await remove(child);
    await remove(id);
  });

  it("open (MCP's `session`) gets the tenant's session of a name or creates it; each tenant's names are its own", async () => {
    const sessions = edgeSessions(env, DEFAULT_SESSION_LIMITS);
    const name = `notebook-${crypto.randomUUID()}`;
    const opened = await sessions.open("alpha", name);
    expect(opened.created).toBe(true);
    expect(await sessions.open("alpha", name)).toEqual({ id: opened.id, created: false });
    await value(opened.id, "let page = 1");
    const theirs = await sessions.open("beta", name);
    expect(theirs.created).toBe(true);
    expect(theirs.id).not.toBe(opened.id);
    const taken = await post(alpha, "/sessions", { name });
    expect(taken.status).toBe(400);
    expect(await taken.json()).toEqual({
      error: { code: "invalid_request", message: `This tenant has a session named ${JSON.stringify(name)}` },
    });
    expect(await sessions.get("alpha", opened.id)).toMatchObject({ id: opened.id, name, cells: 1 });
    await remove(opened.id);
    await remove(theirs.id, beta);

    // Opened at once in several objects: one session of the name, which every call answers.
    const racing = `racing-${crypto.randomUUID()}`;
    const before = (await registry().sessionUsage("alpha")).count;
    const answers = await Promise.all(Array.from({ length: 4 }, () => sessions.open("alpha", racing)));
    expect(new Set(answers.map((a) => a.id)).size).toBe(1);
    expect(answers.filter((a) => a.created)).toHaveLength(1);
    expect((await registry().sessionUsage("alpha")).count).toBe(before + 1);
    await remove((answers[0] as { id: string }).id);
  });

  it("a client that goes away ends its cell; the session keeps what the cell did before and takes the next at once", async () => {
    const id = await create();
    const hold = await holdKvGets();
    try {
      // The backend as the routes call it, with the signal a request's end aborts (the test pool's client never
      // cancels a request it abandons).
      const gone = new AbortController();
      const events: string[] = [];
      const { answer } = await edgeSessions(env, DEFAULT_SESSION_LIMITS).run(
        "alpha",
        id,
        {
          source:
            "var mark = 'started'; const { get } = await import('kv'); console.log(mark); await get({ key: 'k' }); mark = 'finished'",
          language: "javascript",
          timeoutMs: 60_000,
        },
        { signal: gone.signal, onEvent: (event) => events.push(event.type) },
      );
      while (events.length === 0) await new Promise((resolve) => setTimeout(resolve, 10));
      gone.abort();
      // Past the test's own timeout if the cell ran on to its 60 s.
      const { result } = await answer;
      expect([events, result.status]).toEqual([["log"], "terminated"]);
      expect(await value(id, "mark")).toBe("started");
    } finally {
      hold.release();
    }
    await remove(id);
  });

  it("paged listing: ascending by id, `next` the cursor of the following page, null on the last", async () => {
    const ids = [await create(beta), await create(beta), await create(beta)].sort();
    const first = (await (await beta("/sessions?limit=2")).json()) as SessionPage;
    expect(first.sessions.map((s) => s.id)).toEqual(ids.slice(0, 2));
    expect(first.next).toBe(ids[1]);
    const second = (await (await beta(`/sessions?limit=2&cursor=${first.next}`)).json()) as SessionPage;
    expect([second.sessions.map((s) => s.id), second.next]).toEqual([ids.slice(2), null]);
    for (const id of ids) await remove(id, beta);
  });
});

describe("quotas per tenant, counted in the registry", () => {
  it("RUNCODE_SESSIONS_PER_TENANT: a creation or a fork at the count is 429 too_many_sessions", async () => {
    const id = await create(beta);
    const perTenant = Number(SETTING_DEFAULTS.RUNCODE_SESSIONS_PER_TENANT);
    await seedRows(
      "beta",
      Array.from({ length: perTenant - 1 }, (_, i) => ({ id: `seeded${i}`, bytes: 0 })),
    );
    try {
      for (const response of [await post(beta, "/sessions", {}), await post(beta, `/sessions/${id}/fork`)]) {
        expect(response.status).toBe(429);
        expect(((await response.json()) as { error: { code: string } }).error.code).toBe("too_many_sessions");
      }
      // Another tenant's count is its own.
      await remove(await create(alpha));
    } finally {
      await unseed("beta");
    }
    await remove(id, beta);
  });

  it("RUNCODE_SESSION_BYTES_PER_TENANT: a creation past it is 413; a cell past it is answered SessionStorageFull, its effects undone", async () => {
    const bytesPerTenant = Number(SETTING_DEFAULTS.RUNCODE_SESSION_BYTES_PER_TENANT);
    const id = await create(beta);
    await value(id, "let kept = 'before'", beta);
    const { bytes } = (await (await beta(`/sessions/${id}`)).json()) as SessionInfo;
    // Room for this session as it is, give or take a few KiB of how its state compresses, and less than a new one's
    // snapshot or 60,000 random bytes more.
    await seedRows("beta", [{ id: "seeded", bytes: bytesPerTenant - bytes - 8192 }]);
    try {
      const refused = await post(beta, "/sessions", {});
      expect(refused.status).toBe(413);
      expect(((await refused.json()) as { error: { code: string } }).error.code).toBe("session_storage_full");
      const grown = await cell(
        id,
        "kept = 'after'; globalThis.big = crypto.getRandomValues(new Uint8Array(60000)); 1",
        beta,
      );
      expect(grown.status).toBe("error");
      expect(grown.error?.name).toBe("SessionStorageFull");
      expect(await value(id, "kept + ' ' + typeof big", beta)).toBe("before undefined");
    } finally {
      await unseed("beta");
    }
    await remove(id, beta);
  });

  it("creations at once past the count: the registry counts them one after another, so exactly the room is taken", async () => {
    const perTenant = Number(SETTING_DEFAULTS.RUNCODE_SESSIONS_PER_TENANT);
    await seedRows(
      "beta",
      Array.from({ length: perTenant - 2 }, (_, i) => ({ id: `seeded${i}`, bytes: 0 })),
    );
    const made: string[] = [];
    try {
      const responses = await Promise.all(Array.from({ length: 6 }, () => post(beta, "/sessions", {})));
      const answers = await Promise.all(responses.map(async (r) => [r.status, await r.json()] as const));
      for (const [status, body] of answers) if (status === 201) made.push((body as { id: string }).id);
      expect(answers.map(([status]) => status).sort()).toEqual([201, 201, 429, 429, 429, 429]);
      expect(await registry().sessionUsage("beta")).toMatchObject({ count: perTenant });
    } finally {
      await unseed("beta");
      for (const id of made) await remove(id, beta);
    }
  });

  it("cells of two sessions at once past the bytes: one is kept, the other answered SessionStorageFull and undone", async () => {
    const bytesPerTenant = Number(SETTING_DEFAULTS.RUNCODE_SESSION_BYTES_PER_TENANT);
    const ids = [await create(beta), await create(beta)];
    const { bytes } = await registry().sessionUsage("beta");
    // Room for one of them to grow by 60,000 random bytes (some 120 KB of snapshot with the heap's own), not both.
    await seedRows("beta", [{ id: "seeded", bytes: bytesPerTenant - bytes - 180_000 }]);
    try {
      const answers = await Promise.all(
        ids.map((id) => cell(id, "globalThis.big = crypto.getRandomValues(new Uint8Array(60000)); 'grown'", beta)),
      );
      expect(answers.map((a) => a.error?.name ?? a.result).sort()).toEqual(["SessionStorageFull", "grown"]);
      expect((await registry().sessionUsage("beta")).bytes).toBeLessThanOrEqual(bytesPerTenant);
      const kept = await Promise.all(ids.map((id) => value(id, "typeof big", beta)));
      expect(kept.sort()).toEqual(["object", "undefined"]);
    } finally {
      await unseed("beta");
    }
    for (const id of ids) await remove(id, beta);
  });

  it("RUNCODE_SESSION_CELLS_PER_MINUTE: a cell past the tenant's bucket is 429 with Retry-After and runs nothing", async () => {
    const id = await create(beta);
    await value(id, "let ran = 0", beta);
    await runInDurableObject(registry(), (_object, state) => {
      state.storage.sql.exec("UPDATE session_cells SET tokens = 0, at = ? WHERE tenant = 'beta'", Date.now());
    });
    const refused = await post(beta, `/sessions/${id}/run`, { source: "ran++" });
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    expect(((await refused.json()) as { error: { message: string } }).error.message).toMatch(
      /session cells per minute/,
    );
    // Another tenant's cells are their own.
    const other = await create(alpha);
    expect(await value(other, "1")).toBe(1);
    await remove(other);
    await runInDurableObject(registry(), (_object, state) => {
      state.storage.sql.exec("DELETE FROM session_cells WHERE tenant = 'beta'");
    });
    expect(await value(id, "ran", beta)).toBe(0);
    await remove(id, beta);
  });

  it("a cell's fuel cap is reserved from the tenant's share of CPU in the registry, as a run's, and settled with what it used", async () => {
    const id = await create(beta);
    // RPC calls methods of the class: held on the registry's prototype, restored after.
    type Cpu = Pick<RegistryObject, "reserveCpu" | "settleCpu">;
    let prototype!: Cpu;
    await runInDurableObject(registry(), (object) => {
      prototype = Object.getPrototypeOf(object) as Cpu;
    });
    const original = { reserveCpu: prototype.reserveCpu, settleCpu: prototype.settleCpu };
    const calls: unknown[][] = [];
    prototype.reserveCpu = function (this: Cpu, ...args) {
      calls.push(["reserve", args[0], args[1]]);
      return original.reserveCpu.apply(this, args);
    };
    prototype.settleCpu = function (this: Cpu, ...args) {
      calls.push(["settle", args[0], args[1], args[2]]);
      return original.settleCpu.apply(this, args);
    };
    let answered: CellResult & { fuelUsed?: number };
    try {
      const response = await post(beta, `/sessions/${id}/run`, {
        source: "let spent = 0; for (let i = 0; i < 1000; i++) spent += i; spent",
        timeoutMs: 500,
      });
      answered = fromWire((await response.json()) as JsonValue) as typeof answered;
    } finally {
      Object.assign(prototype, original);
    }
    expect([answered.status, answered.result]).toEqual(["success", 499500]);
    // The test pool's RUN_CPU_MS and RUN_FUEL (vitest.workers.config.ts), within the cell's 500 ms.
    const fuel = safetyCapWithin(500, { cpuTimeMs: 2000, fuel: 1_000_000_000 }).fuel;
    // Settled with its fuel and the host's work on its state: the snapshot stored after it (the record's bytes, less
    // its options' JSON, `{}`); nothing was restored, the session being live in its object.
    const { bytes } = (await (await beta(`/sessions/${id}`)).json()) as SessionInfo;
    expect(calls).toEqual([
      ["reserve", "beta", fuel],
      ["settle", "beta", fuel, (answered.fuelUsed as number) + bytes - "{}".length],
    ]);
    await remove(id, beta);
  });
});

describe("the idle TTL (RUNCODE_SESSION_IDLE_DAYS), by the session object's alarm", () => {
  /** Moves the session's last use `ms` back in its object's record, as if that much time had passed. */
  const age = (object: Awaited<ReturnType<typeof objectOf>>, ms: number) =>
    runInDurableObject(object, (_object, state) => {
      state.storage.sql.exec(
        "UPDATE session SET record = json_set(record, '$.lastUsedAt', json_extract(record, '$.lastUsedAt') - ?)",
        ms,
      );
    });

  it("each write sets the alarm for the last use plus the TTL; past it, the alarm deletes the session as DELETE does", async () => {
    const id = await create();
    await value(id, "let x = 1");
    const object = await objectOf("alpha", id);
    const { lastUsedAt } = (await (await alpha(`/sessions/${id}`)).json()) as SessionInfo;
    expect((await traces(object)).alarm).toBe(lastUsedAt + IDLE_MS);

    await age(object, IDLE_MS + 1);
    expect(await runDurableObjectAlarm(object)).toBe(true);
    const response = await alpha(`/sessions/${id}`);
    expect([response.status, await response.json()]).toEqual([404, notFound(id)]);
    expect(await registry().sessionEntry("alpha", id)).toBeNull();
    expect(await traces(object)).toEqual({ records: 0, snapshotRows: 0, alarm: null });
  });

  it("a session used since is kept, its alarm set again for its new expiry", async () => {
    const id = await create();
    const object = await objectOf("alpha", id);
    await age(object, IDLE_MS - 60_000);
    expect(await runDurableObjectAlarm(object)).toBe(true);
    const { lastUsedAt } = (await (await alpha(`/sessions/${id}`)).json()) as SessionInfo;
    expect((await traces(object)).alarm).toBe(lastUsedAt - (IDLE_MS - 60_000) + IDLE_MS);
    expect(await value(id, "2")).toBe(2);
    await remove(id);
  });
});
