/**
 * `GET /openapi.json`: the OpenAPI 3.1 description of the HTTP API, built from the schemas that validate requests.
 * @module
 */
import {
  CreateProcessRequest,
  ErrorResponse,
  ListProcessesQuery,
  ProcessRecordSchema,
  ProcessState,
  ProcessSummary,
  ServiceInfoSchema,
  ToolDefinitionSchema,
} from "./schemas.js";

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const json = (schema: unknown, description: string) => ({ description, content: { "application/json": { schema } } });
const text = (description: string, type = "text/plain") => ({
  description,
  content: { [type]: { schema: { type: "string" } } },
});
const error = (description: string) => json(ref("Error"), description);
const pid = { name: "pid", in: "path", required: true, schema: { type: "string", pattern: "^[1-9][0-9]{0,15}$" } };
const withPid = (operation: Record<string, unknown>) => ({
  ...operation,
  parameters: [pid],
  responses: {
    ...(operation.responses as Record<string, unknown>),
    "400": error("Malformed pid"),
    "404": error("No such process"),
  },
});

export function openApiDocument(): Record<string, unknown> {
  const query = Object.entries(ListProcessesQuery.properties).map(([name, schema]) => ({
    name,
    in: "query",
    required: false,
    schema,
  }));
  return {
    openapi: "3.1.0",
    info: {
      title: "runcode process host",
      version: "0.1.0",
      description:
        "Submit TypeScript as processes, follow their state and output, call tools. Errors are `{error: {code, message}}`.",
    },
    paths: {
      "/processes": {
        post: {
          summary: "Create and start a process",
          requestBody: { required: true, content: { "application/json": { schema: ref("CreateProcessRequest") } } },
          responses: {
            "201": json(ref("ProcessState"), "Created; the process is queued"),
            "400": error("Malformed JSON (invalid_json) or a body that does not match the schema (invalid_request)"),
            "413": error("Body over the limit or code over 100 KB (payload_too_large)"),
            "415": error("The content type is not application/json (unsupported_media_type)"),
            "429": error("Too many active processes (too_many_processes)"),
          },
        },
        get: {
          summary: "List processes (summaries, ascending pid)",
          parameters: query,
          responses: {
            "200": json(
              { type: "object", properties: { processes: { type: "array", items: ref("ProcessSummary") } } },
              "Processes",
            ),
            "400": error("Unknown or invalid filter"),
          },
        },
      },
      "/processes/{pid}": {
        get: withPid({
          summary: "A process record (live while it runs)",
          responses: { "200": json(ref("ProcessRecord"), "The record") },
        }),
        delete: withPid({
          summary: "Delete an idle process",
          responses: { "204": { description: "Deleted" }, "409": error("The process is active (process_active)") },
        }),
      },
      "/processes/{pid}/code": { get: withPid({ summary: "The code", responses: { "200": text("The code") } }) },
      "/processes/{pid}/stdout": {
        get: withPid({ summary: "Standard output so far", responses: { "200": text("stdout") } }),
      },
      "/processes/{pid}/stderr": {
        get: withPid({ summary: "Standard error so far", responses: { "200": text("stderr") } }),
      },
      "/processes/{pid}/output": {
        get: withPid({ summary: "The merged output so far", responses: { "200": json({ type: "object" }, "output") } }),
      },
      "/processes/{pid}/events": {
        get: withPid({
          summary:
            "Server-Sent Events: snapshot, then state, stdout, stderr, output and exit; ends after exit, or with dropped when the client reads too slowly",
          responses: {
            "200": text("An event stream", "text/event-stream"),
            "429": error("The process has its maximum of event streams (too_many_subscribers)"),
          },
        }),
      },
      "/processes/{pid}/signals/kill": {
        post: withPid({
          summary: "Kill a queued or running process",
          responses: {
            "202": json(ref("ProcessState"), "Kill requested"),
            "409": error("The process is idle (process_not_active)"),
          },
        }),
      },
      "/processes/{pid}/signals/run": {
        post: withPid({
          summary: "Run an idle process again",
          responses: {
            "202": json(ref("ProcessState"), "Queued"),
            "409": error("The process is active (process_active)"),
            "429": error("Too many active processes (too_many_processes)"),
          },
        }),
      },
      "/environment/docs": {
        get: {
          summary: "How to write process code for the active environment",
          responses: { "200": text("Markdown", "text/markdown"), "503": error("No environment is active") },
        },
      },
      "/tools": {
        get: {
          summary: "Services and their tools",
          responses: {
            "200": json(
              { type: "object", properties: { services: { type: "array", items: ref("ServiceInfo") } } },
              "Services",
            ),
          },
        },
      },
      "/tools/{serviceId}/{toolId}/docs": {
        get: {
          summary: "How to call one tool from process code",
          parameters: [
            { name: "serviceId", in: "path", required: true, schema: { type: "string" } },
            { name: "toolId", in: "path", required: true, schema: { type: "string" } },
          ],
          responses: { "200": text("Markdown", "text/markdown"), "404": error("No such tool") },
        },
      },
    },
    components: {
      schemas: {
        CreateProcessRequest,
        ProcessState,
        ProcessSummary,
        ProcessRecord: ProcessRecordSchema,
        ServiceInfo: ServiceInfoSchema,
        ToolDefinition: ToolDefinitionSchema,
        Error: ErrorResponse,
      },
    },
  };
}
