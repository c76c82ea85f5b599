/**
 * One process, one Durable Object: it stores the process's record in its own SQLite, runs its code, and serves its
 * routes (record, streams, events, signals), so `kill` and the event stream reach the object that runs it. The
 * Worker routes `/processes/:pid/*` here by pid.
 * @module
 */
import { DurableObject } from "cloudflare:workers";
import wasm from "@jitl/quickjs-wasmfile-release-sync/wasm";
import { instantiate } from "../src/environment/index.js";
import { createHost, type ProcessUsage } from "../src/host/index.js";
import { kvStoreOf } from "./kv-object.js";
import { ObjectProcessStore } from "./sql-stores.js";

/** Header with which the Worker tells a new object the pid the registry allocated for it. */
export const PID_HEADER = "x-runcode-pid";

export class ProcessObject extends DurableObject<Env> {
  #pid = 0;
  readonly #host: ReturnType<typeof createHost>;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    const registry = () => env.REGISTRY.get(env.REGISTRY.idFromName("registry"));
    const store = new ObjectProcessStore(ctx.storage.sql, () => this.#pid, {
      index: (record) => registry().index(record),
      remove: (pid) => registry().remove(pid),
    });
    this.#host = createHost({ store, kv: kvStoreOf(env), environment: { module: instantiate({ wasm }) } });
    ctx.blockConcurrencyWhile(async () => {
      // A run cannot outlive the isolate that ran it: a record still active here was cut off by a restart.
      for (const record of await store.list()) {
        if (record.state === "idle") continue;
        this.#pid = record.pid;
        await store.update(record.pid, {
          state: "idle",
          exitState: "failed",
          error: "The host restarted while this process ran",
          finishedAt: Date.now(),
        });
      }
    });
  }

  /** What this object's process spends in its current run (work, output bytes, event streams); `null` when idle. */
  async usage(): Promise<ProcessUsage | null> {
    const { service } = await this.#host;
    return service.usage(this.#pid) ?? null;
  }

  override async fetch(request: Request): Promise<Response> {
    const pid = request.headers.get(PID_HEADER);
    // Only a creation sets the pid (the Worker strips the header from every other request as well).
    if (pid !== null && request.method === "POST" && new URL(request.url).pathname === "/processes") {
      this.#pid = Number(pid);
    }
    const { app, service } = await this.#host;
    const response = await app.fetch(request);
    // The answer goes out before the code finishes; the run goes on in this object.
    this.ctx.waitUntil(service.idle());
    return response;
  }
}
