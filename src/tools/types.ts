/**
 * Tools as hosts describe them and user code calls them: the shapes the tool registry, the environment's
 * `cyrnel.services` and MCP share.
 * @module
 */

/** A JSON Schema document (draft 2020-12 as the tool registry validates it). */
export type JSONSchema = Record<string, unknown>;

/** A tool call coming out of user code. */
export interface InvokeInput {
  serviceId: string;
  toolId: string;
  parameters: Record<string, unknown>;
  /** The execution that makes the call (runcode's environment always passes it), so hosts can charge per-run quotas. */
  eid?: number;
}

/** One tool as the host describes it. */
export interface ToolDefinition {
  id: string;
  name: string;
  description: string;
  inputSchema: JSONSchema;
  outputSchema: JSONSchema;
}

/** One service (a named group of tools) as tool discovery returns it. */
export interface ServiceInfo {
  id: string;
  name: string;
  description: string;
  tools: ToolDefinition[];
}
