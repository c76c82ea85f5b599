import { describe, expect, test } from "vitest";
import { transition } from "../../../src/host/processes/states.js";
import { HOST_STATES, MemoryProcessStore, type ProcessRecord } from "../../../src/host/processes/storage.js";

describe("state machine", () => {
  test("exactly the diagram's transitions (+ idle -> queued for a re-run); duplicates and nonsense are told apart", () => {
    const table = Object.fromEntries(
      HOST_STATES.map((from) => [from, Object.fromEntries(HOST_STATES.map((to) => [to, transition(from, to)]))]),
    );
    expect(table).toEqual({
      idle: { idle: "duplicate", queued: "apply", running: "reject", terminating: "reject" },
      queued: { idle: "apply", queued: "duplicate", running: "apply", terminating: "reject" },
      running: { idle: "apply", queued: "reject", running: "duplicate", terminating: "apply" },
      terminating: { idle: "apply", queued: "reject", running: "reject", terminating: "duplicate" },
    });
  });
});

const record = (pid: number, patch: Partial<ProcessRecord> = {}): ProcessRecord => ({
  pid,
  tenant: "anonymous",
  state: "idle",
  exitState: null,
  code: "1",
  timeoutMs: 1000,
  output: {},
  stdout: "",
  stderr: "",
  error: null,
  truncated: { stdout: false, stderr: false, output: false },
  runs: 1,
  createdAt: 0,
  startedAt: null,
  finishedAt: null,
  ...patch,
});

describe("MemoryProcessStore", () => {
  test("pids ascend by one within a tenant and are never reused, even after a delete", async () => {
    const store = new MemoryProcessStore();
    const a = await store.nextPid("anonymous");
    await store.create(record(a));
    expect(await store.delete(a)).toBe(true);
    expect(await store.delete(a)).toBe(false);
    expect([await store.nextPid("anonymous"), await store.nextPid("anonymous")]).toEqual([a + 1, a + 2]);
  });

  test("a tenant's pids count its own processes only: another's 1,000 creations leave no trace in them", async () => {
    const quiet = new MemoryProcessStore();
    const busy = new MemoryProcessStore();
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
    const store = new MemoryProcessStore();
    const original = record(1, { ref: "x" });
    await store.create(original);
    original.stdout = "mutated";
    const got = (await store.get(1)) as ProcessRecord;
    got.output.a = 1;
    expect(await store.get(1)).toEqual(record(1, { ref: "x" }));
    await expect(store.create(record(1))).rejects.toThrow("Process 1 exists");
    expect(await store.update(1, { state: "queued", stdout: "s" })).toEqual(
      record(1, { ref: "x", state: "queued", stdout: "s" }),
    );
    expect(await store.update(9, { state: "queued" })).toBeUndefined();
    await store.create(record(3, { exitState: "failed" }));
    await store.create(record(2, { exitState: "success", ref: "x" }));
    expect((await store.list()).map((r) => r.pid)).toEqual([1, 2, 3]);
    expect((await store.list({ ref: "x" })).map((r) => r.pid)).toEqual([1, 2]);
    expect((await store.list({ exitState: "failed" })).map((r) => r.pid)).toEqual([3]);
    expect((await store.list({ state: "queued" })).map((r) => r.pid)).toEqual([1]);
    expect((await store.list({ limit: 2 })).map((r) => r.pid)).toEqual([1, 2]);
  });
});

describe("MemoryProcessStore order", () => {
  test("records created out of pid order still list in pid order, and the limit stops the walk", async () => {
    const store = new MemoryProcessStore();
    for (const pid of [2, 5, 1, 4, 3]) await store.create(record(pid));
    expect((await store.list()).map((r) => r.pid)).toEqual([1, 2, 3, 4, 5]);
    expect((await store.list({ limit: 2 })).map((r) => r.pid)).toEqual([1, 2]);
    expect(await store.list({ limit: 0 })).toEqual([]);
  });
});
