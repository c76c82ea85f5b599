/**
 * `POST /run`: one `runCode` over HTTP. The body is `{source, options}` with the data-only options; the answer is
 * the `CodeExecutionResult` in the lossless JSON of `src/values/wire.ts`, whatever its status. Bad requests get
 * `{error: {code, message}}` with a 4xx status and run nothing. Runs are admitted by their memory limits
 * (`RunAdmission`): past the cap a run waits in a short line, then 503 `overloaded`, never an instance that runs out
 * of memory.
 * @module
 */
import { createRoute, type OpenAPIHono } from "@hono/zod-openapi";
import { resultWireText } from "../../core/result-wire.js";
import type { CodeExecutionOptions, RunCode } from "../../core/types.js";
import type { ToolRegistry } from "../../tools/registry.js";
import type { JsonValue } from "../../values/json.js";
import { fromWire } from "../../values/wire.js";
import type { AdmissionCaps, RunAdmission } from "../admission/run-admission.js";
import { codeTooLarge } from "../code-size.js";
import { HostError } from "../errors.js";
import { jsonBody } from "./json-body.js";
import { type AppEnv, errorResponses, preEncoded, secured } from "./route-context.js";
import { RunRequest, RunResult } from "./schemas.js";

/** Largest heap a run may ask for: well below the 128 MB a Worker isolate may use. */
export const MAX_RUN_MEMORY_BYTES = 64 * 1024 * 1024;
/** Wall-clock cap of one run, for time spent awaiting; CPU-bound code meets the sandbox's safety cap first. */
export const RUN_TIMEOUT_MS = 10_000;

const OPTION_KEYS = new Set(["execute", "modules", "globals", "language", "memoryLimitBytes", "filename"]);

/** What `POST /run` and `POST /mcp` run code with. */
export interface RunRouteOptions {
  runCode: RunCode;
  /** Whether `runCode`'s sandbox has the Web APIs (`SandboxOptions.webApis`), for `POST /mcp`'s guide. Default `false`. */
  webApis?: boolean;
  /** The memory limit of a run that sets none (the sandbox's `defaultMemoryLimitBytes`), as the admission counts it. */
  defaultMemoryLimitBytes: number;
  /** Services a run may import as bare specifiers, bound to the caller's tenant. */
  tools?: ToolRegistry;
  /** The cap of linear memory runs in flight share, and the line of runs waiting for room (run-admission.ts). */
  admission?: Partial<AdmissionCaps>;
  /** The origins `runCode`'s sandbox lets guest code fetch, which `POST /mcp`'s guide names. Default none. */
  fetchAllow?: readonly string[];
}

/** Largest `POST /run` body. */
export const MAX_RUN_BODY_BYTES = 1024 * 1024;

const route = createRoute(
  secured(
    {
      method: "post",
      path: "/run",
      summary: "Run code once and answer its result",
      request: { body: { required: true, content: { "application/json": { schema: RunRequest } } } },
      responses: {
        200: {
          description: "The run's result, whatever its status",
          content: { "application/json": { schema: RunResult } },
        },
        ...errorResponses(
          "invalid_json",
          "invalid_request",
          "invalid_options",
          "payload_too_large",
          "unsupported_media_type",
          "rate_limited",
          "overloaded",
        ),
      },
    },
    jsonBody("POST /run", MAX_RUN_BODY_BYTES),
  ),
);

/** Adds `POST /run` to `app`, its runs admitted by `admission`. */
export function addRunRoutes(app: OpenAPIHono<AppEnv>, options: RunRouteOptions, admission: RunAdmission): void {
  app.openapi(route, async (c) => {
    const parsed = parseBody(c.get("body"));
    const tenant = c.get("tenant");
    const asked = parsed.options.memoryLimitBytes;
    const memory = typeof asked === "number" && asked > 0 ? asked : options.defaultMemoryLimitBytes;
    // The rate first: a run the tenant may not start never waits for memory.
    await c.get("quotas").admit(tenant);
    // A client that goes away stops the wait, or the run and what it holds.
    const { signal } = c.req.raw;
    const release = await admission.admit(memory, tenant, signal);
    try {
      let run: ReturnType<RunCode>;
      try {
        run = options.runCode(parsed.source, { ...parsed.options, imports: options.tools?.modules(tenant) ?? {} });
      } catch (error) {
        throw new HostError("invalid_options", (error as Error).message);
      }
      signal.addEventListener("abort", () => run.terminate("The request ended"), { once: true });
      const timer = setTimeout(() => run.terminate(`The run exceeded ${RUN_TIMEOUT_MS} ms`), RUN_TIMEOUT_MS);
      const result = await run;
      clearTimeout(timer);
      // What a run leaves is capped by its heap, but its encoding is not the same size (base64 is 4/3 of a buffer):
      // past the cap the answer is a `memory` result saying so, decided before the text is made.
      return preEncoded(
        new Response(resultWireText(result, memory), { headers: { "content-type": "application/json" } }),
      );
    } finally {
      release();
    }
  });
}

/** The body's fields, decoded from the wire encoding; a 400 `invalid_request` naming what is wrong. */
function parseBody(body: unknown): { source: string; options: CodeExecutionOptions } {
  const invalid = (message: string) => new HostError("invalid_request", message);
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    throw invalid("The body must be an object {source, options}");
  }
  for (const key of Object.keys(body)) {
    if (key !== "source" && key !== "options") throw invalid(`Unknown field '${key}': the body is {source, options}`);
  }
  const { source, options = {} } = body as { source?: unknown; options?: unknown };
  if (typeof source !== "string") throw invalid("'source' must be a string");
  if (typeof options !== "object" || options === null || Array.isArray(options)) {
    throw invalid("'options' must be an object");
  }
  for (const key of Object.keys(options)) {
    if (!OPTION_KEYS.has(key)) {
      throw invalid(`Unknown or non-data option '${key}': POST /run takes ${[...OPTION_KEYS].join(", ")}`);
    }
  }
  const { modules } = options as { modules?: unknown };
  const sources = typeof modules === "object" && modules !== null ? Object.values(modules) : [];
  const tooLarge = codeTooLarge("'source' with its modules", [source, ...sources.filter((s) => typeof s === "string")]);
  if (tooLarge !== undefined) throw tooLarge;
  const decoded = { ...options } as Record<string, unknown>;
  const memory = decoded.memoryLimitBytes;
  if (typeof memory === "number" && memory > MAX_RUN_MEMORY_BYTES) {
    throw invalid(`'memoryLimitBytes' may be at most ${MAX_RUN_MEMORY_BYTES} here`);
  }
  try {
    // Arguments and globals may use the wire encoding for values JSON cannot carry (bigint, Map, Date, ...).
    if (decoded.globals !== undefined) decoded.globals = fromWire(decoded.globals as JsonValue);
    const execute = decoded.execute as { args?: JsonValue } | undefined;
    if (typeof execute === "object" && execute !== null && execute.args !== undefined) {
      decoded.execute = { ...execute, args: fromWire(execute.args) };
    }
  } catch (error) {
    throw invalid(`A wire-encoded value is malformed: ${(error as Error).message}`);
  }
  return { source, options: decoded as CodeExecutionOptions };
}
