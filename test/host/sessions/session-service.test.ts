import { describe, expect, test } from "vitest";
import { INSTANCE_BOOT_FUEL } from "../../../src/core/host-fuel.js";
import { HostError } from "../../../src/host/errors.js";
import { DEFAULT_SESSION_LIMITS, type SessionLimits } from "../../../src/host/sessions/limits.js";
import { MAX_WAITING_CELLS, SessionService } from "../../../src/host/sessions/session-service.js";
import { MemorySessionStore } from "../../../src/host/sessions/store.js";
import type { JsonObject } from "../../../src/values/json.js";
import { toWire } from "../../../src/values/wire.js";
import { fakeEngine } from "./fake-engine.js";

const DAY_MS = 86_400_000;

function setUp(options: { limits?: Partial<SessionLimits>; maxLive?: number } = {}) {
  const engine = fakeEngine();
  const store = new MemorySessionStore();
  const clock = { now: 1_000_000 };
  const service = new SessionService({
    store,
    engine,
    limits: { ...DEFAULT_SESSION_LIMITS, ...options.limits },
    defaultMemoryLimitBytes: 1_000_000,
    now: () => clock.now,
    ...(options.maxLive === undefined ? {} : { maxLive: options.maxLive }),
  });
  const cell = async (tenant: string, id: string, source: string) =>
    (await (await service.run(tenant, id, { source })).answer).result;
  return { engine, store, clock, service, cell };
}

/** The refusal `work` throws: its code, status, message and headers. */
async function refusal(work: Promise<unknown>) {
  const error = await work.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(HostError);
  const { code, status, message, headers } = error as HostError;
  return { code, status, message, headers };
}

