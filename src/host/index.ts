/**
 * `runcode/host`: the process host, platform-neutral. A {@link ProcessService} (pids, state machine, bindings,
 * events) over the {@link ProcessStore} port, a {@link ToolRegistry} with the built-in `kv` service over the
 * {@link KeyValueStore} port (a store per tenant), environment activation with draining, and the HTTP API as one
 * Hono app (`createApp({ processes, catalog }).fetch(request)`) with API keys, tenants, rates and `POST /run`.
 * `createHost` wires the in-memory pieces together.
 * @module
 */
import type { EnvironmentModule, ModuleSetupContext } from "../environment/types.js";
import { type AppOptions, createApp } from "./app.js";
import { type KvLimits, kvService, memoryKeyValueStores } from "./kv.js";
import { ProcessService, type ProcessServiceOptions } from "./process-service.js";
import { type KeyValueStore, MemoryProcessStore, type ProcessStore } from "./storage.js";
import { type Service, ToolRegistry } from "./tools.js";

export { linearMemoryBytes } from "../engine.js";
export {
  type HttpUpstream,
  httpUpstreamsFrom,
  type StdioUpstream,
  type Upstream,
  upstreamsFrom,
} from "../mcp/upstream-config.js";
export { type AppOptions, createApp, DEFAULT_MAX_BODY_BYTES } from "./app.js";
export {
  type Access,
  type AccessSettings,
  ANONYMOUS_TENANT,
  accessFrom,
  MIN_API_KEY_LENGTH,
  tenantOf,
} from "./auth.js";
export { readBytesWithin, readTextWithin } from "./body.js";
export type { Catalog } from "./catalog-routes.js";
export { MAX_CODE_BYTES } from "./code-size.js";
export { Environments } from "./environments.js";
export { ERROR_STATUS, HostError, type HostErrorCode, isHostError, retryLater } from "./errors.js";
export { EVENT_STREAM_BUFFER_BYTES, eventStream, type Watchable } from "./events.js";
export { DEFAULT_JSON_UNITS, toJson, UNITS_PER_JSON_BYTE } from "./json.js";
export {
  KV_MAX_CALLS_PER_RUN,
  KV_MAX_KEY_LENGTH,
  KV_MAX_KEYS,
  KV_MAX_STORE_BYTES,
  KV_MAX_VALUE_BYTES,
  type KvLimits,
  kvService,
  memoryKeyValueStores,
} from "./kv.js";
export { originOf } from "./origins.js";
export { type ProcessBackend, summaryOf } from "./process-routes.js";
export {
  type CreateProcessInput,
  DEFAULT_EXECUTION_TIMEOUT_MS,
  DEFAULT_MAX_ACTIVE_PROCESSES,
  DEFAULT_MAX_SUBSCRIBERS,
  DEFAULT_OUTPUT_LIMITS,
  MAX_EXECUTION_TIMEOUT_MS,
  OUTPUT_TRUNCATED_KEY,
  type OutputLimits,
  type ProcessEvent,
  type ProcessListener,
  ProcessService,
  type ProcessServiceOptions,
  type ProcessUsage,
} from "./process-service.js";
export {
  type Bucket,
  DEFAULT_RUNS_PER_MINUTE,
  MemoryQuotas,
  type Quotas,
  rateLimited,
  takeToken,
} from "./quotas.js";
export { CUT_OFF_BY_RESTART, cutOff, failCutOffRuns } from "./restarts.js";
export {
  type AdmissionLimits,
  MAX_ADMISSION_WAIT_MS,
  MAX_WAITING_RUNS,
  RUN_DEFAULT_MEMORY_BYTES,
  RUN_MEMORY_BUDGET_BYTES,
  RunAdmission,
} from "./run-admission.js";
export { MAX_RUN_BODY_BYTES, MAX_RUN_MEMORY_BYTES, RUN_TIMEOUT_MS, type RunRouteOptions } from "./run-routes.js";
export * as schemas from "./schemas.js";
export { isActive, transition } from "./states.js";
export * from "./storage.js";
export {
  DEFAULT_TOOL_WORK_PER_RUN,
  MAX_TOOL_ARGUMENT_BYTES,
  MAX_TOOL_ARGUMENT_DEPTH,
  type Service,
  TOOL_VALIDATION_UNITS,
  type Tool,
  type ToolContext,
  ToolError,
  type ToolErrorCode,
  ToolRegistry,
  type ToolRegistryOptions,
  ToolScope,
} from "./tools.js";
export { type Check, compileSchema, DEFAULT_VALIDATION_UNITS, UNITS_PER_READ } from "./validate.js";

export interface HostOptions extends Partial<Omit<ProcessServiceOptions, "store" | "tools">> {
  store?: ProcessStore;
  /** Storage of the built-in `kv` service, one store per tenant. Default in memory. */
  kv?: (tenant: string) => KeyValueStore;
  /** Quotas of the built-in `kv` service (defaults: `KV_MAX_*`). */
  kvLimits?: Partial<KvLimits>;
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
