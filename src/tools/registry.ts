/**
 * The tool registry (the host's module service): services of tools with JSON Schemas. Parameters are validated
 * against the tool's input schema before the tool runs; every failure is a `ToolError` with a message that makes
 * sense inside the sandbox, where it rejects `invoke`.
 *
 * Parameters come out of the sandbox as cloned values that may share references (a few hundred bytes that expand to
 * 2^40 nodes). Before any tool or schema sees them they become a JSON tree of bounded size and depth, converted
 * within a budget; validation reads that tree within a budget of its own; both are charged to the run's
 * {@link ToolScope}, so a run's tool calls cost the host a bounded amount of work in all.
 * @module
 */

import { BudgetError, WorkBudget } from "../values/budget.js";
import { JsonTooLargeError, jsonWithin, type SizedJson } from "../values/json.js";
import type { InvokeInput, JSONSchema, ServiceInfo, ToolDefinition } from "./types.js";
import { type Check, compileForeignSchema, compileSchema } from "./validate.js";

/** The tenant of every call when a host serves anonymous callers: tools and storage are scoped by tenant. */
export const ANONYMOUS_TENANT = "anonymous";

/** Largest tool arguments, in bytes of their JSON text (shared references counted each time they are reached). */
const MAX_TOOL_ARGUMENT_BYTES = 1_048_576;
/** Deepest nesting of tool arguments (the validator recurses on the host's stack). */
const MAX_TOOL_ARGUMENT_DEPTH = 64;
/** Units of work validating one call's arguments may take (8 per property read, see `validate.ts`). */
const TOOL_VALIDATION_UNITS = 8_388_608;
/** Units of work all of one run's tool calls may spend converting and validating arguments. */
const DEFAULT_TOOL_WORK_PER_RUN = 33_554_432;

/** What a tool's `run` gets besides its parameters. */
export interface ToolContext {
  /** The run the call belongs to: count calls against per-run quotas here. */
  scope: ToolScope;
}

/** A tool: its definition and what it does. */
export interface Tool {
  id: string;
  name?: string;
  description: string;
  inputSchema: JSONSchema;
  outputSchema?: JSONSchema;
  /** Runs with the validated parameters as a JSON tree (Date -> ISO string, bigint -> string, Map -> object...). */
  run(parameters: Record<string, unknown>, context: ToolContext): unknown;
}

/** A service: a named group of tools. */
export interface Service {
  id: string;
  name?: string;
  description: string;
  tools: Tool[];
  /**
   * The tools' schemas come from elsewhere (an upstream server): their regexes never run on the host, and each is
   * compiled when its tool is first called (see `compileForeignSchema`).
   */
  foreignSchemas?: boolean;
}

export type ToolErrorCode =
  | "unknown_service"
  | "unknown_tool"
  | "invalid_parameters"
  | "tool_failed"
  | "quota_exceeded";

export class ToolError extends Error {
  override name = "ToolError";
  readonly code: ToolErrorCode;
  constructor(code: ToolErrorCode, message: string) {
    super(message);
    this.code = code;
  }
}

/**
 * What one run may spend on tool calls: units of work for arguments, and named call counters for per-run quotas
 * (the `kv` service counts its calls here). The process service makes one per run; `invoke` without one gives the
 * call a fresh scope of its own, so a host that runs code itself (the Worker's `POST /run`) makes one per run.
 */
export class ToolScope {
  readonly work: WorkBudget;
  /** Whose run this is: tools keep each tenant's data apart by it (the `kv` service has a store per tenant). */
  readonly tenant: string;
  readonly #calls = new Map<string, number>();

  constructor(workUnits = DEFAULT_TOOL_WORK_PER_RUN, tenant = ANONYMOUS_TENANT) {
    this.work = new WorkBudget(workUnits, "the tool arguments of this run");
    this.tenant = tenant;
  }

  /** Counts a call against the quota `name`; `false` (and nothing counted) when `limit` calls were counted already. */
  take(name: string, limit: number): boolean {
    const count = this.#calls.get(name) ?? 0;
    if (count >= limit) return false;
    this.#calls.set(name, count + 1);
    return true;
  }

