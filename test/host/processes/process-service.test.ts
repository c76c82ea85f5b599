import { describe, expect, test } from "vitest";
import type {
  EnvironmentBindings,
  EnvironmentModule,
  ExecutionExitState,
  ExecutionInput,
} from "../../../src/environment/index.js";
import { HostError } from "../../../src/host/errors.js";
import { DEFAULT_RUN_TIMEOUT_MS } from "../../../src/host/limits.js";
import type { ProcessEvent } from "../../../src/host/processes/events.js";
import {
  OUTPUT_TRUNCATED_KEY,
  ProcessService,
  type ProcessServiceOptions,
} from "../../../src/host/processes/process-service.js";
import { STOPPED_BY_HOST } from "../../../src/host/processes/restarts.js";
import {
  CHUNK_CHARS,
  type LargeField,
  MemoryProcessStore,
  type ProcessFilter,
  type ProcessRecord,
  storedBytesOf,
} from "../../../src/host/processes/storage.js";
import { deferred } from "../../environment/helpers.js";
import { processRecord } from "./records.js";

type Script = (input: ExecutionInput, b: EnvironmentBindings) => Promise<ExecutionExitState>;

/** An environment module whose `execute` is a script; `kill` resolves the pending kill promise of that eid. */
function scripted(script: Script) {
  let bindings!: EnvironmentBindings;
  const kills = new Map<number, ReturnType<typeof deferred<void>>>();
  const killed = (eid: number) => {
    if (!kills.has(eid)) kills.set(eid, deferred<void>());
    return (kills.get(eid) as ReturnType<typeof deferred<void>>).promise;
  };
  const calls: string[] = [];
  const module: EnvironmentModule = {
    setup: async (context) => {
      bindings = context.bindings;
      calls.push("setup");
    },
    teardown: async () => {
      calls.push("teardown");
    },
    execute: (input) => script(input, bindings),
    kill: async (eid) => {
      calls.push(`kill ${eid}`);
      killed(eid);
      kills.get(eid)?.resolve();
    },
    generateDocs: async () => "docs",
    generateToolDocs: async () => "tool docs",
  };
  return { module, killed, calls };
}

const bytes = (text: string) => new TextEncoder().encode(text);

async function service(script: Script, options: Partial<ProcessServiceOptions> = {}) {
  const store = new MemoryProcessStore();
  const svc = new ProcessService({ store, onError: (e) => expect.fail(String(e)), ...options });
  const env = scripted(script);
  await svc.environments.activate("test", env.module);
  return { svc, store, env };
}

