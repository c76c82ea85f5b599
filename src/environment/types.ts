/**
 * The environment contract (docs/environment.md, "The contract between a host and an environment module") as
 * TypeScript types, shared by the environment module and the process host.
 * @module
 */
import type { InvokeInput, JSONSchema, ServiceInfo, ToolDefinition } from "../tools/types.js";

export type { InvokeInput, JSONSchema, ServiceInfo, ToolDefinition };

/** What every module receives at setup. */
export interface ModuleSetupContext {
  config: Record<string, unknown>;
  secrets: Record<string, unknown>;
}

/** The lifecycle every module has. */
export interface Module {
  setup(context: ModuleSetupContext): Promise<void>;
  teardown(): Promise<void>;
}

/** States an environment reports; `idle` and `terminating` are the host's own. */
export const EXECUTION_STATES = ["queued", "running"] as const;
export type ExecutionState = (typeof EXECUTION_STATES)[number];

/** The final word of `execute`. */
export const EXECUTION_EXIT_STATES = ["failed", "success", "timeout", "canceled"] as const;
export type ExecutionExitState = (typeof EXECUTION_EXIT_STATES)[number];

/**
 * The host's callback surface (docs/environment.md). `emitStdout`/`emitStderr` take raw UTF-8 bytes (a Node
 * `Buffer` is a `Uint8Array`). `listServices` is the tool discovery the spec mentions without naming: optional, so a
 * host without it still works (then every `cyrnel.services[s].tools[t]` is forwarded as written).
 */
export interface EnvironmentBindings {
  /**
   * A tool call. The QuickJS environment hands over `parameters` as a fresh tree of plain JSON data of bounded size
   * (see `EnvironmentBudgets`); it is still guest data: validate it, and never merge it into your objects by
   * assignment.
   */
  invokeTool(input: InvokeInput): Promise<unknown>;
  setState(eid: number, data: ExecutionState): void;
  setError(eid: number, data: string): void;
  emitStdout(eid: number, data: Uint8Array): void;
  emitStderr(eid: number, data: Uint8Array): void;
  /**
   * A patch of the process output. The QuickJS environment hands over a fresh tree of plain JSON data (own data
   * properties only, no shared references, bounded size) without a top-level `__proto__` key; deeper levels may
   * hold `__proto__` as an ordinary own key: merge with defined properties, never a deep merge that assigns.
   */
  emitOutput(eid: number, data: Record<string, unknown>): void;
  listServices?(): Promise<ServiceInfo[]>;
  /**
   * The fuel the execution spent (the core's `fuelUsed`), told once as it ends, before `execute` resolves; not told
   * when the run does not know it (stopped from outside its thread). Hosts charge it to the process's tenant.
   */
  setFuelUsed?(eid: number, fuel: number): void;
}

export interface EnvironmentSetupContext extends ModuleSetupContext {
  bindings: EnvironmentBindings;
}

export interface ExecutionOptions {
  timeoutMs: number;
}

export interface ExecutionInput {
  eid: number;
  code: string;
  /**
   * ES modules the code imports by relative specifier (`import { f } from "./util.js"`), as `runCode`'s `modules`:
   * specifier to source. Default none.
   */
  modules?: Record<string, string>;
  options?: ExecutionOptions;
  /**
   * Whose execution it is. Executions waiting for a slot start in turns by tenant, not first come, first served, and
   * the run carries it (`CodeExecutionOptions.tenant`: worker threads serve tenants in turns too).
   */
  tenant?: string;
}

export interface ToolDocsInput {
  serviceId: string;
  toolId: string;
  description: string;
  inputSchema: JSONSchema;
  outputSchema: JSONSchema;
}

/** The contract every environment module implements (docs/environment.md, "The contract between a host and an environment module"). */
export interface EnvironmentModule extends Module {
  setup(context: EnvironmentSetupContext): Promise<void>;
  execute(input: ExecutionInput): Promise<ExecutionExitState>;
  kill(eid: number): Promise<void>;
  generateDocs(): Promise<string>;
  generateToolDocs(input: ToolDocsInput): Promise<string>;
}
