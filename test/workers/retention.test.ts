/**
 * Retention on the edge (`RUNCODE_RETENTION_DAYS` is "1" in vitest.workers.config.ts): a process object's alarm,
 * once the run's watch is served, is set for the process's end plus a day, and then deletes the process as
 * `DELETE /processes/:pid` does. Time passes by moving the stored end back; alarms run at once
 * (`runDurableObjectAlarm`). Each test leaves no alarm behind: alarms outlive a test's storage.
 */
import { env, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { ProcessRecord } from "../../src/host/processes/storage.js";
import { api } from "./client.js";
import { holdKvGets } from "./hold-kv.js";

const DAY = 86_400_000;
const processObject = (pid: number) => env.PROCESSES.get(env.PROCESSES.idFromName(String(pid)));
const registry = () => env.REGISTRY.get(env.REGISTRY.idFromName("registry"));

async function create(code: string): Promise<number> {
  const response = await api("/processes", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ code }),
  });
  expect(response.status).toBe(201);
  return ((await response.json()) as { pid: number }).pid;
}

/** Polls a process until `done` says so of its record. */
async function until(pid: number, done: (record: ProcessRecord) => boolean): Promise<ProcessRecord> {
  for (let i = 0; i < 400; i++) {
    const record = (await (await api(`/processes/${pid}`)).json()) as ProcessRecord;
    if (done(record)) return record;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error(`process ${pid} never got there`);
}
const settled = (pid: number) => until(pid, (r) => r.state === "idle" && r.exitState !== null);

/** The object's alarm (epoch milliseconds), or `null`. */
const alarmOf = (pid: number) => runInDurableObject(processObject(pid), (_object, state) => state.storage.getAlarm());

/** Moves the stored end of the process `ms` back, as if that much time had passed since. */
const age = (pid: number, ms: number) =>
  runInDurableObject(processObject(pid), (_object, state) => {
    state.storage.sql.exec(
      "UPDATE process SET record = json_set(record, '$.finishedAt', json_extract(record, '$.finishedAt') - ?)",
      ms,
    );
  });

/** What is left of the process: its object's rows and alarm, its registry row. */
const traces = async (pid: number) => ({
  rows: await runInDurableObject(
    processObject(pid),
    (_object, state) => state.storage.sql.exec<{ n: number }>("SELECT count(*) AS n FROM process").one().n,
  ),
  alarm: await alarmOf(pid),
  tenant: await registry().tenantOf(pid),
});

const notFound = (pid: number) => ({ error: { code: "not_found", message: `No process ${pid}` } });

describe("retention on the edge (RUNCODE_RETENTION_DAYS)", () => {
  it("an ended process's alarm, after the run's watch, is set for its end plus the retention; past it, it deletes the process as DELETE does", async () => {
    const pid = await create("console.log('kept a day')");
    const ended = await settled(pid);
    expect(await alarmOf(pid)).not.toBeNull();
    expect(await runDurableObjectAlarm(processObject(pid))).toBe(true);
    expect(await alarmOf(pid)).toBe((ended.finishedAt as number) + DAY);
    expect(await (await api(`/processes/${pid}`)).json()).toEqual(ended);

    await age(pid, DAY + 1);
    expect(await runDurableObjectAlarm(processObject(pid))).toBe(true);
    const response = await api(`/processes/${pid}`);
    expect([response.status, await response.json()]).toEqual([404, notFound(pid)]);
    const listed = (await (await api("/processes?limit=1000")).json()) as { processes: ProcessRecord[] };
    expect(listed.processes.map((p) => p.pid)).not.toContain(pid);
    expect(await traces(pid)).toEqual({ rows: 0, alarm: null, tenant: null });

    // What DELETE /processes/:pid leaves of a process is the same.
    const deleted = await create("1");
    await settled(deleted);
    expect((await api(`/processes/${deleted}`, { method: "DELETE" })).status).toBe(204);
    expect(await runDurableObjectAlarm(processObject(deleted))).toBe(true);
    expect(await traces(deleted)).toEqual({ rows: 0, alarm: null, tenant: null });
  });

  it("a younger ended process is kept, its alarm set again for its expiry", async () => {
    const pid = await create("1");
    const ended = await settled(pid);
    expect(await runDurableObjectAlarm(processObject(pid))).toBe(true);
    await age(pid, DAY - 60_000);
    expect(await runDurableObjectAlarm(processObject(pid))).toBe(true);
    expect(await alarmOf(pid)).toBe((ended.finishedAt as number) + 60_000);
    expect((await api(`/processes/${pid}`)).status).toBe(200);
    expect((await api(`/processes/${pid}`, { method: "DELETE" })).status).toBe(204);
    expect(await runDurableObjectAlarm(processObject(pid))).toBe(true);
  });

  it("a running process is never deleted, even when its last run ended longer ago; its expiry counts from its new end", async () => {
    const pid = await create("await cyrnel.services.kv.tools.get.invoke({ key: 'k' }); console.log('ran');");
    await settled(pid);
    expect(await runDurableObjectAlarm(processObject(pid))).toBe(true);
    await age(pid, 2 * DAY);

    const hold = await holdKvGets();
    try {
      expect((await api(`/processes/${pid}/signals/run`, { method: "POST" })).status).toBe(202);
      await until(pid, (r) => r.state === "running");
      expect(await runDurableObjectAlarm(processObject(pid))).toBe(true);
      expect(await until(pid, () => true)).toMatchObject({ state: "running", runs: 2 });
      expect(await alarmOf(pid)).not.toBeNull();
    } finally {
      hold.release();
    }
    const again = await settled(pid);
    expect([again.runs, again.stdout]).toEqual([2, "ran\n"]);
    expect(await runDurableObjectAlarm(processObject(pid))).toBe(true);
    expect(await alarmOf(pid)).toBe((again.finishedAt as number) + DAY);
    expect((await api(`/processes/${pid}`, { method: "DELETE" })).status).toBe(204);
    expect(await runDurableObjectAlarm(processObject(pid))).toBe(true);
  });
});
