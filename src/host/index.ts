/**
 * `runcode/host`: the process host, platform-neutral. A {@link ProcessService} (pids, state machine, bindings,
 * events) over the {@link ProcessStore} port, a {@link ToolRegistry} with the built-in `kv` service over the
 * {@link KeyValueStore} port, environment activation with draining, and the HTTP API as a Hono app
 * (`createApp({ service }).fetch(request)`). `createHost` wires the in-memory pieces together.
 * @module
 */
import type { EnvironmentModule, ModuleSetupContext } from "../environment/types.js";
import { createApp } from "./app.js";
import { kvService } from "./kv.js";
import { ProcessService, type ProcessServiceOptions } from "./process-service.js";
import { type KeyValueStore, MemoryKeyValueStore, MemoryProcessStore, type ProcessStore } from "./storage.js";
import { type Service, ToolRegistry } from "./tools.js";

export { type AppOptions, createApp, summaryOf } from "./app.js";
export { Environments } from "./environments.js";
export { ERROR_STATUS, HostError, type HostErrorCode, isHostError } from "./errors.js";
export { toJson } from "./json.js";
export { KV_MAX_KEY_LENGTH, KV_MAX_VALUE_BYTES, kvService } from "./kv.js";
export { openApiDocument } from "./openapi.js";
export {
  type CreateProcessInput,
  DEFAULT_EXECUTION_TIMEOUT_MS,
  DEFAULT_MAX_ACTIVE_PROCESSES,
  DEFAULT_OUTPUT_LIMITS,
  MAX_CODE_BYTES,
  MAX_EXECUTION_TIMEOUT_MS,
  OUTPUT_TRUNCATED_KEY,
  type OutputLimits,
  type ProcessEvent,
  type ProcessListener,
  ProcessService,
  type ProcessServiceOptions,
} from "./process-service.js";
export * as schemas from "./schemas.js";
export { isActive, transition } from "./states.js";
export * from "./storage.js";
export { type Service, type Tool, ToolError, type ToolErrorCode, ToolRegistry } from "./tools.js";
export { type Check, compileSchema } from "./validate.js";

export interface HostOptions extends Partial<Omit<ProcessServiceOptions, "store" | "tools">> {
  store?: ProcessStore;
  /** Storage of the built-in `kv` service. Default in memory. */
  kv?: KeyValueStore;
  /** More services next to `kv`. */
  services?: Service[];
  /** An environment to activate (under `name`, default `"quickjs"`). */
  environment?: { module: EnvironmentModule; name?: string } & Partial<ModuleSetupContext>;
  maxBodyBytes?: number;
}

/** A ready host: service, app, and the active environment (if one was given). */
export async function createHost(options: HostOptions = {}) {
  const { store, kv, services, environment, maxBodyBytes, ...rest } = options;
  const tools = new ToolRegistry().register(kvService(kv ?? new MemoryKeyValueStore()));
  for (const service of services ?? []) tools.register(service);
  const service = new ProcessService({ ...rest, store: store ?? new MemoryProcessStore(), tools });
  if (environment !== undefined) {
    const { module, name, ...context } = environment;
    await service.environments.activate(name ?? "quickjs", module, context);
  }
  const app = createApp(maxBodyBytes === undefined ? { service } : { service, maxBodyBytes });
  return { service, app, tools };
}
