/**
 * `runcode serve`'s retention sweeps (node/serve/retention.ts) on a real libSQL database file, with an injected clock
 * and Vitest's fake `setTimeout` for the hourly timer: the first sweep at start, the next each hour, statements of
 * 500 rows until none is left, a stop between two of them, and a failed sweep followed by the next.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Client } from "@libsql/client";
import { afterAll, afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { LibsqlProcessStore, openDatabase } from "../../node/serve/libsql-stores.js";
import { SWEEP_BATCH_ROWS, SWEEP_EVERY_MS, sweepEndedProcesses } from "../../node/serve/retention.js";
import type { ProcessRecord } from "../../src/host/processes/storage.js";
import { processRecord } from "../host/processes/records.js";

const DAY = 86_400_000;
/** The injected clock's start. */
const T = 100 * DAY;

const dir = mkdtempSync(join(tmpdir(), "runcode-retention-"));
const opened: Client[] = [];
afterAll(() => {
  for (const db of opened) db.close();
  rmSync(dir, { recursive: true });
});
beforeEach(() => {
  vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
});
afterEach(() => {
  vi.useRealTimers();
});

let databases = 0;
/** A store on a new database file, with the rows each of its sweep statements deleted. */
async function database() {
  const db = await openDatabase(`file:${join(dir, `${++databases}.db`)}`);
  opened.push(db);
  const store = new LibsqlProcessStore(db);
  const deleted: number[] = [];
  const swept = {
    async deleteEndedBefore(time: number, limit: number) {
      const count = await store.deleteEndedBefore(time, limit);
      deleted.push(count);
      return count;
    },
  };
  const pids = async () => (await store.list()).map((r) => r.pid);
  return { store, swept, deleted, pids };
}

/** A process of `tenant` that ended at `finishedAt`. */
const ended = (pid: number, finishedAt: number, tenant = "alpha"): ProcessRecord =>
  processRecord(pid, { tenant, state: "idle", exitState: "success", startedAt: finishedAt - 1, finishedAt });

describe("runcode serve's retention sweeps", () => {
  it("sweeps at start, then hourly: an ended process older than the retention goes, any tenant's; a younger one when it is older; an active one never", async () => {
    const { store, swept, deleted, pids } = await database();
    await store.create(ended(1, T - DAY - 1));
    await store.create(ended(2, T - DAY));
    await store.create(ended(3, T - 1_000));
    await store.create(processRecord(4, { state: "running", createdAt: T - 9 * DAY, startedAt: T - 9 * DAY }));
    await store.create(processRecord(5, { state: "queued", runs: 2, createdAt: T - 9 * DAY }));
    await store.create(ended(6, T - 2 * DAY, "beta"));
    await store.create(ended(7, T - 1_000, "beta"));
    let now = T;
    const errors: unknown[] = [];
    const sweeps = sweepEndedProcesses(swept, { retentionMs: DAY, clock: () => now, onError: (e) => errors.push(e) });
    await vi.waitFor(() => expect(deleted).toEqual([2]));
    expect(await pids()).toEqual([2, 3, 4, 5, 7]);

    // Each sweep an hour after the last; the clock says how old each end is (exactly the retention is not older).
    now = T + 1;
    await vi.advanceTimersByTimeAsync(SWEEP_EVERY_MS);
    await vi.waitFor(() => expect(deleted).toEqual([2, 1]));
    expect(await pids()).toEqual([3, 4, 5, 7]);
    now = T + DAY - 999;
    await vi.advanceTimersByTimeAsync(SWEEP_EVERY_MS);
    await vi.waitFor(() => expect(deleted).toEqual([2, 1, 2]));
    expect(await pids()).toEqual([4, 5]);

    // Stopped, it sweeps no more, whatever expires.
    await sweeps.stop();
    await store.update(4, { state: "idle", exitState: "success", finishedAt: T });
    now = T + 30 * DAY;
    await vi.advanceTimersByTimeAsync(10 * SWEEP_EVERY_MS);
    expect([deleted, await pids(), errors]).toEqual([[2, 1, 2], [4, 5], []]);
  });

  it("deletes in statements of 500 rows until none is left, and a stop ends the sweep after the statement under way", async () => {
    const { store, swept, deleted, pids } = await database();
    for (let pid = 1; pid <= 2 * SWEEP_BATCH_ROWS + 201; pid++) await store.create(ended(pid, T - 2 * DAY));
    await store.create(ended(9_999, T));
    const sweeps = sweepEndedProcesses(swept, {
      retentionMs: DAY,
      clock: () => T,
      onError: (e) => expect.fail(String(e)),
    });
    await vi.waitFor(() => expect(deleted).toEqual([500, 500, 201]));
    expect(await pids()).toEqual([9_999]);
    await sweeps.stop();

    for (let pid = 1; pid <= 2 * SWEEP_BATCH_ROWS + 201; pid++) await store.create(ended(10_000 + pid, T - 2 * DAY));
    deleted.length = 0;
    const stopped = sweepEndedProcesses(swept, {
      retentionMs: DAY,
      clock: () => T,
      onError: (e) => expect.fail(String(e)),
    });
    await stopped.stop();
    expect(deleted).toEqual([500]);
    expect(await pids()).toHaveLength(1 + SWEEP_BATCH_ROWS + 201);
  });

  it("a failed sweep goes to onError, and the next one, an hour later, sweeps again", async () => {
    const { store, pids } = await database();
    await store.create(ended(1, T - 2 * DAY));
    const errors: unknown[] = [];
    let fails = true;
    const flaky = {
      deleteEndedBefore: (time: number, limit: number) =>
        fails ? Promise.reject(new Error("SQLITE_BUSY: database is locked")) : store.deleteEndedBefore(time, limit),
    };
    const sweeps = sweepEndedProcesses(flaky, { retentionMs: DAY, clock: () => T, onError: (e) => errors.push(e) });
    await vi.waitFor(() => expect(errors).toEqual([new Error("SQLITE_BUSY: database is locked")]));
    fails = false;
    await vi.advanceTimersByTimeAsync(SWEEP_EVERY_MS);
    await vi.waitFor(async () => expect(await pids()).toEqual([]));
    await sweeps.stop();
    expect(errors).toHaveLength(1);
  });
});
