/**
 * One process, one Durable Object: it stores the process's record in its own SQLite and runs its code, so `kill`
 * and the event stream reach the object that runs it. The Worker's app calls it over RPC, by pid.
 *
 * A run cannot outlive the object that runs it. When the platform stops an object mid-run (its CPU limit, an
 * eviction, a deploy), the alarm set for the end of the run's timeout brings the object back, and its constructor
 * marks the run failed: the registry learns the process is idle and its tenant's slot is free, without anyone
 * reading the process.
 *
 * With a retention (`RUNCODE_RETENTION_DAYS`), the same alarm, finding the run ended, is set again for the process's
 * expiry (its end plus the retention), and then deletes it as `DELETE /processes/:pid` does. An object has one alarm:
 * the run's watch comes first, and running the process again sets the watch in place of the expiry.
 * @module
 */
import { DurableObject } from "cloudflare:workers";
import { instantiate } from "../src/environment/index.js";
import { createHost } from "../src/host/index.js";
import type { CreateProcessInput, ProcessUsage } from "../src/host/processes/process-service.js";
import { failCutOffRuns } from "../src/host/processes/restarts.js";
import { expiryOf } from "../src/host/processes/retention.js";
import {
  CHUNK_CHARS,
  type HostState,
  type LargeField,
  type ProcessRecord,
  type ProcessSummary,
  type TextChunk,
} from "../src/host/processes/storage.js";
import { environmentOptionsOf, processCpuSharesOf } from "../src/host/settings.js";
import wasm from "../wasm/quickjs-fuel.wasm";
import { configOf } from "./config.js";
import { kvStoreOf } from "./kv-object.js";
import { bootModules } from "./packages.generated.js";
import { registryCpuBudget } from "./registry.js";
import { type Answer, answer } from "./rpc-refusals.js";
import { edgeSandbox } from "./sandboxes.js";
import { ObjectProcessStore } from "./sql-stores.js";

/** Past a run's timeout, how long before its alarm checks that the run ended (documented in docs/edge.md). */
const SLOT_RELEASE_GRACE_MS = 60_000;

type Started = { pid: number; state: HostState };

export class ProcessObject extends DurableObject<Env> {
  /** This object's pid: the one its record has, from the record's creation on. */
  #pid = 0;
  readonly #config: ReturnType<typeof configOf>;
  readonly #host: ReturnType<typeof createHost>;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    const registry = () => env.REGISTRY.get(env.REGISTRY.idFromName("registry"));
    const store = new ObjectProcessStore(ctx.storage.sql, () => this.#pid, {
      index: (record) => registry().index(record),
      remove: (pid) => registry().remove(pid),
    });
    this.#config = configOf(env);
    this.#host = this.#config.then((config) =>
      createHost({
        store,
        kv: kvStoreOf(env),
        kvLimits: { maxStoreBytes: config.tenantKvBytes },
        cpu: processCpuSharesOf(config, registryCpuBudget(env, config.tenantCpu)),
        // The /run cap bounds a process's guest CPU too: locally one thread serves every object (docs/edge.md).
        environment: {
          module: instantiate({ wasm, ...environmentOptionsOf(config), bootModules, createSandbox: edgeSandbox }),
        },
      }),
    );
    ctx.blockConcurrencyWhile(async () => {
      // A run cannot outlive the isolate that ran it: a record still active here was cut off by a restart.
      await failCutOffRuns(store, Date.now());
      this.#pid = (await store.list({ limit: 1 }))[0]?.pid ?? 0;
    });
  }

  /** Creates this object's process under `pid` (allocated by the registry) and starts it. */
  async create(pid: number, input: CreateProcessInput & { tenant: string }): Promise<Answer<Started>> {
    this.#pid = pid;
    return answer(async () => this.#started(await (await this.#host).service.create(input)));
  }

  async summary(pid: number): Promise<ProcessSummary | null> {
    return (await (await this.#host).service.summary(pid)) ?? null;
  }

  /** A chunk of a large field from `at` (see `ProcessStore.read`), live while the process runs; `null` for none. */
  async read(pid: number, field: LargeField, at: number): Promise<TextChunk | null> {
    return (await (await this.#host).service.chunk(pid, field, at, CHUNK_CHARS)) ?? null;
  }

  /** The process's Server-Sent Events, made here where the process runs; `null` when there is none. */
  async events(pid: number): Promise<Answer<ReadableStream<Uint8Array> | null>> {
    return answer(async () => (await (await this.#host).service.events(pid)) ?? null);
  }

  async kill(pid: number): Promise<Answer<Started>> {
    return answer(async () => {
      const { pid: killed, state } = await (await this.#host).service.kill(pid);
      return { pid: killed, state };
    });
  }

  async run(pid: number): Promise<Answer<Started>> {
    return answer(async () => this.#started(await (await this.#host).service.run(pid)));
  }

  async delete(pid: number): Promise<Answer<null>> {
    return answer(async () => {
      await (await this.#host).service.delete(pid);
      return null;
    });
  }

  /** What this object's process spends in its current run (work, output bytes, event streams); `null` when idle. */
  async usage(): Promise<ProcessUsage | null> {
    return (await this.#host).service.usage(this.#pid) ?? null;
  }

  /**
   * Still running past its timeout and the grace: look again later (the run's own timeout stops it). Ended: deleted
   * once it has expired, else the alarm is set for its expiry.
   */
  override async alarm(): Promise<void> {
    const { service } = await this.#host;
    if (service.usage(this.#pid) !== undefined) {
      await this.ctx.storage.setAlarm(Date.now() + SLOT_RELEASE_GRACE_MS);
      return;
    }
    const { retentionMs } = await this.#config;
    const record = await service.get(this.#pid);
    const expiry = retentionMs === undefined || record === undefined ? undefined : expiryOf(record, retentionMs);
    if (expiry === undefined) return;
    if (expiry <= Date.now()) await service.delete(this.#pid);
    else await this.ctx.storage.setAlarm(expiry);
  }

  /** The answer goes out before the code finishes: the run goes on here, and an alarm watches its end. */
  async #started(record: ProcessRecord): Promise<Started> {
    const { service } = await this.#host;
    this.ctx.waitUntil(service.idle());
    await this.ctx.storage.setAlarm(Date.now() + record.timeoutMs + SLOT_RELEASE_GRACE_MS);
    return { pid: record.pid, state: record.state };
  }
}
