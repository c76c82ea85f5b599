/**
 * `runcode/environment`: the QuickJS environment module. `instantiate()` returns an `EnvironmentModule`
 * (docs/environment.md, "The contract between a host and an environment module") that runs process code, a TypeScript ES module with top-level `await`, in a fresh sandbox
 * of the core per execution, with `console`, `cyrnel.output` and `cyrnel.services[s].tools[t].invoke` as its only
 * window on the host. Platform-neutral: hand it a compiled `WebAssembly.Module` on Workers.
 * @module
 */

export { FUEL_PER_MS } from "../core/sandbox.js";
export type { JsonValue } from "../values/json.js";
export { exampleValue } from "./docs.js";
export {
  DEFAULT_BUDGETS,
  DEFAULT_CONCURRENCY,
  DEFAULT_TIMEOUT_MS,
  type EnvironmentBudgets,
  type EnvironmentOptions,
  instantiate,
  MAX_TOOL_ID_LENGTH,
} from "./environment.js";
export { describeFailure, MAX_MESSAGE_CHARS } from "./failure.js";
export {
  FORMAT_BUDGET,
  type Inspect,
  type InspectOptions,
  MAX_STRING,
  makeInspect,
  truncationMarker,
} from "./inspect.js";
export {
  type EnvironmentBindings,
  type EnvironmentModule,
  type EnvironmentSetupContext,
  EXECUTION_EXIT_STATES,
  EXECUTION_STATES,
  type ExecutionExitState,
  type ExecutionInput,
  type ExecutionOptions,
  type ExecutionState,
  type InvokeInput,
  type JSONSchema,
  type Module,
  type ModuleSetupContext,
  type ServiceInfo,
  type ToolDefinition,
  type ToolDocsInput,
} from "./types.js";