describe("ProcessService", () => {
  test("a run: pid, queued record, decoded streams (split characters), merged output, events, final record stored", async () => {
    const gate = deferred<void>();
    const { svc, store } = await service(async ({ eid }, b) => {
      b.setState(eid, "queued");
      b.setState(eid, "running");
      await gate.promise;
      const euro = bytes("€");
      b.emitStdout(eid, bytes("price: "));
      b.emitStdout(eid, euro.slice(0, 1));
      b.emitStdout(eid, euro.slice(1, 2));
      b.emitStderr(eid, bytes("é").slice(0, 1));
      b.emitStdout(eid, euro.slice(2));
      b.emitStderr(eid, bytes("é").slice(1));
      b.emitOutput(eid, { a: 1, keep: true });
      b.emitOutput(eid, { a: 2, when: new Date(0), ["__proto__"]: { polluted: true } } as Record<string, unknown>);
      return "success";
    });
    const created = await svc.create({ code: "c", ref: "r1" });
    const { pid } = created;
    expect(created).toMatchObject({ state: "queued", exitState: null, ref: "r1", timeoutMs: 30_000, runs: 1 });
    const events: ProcessEvent[] = [];
    const watching = await svc.watch(pid, (e) => events.push(e));
    expect(watching?.ended).toBe(false);
    await new Promise((r) => setTimeout(r, 5));
    expect((await svc.get(pid))?.state).toBe("running");
    gate.resolve();
    const final = await svc.wait(pid);
    expect(final).toMatchObject({
      state: "idle",
      exitState: "success",
      stdout: "price: €",
      stderr: "é",
      error: null,
      output: { a: 2, keep: true, when: "1970-01-01T00:00:00.000Z" },
    });
    expect(Object.getPrototypeOf(final?.output)).toBe(Object.prototype);
    expect(Object.keys(final?.output ?? {})).toEqual(["a", "keep", "when", "__proto__"]);
    expect(await store.get(pid)).toEqual(final);
    expect(events[0]).toMatchObject({ type: "snapshot", pid, record: { state: "running" } });
    expect("stdout" in (events[0] as { record: object }).record).toBe(false);
    expect(events.map((e) => (e.type === "stdout" || e.type === "stderr" ? `${e.type}:${e.data}` : e.type))).toEqual([
      "snapshot",
      "stdout:price: ",
      "stdout:€",
      "stderr:é",
      "output",
      "output",
      "state",
      "exit",
    ]);
    expect(events.at(-1)).toEqual({ type: "exit", pid, exitState: "success", error: null });
  });

  test("duplicate and nonsensical setState calls do not land", async () => {
    const seen: string[] = [];
    const { svc } = await service(async ({ eid }, b) => {
      const state = async () => seen.push((await svc.get(eid))?.state ?? "?");
      b.setState(eid, "running");
      b.setState(eid, "running");
      await state();
      b.setState(eid, "queued");
      await state();
      b.setState(eid, "idle" as "queued");
      await state();
      return "success";
    });
    await svc.create({ code: "c" });
    await svc.idle();
    expect(seen).toEqual(["running", "running", "running"]);
    const { svc: late } = await service(async () => "success");
    const { pid } = await late.create({ code: "c" });
    await late.idle();
    late.setState(pid, "running");
    late.emitStdout(pid, bytes("late"));
    expect(await late.get(pid)).toMatchObject({ state: "idle", stdout: "" });
  });

  test("failed runs record the error; a throwing or lying environment and no environment count as failed", async () => {
    const { svc } = await service(async ({ eid, code }, b) => {
      if (code === "throw") throw new Error("environment broke");
      if (code === "lie") return "weird" as ExecutionExitState;
      if (code === "silent") return "failed";
      b.setError(eid, "TypeError: x (at line 1, column 2)");
      return "failed";
    });
    for (const code of ["error", "throw", "lie", "silent"]) await svc.create({ code });
    await svc.idle();
    expect((await svc.list()).map((r) => [r.exitState, r.error])).toEqual([
      ["failed", "TypeError: x (at line 1, column 2)"],
      ["failed", "environment broke"],
      ["failed", "The environment returned an invalid exit state: weird"],
      ["failed", "The process failed without an error message"],
    ]);
    const bare = new ProcessService({ store: new MemoryProcessStore() });
    const { pid } = await bare.create({ code: "x" });
    expect(await bare.wait(pid)).toMatchObject({ exitState: "failed", error: "No environment is active" });
  });

  test("stdout, stderr and output are capped with a marker", async () => {
    const { svc } = await service(
      async ({ eid }, b) => {
        b.emitStdout(eid, bytes("12345678"));
        b.emitStdout(eid, bytes("90abc"));
        b.emitStdout(eid, bytes("more"));
        b.emitStderr(eid, bytes("x😀y"));
        b.emitOutput(eid, { a: "1234" });
        b.emitOutput(eid, { b: "x".repeat(100) });
        b.emitOutput(eid, { c: 1 });
        return "success";
      },
      { limits: { stdoutChars: 10, stderrChars: 2, outputBytes: 40 } },
    );
    const r = await svc.wait((await svc.create({ code: "c" })).pid);
    expect(r?.stdout).toBe("1234567890\n[stdout truncated: more than 10 characters]\n");
    expect(r?.stderr).toBe("x\n[stderr truncated: more than 2 characters]\n");
    expect(r?.output).toEqual({
      a: "1234",
      [OUTPUT_TRUNCATED_KEY]: "output exceeded 40 bytes: later patches were dropped",
    });
    expect(r?.truncated).toEqual({ stdout: true, stderr: true, output: true });
  });

  test("kill: running -> terminating -> idle/canceled; queued -> idle/canceled; idle and unknown refused", async () => {
    const { svc, env } = await service(async ({ eid, code }, b) => {
      if (code === "run") b.setState(eid, "running");
      await env.killed(eid);
      return "canceled";
    });
    const running = (await svc.create({ code: "run" })).pid;
    const queued = (await svc.create({ code: "queue" })).pid;
    await new Promise((r) => setTimeout(r, 5));
    expect((await svc.kill(running)).state).toBe("terminating");
    expect((await svc.kill(queued)).state).toBe("queued");
    expect(await svc.wait(running)).toMatchObject({ state: "idle", exitState: "canceled", error: null });
    expect(await svc.wait(queued)).toMatchObject({ state: "idle", exitState: "canceled" });
    expect(env.calls).toEqual(["setup", `kill ${running}`, `kill ${queued}`]);
    await expect(svc.kill(running)).rejects.toMatchObject({ code: "process_not_active" });
    await expect(svc.kill(9)).rejects.toMatchObject({ code: "not_found" });
  });

  test("stopAll: every active process is killed and ends canceled, saying the host stopped, stored and told", async () => {
    const { svc, store, env } = await service(async ({ eid, code }, b) => {
      if (code === "done") return "success";
      if (code === "run") b.setState(eid, "running");
      b.emitStdout(eid, bytes("partial"));
      await env.killed(eid);
      return "canceled";
    });
    const finished = (await svc.create({ code: "done" })).pid;
    await svc.idle();
    const running = (await svc.create({ code: "run" })).pid;
    const queued = (await svc.create({ code: "queue" })).pid;
    await new Promise((r) => setTimeout(r, 5));
    const exits: ProcessEvent[] = [];
    await svc.watch(running, (e) => e.type === "exit" && exits.push(e));
    await svc.stopAll();
    expect(svc.activeCount).toBe(0);
    const stopped = { state: "idle", exitState: "canceled", error: STOPPED_BY_HOST, stdout: "partial" };
    expect([await store.get(running), await store.get(queued)]).toMatchObject([stopped, stopped]);
    expect(await store.get(finished)).toMatchObject({ exitState: "success", error: null });
    expect(exits).toEqual([{ type: "exit", pid: running, exitState: "canceled", error: STOPPED_BY_HOST }]);
    expect(env.calls).toEqual(["setup", `kill ${running}`, `kill ${queued}`]);
  });

  test("active limit, re-run of an idle process, delete rules, pids ascending and never reused", async () => {
    const gate = deferred<void>();
    const { svc } = await service(
      async ({ eid }, b) => {
        b.emitStdout(eid, bytes(`run of ${eid}`));
        await gate.promise;
        return "success";
      },
      { maxActiveProcesses: 2 },
    );
    const first = (await svc.create({ code: "a" })).pid;
    const second = (await svc.create({ code: "b", timeoutMs: 500 })).pid;
    const refused = (await svc.create({ code: "c" }).catch((e: unknown) => e)) as HostError;
    expect(refused).toBeInstanceOf(HostError);
    expect([refused.code, refused.status, refused.message]).toEqual([
      "too_many_processes",
      429,
      "2 processes are active already: wait for one to finish",
    ]);
    await expect(svc.delete(first)).rejects.toMatchObject({ code: "process_active" });
    await expect(svc.run(first)).rejects.toMatchObject({ code: "process_active" });
    gate.resolve();
    await svc.idle();
    const again = await svc.run(second);
    expect(again).toMatchObject({ pid: second, state: "queued", stdout: "", exitState: null, runs: 2, timeoutMs: 500 });
    expect(await svc.wait(second)).toMatchObject({ exitState: "success", stdout: `run of ${second}`, runs: 2 });
    await svc.delete(first);
    expect(await svc.get(first)).toBeUndefined();
    await expect(svc.delete(first)).rejects.toMatchObject({ code: "not_found" });
    await expect(svc.run(first)).rejects.toMatchObject({ code: "not_found" });
    expect([second - first, (await svc.create({ code: "d" })).pid - second]).toEqual([1, 1]);
  });

  test("create validates its input without storing anything", async () => {
    const { svc, store } = await service(async () => "success");
    await expect(svc.create({ code: "x".repeat(102_401) })).rejects.toMatchObject({ code: "payload_too_large" });
    await expect(svc.create({ code: "x", timeoutMs: 0 })).rejects.toMatchObject({ code: "invalid_request" });
    await expect(svc.create({ code: 1 as unknown as string })).rejects.toMatchObject({ code: "invalid_request" });
    expect(await store.list()).toEqual([]);
  });
});

