/**
 * What every route of the HTTP app shares: the app's context variables, the sets of routes (Hono sub-apps) and how
 * they refuse input their schemas do not take, the middleware that names the caller's tenant, and the error
 * responses a route definition declares (so `/openapi.json` lists every refusal by status and code).
 * @module
 */
import { OpenAPIHono, type RouteConfig, z } from "@hono/zod-openapi";
import type { MiddlewareHandler } from "hono";
import type { Quotas } from "../admission/quotas.js";
import { ERROR_STATUS, HostError, type HostErrorCode } from "../errors.js";
import { type Access, tenantOf } from "./auth.js";
import { ErrorResponse } from "./schemas.js";

/** The app's context: set by its first middleware (access, quotas) and by authentication (tenant). */
export interface AppEnv {
  Variables: { access: Access; quotas: Quotas; tenant: string };
}

/** The refusal of input a route's schema does not take: the first problems, each named by where it is. */
export function invalidInput(target: string, issues: readonly z.core.$ZodIssue[]): HostError {
  const problems = issues
    .slice(0, 3)
    .map((issue) => `${issue.path.length === 0 ? "" : `${issue.path.join(".")}: `}${issue.message}`);
  const where = target === "json" ? "body" : target === "param" ? "path" : target;
  return new HostError("invalid_request", `Invalid ${where}: ${problems.join("; ")}`);
}

/** A set of routes, mounted on the app with `app.route("/", ...)`; a path or query its schema refuses is a 400. */
export const routes = () =>
  new OpenAPIHono<AppEnv>({
    defaultHook: (result) => {
      if (!result.success) throw invalidInput(result.target, result.error.issues);
    },
  });

/** Names the caller's tenant from its API key, or answers 401 before the route runs. */
export const requireTenant: MiddlewareHandler<AppEnv> = async (c, next) => {
  c.set("tenant", await tenantOf(c.get("access"), c.req.header("authorization") ?? null));
  await next();
};

/** The bearer scheme's name in the OpenAPI document. */
export const BEARER_SCHEME = "bearer";

/** `responses` entries for the refusals `codes`, one per status, each naming its codes. */
export function errorResponses(...codes: HostErrorCode[]) {
  const byStatus = new Map<number, HostErrorCode[]>();
  for (const code of codes) byStatus.set(ERROR_STATUS[code], [...(byStatus.get(ERROR_STATUS[code]) ?? []), code]);
  return Object.fromEntries(
    [...byStatus].map(([status, named]) => [
      status,
      { description: named.join(", "), content: { "application/json": { schema: ErrorResponse } } },
    ]),
  );
}

/**
 * A route that needs an API key: authentication runs first (a refused request reads no body), and the document lists
 * the bearer scheme and the 401, with the refusals of every request (a foreign `Host`; a foreign browser origin for
 * an unsafe method). A route with a body is documented by {@link documented} and reads it with `jsonBody` after
 * `requireTenant`.
 */
export function secured<R extends RouteConfig>(config: R): R {
  const unsafe = ["post", "put", "patch", "delete"].includes(config.method);
  return {
    ...config,
    security: [{ [BEARER_SCHEME]: [] }],
    middleware: [requireTenant],
    responses: {
      ...config.responses,
      ...errorResponses(
        "unauthenticated",
        "misdirected_request",
        "internal",
        ...(unsafe ? ["forbidden_origin" as const] : []),
      ),
    },
  };
}

/**
 * Adds `route` to `app`'s document only, for a route whose JSON body `jsonBody` reads and checks against the same
 * schema: `app.openapi` would add the framework's own body validator, which reads the body again, whole.
 */
export function documented(app: OpenAPIHono<AppEnv>, { middleware: _run, ...route }: RouteConfig): void {
  app.openAPIRegistry.registerPath(route);
}

/** A `200` answered as JSON of `schema`, or as an event stream (described by `description`). */
export const jsonOrEventStream = (description: string, schema: z.ZodType) => ({
  description,
  content: { "application/json": { schema }, "text/event-stream": { schema: z.string() } },
});

/** The headers of an event stream: no proxy or browser may cache or transform it. */
export const SSE_HEADERS = { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache" };

/**
 * A response whose body is already encoded (a stream, wire JSON text), returned from a typed route: the route's
 * declared schema documents it, but the type check of `c.json` values cannot see into a body made elsewhere.
 */
export const preEncoded = (response: Response): never => response as never;
