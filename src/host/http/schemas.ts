/**
 * The HTTP API's request and response shapes as zod schemas: the same objects validate requests and, through the
 * route definitions, make `GET /openapi.json`.
 * @module
 */
import { z } from "@hono/zod-openapi";
import { EXECUTION_EXIT_STATES } from "../../environment/types.js";
import { DEFAULT_RUN_TIMEOUT_MS, MAX_CODE_BYTES, MAX_RUN_TIMEOUT_MS } from "../limits.js";
import { HOST_STATES } from "../processes/storage.js";
import { SESSION_ID_PATTERN, SESSION_NAME_PATTERN } from "../sessions/backend.js";

/** A pid in a path or a cursor: a positive integer of at most 16 digits. */
export const PID_PATTERN = /^[1-9][0-9]{0,15}$/;

/** `timeoutMs` of every door that takes one: a run, a cell, a process (`timeoutWithin` words its refusal). */
const RunTimeout = z
  .number()
  .int()
  .min(1)
  .max(MAX_RUN_TIMEOUT_MS)
  .optional()
  .openapi({
    description: `Milliseconds the run may take, awaits included: 1 to ${MAX_RUN_TIMEOUT_MS}. Default ${DEFAULT_RUN_TIMEOUT_MS}.`,
  });

export const CreateProcessRequest = z
  .strictObject({
    code: z.string().openapi({
      description: `The process code: a TypeScript ES module (at most ${MAX_CODE_BYTES} bytes of UTF-8 with its modules' sources).`,
    }),
    modules: z.record(z.string(), z.string()).optional().openapi({
      description:
        "ES modules the code may import by relative specifier (`./util.js`), as POST /run's `modules` option.",
    }),
    timeoutMs: RunTimeout,
    ref: z.string().min(1).max(256).optional().openapi({ description: "A caller's label, usable as a list filter." }),
  })
  .openapi("CreateProcessRequest", { description: "A process to create and start." });

export const ListProcessesQuery = z.strictObject({
  state: z.enum(HOST_STATES).optional(),
  exitState: z.enum(EXECUTION_EXIT_STATES).optional(),
  ref: z.string().min(1).max(256).optional(),
  limit: z
    .string()
    .regex(/^(?:[1-9][0-9]{0,2}|1000)$/)
    .optional()
    .openapi({ description: "1-1000, default 100." }),
  after: z
    .string()
    .regex(PID_PATTERN)
    .optional()
    .openapi({ description: "The `next` cursor of the previous page: only processes with a higher pid." }),
});

export const PidParameter = z.object({
  pid: z.string().openapi({ param: { name: "pid", in: "path" }, description: "A process id.", example: "1" }),
});

export const ProcessSummary = z
  .object({
    pid: z.number().int().min(1),
    ref: z.string().optional(),
    state: z.enum(HOST_STATES),
    exitState: z.enum(EXECUTION_EXIT_STATES).nullable(),
    error: z.string().nullable(),
    timeoutMs: z.number().int(),
    runs: z.number().int(),
    createdAt: z.number(),
    startedAt: z.number().nullable(),
    finishedAt: z.number().nullable(),
  })
  .openapi("ProcessSummary");

export const ProcessPage = z
  .object({
    processes: z.array(ProcessSummary),
    next: z
      .string()
      .nullable()
      .openapi({ description: "Pass as `after` for the next page; `null` when this page is the last." }),
  })
  .openapi("ProcessPage");

export const ProcessRecordSchema = ProcessSummary.extend({
  code: z.string(),
  modules: z.record(z.string(), z.string()).optional().openapi({ description: "Its modules, when it has any." }),
  output: z.record(z.string(), z.unknown()),
  stdout: z.string(),
  stderr: z.string(),
  truncated: z.object({ stdout: z.boolean(), stderr: z.boolean(), output: z.boolean() }),
}).openapi("ProcessRecord");

export const ProcessState = z.object({ pid: z.number().int(), state: z.enum(HOST_STATES) }).openapi("ProcessState");

export const ErrorResponse = z
  .object({ error: z.object({ code: z.string(), message: z.string() }) })
  .openapi("Error", { description: "Every refusal: a stable `code` (see the route's responses) and a message." });

const ToolDefinitionSchema = z
  .object({
    id: z.string(),
    name: z.string(),
    description: z.string(),
    inputSchema: z.record(z.string(), z.unknown()),
    outputSchema: z.record(z.string(), z.unknown()),
  })
  .openapi("ToolDefinition");