describe("environment activation", () => {
  test("at most one active; the previous drains: keeps its executions and kills, torn down after the last", async () => {
    const store = new MemoryProcessStore();
    const svc = new ProcessService({ store });
    const gate = deferred<void>();
    const a = scripted(async ({ eid }, b) => {
      b.setState(eid, "running");
      await Promise.race([gate.promise, a.killed(eid)]);
      return "success";
    });
    const b = scripted(async () => "success");
    await svc.environments.activate("a", a.module);
    const one = (await svc.create({ code: "1" })).pid;
    const two = (await svc.create({ code: "2" })).pid;
    await new Promise((r) => setTimeout(r, 5));
    await svc.environments.activate("b", b.module);
    expect(svc.environments.active).toBe("b");
    expect(svc.environments.draining).toEqual(["a"]);
    expect(await svc.wait((await svc.create({ code: "3" })).pid)).toMatchObject({ exitState: "success" });
    expect(a.calls).toEqual(["setup"]);
    await svc.kill(one);
    expect(await svc.wait(one)).toMatchObject({ exitState: "success" });
    expect(a.calls).toEqual(["setup", `kill ${one}`]);
    gate.resolve();
    await svc.wait(two);
    await svc.environments.drained();
    expect(a.calls).toEqual(["setup", `kill ${one}`, "teardown"]);
    expect(svc.environments.draining).toEqual([]);
    expect(b.calls).toEqual(["setup"]);
    expect(await svc.environments.docs()).toBe("docs");
    await svc.environments.close();
    expect(b.calls).toEqual(["setup", "teardown"]);
    expect(svc.environments.active).toBeUndefined();
  });

  test("a failing setup leaves the previous environment active", async () => {
    const svc = new ProcessService({ store: new MemoryProcessStore() });
    const a = scripted(async () => "success");
    await svc.environments.activate("a", a.module);
    const broken = { ...scripted(async () => "success").module, setup: async () => Promise.reject(new Error("no")) };
    await expect(svc.environments.activate("broken", broken)).rejects.toThrow("no");
    expect(svc.environments.active).toBe("a");
    expect(a.calls).toEqual(["setup"]);
  });

  test("an idle process with no draining environment is torn down at once", async () => {
    const svc = new ProcessService({ store: new MemoryProcessStore() });
    const a = scripted(async () => "success");
    await svc.environments.activate("a", a.module);
    await svc.environments.activate("b", scripted(async () => "success").module);
    await svc.environments.drained();
    expect(a.calls).toEqual(["setup", "teardown"]);
  });
});

