/**
 * `POST /run`: one run over HTTP, by the host's one path for runs (`runs/run-once.ts`). The body is
 * `{source, options?, timeoutMs?}` with the data-only options of `runCode`; the answer is the `CodeExecutionResult` in
 * the lossless JSON of `src/values/wire.ts`, whatever its status, or with `Accept: text/event-stream` the run's events
 * as they happen and then that result (run-stream.ts). Bad requests get `{error: {code, message}}` with a 4xx status
 * and run nothing. Runs are admitted by their memory limits (`RunAdmission`): past the cap a run waits in a short
 * line, then 503 `overloaded`, never an instance that runs out of memory.
 * @module
 */
import { createRoute, type OpenAPIHono } from "@hono/zod-openapi";
import { resultWireText } from "../../core/result-wire.js";
import type { AdmissionCaps } from "../admission/run-admission.js";
import { HostError } from "../errors.js";
import { MAX_RUN_BODY_BYTES } from "../limits.js";
import type { RunOnce, RunOnceOptions, RunOnceRequest } from "../runs/run-once.js";
import { jsonBody } from "./json-body.js";
import { type AppEnv, errorResponses, jsonOrEventStream, preEncoded, secured } from "./route-context.js";
import { streamRun } from "./run-stream.js";
import { RunRequest, RunResult } from "./schemas.js";

/** What `POST /run` and `POST /mcp` run code with. */
export interface RunRouteOptions extends Omit<RunOnceOptions, "admission"> {
  /** Whether `runCode`'s sandbox has the Web APIs (`SandboxOptions.webApis`), for `POST /mcp`'s guide. Default `false`. */
  webApis?: boolean;
  /** The cap of linear memory runs in flight share, and the line of runs waiting for room (run-admission.ts). */
  admission?: Partial<AdmissionCaps>;
  /** The origins `runCode`'s sandbox lets guest code fetch, which `POST /mcp`'s guide names. Default none. */
  fetchAllow?: readonly string[];
}

const BODY_KEYS = ["source", "options", "timeoutMs"];

const route = createRoute(
  secured(
    {
      method: "post",
      path: "/run",
      summary: "Run code once and answer its result, or stream its events and then its result",
      request: { body: { required: true, content: { "application/json": { schema: RunRequest } } } },
      responses: {
        200: jsonOrEventStream(
          "The run's result, whatever its status; with `Accept: text/event-stream`, `log` and `report` events as they happen, then a `result` event",
          RunResult,
        ),
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

/** Adds `POST /run` to `app`, its runs made by `runs`. */
export function addRunRoutes(app: OpenAPIHono<AppEnv>, runs: RunOnce): void {
  app.openapi(route, async (c) => {
    const request = parseBody(c.get("body"));
    const tenant = c.get("tenant");
    // The rate first: a run the tenant may not start never waits for memory.
    await c.get("quotas").admit(tenant);
    // A client that goes away stops the wait, or the run and what it holds.
    const { signal } = c.req.raw;
    if (/\btext\/event-stream\b/i.test(c.req.header("accept") ?? "")) {
      return preEncoded(await streamRun(runs, request, { tenant, signal }));
    }
    const { result, maxLength } = await runs.execute(request, { tenant, signal });
    return preEncoded(
      new Response(resultWireText(result, maxLength), { headers: { "content-type": "application/json" } }),
    );
  });
}

/** The body's fields; a 400 `invalid_request` naming what is wrong. */
function parseBody(body: unknown): RunOnceRequest {
  const invalid = (message: string) => new HostError("invalid_request", message);
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    throw invalid("The body must be an object {source, options?, timeoutMs?}");
  }
  for (const key of Object.keys(body)) {
    if (!BODY_KEYS.includes(key)) throw invalid(`Unknown field '${key}': the body is {source, options?, timeoutMs?}`);
  }
  const { source, options, timeoutMs } = body as { source?: unknown; options?: unknown; timeoutMs?: unknown };
  if (typeof source !== "string") throw invalid("'source' must be a string");
  return { source, options, timeoutMs };
}
