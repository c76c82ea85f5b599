/**
 * `runcode/host`: the process host, platform-neutral. A {@link ProcessService} (pids, state machine, bindings,
 * events) over the {@link ProcessStore} port, a {@link ToolRegistry} with the built-in `kv` service over the
 * {@link KeyValueStore} port, environment activation with draining, and the HTTP API as a Hono app
 * (`createApp({ service }).fetch(request)`). `createHost` wires the in-memory pieces together.
 * @module
 */
import type { EnvironmentModule, ModuleSetupContext } from "../environment/types.js";
import { createApp } from "./app.js";
import { type KvLimits, kvService } from "./kv.js";
import { ProcessService, type ProcessServiceOptions } from "./process-service.js";
import { type KeyValueStore, MemoryKeyValueStore, MemoryProcessStore, type ProcessStore } from "./storage.js";
import { type Service, ToolRegistry } from "./tools.js";

export { type AppOptions, createApp, DEFAULT_MAX_BODY_BYTES, EVENT_STREAM_BUFFER_BYTES, summaryOf } from "./app.js";
export { Environments } from "./environments.js";
export { ERROR_STATUS, HostError, type HostErrorCode, isHostError } from "./errors.js";
export { DEFAULT_JSON_UNITS, toJson, UNITS_PER_JSON_BYTE } from "./json.js";
export {
  KV_MAX_CALLS_PER_RUN,
  KV_MAX_KEY_LENGTH,
  KV_MAX_KEYS,
  KV_MAX_STORE_BYTES,
  KV_MAX_VALUE_BYTES,
  type KvLimits,
  kvService,
} from "./kv.js";
export { openApiDocument } from "./openapi.js";
export {
  type CreateProcessInput,
  DEFAULT_EXECUTION_TIMEOUT_MS,
  DEFAULT_MAX_ACTIVE_PROCESSES,
  DEFAULT_MAX_SUBSCRIBERS,
  DEFAULT_OUTPUT_LIMITS,
  MAX_CODE_BYTES,
  MAX_EXECUTION_TIMEOUT_MS,
  OUTPUT_TRUNCATED_KEY,
  type OutputLimits,
  type ProcessEvent,
  type ProcessListener,
  ProcessService,
  type ProcessServiceOptions,
  type ProcessUsage,
} from "./process-service.js";
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
  /** Storage of the built-in `kv` service. Default in memory. */
  kv?: KeyValueStore;
  /** Quotas of the built-in `kv` service (defaults: `KV_MAX_*`). */
  kvLimits?: Partial<KvLimits>;
  /** Units of work per run for tool arguments. Default `DEFAULT_TOOL_WORK_PER_RUN`. */
  toolWorkPerRun?: number;
  /** More services next to `kv`. */
  services?: Service[];
  /** An environment to activate (under `name`, default `"quickjs"`). */
  environment?: { module: EnvironmentModule; name?: string } & Partial<ModuleSetupContext>;
  maxBodyBytes?: number;
}

/** A ready host: service, app, and the active environment (if one was given). */
export async function createHost(options: HostOptions = {}) {
  const { store, kv, kvLimits, toolWorkPerRun, services, environment, maxBodyBytes, ...rest } = options;
  const tools = new ToolRegistry(toolWorkPerRun === undefined ? {} : { workPerRun: toolWorkPerRun }).register(
    kvService(kv ?? new MemoryKeyValueStore(), kvLimits),
  );
  for (const service of services ?? []) tools.register(service);
  const service = new ProcessService({ ...rest, store: store ?? new MemoryProcessStore(), tools });
  if (environment !== undefined) {
    const { module, name, ...context } = environment;
    await service.environments.activate(name ?? "quickjs", module, context);
  }
  const app = createApp(maxBodyBytes === undefined ? { service } : { service, maxBodyBytes });
  return { service, app, tools };
}