/** A {@link MemoryProcessStore} that records which of its methods were called, and the sizes of its chunk reads. */
class SpyingStore extends MemoryProcessStore {
  calls: string[] = [];
  override async get(pid: number) {
    this.calls.push("get");
    return super.get(pid);
  }
  override async read(pid: number, field: LargeField, at: number, size: number) {
    this.calls.push(`read ${field} ${at} ${size}`);
    return super.read(pid, field, at, size);
  }
  override async list(filter: ProcessFilter = {}) {
    this.calls.push("list");
    return super.list(filter);
  }
}

describe("large fields", () => {
  test("a listing and a summary read no large field; a field is read a chunk at a time, the store asked for one chunk each", async () => {
    const store = new SpyingStore();
    const svc = new ProcessService({ store, onError: (e) => expect.fail(String(e)) });
    const env = scripted(async ({ eid }, b) => {
      b.emitStdout(eid, bytes(`${"a".repeat(CHUNK_CHARS)}${"b".repeat(CHUNK_CHARS)}c`));
      b.emitOutput(eid, { n: 1 });
      return "success";
    });
    await svc.environments.activate("test", env.module);
    const { pid } = await svc.create({ code: "x".repeat(10) });
    await svc.idle();
    store.calls = [];
    const [listed] = await svc.list({ limit: 1 });
    expect(Object.keys(listed as object).sort()).toEqual([
      "createdAt",
      "error",
      "exitState",
      "finishedAt",
      "pid",
      "runs",
      "startedAt",
      "state",
      "tenant",
      "timeoutMs",
      "truncated",
    ]);
    expect(await svc.summary(pid)).toEqual(listed);
    const chunks: string[] = [];
    for await (const chunk of svc.read(pid, "stdout")) chunks.push(chunk);
    expect(chunks).toEqual(["a".repeat(CHUNK_CHARS), "b".repeat(CHUNK_CHARS), "c"]);
    const output: string[] = [];
    for await (const chunk of svc.read(pid, "output")) output.push(chunk);
    expect(output).toEqual(['{"n":1}']);
    expect(store.calls).toEqual([
      "list",
      `read stdout 0 ${CHUNK_CHARS}`,
      `read stdout ${CHUNK_CHARS} ${CHUNK_CHARS}`,
      `read stdout ${2 * CHUNK_CHARS} ${CHUNK_CHARS}`,
      `read output 0 ${CHUNK_CHARS}`,
    ]);
    for await (const chunk of svc.read(pid + 1, "code")) expect.fail(`an unknown process has code: ${chunk}`);
  });
});