export const ServiceList = z
  .object({
    services: z.array(
      z
        .object({ id: z.string(), name: z.string(), description: z.string(), tools: z.array(ToolDefinitionSchema) })
        .openapi("ServiceInfo"),
    ),
  })
  .openapi("ServiceList");

export const ToolParameters = z.object({
  serviceId: z.string().openapi({ param: { name: "serviceId", in: "path" } }),
  toolId: z.string().openapi({ param: { name: "toolId", in: "path" } }),
});

/** Values of options in the wire encoding (`src/values/wire.ts`) for what JSON cannot carry. */
const WireValues = z.record(z.string(), z.unknown());

export const RunRequest = z
  .strictObject({
    source: z.string().openapi({ description: "JavaScript or TypeScript: a script or an ES module." }),
    options: z.record(z.string(), z.unknown()).optional().openapi({
      description:
        "The data-only options of runCode: execute, modules, globals, language, memoryLimitBytes, filename. Values JSON cannot carry use the wire encoding.",
    }),
    timeoutMs: RunTimeout,
  })
  .openapi("RunRequest", { description: "Code to run once." });

export const RunResult = z.record(z.string(), z.unknown()).openapi("RunResult", {
  description:
    "The CodeExecutionResult in runcode's lossless wire JSON, whatever its status (success, error, memory, terminated, link_error).",
});

export const CreateSessionRequest = z
  .strictObject({
    name: z.string().regex(SESSION_NAME_PATTERN).optional().openapi({
      description: "Unique among the caller's sessions: 1 to 64 of A-Z a-z 0-9 _ - . :",
    }),
    options: z
      .strictObject({
        memoryLimitBytes: z.number().int().min(1).optional().openapi({ description: "The session's heap limit." }),
        modules: z.record(z.string(), z.string()).optional().openapi({
          description: "Modules cells may import by relative specifier (`./name`), by name.",
        }),
        globals: WireValues.optional().openapi({ description: "Globals of the session's realm (wire values)." }),
        imports: z.record(z.string(), WireValues).optional().openapi({
          description: "Modules of plain values cells may import by bare specifier (wire values).",
        }),
      })
      .optional()
      .openapi({ description: "Given once at creation, data only, as POST /run's options." }),
  })
  .openapi("CreateSessionRequest", { description: "A session to create." });

export const SessionCellRequest = z
  .strictObject({
    source: z.string().openapi({
      description:
        "A cell: a script with top-level await whose top-level declarations stay for later cells; `import` at its top binds like const.",
    }),
    language: z.enum(["javascript", "typescript"]).optional().openapi({ description: "Default typescript." }),
    timeoutMs: RunTimeout,
  })
  .openapi("SessionCellRequest", { description: "One cell of a session." });

export const SessionId = z
  .object({ id: z.string().regex(SESSION_ID_PATTERN) })
  .openapi("SessionId", { description: "A session's id: 32 hex digits, telling nothing of anyone's sessions." });

export const SessionIdParameter = z.object({
  id: z.string().openapi({ param: { name: "id", in: "path" }, description: "A session id." }),
});

export const SessionInfoSchema = z
  .object({
    id: z.string(),
    name: z.string().optional(),
    createdAt: z.number().openapi({ description: "Epoch milliseconds." }),
    lastUsedAt: z
      .number()
      .openapi({ description: "Epoch milliseconds of its last cell: the idle TTL counts from it." }),
    cells: z.number().int(),
    bytes: z.number().int().openapi({ description: "Storage it takes, counted against the tenant's quota." }),
  })
  .openapi("SessionInfo");

export const SessionPageSchema = z
  .object({
    sessions: z.array(SessionInfoSchema),
    next: z
      .string()
      .nullable()
      .openapi({ description: "Pass as `cursor` for the next page; `null` when this page is the last." }),
  })
  .openapi("SessionPage");

export const ListSessionsQuery = z.strictObject({
  limit: z
    .string()
    .regex(/^(?:[1-9][0-9]{0,2}|1000)$/)
    .optional()
    .openapi({ description: "1-1000, default 100." }),
  cursor: z
    .string()
    .regex(SESSION_ID_PATTERN)
    .optional()
    .openapi({ description: "The `next` of the previous page: only sessions with a higher id." }),
});
