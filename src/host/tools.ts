/**
 * The tool registry (the host's module service): services of tools with JSON Schemas. Parameters are validated
 * against the tool's input schema before the tool runs; every failure is a `ToolError` with a message that makes
 * sense inside the sandbox, where it rejects `invoke`.
 * @module
 */
import type { InvokeInput, JSONSchema, ServiceInfo, ToolDefinition } from "../environment/types.js";
import { type Check, compileSchema } from "./validate.js";

/** A tool: its definition and what it does. */
export interface Tool {
  id: string;
  name?: string;
  description: string;
  inputSchema: JSONSchema;
  outputSchema?: JSONSchema;
  run(parameters: Record<string, unknown>): unknown;
}

/** A service: a named group of tools. */
export interface Service {
  id: string;
  name?: string;
  description: string;
  tools: Tool[];
}

export type ToolErrorCode = "unknown_service" | "unknown_tool" | "invalid_parameters" | "tool_failed";

export class ToolError extends Error {
  override name = "ToolError";
  readonly code: ToolErrorCode;
  constructor(code: ToolErrorCode, message: string) {
    super(message);
    this.code = code;
  }
}

const ID = /^[A-Za-z_][\w-]{0,63}$/;
interface Entry {
  info: ServiceInfo;
  tools: Map<string, { tool: Tool; check: Check }>;
}

export class ToolRegistry {
  readonly #services = new Map<string, Entry>();

  /** Adds a service; throws on a bad or duplicate id or a schema that does not compile. */
  register(service: Service): this {
    if (!ID.test(service.id)) throw new TypeError(`Service id ${JSON.stringify(service.id)} must match ${ID}`);
    if (this.#services.has(service.id)) throw new Error(`Service '${service.id}' is already registered`);
    const tools = new Map<string, { tool: Tool; check: Check }>();
    const definitions: ToolDefinition[] = [];
    for (const tool of service.tools) {
      if (!ID.test(tool.id)) throw new TypeError(`Tool id ${JSON.stringify(tool.id)} must match ${ID}`);
      if (tools.has(tool.id)) throw new Error(`Service '${service.id}' has two tools '${tool.id}'`);
      tools.set(tool.id, { tool, check: compileSchema(tool.inputSchema) });
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

  /** Validates and runs a tool; rejects with a {@link ToolError}. */
  async invoke(input: InvokeInput): Promise<unknown> {
    const { serviceId, toolId, parameters } = input;
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
    const problem = entry.check(parameters);
    if (problem !== undefined) {
      throw new ToolError("invalid_parameters", `Invalid parameters for ${serviceId}.${toolId}: ${problem}`);
    }
    try {
      return await entry.tool.run(parameters);
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      throw new ToolError("tool_failed", `${serviceId}.${toolId} failed: ${message}`);
    }
  }
}
