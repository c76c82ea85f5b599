/**
 * The HTTP API's JSON Schemas: the same objects validate requests and make `GET /openapi.json`.
 * @module
 */
import { EXECUTION_EXIT_STATES } from "../environment/types.js";
import { MAX_EXECUTION_TIMEOUT_MS } from "./process-service.js";
import { HOST_STATES } from "./storage.js";

export const CreateProcessRequest = {
  type: "object",
  description: "A process to create and start.",
  properties: {
    code: { type: "string", description: "The process code: a TypeScript ES module (at most 100 KB of UTF-8)." },
    timeoutMs: {
      type: "integer",
      minimum: 1,
      maximum: MAX_EXECUTION_TIMEOUT_MS,
      description: "Milliseconds the process may run. Default 30000.",
    },
    ref: { type: "string", minLength: 1, maxLength: 256, description: "A caller's label, usable as a list filter." },
  },
  required: ["code"],
  additionalProperties: false,
} as const;

export const ListProcessesQuery = {
  type: "object",
  properties: {
    state: { type: "string", enum: HOST_STATES },
    exitState: { type: "string", enum: EXECUTION_EXIT_STATES },
    ref: { type: "string", minLength: 1, maxLength: 256 },
    limit: { type: "string", pattern: "^(?:[1-9][0-9]{0,2}|1000)$", description: "1-1000, default 100." },
  },
  additionalProperties: false,
} as const;

const nullable = (schema: Record<string, unknown>) => ({ anyOf: [schema, { type: "null" }] });

export const ProcessSummary = {
  type: "object",
  properties: {
    pid: { type: "integer", minimum: 1 },
    ref: { type: "string" },
    state: { type: "string", enum: HOST_STATES },
    exitState: nullable({ type: "string", enum: EXECUTION_EXIT_STATES }),
    error: nullable({ type: "string" }),
    timeoutMs: { type: "integer" },
    runs: { type: "integer" },
    createdAt: { type: "number" },
    startedAt: nullable({ type: "number" }),
    finishedAt: nullable({ type: "number" }),
  },
  required: ["pid", "state", "exitState", "error", "timeoutMs", "runs", "createdAt", "startedAt", "finishedAt"],
} as const;

export const ProcessRecordSchema = {
  type: "object",
  properties: {
    ...ProcessSummary.properties,
    code: { type: "string" },
    output: { type: "object" },
    stdout: { type: "string" },
    stderr: { type: "string" },
    truncated: {
      type: "object",
      properties: { stdout: { type: "boolean" }, stderr: { type: "boolean" }, output: { type: "boolean" } },
    },
  },
  required: [...ProcessSummary.required, "code", "output", "stdout", "stderr", "truncated"],
} as const;

export const ProcessState = {
  type: "object",
  properties: { pid: { type: "integer" }, state: { type: "string", enum: HOST_STATES } },
  required: ["pid", "state"],
} as const;

export const ErrorResponse = {
  type: "object",
  properties: {
    error: {
      type: "object",
      properties: { code: { type: "string" }, message: { type: "string" } },
      required: ["code", "message"],
    },
  },
  required: ["error"],
} as const;

export const ToolDefinitionSchema = {
  type: "object",
  properties: {
    id: { type: "string" },
    name: { type: "string" },
    description: { type: "string" },
    inputSchema: { type: "object" },
    outputSchema: { type: "object" },
  },
  required: ["id", "name", "description", "inputSchema", "outputSchema"],
} as const;

export const ServiceInfoSchema = {
  type: "object",
  properties: {
    id: { type: "string" },
    name: { type: "string" },
    description: { type: "string" },
    tools: { type: "array", items: { $ref: "#/components/schemas/ToolDefinition" } },
  },
  required: ["id", "name", "description", "tools"],
} as const;