describe("event snapshots", () => {
  test("an event stream reads its snapshot's large fields only as its client reads, a chunk at a time; unread it holds the summary", async () => {
    const store = new SpyingStore();
    const svc = new ProcessService({ store, onError: (e) => expect.fail(String(e)) });
    const env = scripted(async ({ eid }, b) => {
      b.emitStdout(eid, bytes("s".repeat(CHUNK_CHARS + 1)));
      b.emitOutput(eid, { n: 1 });
      return "success";
    });
    await svc.environments.activate("test", env.module);
    const { pid } = await svc.create({ code: "c" });
    const record = (await svc.wait(pid)) as ProcessRecord;
    store.calls = [];
    const unread = await Promise.all(Array.from({ length: 10 }, () => svc.events(pid)));
    expect(store.calls).toEqual([]);
    const text = await new Response(unread[0]).text();
    expect(store.calls).toEqual([
      `read code 0 ${CHUNK_CHARS}`,
      `read modules 0 ${CHUNK_CHARS}`,
      `read stdout 0 ${CHUNK_CHARS}`,
      `read stdout ${CHUNK_CHARS} ${CHUNK_CHARS}`,
      `read stderr 0 ${CHUNK_CHARS}`,
      `read output 0 ${CHUNK_CHARS}`,
    ]);
    const { tenant: _t, ...visible } = record;
    // One event: its name, one data line, the blank line that ends it.
    const lines = text.split("\n");
    expect([
      lines.length,
      lines[0],
      lines[1]?.startsWith(`data: {"pid":${pid},"record":{`),
      lines[2],
      lines[3],
    ]).toEqual([4, "event: snapshot", true, "", ""]);
    expect(JSON.parse(text.slice("event: snapshot\ndata: ".length))).toEqual({ pid, record: visible });
    for (const stream of unread.slice(1)) await stream?.cancel();
  });

  test("an active process's snapshot is its record when the stream began, then its events follow in order", async () => {
    const gate = deferred<void>();
    const { svc } = await service(async ({ eid }, b) => {
      b.setState(eid, "running");
      b.emitStdout(eid, bytes("before"));
      await gate.promise;
      b.emitStdout(eid, bytes(" after"));
      return "success";
    });
    const { pid } = await svc.create({ code: "c" });
    await new Promise((resolve) => setTimeout(resolve, 5));
    const stream = (await svc.events(pid)) as ReadableStream<Uint8Array>;
    gate.resolve();
    await svc.idle();
    const text = await new Response(stream).text();
    const events = [...text.matchAll(/^event: (.+)\ndata: (.+)$/gm)].map(([, type, data]) => [
      type,
      JSON.parse(data as string),
    ]);
    expect(events[0]).toMatchObject(["snapshot", { pid, record: { state: "running", stdout: "before", output: {} } }]);
    expect(events.slice(1).map(([type]) => type)).toEqual(["stdout", "state", "exit"]);
    expect(events[1]?.[1]).toEqual({ pid, data: " after" });
  });
});

