/**
 * CORS for the origins a host grants it, with the headers Hono's `cors` middleware gave: a preflight is answered here
 * (204); any other request gets its grant and `Vary: Origin` on the route's answer. They are set on that answer in
 * place: Hono's middleware adds `Vary` through `c.header` once the route answered, which copies the answer into a new
 * one with a streamed body, a fifth of the CPU a small request cost a Node server.
 * @module
 */
import type { MiddlewareHandler } from "hono";

/** What a granted page may send and read. */
const ALLOW_METHODS = "GET,POST,DELETE";
const ALLOW_HEADERS = "authorization,content-type";
const EXPOSE_HEADERS = "location,retry-after";
/** How long a browser may keep a preflight's answer. */
const MAX_AGE_SECONDS = 86_400;

/** The answer to a preflight: what a page of `grant`'s origin may send and read, or no grant. */
function preflight(grant: string | undefined): Response {
  const headers = new Headers();
  if (grant !== undefined) headers.set("access-control-allow-origin", grant);
  headers.set("access-control-expose-headers", EXPOSE_HEADERS);
  headers.set("vary", "Origin, Access-Control-Request-Headers");
  headers.set("access-control-max-age", String(MAX_AGE_SECONDS));
  headers.set("access-control-allow-methods", ALLOW_METHODS);
  headers.set("access-control-allow-headers", ALLOW_HEADERS);
  return new Response(null, { status: 204, statusText: "No Content", headers });
}

/** Adds a page's grant to an answer's headers; throws a `TypeError` when they cannot change. */
function grantOn(headers: Headers, grant: string | undefined): void {
  if (grant !== undefined) headers.set("access-control-allow-origin", grant);
  headers.set("access-control-expose-headers", EXPOSE_HEADERS);
  headers.append("vary", "Origin");
}

/** CORS for the pages of `granted`'s origins (exactly as browsers send `Origin`), and for no other. */
export function corsFor(granted: ReadonlySet<string>): MiddlewareHandler {
  return async (c, next) => {
    const origin = c.req.header("origin");
    const grant = origin !== undefined && granted.has(origin) ? origin : undefined;
    if (c.req.method === "OPTIONS") return preflight(grant);
    await next();
    try {
      grantOn(c.res.headers, grant);
    } catch {
      // An answer whose headers cannot change (one of `fetch`, as the edge's static files): a copy takes them.
      c.res = new Response(c.res.body, c.res);
      grantOn(c.res.headers, grant);
    }
    return undefined;
  };
}
