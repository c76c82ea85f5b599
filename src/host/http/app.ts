/**
 * The HTTP API as one Hono app: `createApp(options).fetch(request) -> Response`, the same in Node, on Workers and in
 * Durable Objects. Processes, sessions, the catalog, `POST /run` and `POST /mcp` are sets of routes (Hono sub-apps)
 * over one authentication middleware, one reader of JSON bodies (`json-body.ts`) and one table of error codes
 * (`ERROR_STATUS`); every error is `{ error: { code, message } }`, and a refused request never changes a stored
 * record. `/openapi.json` is made from the route definitions and the schemas their input is checked against. A known
 * path asked with another method answers 405; an unknown one under the API's first segments (`/processes/...`) a
 * JSON 404; any other path goes to `fallback` (the edge's static files) or 404.
 * @module
 */
import type { OpenAPIHono } from "@hono/zod-openapi";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import { ANONYMOUS_TENANT } from "../../tools/registry.js";
import type { HttpUpstream } from "../../tools/upstream-config.js";
import { MemoryQuotas, type Quotas } from "../admission/quotas.js";
import { RunAdmission } from "../admission/run-admission.js";
import { HostError, isHostError } from "../errors.js";
import { DEFAULT_MAX_BODY_BYTES } from "../limits.js";
import { createRunOnce } from "../runs/run-once.js";
import type { SessionBackend } from "../sessions/backend.js";
import type { Access } from "./auth.js";
import { type Catalog, catalogRoutes } from "./catalog-routes.js";
import { corsFor } from "./cors.js";
import { mcpRoutes } from "./mcp-routes.js";
import { guardOrigins } from "./origins.js";
import { type ProcessBackend, processRoutes } from "./process-routes.js";
import { type AppEnv, BEARER_SCHEME, routes } from "./route-context.js";
import { type RunRouteOptions, runRoutes } from "./run-routes.js";
import { sessionRoutes } from "./session-routes.js";

export interface AppOptions {
  /** The processes: a `ProcessService` here, the process objects on the edge. */
  processes: ProcessBackend;
  /** Documentation and tools (a `ProcessService` is one). */
  catalog: Catalog;
  /**
   * Serves the session routes (`/sessions`, ...) and `POST /mcp`'s `run_code` `session` when given: a
   * `SessionService` here, the edge's own there.
   */
  sessions?: SessionBackend;
  /** Serves `POST /run` and `POST /mcp` when given. */
  run?: RunRouteOptions;
  /**
   * Upstream MCP servers (Streamable HTTP) whose tools `POST /mcp`'s `run_code` may import, called with this host's
   * credentials whoever the tenant. Default none.
   */
  mcpServers?: Record<string, HttpUpstream>;
  /** Who may call. Default: everyone, as {@link ANONYMOUS_TENANT} (a library embedding decides for itself). */
  access?: Access;
  /** Rates per tenant. Default: {@link MemoryQuotas} with its default rate. */
  quotas?: Quotas;
  /**
   * The origins this host is served at (`http://127.0.0.1:8787`, `https://runcode.example.com`): a request whose
   * `Host` is not one of theirs is `421 misdirected_request`, and a browser page of any of them may use unsafe methods.
   * Default: `Host` unchecked (an embedding that checks names itself), and no page is the host's own.
   */
  origins?: readonly string[];
  /**
   * Origins granted CORS (exactly as browsers send `Origin`). Default none. A page of any other origin that is not
   * the host's own may not use unsafe methods (`403 forbidden_origin`).
   */
  corsOrigins?: readonly string[];
  /** Largest `POST /processes` body in bytes (before the code's own cap). Default {@link DEFAULT_MAX_BODY_BYTES}. */
  maxBodyBytes?: number;
  /** Answers what no route matches (the edge's static files). Default: 404 `not_found`. */
  fallback?: (request: Request) => Response | Promise<Response>;
}

const OPEN: Access = { keys: [], allowAnonymous: true };

const fail = (error: HostError) =>
  Response.json(
    { error: { code: error.code, message: error.message } },
    { status: error.status as ContentfulStatusCode, headers: error.headers },
  );

export function createApp(options: AppOptions): OpenAPIHono<AppEnv> {
  const access = options.access ?? OPEN;
  const quotas = options.quotas ?? new MemoryQuotas();
  const app = routes();
  const corsOrigins: ReadonlySet<string> = new Set(options.corsOrigins ?? []);
  // Before CORS, so that a preflight too must name one of the host's own names.
  app.use("*", guardOrigins(options.origins, corsOrigins));
  app.use("*", corsFor(corsOrigins));
  app.use("*", async (c, next) => {
    c.set("access", access);
    c.set("quotas", quotas);
    await next();
  });

  app.route("/", processRoutes(options.processes, options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES));
  app.route("/", catalogRoutes(options.catalog));
  if (options.sessions !== undefined) app.route("/", sessionRoutes(options.sessions));
  if (options.run !== undefined) {
    const runs = { ...options.run, admission: new RunAdmission(options.run.admission) };
    app.route("/", runRoutes(createRunOnce(runs)));
    app.route("/", mcpRoutes(runs, options.catalog, options.mcpServers, options.sessions));
  }
  app.openAPIRegistry.registerComponent("securitySchemes", BEARER_SCHEME, {
    type: "http",
    scheme: "bearer",
    description: "An API key of RUNCODE_API_KEYS (none when the host serves anonymous callers).",
  });
  app.doc31("/openapi.json", {
    openapi: "3.1.0",
    info: {
      title: "runcode",
      version: "0.1.0",
      description:
        "Run code once (POST /run, or the run_code tool of POST /mcp), in sessions whose state stays between cells (POST /sessions), or as processes; follow their state and output; list the tools they can call. Errors are `{error: {code, message}}`.",
    },
  });
  answerWrongMethods(app);

  // A path under one of the API's own first segments is an API 404 in JSON; anything else is the fallback's.
  const apiRoots = new Set(app.routes.filter((r) => r.method !== "ALL").map((r) => r.path.split("/")[1]));
  app.notFound((c) => {
    const { pathname } = new URL(c.req.url);
    if (options.fallback !== undefined && !apiRoots.has(pathname.split("/")[1])) return options.fallback(c.req.raw);
    return fail(new HostError("not_found", `No route ${c.req.method} ${pathname}`));
  });
  app.onError((error) =>
    fail(
      isHostError(error) ? error : new HostError("internal", error instanceof Error ? error.message : String(error)),
    ),
  );
  return app;
}

/** 405 with `Allow` for every path the app has routes for, asked with a method it has none for. */
function answerWrongMethods(app: OpenAPIHono<AppEnv>): void {
  const methods = new Map<string, Set<string>>();
  for (const { method, path } of app.routes) {
    if (method === "ALL") continue;
    methods.set(path, (methods.get(path) ?? new Set()).add(method));
  }
  for (const [path, allowed] of methods) {
    if (allowed.has("GET")) allowed.add("HEAD");
    const allow = [...allowed].join(", ");
    app.all(path, (c) =>
      fail(new HostError("method_not_allowed", `${path} takes ${allow}, not ${c.req.method}`, { allow })),
    );
  }
}
