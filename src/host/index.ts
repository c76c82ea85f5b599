/**
 * `runcode/host`: the process host, platform-neutral. A {@link ProcessService} (pids, state machine, bindings,
 * events) over the {@link ProcessStore} port, a {@link ToolRegistry} with the built-in `kv` service over the
 * {@link KeyValueStore} port (a store per tenant), environment activation with draining, and the HTTP API as one
 * Hono app (`createApp({ processes, catalog }).fetch(request)`) with API keys, tenants, rates and `POST /run`, and
 * sessions (a {@link SessionService} over the {@link SessionStore} port and the core's sessions, given to the app).
 * `createHost` wires the in-memory pieces together.
 * @module
 */
import type { EnvironmentModule, ModuleSetupContext } from "../environment/types.js";
import { type KvQuotas, kvService, memoryKeyValueStores } from "../tools/kv.js";
import type { KeyValueStore } from "../tools/kv-store.js";
import { type Service, ToolRegistry } from "../tools/registry.js";
import { type AppOptions, createApp } from "./http/app.js";
import { ProcessService, type ProcessServiceOptions } from "./processes/process-service.js";
import { MemoryProcessStore, type ProcessStore } from "./processes/storage.js";

// What an embedding composes with. Everything else is internal: the Worker, the Node entries, the tests and the
// benchmarks import the module files themselves.
export { type KvQuotas, kvService, memoryKeyValueStores } from "../tools/kv.js";
export {
  type KeyValueQuota,
  KeyValueQuotaError,
  type KeyValueStore,
  type KeyValueUsage,
  MemoryKeyValueStore,
} from "../tools/kv-store.js";
export {
  ANONYMOUS_TENANT,
  type Service,
  type Tool,
  type ToolContext,
  ToolError,
  type ToolErrorCode,
  ToolRegistry,
  type ToolRegistryOptions,
  ToolScope,
} from "../tools/registry.js";
export { type HttpUpstream, type StdioUpstream, type Upstream, upstreamsFrom } from "../tools/upstream-config.js";
export { MemoryQuotas, type Quotas } from "./admission/quotas.js";
export type { AdmissionCaps } from "./admission/run-admission.js";
export { ERROR_STATUS, HostError, type HostErrorCode, isHostError } from "./errors.js";
export { type AppOptions, createApp } from "./http/app.js";
export { type Access, type AccessSettings, accessFrom } from "./http/auth.js";
export type { Catalog } from "./http/catalog-routes.js";
export type { ProcessBackend } from "./http/process-routes.js";
export type { RunRouteOptions } from "./http/run-routes.js";
export type { ProcessEvent, ProcessListener } from "./processes/events.js";
export {
  type CreateProcessInput,
  type OutputCaps,
  ProcessService,
  type ProcessServiceOptions,
  type ProcessUsage,
} from "./processes/process-service.js";
export {
  type HostState,
  type LargeField,
  MemoryProcessStore,
  type ProcessFilter,
  type ProcessPatch,
  type ProcessRecord,
  type ProcessStore,
  type ProcessSummary,
  type TextChunk,
} from "./processes/storage.js";
export { createRunOnce, type RunOnceOptions } from "./runs/run-once.js";
export type {
  CellCaller,
  CellRequest,
  CreateSessionInput,
  SessionBackend,
  SessionInfo,
  SessionPage,
  SessionRequestOptions,
} from "./sessions/backend.js";
export type { EngineSession, EngineSessionOptions, SessionEngine } from "./sessions/engine.js";
export type { SessionLimits } from "./sessions/limits.js";
export { SessionService, type SessionServiceOptions } from "./sessions/session-service.js";
export { MemorySessionStore, type SessionStore, type StoredSession } from "./sessions/store.js";

export interface HostOptions extends Partial<Omit<ProcessServiceOptions, "store" | "tools">> {
  store?: ProcessStore;
  /** Storage of the built-in `kv` service, one store per tenant. Default in memory. */
  kv?: (tenant: string) => KeyValueStore;
  /** Quotas of the built-in `kv` service (defaults: `KV_MAX_*` in src/tools/kv.ts). */
  kvLimits?: Partial<KvQuotas>;
  /** Units of work per run for tool arguments. Default `DEFAULT_TOOL_WORK_PER_RUN`. */
  toolWorkPerRun?: number;
  /** More services next to `kv`. */
  services?: Service[];
  /** An environment to activate (under `name`, default `"quickjs"`). */
  environment?: { module: EnvironmentModule; name?: string } & Partial<ModuleSetupContext>;
  /** The HTTP app's options beyond its processes and catalog (access, quotas, CORS, `/run` and `/mcp`, body limit). */
  app?: Omit<AppOptions, "processes" | "catalog">;
}

/** A ready host: service, app, and the active environment (if one was given). */
export async function createHost(options: HostOptions = {}) {
  const { store, kv, kvLimits, toolWorkPerRun, services, environment, app: appOptions, ...rest } = options;
  const tools = new ToolRegistry(toolWorkPerRun === undefined ? {} : { workPerRun: toolWorkPerRun }).register(
    kvService(kv ?? memoryKeyValueStores(), kvLimits),
  );
  for (const service of services ?? []) tools.register(service);
  const service = new ProcessService({ ...rest, store: store ?? new MemoryProcessStore(), tools });
  if (environment !== undefined) {
    const { module, name, ...context } = environment;
    await service.environments.activate(name ?? "quickjs", module, context);
  }
  // `/run` imports this host's services, bound to the caller's tenant, unless the options say otherwise.
  const run = appOptions?.run && { tools, ...appOptions.run };
  const app = createApp({ ...appOptions, ...(run && { run }), processes: service, catalog: service });
  return { service, app, tools };
}
