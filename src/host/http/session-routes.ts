/**
 * The session routes: create (`POST /sessions`), run a cell (`POST /sessions/:id/run`, answered as `POST /run` is: the
 * result in wire JSON, or Server-Sent Events with `Accept: text/event-stream`), fork, list (a page at a time), read
 * and delete sessions. Every session belongs to the tenant that created it: another tenant's id answers 404 exactly
 * as an unknown one does, and a listing shows the caller's sessions only. Creations and forks count against the
 * tenant's rate as runs do; cells against its own (`RUNCODE_SESSION_CELLS_PER_MINUTE`, the backend's).
 * @module
 */
import { createRoute, type OpenAPIHono } from "@hono/zod-openapi";
import type { Context } from "hono";
import { resultWireText } from "../../core/result-wire.js";
import { HostError } from "../errors.js";
import { MAX_RUN_BODY_BYTES } from "../limits.js";
import type { SessionBackend } from "../sessions/backend.js";
import { jsonBody } from "./json-body.js";
import {
  type AppEnv,
  documented,
  errorResponses,
  jsonOrEventStream,
  requireTenant,
  routes,
  secured,
} from "./route-context.js";
import { refusedBody } from "./run-routes.js";
import { streamAnswer } from "./run-stream.js";
import {
  CreateSessionRequest,
  ListSessionsQuery,
  RunResult,
  SessionCellRequest,
  SessionId,
  SessionIdParameter,
  SessionInfoSchema,
  SessionPageSchema,
} from "./schemas.js";

const json = <T>(schema: T, description: string) => ({ description, content: { "application/json": { schema } } });
const idErrors = errorResponses("not_found");

/** The id in the path, exactly as written: the router decodes `%61` to `a`, which names no session. */
function idOf(c: Context): string {
  const id = c.req.param("id") ?? "";
  if (new URL(c.req.url).pathname.split("/")[2] !== id) throw new HostError("not_found", "No such session");
  return id;
}

const create = createRoute(
  secured({
    method: "post",
    path: "/sessions",
    summary: "Create a session: one realm whose state stays between cells, kept in storage while idle",
    request: { body: { required: true, content: { "application/json": { schema: CreateSessionRequest } } } },
    responses: {
      201: json(SessionId, "Created"),
      ...errorResponses(
        "invalid_json",
        "invalid_request",
        "invalid_options",
        "payload_too_large",
        "session_storage_full",
        "unsupported_media_type",
        "rate_limited",
        "too_many_sessions",
        "overloaded",
      ),
    },
  }),
);

const run = createRoute(
  secured({
    method: "post",
    path: "/sessions/{id}/run",
    summary: "Run one cell of a session and answer its result, or stream its events and then its result",
    request: {
      params: SessionIdParameter,
      body: { required: true, content: { "application/json": { schema: SessionCellRequest } } },
    },
    responses: {
      200: jsonOrEventStream(
        "The cell's result as POST /run's, whatever its status (`result` is the cell's completion value); with `Accept: text/event-stream`, `log` and `report` events as they happen, then a `result` event. A cell whose state would pass the tenant's storage is an `error` named `SessionStorageFull`, its effects undone",
        RunResult,
      ),
      ...idErrors,
      ...errorResponses(
        "invalid_json",
        "invalid_request",
        "invalid_options",
        "payload_too_large",
        "unsupported_media_type",
        "rate_limited",
        "session_busy",
        "overloaded",
      ),
    },
  }),
);

/** The session routes over `sessions`. */
export function sessionRoutes(sessions: SessionBackend): OpenAPIHono<AppEnv> {
  const app = routes();

  documented(app, create);
  app.post(
    create.path,
    requireTenant,
    jsonBody("POST /sessions", MAX_RUN_BODY_BYTES, CreateSessionRequest, refusedBody("{name?, options?}")),
    async (c) => {
      const tenant = c.get("tenant");
      await c.get("quotas").admit(tenant);
      const { id } = await sessions.create(tenant, c.req.valid("json"));
      return c.json({ id }, 201, { location: `/sessions/${id}` });
    },
  );

  documented(app, run);
  app.post(
    "/sessions/:id/run",
    requireTenant,
    jsonBody(
      "POST /sessions/:id/run",
      MAX_RUN_BODY_BYTES,
      SessionCellRequest,
      refusedBody("{source, language?, timeoutMs?}"),
    ),
    async (c) => {
      const id = idOf(c);
      const tenant = c.get("tenant");
      const cell = c.req.valid("json");
      // A client that goes away ends the cell; the session keeps what it did until then.
      const { signal } = c.req.raw;
      if (/\btext\/event-stream\b/i.test(c.req.header("accept") ?? "")) {
        return streamAnswer((caller) => sessions.run(tenant, id, cell, caller), signal);
      }
      const { result, maxLength } = await (await sessions.run(tenant, id, cell, { signal })).answer;
      return new Response(resultWireText(result, maxLength), { headers: { "content-type": "application/json" } });
    },
  );

  app.openapi(
    createRoute(
      secured({
        method: "post",
        path: "/sessions/{id}/fork",
        summary: "Fork a session: a new session with its state (after its queued cells), independent of it",
        request: { params: SessionIdParameter },
        responses: {
          201: json(SessionId, "Created"),
          ...idErrors,
          ...errorResponses("session_storage_full", "rate_limited", "too_many_sessions", "session_busy", "overloaded"),
        },
      }),
    ),
    async (c) => {
      const tenant = c.get("tenant");
      const parent = idOf(c);
      await c.get("quotas").admit(tenant);
      const { id } = await sessions.fork(tenant, parent);
      return c.json({ id }, 201, { location: `/sessions/${id}` });
    },
  );

  app.openapi(
    createRoute(
      secured({
        method: "get",
        path: "/sessions",
        summary: "List the caller's sessions, ascending by id, a page at a time",
        request: { query: ListSessionsQuery },
        responses: { 200: json(SessionPageSchema, "A page of sessions"), ...errorResponses("invalid_request") },
      }),
    ),
    async (c) => {
      const { limit, cursor } = c.req.valid("query");
      const page = await sessions.list(c.get("tenant"), {
        ...(limit === undefined ? {} : { limit: Number(limit) }),
        ...(cursor === undefined ? {} : { cursor }),
      });
      return c.json(page, 200);
    },
  );

  app.openapi(
    createRoute(
      secured({
        method: "get",
        path: "/sessions/{id}",
        summary: "A session's record",
        request: { params: SessionIdParameter },
        responses: { 200: json(SessionInfoSchema, "The session"), ...idErrors },
      }),
    ),
    async (c) => c.json(await sessions.get(c.get("tenant"), idOf(c)), 200),
  );

  app.openapi(
    createRoute(
      secured({
        method: "delete",
        path: "/sessions/{id}",
        summary: "Delete a session, ending its running cell",
        request: { params: SessionIdParameter },
        responses: { 204: { description: "Deleted" }, ...idErrors },
      }),
    ),
    async (c) => {
      await sessions.delete(c.get("tenant"), idOf(c));
      return c.body(null, 204);
    },
  );
  return app;
}