describe("SessionService", () => {
  test("a realm lost during a cell (its thread died) answers the cell, keeps the stored state, and comes back from it", async () => {
    const { service, cell, engine } = setUp();
    const { id } = await service.create("a", {});
    await cell("a", id, "state.x = 1");
    expect(await cell("a", id, "(state.x = 2, lose(), 'answered')")).toMatchObject({
      status: "success",
      result: "answered",
    });
    expect(engine.restored).toBe(0);
    expect(await cell("a", id, "state.x")).toMatchObject({ status: "success", result: 1 });
    expect(engine.restored).toBe(1);
  });

  test("a cell's settlement with the tenant's CPU share counts its fuel, the realm restored and the state written", async () => {
    const settled: [string, number, number][] = [];
    const budget = {
      reserve: async (_tenant: string, fuel: number) => fuel,
      settle: async (tenant: string, reserved: number, used: number) => {
        settled.push([tenant, reserved, used]);
      },
    };
    const engine = fakeEngine();
    const store = new MemorySessionStore();
    const options = { store, engine, limits: DEFAULT_SESSION_LIMITS, defaultMemoryLimitBytes: 1_000_000 };
    const service = new SessionService({ ...options, cpu: { budget, fuelOf: () => 1_000 }, maxLive: 1 });
    const cell = async (id: string, source: string) => (await (await service.run("a", id, { source })).answer).result;
    const { id } = await service.create("a", {});
    const { id: other } = await service.create("a", {});
    settled.length = 0;
    const bytes = (state: object, cells: number) => JSON.stringify({ state, cells }).length;
    // One session lives at a time: each cell here restores its session from the store (a realm booted for it and
    // the snapshot decoded), and pays for that too.
    await cell(id, "state.x = 1");
    await cell(other, "state.y = 22");
    await cell(id, "state.x");
    expect(settled).toEqual([
      ["a", 1_000, 7 + INSTANCE_BOOT_FUEL + bytes({}, 0) + bytes({ x: 1 }, 1)],
      ["a", 1_000, 7 + INSTANCE_BOOT_FUEL + bytes({}, 0) + bytes({ y: 22 }, 1)],
      ["a", 1_000, 7 + INSTANCE_BOOT_FUEL + bytes({ x: 1 }, 1) + bytes({ x: 1 }, 2)],
    ]);
  });

  test("a creation (its realm's boot, its first snapshot) and a fork (its copy) are charged to the tenant's share before the work", async () => {
    const settled: [string, number, number][] = [];
    let share = Number.POSITIVE_INFINITY;
    const budget = {
      reserve: async (_tenant: string, fuel: number) => {
        if (fuel > share) throw new HostError("rate_limited", "the share cannot pay");
        return fuel;
      },
      settle: async (tenant: string, reserved: number, used: number) => {
        settled.push([tenant, reserved, used]);
      },
    };
    const engine = fakeEngine();
    const store = new MemorySessionStore();
    const options = { store, engine, limits: DEFAULT_SESSION_LIMITS, defaultMemoryLimitBytes: 1_000_000 };
    const service = new SessionService({ ...options, cpu: { budget, fuelOf: () => 1_000 } });
    const bytes = (state: object, cells: number) => JSON.stringify({ state, cells }).length;
    const { id } = await service.create("a", {});
    await (await service.run("a", id, { source: "state.x = 'x'.repeat(1000)" })).answer;
    settled.length = 0;
    const { id: forked } = await service.fork("a", id);
    await service.open("a", "named");
    const parentBytes = bytes({ x: "x".repeat(1000) }, 1) + "{}".length;
    expect(settled).toEqual([
      ["a", parentBytes, parentBytes],
      ["a", INSTANCE_BOOT_FUEL, INSTANCE_BOOT_FUEL + bytes({}, 0)],
    ]);
    // A share that cannot pay refuses them before anything is made or copied.
    share = 1_000;
    const before = await store.usage("a");
    expect(await refusal(service.fork("a", forked))).toMatchObject({ code: "rate_limited" });
    expect(await refusal(service.create("a", {}))).toMatchObject({ code: "rate_limited" });
    expect(await store.usage("a")).toEqual(before);
    expect(engine.created).toBe(2);
  });

  test("a session keeps its state between cells, and its stored record counts cells and bytes", async () => {
    const { service, cell, clock, store } = setUp();
    const reads: string[] = [];
    const get = store.get.bind(store);
    store.get = (tenant, id) => {
      reads.push(id);
      return get(tenant, id);
    };
    const { id } = await service.create("a", {});
    expect(id).toMatch(/^[0-9a-f]{32}$/);
    clock.now += 5;
    expect(await cell("a", id, "state.x = 41")).toMatchObject({ status: "success", result: 41 });
    expect(await cell("a", id, "state.x + 1")).toMatchObject({ status: "success", result: 42 });
    // A live session's cells read no snapshot from the store.
    expect(reads).toEqual([]);
    const snapshotBytes = JSON.stringify({ state: { x: 41 }, cells: 2 }).length;
    expect(await service.get("a", id)).toEqual({
      id,
      createdAt: 1_000_000,
      lastUsedAt: 1_000_005,
      cells: 2,
      bytes: snapshotBytes + "{}".length,
    });
  });

  test("another tenant's id is answered exactly as an unknown one, by every method", async () => {
    const { service, cell } = setUp();
    const { id } = await service.create("a", {});
    await cell("a", id, "state.secret = 1");
    const unknown = "0".repeat(32);
    for (const target of [id, unknown]) {
      const expected = { code: "not_found", status: 404, message: `No session "${target}"`, headers: {} };
      expect(await refusal(service.get("b", target))).toEqual(expected);
      expect(await refusal(service.run("b", target, { source: "state.secret" }))).toEqual(expected);
      expect(await refusal(service.fork("b", target))).toEqual(expected);
      expect(await refusal(service.delete("b", target))).toEqual(expected);
    }
    expect(await service.list("b")).toEqual({ sessions: [], next: null });
    expect(await cell("a", id, "state.secret")).toMatchObject({ result: 1 });
    expect(await refusal(service.get("a", "not-an-id"))).toMatchObject({ code: "not_found" });
  });

  test("at the tenant's count of sessions, creations and forks are refused with 429 until one is deleted", async () => {
    const { service } = setUp({ limits: { perTenant: 2 } });
    const first = await service.create("a", {});
    await service.create("a", {});
    const tooMany = {
      code: "too_many_sessions",
      status: 429,
      message: "This tenant keeps 2 sessions, its most (2): delete one first",
      headers: {},
    };
    expect(await refusal(service.create("a", {}))).toEqual(tooMany);
    expect(await refusal(service.fork("a", first.id))).toEqual(tooMany);
    expect(await refusal(service.open("a", "notes"))).toEqual(tooMany);
    await service.create("b", {});
    await service.delete("a", first.id);
    await service.create("a", {});
    expect((await service.list("a")).sessions).toHaveLength(2);
  });

  test("a cell whose state would pass the tenant's storage is answered as SessionStorageFull, its effects undone", async () => {
    const { service, cell, engine } = setUp({ limits: { bytesPerTenant: 100 } });
    const { id } = await service.create("a", {});
    await cell("a", id, "state.x = 1");
    const before = await service.get("a", id);
    const grown = await cell("a", id, "(console.log, state.big = 'y'.repeat(200), 5)");
    expect(grown).toEqual({
      status: "error",
      reports: [],
      logs: [],
      durationMs: 1,
      fuelUsed: 7,
      error: {
        name: "SessionStorageFull",
        message: `The session's state (${JSON.stringify({ state: { x: 1, big: "y".repeat(200) }, cells: 2 }).length + 2} bytes) would pass this tenant's storage for sessions (0 of 100 bytes used): the cell's effects were undone`,
      },
    });
    expect(await service.get("a", id)).toEqual(before);
    // The realm that went past it was closed; the next cell restores the stored state.
    expect(await cell("a", id, "[state.x, state.big]")).toMatchObject({ result: [1, undefined] });
    expect(engine.restored).toBe(1);
    // A session whose first state passes it is never stored.
    const full = setUp({ limits: { bytesPerTenant: 10 } });
    expect(await refusal(full.service.create("a", {}))).toEqual({
      code: "session_storage_full",
      status: 413,
      message: "The session's state (24 bytes) would pass this tenant's storage for sessions (0 of 10 bytes used)",
      headers: {},
    });
    expect(await full.store.usage("a")).toEqual({ count: 0, bytes: 0 });
    // Nor a fork that would pass it.
    const forking = setUp({ limits: { bytesPerTenant: 45 } });
    const parent = await forking.service.create("a", {});
    expect(await refusal(forking.service.fork("a", parent.id))).toEqual({
      code: "session_storage_full",
      status: 413,
      message: "The session's state (24 bytes) would pass this tenant's storage for sessions (24 of 45 bytes used)",
      headers: {},
    });
    expect(await forking.store.usage("a")).toEqual({ count: 1, bytes: 24 });
  });

  test("a cell the store has no room for is answered as SessionStorageFull, its effects undone", async () => {
    const { service, cell, store } = setUp();
    const { id } = await service.create("a", {});
    await cell("a", id, "state.x = 1");
    const put = store.put.bind(store);
    store.put = async () => {
      throw new HostError("storage_full", "The session store is full: its database or disk has no room for this write");
    };
    expect(await cell("a", id, "state.x = 2")).toMatchObject({
      status: "error",
      error: {
        name: "SessionStorageFull",
        message:
          "The session store is full: its database or disk has no room for this write: the cell's effects were undone",
      },
    });
    store.put = put;
    expect(await cell("a", id, "state.x")).toMatchObject({ result: 1 });
  });

  test("cells past the tenant's rate are refused with Retry-After until the bucket refills", async () => {
    const { service, cell, clock } = setUp({ limits: { cellsPerMinute: 2 } });
    const { id } = await service.create("a", {});
    const other = await service.create("b", {});
    await cell("a", id, "1");
    await cell("a", id, "2");
    expect(await refusal(service.run("a", id, { source: "3" }))).toEqual({
      code: "rate_limited",
      status: 429,
      message: "This tenant may start 2 session cells per minute: retry in 30 s",
      headers: { "retry-after": "30" },
    });
    expect(await cell("b", other.id, "3")).toMatchObject({ result: 3 });
    clock.now += 30_000;
    expect(await cell("a", id, "3")).toMatchObject({ result: 3 });
  });

  test("the sweep deletes the sessions idle past the TTL and keeps the others", async () => {
    const { service, cell, clock, store } = setUp({ limits: { idleMs: 7 * DAY_MS } });
    const idle = await service.create("a", {});
    const used = await service.create("b", {});
    clock.now += 7 * DAY_MS;
    expect(await service.sweepIdle()).toBe(0);
    await cell("b", used.id, "1");
    clock.now += 1;
    expect(await service.sweepIdle()).toBe(1);
    expect(await refusal(service.get("a", idle.id))).toMatchObject({ code: "not_found" });
    expect(await service.get("b", used.id)).toMatchObject({ cells: 1 });
    expect(await store.usage("a")).toEqual({ count: 0, bytes: 0 });
  });

  test("past the live count the least recently used session is closed and resumes from its snapshot", async () => {
    const { service, cell, engine } = setUp({ maxLive: 1 });
    const a = await service.create("t", {});
    await cell("t", a.id, "state.n = 'a'");
    const b = await service.create("t", {});
    expect(engine.closed).toBe(1);
    await cell("t", b.id, "state.n = 'b'");
    expect(await cell("t", a.id, "state.n")).toMatchObject({ result: "a" });
    expect(engine.restored).toBe(1);
    expect(engine.closed).toBe(2);
    expect(await cell("t", b.id, "state.n")).toMatchObject({ result: "b" });
    expect(engine.restored).toBe(2);
  });

  test("past the live count a tenant's many sessions make its own go back to storage, not another tenant's", async () => {
    const { service, cell, engine } = setUp({ maxLive: 2 });
    const kept = await service.create("b", {});
    await cell("b", kept.id, "state.n = 'b'");
    const many = [];
    for (let i = 0; i < 4; i++) {
      const { id } = await service.create("a", {});
      await cell("a", id, `state.n = ${i}`);
      many.push(id);
    }
    // Tenant a's sessions took turns in memory; tenant b's stayed live, though used least recently.
    expect(await cell("b", kept.id, "state.n")).toMatchObject({ result: "b" });
    expect(engine.restored).toBe(0);
    expect(await cell("a", many[0] as string, "state.n")).toMatchObject({ result: 0 });
    expect(engine.restored).toBe(1);
  });

  test("a fork is independent of its parent, and takes its state after the parent's queued cells", async () => {
    const { service, cell } = setUp();
    const parent = await service.create("a", { name: "main" });
    const slow = service.run("a", parent.id, {
      source: "new Promise((resolve) => setTimeout(() => resolve(state.x = 1), 20))",
    });
    const child = await service.fork("a", parent.id);
    await (await slow).answer;
    await cell("a", child.id, "state.x = 'child'");
    await cell("a", parent.id, "state.x = 'parent'");
    expect(await cell("a", child.id, "state.x")).toMatchObject({ result: "child" });
    expect(await cell("a", parent.id, "state.x")).toMatchObject({ result: "parent" });
    const { name, ...forked } = await service.get("a", child.id);
    expect(name).toBeUndefined();
    expect(forked.cells).toBe(3);
    expect((await service.get("a", parent.id)).name).toBe("main");
  });

  test("a session's cells run one at a time, in order, and a full line is refused", async () => {
    const { service, cell, engine } = setUp();
    const { id } = await service.create("a", { options: { globals: { order: [] } } });
    const started = [];
    for (let i = 0; i < MAX_WAITING_CELLS + 1; i++) {
      started.push(
        service.run("a", id, {
          source: `new Promise((resolve) => setTimeout(() => resolve(state.order.push(${i})), ${i === 0 ? 20 : 1}))`,
        }),
      );
    }
    expect(await refusal(service.run("a", id, { source: "0" }))).toEqual({
      code: "session_busy",
      status: 429,
      message: `Session ${id} has ${MAX_WAITING_CELLS} cells waiting: retry shortly`,
      headers: { "retry-after": "1" },
    });
    for (const run of started) await (await run).answer;
    expect(engine.maxRunning).toBe(1);
    expect(await cell("a", id, "state.order")).toMatchObject({
      result: Array.from({ length: MAX_WAITING_CELLS + 1 }, (_, i) => i),
    });
  });

  test("open gets the tenant's session of a name or creates it; create refuses a taken name", async () => {
    const { service } = setUp();
    const first = await service.open("a", "scratch");
    expect(first.created).toBe(true);
    expect(await service.open("a", "scratch")).toEqual({ id: first.id, created: false });
    expect((await service.open("b", "scratch")).created).toBe(true);
    expect(await refusal(service.create("a", { name: "scratch" }))).toEqual({
      code: "invalid_request",
      status: 400,
      message: 'This tenant has a session named "scratch"',
      headers: {},
    });
    expect(await refusal(service.open("a", "x".repeat(65)))).toMatchObject({ code: "invalid_request" });
  });

  test("options are checked, decoded from the wire, and given again on restore", async () => {
    const { service, cell, engine } = setUp({ maxLive: 1 });
    expect(await refusal(service.create("a", { options: { fetch: true } as never }))).toEqual({
      code: "invalid_request",
      status: 400,
      message: "Unknown option 'fetch': a session takes memoryLimitBytes, modules, globals, imports",
      headers: {},
    });
    expect(await refusal(service.create("a", { options: { memoryLimitBytes: 2 ** 40 } }))).toMatchObject({
      code: "invalid_request",
    });
    const { id } = await service.create("a", {
      options: { globals: toWire({ big: 12n }) as JsonObject, memoryLimitBytes: 4_000_000 },
    });
    await service.create("a", {});
    expect(await cell("a", id, "typeof state.big")).toMatchObject({ result: "bigint" });
    expect(engine.options.at(-1)).toEqual({
      tenant: "a",
      memoryLimitBytes: 4_000_000,
      globals: { big: 12n },
      imports: {},
    });
    const answered = await (await service.run("a", id, { source: "1" })).answer;
    expect(answered.maxLength).toBe(4_000_000);
  });

  test("the caller's events are streamed, and a deleted session's running cell is ended", async () => {
    const { service, cell } = setUp();
    const { id } = await service.create("a", {});
    const events: unknown[] = [];
    await (await service.run("a", id, { source: "'hi'" }, { onEvent: (event) => events.push(event) })).answer;
    expect(events).toEqual([{ type: "log", level: "log", data: '{"level":"log","args":["hi"],"timestamp":0}' }]);
    const forever = await service.run("a", id, { source: "new Promise(() => {})" });
    const waiting = service.run("a", id, { source: "1" });
    await service.delete("a", id);
    expect((await forever.answer).result).toMatchObject({
      status: "terminated",
      error: { message: "The session was deleted" },
    });
    expect(await refusal(waiting)).toMatchObject({ code: "not_found" });
    expect(await refusal(cell("a", id, "1"))).toMatchObject({ code: "not_found" });
    expect(await refusal(service.delete("a", id))).toMatchObject({ code: "not_found" });
  });

  test("stop ends running cells, keeps their state, and refuses new work", async () => {
    const { service, store, engine } = setUp();
    const { id } = await service.create("a", {});
    const forever = await service.run("a", id, { source: "(state.x = 1, new Promise(() => {}))" });
    const waiting = service.run("a", id, { source: "state.y = 2" });
    await service.stop("stopping");
    expect((await forever.answer).result).toMatchObject({ status: "terminated" });
    expect(await refusal(waiting)).toMatchObject({ code: "overloaded", status: 503 });
    expect(engine.closed).toBe(1);
    expect((await store.get("a", id))?.cells).toBe(1);
    expect(await refusal(service.create("a", {}))).toMatchObject({ code: "overloaded", status: 503 });
  });

  test("a listing is the tenant's, a page at a time", async () => {
    const { service } = setUp();
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await service.create("a", {})).id);
    await service.create("b", {});
    ids.sort();
    const first = await service.list("a", { limit: 2 });
    expect(first.sessions.map((s) => s.id)).toEqual(ids.slice(0, 2));
    const second = await service.list("a", { limit: 2, cursor: first.next as string });
    expect(second.sessions.map((s) => s.id)).toEqual(ids.slice(2, 4));
    const last = await service.list("a", { limit: 2, cursor: second.next as string });
    expect(last).toEqual({ sessions: [expect.objectContaining({ id: ids[4] })], next: null });
    expect(await refusal(service.list("a", { limit: 0 }))).toMatchObject({ code: "invalid_request" });
  });
});
