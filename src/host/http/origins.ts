/**
 * Which requests a browser may make of the host. A page of another origin can send a request without a preflight
 * (a `POST` with no body, a form), and a DNS-rebound page reaches the host under the attacker's name; so every
 * request must name one of the host's own origins in `Host`, and an unsafe method (`POST`, `PUT`, `PATCH`,
 * `DELETE`) from a browser page is refused unless the page is of one of those origins or on the CORS list. The host's
 * origins come from its configuration, never from the request: `Host` and `Origin` are both the caller's to set.
 * @module
 */
import type { MiddlewareHandler } from "hono";
import { HostError } from "../errors.js";

const UNSAFE_METHODS: ReadonlySet<string> = new Set(["POST", "PUT", "PATCH", "DELETE"]);

/** `text` as an origin (`scheme://host[:port]`, as browsers send `Origin`), or a `TypeError` naming `setting`. */
export function originOf(text: string, setting: string): string {
  let url: URL | undefined;
  try {
    url = new URL(text);
  } catch {}
  // Scheme, host and port only: no path, query, fragment or credentials.
  if (url === undefined || url.origin === "null" || url.pathname !== "/" || /[?#@]/.test(text)) {
    throw new TypeError(`${setting}: ${JSON.stringify(text)} is not an origin like https://runcode.example.com`);
  }
  return url.origin;
}

/** The `Host` a request names: the header, or the host of its URL when it came without one (made in-process). */
const hostOf = (request: Request) => (request.headers.get("host") ?? new URL(request.url).host).toLowerCase();

const quoted = (text: string) => JSON.stringify(text.slice(0, 200));

/**
 * Refuses a request whose `Host` is not one of `own`'s (`421 misdirected_request`; no check when `own` is undefined,
 * for an embedding that checks names itself), and an unsafe method whose `Origin` is neither in `own` nor in
 * `cors`, or that the browser marks `Sec-Fetch-Site: cross-site` without a listed `Origin` (`403 forbidden_origin`).
 * A request without these headers (not from a browser page) passes.
 */
export function guardOrigins(own: readonly string[] | undefined, cors: ReadonlySet<string>): MiddlewareHandler {
  const origins: ReadonlySet<string> = new Set(own?.map((origin) => originOf(origin, "origins")));
  const hosts: ReadonlySet<string> | undefined = own && new Set([...origins].map((origin) => new URL(origin).host));
  return async (c, next) => {
    const host = hostOf(c.req.raw);
    if (hosts !== undefined && !hosts.has(host)) {
      throw new HostError("misdirected_request", `Host ${quoted(host)} is not a name this server answers for`);
    }
    if (UNSAFE_METHODS.has(c.req.method)) {
      const origin = c.req.header("origin");
      if (origin !== undefined && !origins.has(origin) && !cors.has(origin)) {
        throw new HostError("forbidden_origin", `Origin ${quoted(origin)} may not ${c.req.method} here`);
      }
      if (c.req.header("sec-fetch-site") === "cross-site" && (origin === undefined || !cors.has(origin))) {
        throw new HostError("forbidden_origin", `A cross-site page may not ${c.req.method} here`);
      }
    }
    await next();
  };
}
