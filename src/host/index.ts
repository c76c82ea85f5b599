/**
 * `runcode/host`: the process host, platform-neutral. A {@link ProcessService} (pids, state machine, bindings,
 * events) over the {@link ProcessStore} port, a {@link ToolRegistry} with the built-in `kv` service over the
 * {@link KeyValueStore} port (a store per tenant), environment activation with draining, and the HTTP API as one
 * Hono app (`createApp({ processes, catalog }).fetch(request)`) with API keys, tenants, rates and `POST /run`.
 * `createHost` wires the in-memory pieces together.
 * @module
 */
import type { EnvironmentModule, ModuleSetupContext } from "../environment/types.js";
import { type KvLimits, kvService, memoryKeyValueStores } from "../tools/kv.js";
import type { KeyValueStore } from "../tools/kv-store.js";
import { type Service, ToolRegistry } from "../tools/registry.js";
import { type AppOptions, createApp } from "./http/app.js";
import { ProcessService, type ProcessServiceOptions } from "./processes/process-service.js";
import { MemoryProcessStore, type ProcessStore } from "./processes/storage.js";

export { linearMemoryBytes } from "../core/engine.js";
export {
  KV_MAX_CALLS_PER_RUN,
  KV_MAX_KEY_LENGTH,
  KV_MAX_KEYS,
  KV_MAX_STORE_BYTES,
  KV_MAX_VALUE_BYTES,
  type KvLimits,
  kvService,
  memoryKeyValueStores,
} from "../tools/kv.js";
export * from "../tools/kv-store.js";
export {
  ANONYMOUS_TENANT,
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
} from "../tools/registry.js";
export {
  type HttpUpstream,
  httpUpstreamsFrom,
  type StdioUpstream,
  type Upstream,
  upstreamsFrom,
} from "../tools/upstream-config.js";
export { type Check, compileSchema, DEFAULT_VALIDATION_UNITS, UNITS_PER_READ } from "../tools/validate.js";
export { DEFAULT_JSON_UNITS, toJson, UNITS_PER_JSON_BYTE } from "../values/json.js";
export {
  type Bucket,
  DEFAULT_RUNS_PER_MINUTE,
  MemoryQuotas,
  type Quotas,
  rateLimited,
  takeToken,
} from "./admission/quotas.js";
export {
  type AdmissionLimits,
  MAX_ADMISSION_WAIT_MS,
  MAX_WAITING_RUNS,
  RUN_MEMORY_BUDGET_BYTES,
  RunAdmission,
} from "./admission/run-admission.js";
export { MAX_CODE_BYTES } from "./code-size.js";
export { ERROR_STATUS, HostError, type HostErrorCode, isHostError, retryLater } from "./errors.js";
export { type AppOptions, createApp, DEFAULT_MAX_BODY_BYTES } from "./http/app.js";
export {
  type Access,
  type AccessSettings,
  accessFrom,
  MIN_API_KEY_LENGTH,
  tenantOf,
} from "./http/auth.js";
export { readBytesWithin, readTextWithin } from "./http/body.js";
export type { Catalog } from "./http/catalog-routes.js";
export { originOf } from "./http/origins.js";
export { type ProcessBackend, summaryOf } from "./http/process-routes.js";
export { MAX_RUN_BODY_BYTES, MAX_RUN_MEMORY_BYTES, RUN_TIMEOUT_MS, type RunRouteOptions } from "./http/run-routes.js";
export * as schemas from "./http/schemas.js";
export { Environments } from "./processes/environments.js";
export {
  EVENT_STREAM_BUFFER_BYTES,
  eventStream,
  type ProcessEvent,
  type ProcessListener,
  type Watchable,
} from "./processes/events.js";
export {
  type CreateProcessInput,
  DEFAULT_EXECUTION_TIMEOUT_MS,
  DEFAULT_MAX_ACTIVE_PROCESSES,
  DEFAULT_MAX_SUBSCRIBERS,
  DEFAULT_OUTPUT_LIMITS,
  MAX_EXECUTION_TIMEOUT_MS,
  OUTPUT_TRUNCATED_KEY,
  type OutputLimits,
  ProcessService,
  type ProcessServiceOptions,
  type ProcessUsage,
} from "./processes/process-service.js";
export { isActive, transition } from "./processes/states.js";
export * from "./processes/storage.js";

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