  /** Calls counted against `name`. */
  calls(name: string): number {
    return this.#calls.get(name) ?? 0;
  }
}

const ID = /^[A-Za-z_][\w-]{0,63}$/;
interface Entry {
  info: ServiceInfo;
  tools: Map<string, { tool: Tool; check: Check }>;
}

export interface ToolRegistryOptions {
  /** Units of work per run for tool arguments (see {@link ToolScope}). Default {@link DEFAULT_TOOL_WORK_PER_RUN}. */
  workPerRun?: number;
}

export class ToolRegistry {
  readonly #services = new Map<string, Entry>();
  readonly workPerRun: number;

  constructor(options: ToolRegistryOptions = {}) {
    this.workPerRun = options.workPerRun ?? DEFAULT_TOOL_WORK_PER_RUN;
  }

  /** Adds a service; throws on a bad or duplicate id or a schema that does not compile (unless `foreignSchemas`). */
  register(service: Service): this {
    if (!ID.test(service.id)) throw new TypeError(`Service id ${JSON.stringify(service.id)} must match ${ID}`);
    if (this.#services.has(service.id)) throw new Error(`Service '${service.id}' is already registered`);
    const tools = new Map<string, { tool: Tool; check: Check }>();
    const definitions: ToolDefinition[] = [];
    for (const tool of service.tools) {
      if (!ID.test(tool.id)) throw new TypeError(`Tool id ${JSON.stringify(tool.id)} must match ${ID}`);
      if (tools.has(tool.id)) throw new Error(`Service '${service.id}' has two tools '${tool.id}'`);
      const check =
        service.foreignSchemas === true ? compileForeignSchema(tool.inputSchema) : compileSchema(tool.inputSchema);
      tools.set(tool.id, { tool, check });
      definitions.push({
        id: tool.id,
        name: tool.name ?? tool.id,
        description: tool.description,
        inputSchema: tool.inputSchema,
        outputSchema: tool.outputSchema ?? {},
      });
    }
    const info = {
      id: service.id,
      name: service.name ?? service.id,
      description: service.description,
      tools: definitions,
    };
    this.#services.set(service.id, { info, tools });
    return this;
  }

  /** A registry with this one's services and `services` too (one request's upstream tools); this one is unchanged. */
  extendedWith(services: readonly Service[]): ToolRegistry {
    const registry = new ToolRegistry({ workPerRun: this.workPerRun });
    for (const [id, entry] of this.#services) registry.#services.set(id, entry);
    for (const service of services) registry.register(service);
    return registry;
  }

  unregister(serviceId: string): boolean {
    return this.#services.delete(serviceId);
  }

  /** Every service with its tool definitions (tool discovery). */
  list(): ServiceInfo[] {
    return [...this.#services.values()].map((e) => e.info);
  }

  tool(serviceId: string, toolId: string): ToolDefinition | undefined {
    return this.#services.get(serviceId)?.info.tools.find((t) => t.id === toolId);
  }

  /** A fresh scope for one run's calls, made on behalf of `tenant`. */
  scope(tenant = ANONYMOUS_TENANT): ToolScope {
    return new ToolScope(this.workPerRun, tenant);
  }

  /**
   * The services as bare-specifier modules for one run (`import { get } from "kv"; await get({ key })`), every
   * call validated and charged to one scope, so the run's calls share its budgets and quotas (kv calls per run).
   */
  modules(
    tenant = ANONYMOUS_TENANT,
  ): Record<string, Record<string, (parameters: Record<string, unknown>) => Promise<unknown>>> {
    const scope = this.scope(tenant);
    return this.#modulesCharging(() => scope);
  }

  /**
   * The services as modules for a session, whose realm keeps the functions it was given at its creation: each call
   * is charged to the scope of the cell running, which `nextCell()` renews, so a run's budgets hold per cell.
   */
  sessionModules(tenant = ANONYMOUS_TENANT): { modules: ReturnType<ToolRegistry["modules"]>; nextCell: () => void } {
    let scope = this.scope(tenant);
    return {
      modules: this.#modulesCharging(() => scope),
      nextCell: () => {
        scope = this.scope(tenant);
      },
    };
  }

  /** The services as modules whose calls are charged to `scope()` at the time of the call. */
  #modulesCharging(scope: () => ToolScope): ReturnType<ToolRegistry["modules"]> {
    return Object.fromEntries(
      this.list().map((service) => [
        service.id,
        Object.fromEntries(
          service.tools.map((tool) => [
            tool.id,
            (parameters: Record<string, unknown>) =>
              this.invoke({ serviceId: service.id, toolId: tool.id, parameters }, scope()),
          ]),
        ),
      ]),
    );
  }

  /** Converts, validates and runs a tool call, charging `scope`; rejects with a {@link ToolError}. */
  async invoke(input: InvokeInput, scope: ToolScope = this.scope()): Promise<unknown> {
    // The guest may call from deep in the host's stack: the validator's recursion starts from a fresh one.
    await null;
    const { serviceId, toolId } = input;
    const service = this.#services.get(serviceId);
    if (service === undefined) {
      const known = [...this.#services.keys()].join(", ") || "none";
      throw new ToolError("unknown_service", `Unknown service '${serviceId}' (available: ${known})`);
    }
    const entry = service.tools.get(toolId);
    if (entry === undefined) {
      const known = [...service.tools.keys()].join(", ") || "none";
      throw new ToolError("unknown_tool", `Service '${serviceId}' has no tool '${toolId}' (available: ${known})`);
    }
    const name = `${serviceId}.${toolId}`;
    const parameters = this.#parameters(name, input.parameters, entry.check, scope);
    try {
      return await entry.tool.run(parameters, { scope });
    } catch (error) {
      if (error instanceof ToolError) throw error;
      const message = error instanceof Error ? error.message : String(error);
      throw new ToolError("tool_failed", `${name} failed: ${message}`);
    }
  }

  /** The parameters as a bounded, validated JSON tree. */
  #parameters(name: string, raw: unknown, check: Check, scope: ToolScope): Record<string, unknown> {
    const invalid = (problem: string) =>
      new ToolError("invalid_parameters", `Invalid parameters for ${name}: ${problem}`);
    const exhausted = () =>
      new ToolError(
        "quota_exceeded",
        `${name} failed: quota exceeded: a run may spend at most ${scope.work.limit} units of work on tool arguments`,
      );
    if (scope.work.left === 0) throw exhausted();
    let converted: SizedJson;
    try {
      converted = jsonWithin(raw, MAX_TOOL_ARGUMENT_BYTES, "the arguments", scope.work);
    } catch (error) {
      if (scope.work.left === 0) throw exhausted();
      if (error instanceof JsonTooLargeError) {
        throw invalid(
          error.bytes === undefined
            ? `the arguments are more than ${error.maxBytes} bytes of JSON (shared references count each time they are reached)`
            : `the arguments are ${error.bytes} bytes of JSON, over ${error.maxBytes}`,
        );
      }
      // Nesting past MAX_WALK_DEPTH, a cycle: the conversion's own message.
      throw invalid(error instanceof Error ? error.message : String(error));
    }
    const { json: parameters, depth } = converted;
    if (typeof parameters !== "object" || parameters === null || Array.isArray(parameters)) {
      throw invalid("the arguments must be an object");
    }
    // The validator recurses on the stack, a few frames per level.
    if (depth > MAX_TOOL_ARGUMENT_DEPTH) {
      throw invalid(`the arguments are nested deeper than ${MAX_TOOL_ARGUMENT_DEPTH} levels`);
    }
    const budget = new WorkBudget(Math.min(TOOL_VALIDATION_UNITS, scope.work.left), "validating the arguments");
    let problem: string | undefined;
    try {
      problem = check(parameters, budget);
    } catch (error) {
      scope.work.spend(Math.min(budget.spent, scope.work.left));
      if (!(error instanceof BudgetError) && !(error instanceof RangeError)) throw error;
      if (scope.work.left === 0 && budget.limit < TOOL_VALIDATION_UNITS) throw exhausted();
      throw invalid(
        `the arguments are too large to validate against this tool's schema (more than ${budget.limit} units of work)`,
      );
    }
    scope.work.spend(Math.min(budget.spent, scope.work.left));
    if (problem !== undefined) throw invalid(problem);
    return parameters as Record<string, unknown>;
  }
}