describe("per-tenant storage quota", () => {
  const full = (quota: number, used: number, needs: number) =>
    `The tenant's storage quota is full: its processes hold ${used} of ${quota} bytes (code, stdout, stderr, output, records) and this one needs ${needs}: delete processes to make room`;
  const refusal = async (work: Promise<unknown>) => {
    const error = (await work.catch((e: unknown) => e)) as HostError;
    return [error.code, error.status, error.message];
  };
  /** What a creation of `code` is counted at before its pid is drawn: its record at the largest pid (2^53 - 1). */
  const draft = (code: string) =>
    storedBytesOf(processRecord(2 ** 53 - 1, { state: "queued", code, timeoutMs: DEFAULT_RUN_TIMEOUT_MS }));
  /** The stored records' bytes, summed. */
  const storedOf = async (store: MemoryProcessStore, pids: number[]) => {
    let sum = 0;
    for (const pid of pids) sum += storedBytesOf((await store.get(pid)) as ProcessRecord);
    return sum;
  };
  // Timestamps are 0: a record's summary is the same whenever the test runs.
  const now = () => 0;

  test("a record the quota could never hold is 413, one it has no room for 507; output is cut at the quota and says so; nothing stored is lost", async () => {
    const quota = 1_000;
    const { svc, store } = await service(
      async ({ eid, code }, b) => {
        if (code === "big") b.emitStdout(eid, bytes("é".repeat(600)));
        else if (code === "patch") b.emitOutput(eid, { text: "x".repeat(2_000) });
        else b.emitStdout(eid, bytes("ok"));
        return "success";
      },
      { maxTenantStorageBytes: quota, now },
    );
    // Its code, the empty output's `{}` and its summary.
    const code = "x".repeat(1_000 - draft("") + 1);
    expect(await refusal(svc.create({ code }))).toEqual([
      "payload_too_large",
      413,
      `This process's record would hold ${quota + 1} bytes of code and summary, more than the tenant's whole storage quota of ${quota} bytes`,
    ]);
    const created = await svc.create({ code: "big" });
    const cut = (await svc.wait(created.pid)) as ProcessRecord;
    // The created record holds its code, output and summary: two-byte characters fill the rest, and no more.
    const room = Math.floor((quota - storedBytesOf(created)) / 2);
    expect(room).toBeGreaterThan(100);
    expect([cut.stdout, cut.truncated.stdout]).toEqual([
      `${"é".repeat(room)}\n[stdout truncated: the tenant's storage quota of ${quota} bytes is full]\n`,
      true,
    ]);
    const used = storedBytesOf(cut);
    expect(await store.usage("anonymous")).toBe(used);
    expect(await refusal(svc.create({ code: "ok" }))).toEqual(["storage_full", 507, full(quota, used, draft("ok"))]);
    expect(await store.get(created.pid)).toEqual(cut);
    // Another tenant's quota is its own.
    const other = (await svc.create({ code: "ok", tenant: "other" })).pid;
    expect((await svc.wait(other))?.stdout).toBe("ok");
    // Deleting makes room; an output patch past the quota is dropped and the output says why.
    await svc.delete(created.pid);
    expect(await store.usage("anonymous")).toBe(0);
    const patched = (await svc.create({ code: "patch" })).pid;
    expect((await svc.wait(patched))?.output).toEqual({
      [OUTPUT_TRUNCATED_KEY]: `the tenant's storage quota of ${quota} bytes is full: later patches were dropped`,
    });
    expect(await store.usage("anonymous")).toBe(await storedOf(store, [patched]));
  });

  test("records' errors count: a quota just enough for three processes' outputs holds no more records, however large their errors", async () => {
    const error = "e".repeat(10_000);
    const { svc, store } = await service(
      async ({ eid, code }, b) => {
        b.emitStdout(eid, bytes("ok"));
        if (code === "fail") b.setError(eid, error);
        return code === "fail" ? "failed" : "success";
      },
      { now, maxTenantStorageBytes: 3 * (draft("ok") + 2) },
    );
    const quota = svc.maxTenantStorageBytes as number;
    const pids: number[] = [];
    const refused: unknown[] = [];
    // Before errors counted, every one of these was stored, 10,000 bytes of error each.
    for (let i = 0; i < 20; i++) {
      try {
        pids.push((await svc.create({ code: i === 0 ? "ok" : "fail" })).pid);
        await svc.idle();
      } catch (error) {
        refused.push(await refusal(Promise.reject(error)));
      }
    }
    // The first is a success; the second's error fills the rest, cut with a marker; every later one is refused.
    expect(pids.length).toBe(2);
    const ok = (await store.get(pids[0] as number)) as ProcessRecord;
    const failed = (await store.get(pids[1] as number)) as ProcessRecord;
    const marker = `\n[error truncated: the tenant's storage quota of ${quota} bytes is full]`;
    expect(failed.error).toBe(`${"e".repeat((failed.error as string).length - marker.length)}${marker}`);
    const kept = (failed.error as string).length - marker.length;
    // What the error kept was exactly the room its record left when it was set (the run not yet ended).
    const beforeError = { ...failed, state: "queued", exitState: null, finishedAt: null, error: "" } as const;
    expect(kept).toBe(quota - storedBytesOf(ok) - storedBytesOf(beforeError));
    const used = await storedOf(store, pids);
    expect(await store.usage("anonymous")).toBe(used);
    // Past the quota by the marker (its newline stored as `\n`) and the run's end only: "idle" for "queued",
    // "failed" and its time for nulls.
    expect(used - quota).toBe(
      JSON.stringify(marker).length - 2 + '"idle"'.length - '"queued"'.length + '"failed"'.length - 4 + 1 - 4,
    );
    expect(refused).toEqual(Array(18).fill(["storage_full", 507, full(quota, used, draft("fail"))]));
    // Deleting the record frees its error's bytes too.
    await svc.delete(failed.pid);
    expect(await store.usage("anonymous")).toBe(storedBytesOf(ok));
  });

  test("an error set by the host is counted and cut as a guest's is", async () => {
    const { svc, store } = await service(
      async () => {
        throw new Error("x".repeat(5_000));
      },
      { now, maxTenantStorageBytes: draft("1") + 1_000 },
    );
    const quota = svc.maxTenantStorageBytes as number;
    const pid = (await svc.create({ code: "1" })).pid;
    const record = (await svc.wait(pid)) as ProcessRecord;
    console.log(JSON.stringify(record.error).slice(-200), (record.error as string).length);
    expect(record.error).toMatch(
      new RegExp(`^x{900,1100}\\n\\[error truncated: the tenant's storage quota of ${quota} bytes is full\\]$`),
    );
    expect(await store.usage("anonymous")).toBe(storedBytesOf(record));
  });

  test("creations at once take the room one after another: exactly as many are stored as fit", async () => {
    const { svc, store } = await service(async () => "success", {
      now,
      maxTenantStorageBytes: 2 * draft("abc") + 1,
    });
    const created = await Promise.allSettled([1, 2, 3].map(() => svc.create({ code: "abc" })));
    expect(created.map((c) => c.status)).toEqual(["fulfilled", "fulfilled", "rejected"]);
    expect(((created[2] as PromiseRejectedResult).reason as HostError).code).toBe("storage_full");
    await svc.idle();
    const pids = created.flatMap((c) => (c.status === "fulfilled" ? [c.value.pid] : []));
    expect(await store.usage("anonymous")).toBe(await storedOf(store, pids));
  });

  test("processes running at once share the room; running one again frees its last run's output", async () => {
    const gate = deferred<void>();
    const { svc, store } = await service(
      async ({ eid }, b) => {
        b.emitStdout(eid, bytes("y".repeat(50)));
        await gate.promise;
        return "success";
      },
      { now, maxTenantStorageBytes: draft("a") + draft("b") + 50 + 30 },
    );
    const quota = svc.maxTenantStorageBytes as number;
    const marker = `\n[stdout truncated: the tenant's storage quota of ${quota} bytes is full]\n`;
    const first = await svc.create({ code: "a" });
    const second = await svc.create({ code: "b" });
    gate.resolve();
    await svc.idle();
    // The first's 50 bytes fit; the second has the room its record and the first's leave (pids are narrower than
    // the widest, so a little more than 30).
    const room = quota - storedBytesOf(first) - 50 - storedBytesOf(second);
    expect(room).toBeGreaterThanOrEqual(30);
    expect(room).toBeLessThan(50);
    const stdout = async (pid: number) => (await store.get(pid))?.stdout;
    expect([await stdout(first.pid), await stdout(second.pid)]).toEqual([
      "y".repeat(50),
      `${"y".repeat(room)}${marker}`,
    ]);
    expect(await store.usage("anonymous")).toBe(await storedOf(store, [first.pid, second.pid]));
    // The first's 50 bytes are freed, yet the second's marker keeps the tenant past its quota.
    await svc.run(first.pid);
    await svc.idle();
    expect(await stdout(first.pid)).toBe(marker);
    expect(await store.usage("anonymous")).toBe(await storedOf(store, [first.pid, second.pid]));
  });
});
