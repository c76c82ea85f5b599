/**
 * One session, one Durable Object: the host's `SessionService` (src/host/sessions) over this object's own storage
 * (session-store.ts) and the core's sessions, in-thread. So a session's cells run in its own object, one at a time
 * (the service's turns), in memory of its own: one session's cell never waits for another's, nor sees its state.
 *
 * The session is live in memory while the object is, and its state is in the object's SQLite: the service stores the
 * snapshot after every cell and fork before it answers (and the platform holds an answer until the writes it follows
 * are durable), so an answer never tells of state that an eviction, a restart or a redeploy of the same version
 * would lose; the next cell after one restores the stored snapshot. The object is created by the Worker with a
 * unique id (`newUniqueId`), which the registry maps the session's id to; a fork's copy goes to a new object.
 *
 * Each write sets the object's alarm for the session's idle expiry (`RUNCODE_SESSION_IDLE_DAYS` after its last
 * use); the alarm deletes it as `DELETE /sessions/:id` does (its rows, its registry row).
 * @module
 */
import { DurableObject } from "cloudflare:workers";
import { RUN_DEFAULT_MEMORY_BYTES } from "../src/host/admission/run-admission.js";
import type { RunAnswer, RunEvent } from "../src/host/runs/run-once.js";
import type { CellRequest, CreateSessionInput, SessionRequestOptions } from "../src/host/sessions/backend.js";
import { SessionService } from "../src/host/sessions/session-service.js";
import type { StoredSession } from "../src/host/sessions/store.js";
import { RUN_CAP_NAMES, runCpuSharesOf, runSandboxOptionsOf } from "../src/host/settings.js";
import { kvService } from "../src/tools/kv.js";
import { ToolRegistry } from "../src/tools/registry.js";
import wasm from "../wasm/quickjs-fuel.wasm";
import { configOf } from "./config.js";
import { kvStoreOf } from "./kv-object.js";
import { registryCpuBudget } from "./registry.js";
import { type Answer, answer, unwrap } from "./rpc-refusals.js";
import { edgeSessionEngine } from "./sandboxes.js";
import { ObjectSessionStore } from "./session-store.js";

/** Who waits for a cell across RPC: told when it starts (it was admitted), and of each event as it happens. */
interface CellListener {
  started(): void;
  onEvent?(event: RunEvent): void;
}

export class SessionObject extends DurableObject<Env> {
  readonly #store: Promise<ObjectSessionStore>;
  readonly #service: Promise<SessionService>;
  /** The running cells' stops, by the call that started each. */
  readonly #calls = new Map<string, AbortController>();

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    const registry = () => env.REGISTRY.get(env.REGISTRY.idFromName("registry"));
    const config = configOf(env);
    this.#store = config.then(
      (config) =>
        new ObjectSessionStore(ctx.storage, ctx.id, {
          idleMs: config.sessions.idleMs,
          registry: {
            index: async (entry) => unwrap(await registry().indexSession(entry, config.sessions)) ?? undefined,
            remove: (tenant, id) => registry().removeSession(tenant, id),
            named: async (tenant, name) => (await registry().sessionNamed(tenant, name)) ?? undefined,
            usage: (tenant) => registry().sessionUsage(tenant),
            list: (tenant, after, limit) => registry().listSessions(tenant, after, limit),
          },
          // The snapshot as a stream: a value crossing RPC whole is bounded (32 MiB), a stream is not.
          seed: async ({ snapshot, ...record }) => {
            const target = env.SESSIONS.get(env.SESSIONS.newUniqueId());
            unwrap(await target.seed(record, new Blob([snapshot]).stream()));
          },
        }),
    );
    this.#service = Promise.all([config, this.#store]).then(
      ([config, store]) =>
        new SessionService({
          store,
          engine: edgeSessionEngine({ wasm, ...runSandboxOptionsOf(config) }),
          limits: config.sessions,
          defaultMemoryLimitBytes: RUN_DEFAULT_MEMORY_BYTES,
          tools: new ToolRegistry().register(kvService(kvStoreOf(env), { maxStoreBytes: config.tenantKvBytes })),
          cpu: runCpuSharesOf(config, registryCpuBudget(env, config.tenantCpu)),
          capNames: RUN_CAP_NAMES,
          // This object's one session.
          maxLive: 1,
        }),
    );
  }

  async create(tenant: string, input: CreateSessionInput): Promise<Answer<{ id: string }>> {
    return answer(async () => (await this.#service).create(tenant, input));
  }

  async open(
    tenant: string,
    name: string,
    options?: SessionRequestOptions,
  ): Promise<Answer<{ id: string; created: boolean }>> {
    return answer(async () => (await this.#service).open(tenant, name, options));
  }

  /**
   * Runs one cell: `listener.started()` once it is admitted, its events as they happen (each delivered before the
   * answer), then the answer; a refusal is the answer, with `started` never called. `call` names the cell for `stop`.
   */
  async run(
    tenant: string,
    id: string,
    cell: CellRequest,
    call: string,
    listener: CellListener,
  ): Promise<Answer<RunAnswer>> {
    return answer(async () => {
      const stop = new AbortController();
      this.#calls.set(call, stop);
      // Events cross RPC one after another, and all before the answer.
      let sent = Promise.resolve();
      const { onEvent } = listener;
      try {
        const started = await (await this.#service).run(tenant, id, cell, {
          signal: stop.signal,
          ...(onEvent !== undefined && {
            onEvent: (event: RunEvent) => {
              sent = sent.then(() => listener.onEvent?.(event));
            },
          }),
        });
        await listener.started();
        const answered = await started.answer;
        await sent;
        return answered;
      } finally {
        this.#calls.delete(call);
      }
    });
  }

  /** Ends the cell started by `call`, if it runs still (its caller went away). */
  async stop(call: string): Promise<void> {
    this.#calls.get(call)?.abort();
  }

  async fork(tenant: string, id: string): Promise<Answer<{ id: string }>> {
    return answer(async () => (await this.#service).fork(tenant, id));
  }

  async delete(tenant: string, id: string): Promise<Answer<null>> {
    return answer(async () => {
      await (await this.#service).delete(tenant, id);
      return null;
    });
  }

  /** Makes this new object hold a fork's copy: `record`, its snapshot streamed (its realm is restored at its first cell). */
  async seed(record: Omit<StoredSession, "snapshot">, snapshot: ReadableStream<Uint8Array>): Promise<Answer<null>> {
    return answer(async () => {
      const bytes = new Uint8Array(await new Response(snapshot).arrayBuffer());
      await (await this.#store).put({ ...record, snapshot: bytes });
      return null;
    });
  }

  /** The session's idle expiry: deleted when unused since, else the alarm is set again for its new expiry. */
  override async alarm(): Promise<void> {
    await (await this.#service).sweepIdle();
    const expiry = (await this.#store).expiry();
    if (expiry !== undefined) await this.ctx.storage.setAlarm(expiry);
  }
}
