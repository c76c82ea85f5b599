/**
 * What every route of the HTTP app shares: the app's context variables, the middleware that names the caller's
 * tenant, and the error responses a route definition declares (so `/openapi.json` lists every refusal by status
 * and code).
 * @module
 */
import type { RouteConfig } from "@hono/zod-openapi";
import type { MiddlewareHandler } from "hono";
import type { Quotas } from "../admission/quotas.js";
import { ERROR_STATUS, type HostErrorCode } from "../errors.js";
import { type Access, tenantOf } from "./auth.js";
import { ErrorResponse } from "./schemas.js";

/** The app's context: set by its first middleware (access, quotas), by authentication (tenant) and by `jsonBody`. */
export interface AppEnv {
  Variables: { access: Access; quotas: Quotas; tenant: string; body: unknown };
}

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
 * A route that needs an API key: authentication runs before its own middleware (a refused request reads no body),
 * and the document lists the bearer scheme and the 401, with the refusals of every request (a foreign `Host`; a
 * foreign browser origin for an unsafe method). `bodyMiddleware` runs after authentication.
 */
export function secured<R extends RouteConfig>(config: R, bodyMiddleware?: MiddlewareHandler<AppEnv>): R {
  const unsafe = ["post", "put", "patch", "delete"].includes(config.method);
  return {
    ...config,
    security: [{ [BEARER_SCHEME]: [] }],
    middleware: bodyMiddleware === undefined ? [requireTenant] : [requireTenant, bodyMiddleware],
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
 * A response whose body is already encoded (a stream, wire JSON text), returned from a typed route: the route's
 * declared schema documents it, but the type check of `c.json` values cannot see into a body made elsewhere.
 */
export const preEncoded = (response: Response): never => response as never;
