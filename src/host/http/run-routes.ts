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
import { MAX_RUN_BODY_BYTES, timeoutWithin } from "../limits.js";
import type { RunOnce, RunOnceOptions } from "../runs/run-once.js";
import { type BodyRefusal, jsonBody } from "./json-body.js";
import {
  type AppEnv,
  documented,
  errorResponses,
  invalidInput,
  jsonOrEventStream,
  requireTenant,
  routes,
  secured,
} from "./route-context.js";
import { streamAnswer } from "./run-stream.js";
import { RunRequest, RunResult } from "./schemas.js";

/** What `POST /run` and `POST /mcp` run code with. */
export interface RunRouteOptions extends Omit<RunOnceOptions, "admission"> {
  /** Whether `runCode`'s sandbox has the Web APIs (`SandboxOptions.webApis`), for `POST /mcp`'s guide. Default `false`. */
  webApis?: boolean;
  /** Whether `runCode`'s sandbox has `Intl` (`SandboxOptions.intl`), for `POST /mcp`'s guide. Default `false`. */
  intl?: boolean;
  /** The cap of linear memory runs in flight share, and the line of runs waiting for room (run-admission.ts). */
  admission?: Partial<AdmissionCaps>;
  /** The origins `runCode`'s sandbox lets guest code fetch, which `POST /mcp`'s guide names. Default none. */
  fetchAllow?: readonly string[];
  /** The npm packages `runCode`'s sandbox has booted, which `POST /mcp`'s guide lists. Default none. */
  packages?: readonly { specifier: string; version: string }[];
}

const route = createRoute(
  secured({
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
  }),
);

/**
 * The refusal of a body a run's or a cell's schema does not take, in the words every door of runs uses: a field of
 * the wrong type first, then an unknown field (naming the body's `shape`), then a time limit out of range (as
 * `run_code` words it).
 */
export const refusedBody =
  (shape: string): BodyRefusal =>
  (issues, body) => {
    const typed = issues.filter((issue) => issue.code !== "unrecognized_keys" && issue.path[0] !== "timeoutMs");
    if (typed.length > 0) return invalidInput("json", typed);
    const unknown = issues.find((issue) => issue.code === "unrecognized_keys");
    if (unknown !== undefined) {
      return new HostError("invalid_request", `Unknown field '${unknown.keys[0]}': the body is ${shape}`);
    }
    // Only timeoutMs is left: `timeoutWithin` throws the refusal every door of runs gives.
    timeoutWithin((body as { timeoutMs?: unknown }).timeoutMs);
    return invalidInput("json", issues);
  };

/** Answers up to this many characters go out whole, their run's room given back at once. */
const SMALL_ANSWER_CHARS = 65_536;
/** Bytes of a larger answer handed to the server at a time, as its client takes them. */
const ANSWER_PIECE_BYTES = 65_536;

/**
 * A run's JSON answer, `release` (the run's room in admission) called once its client has read it whole or gone away.
 * An answer may be tens of megabytes, which the server holds until the client takes them: given back when the run
 * ended, the room let a tenant's client that read nothing keep answer after answer in the host's memory (one of 60 MB
 * for some 11 ms of its share of CPU), as long as it kept its connections open.
 */
function heldAnswer(text: string, release: () => void = () => {}): Response {
  const headers = { "content-type": "application/json" };
  if (text.length <= SMALL_ANSWER_CHARS) {
    release();
    return new Response(text, { headers });
  }
  const bytes = new TextEncoder().encode(text);
  let at = 0;
  const body = new ReadableStream<Uint8Array>(
    {
      pull(controller) {
        if (at < bytes.length) {
          controller.enqueue(bytes.subarray(at, at + ANSWER_PIECE_BYTES));
          at += ANSWER_PIECE_BYTES;
          return;
        }
        release();
        controller.close();
      },
      cancel: release,
    },
    { highWaterMark: 0 },
  );
  return new Response(body, { headers: { ...headers, "content-length": String(bytes.length) } });
}

/** `POST /run`, its runs made by `runs`. */
export function runRoutes(runs: RunOnce): OpenAPIHono<AppEnv> {
  const app = routes();
  documented(app, route);
  app.post(
    route.path,
    requireTenant,
    jsonBody("POST /run", MAX_RUN_BODY_BYTES, RunRequest, refusedBody("{source, options?, timeoutMs?}")),
    async (c) => {
      const request = c.req.valid("json");
      const tenant = c.get("tenant");
      // The rate first: a run the tenant may not start never waits for memory.
      await c.get("quotas").admit(tenant);
      // A client that goes away stops the wait, or the run and what it holds.
      const { signal } = c.req.raw;
      // The run's room is kept until its client has read the answer (see `heldAnswer`).
      if (/\btext\/event-stream\b/i.test(c.req.header("accept") ?? "")) {
        return streamAnswer((caller) => runs.start(request, { tenant, keepRoom: true, ...caller }), signal);
      }
      const { result, maxLength, release } = await runs.run(request, { tenant, signal, keepRoom: true });
      return heldAnswer(resultWireText(result, maxLength), release);
    },
  );
  return app;
}
