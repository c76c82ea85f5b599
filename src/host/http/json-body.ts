/**
 * The one JSON-body middleware of the HTTP app: exactly `application/json`, read within a size limit while the body
 * streams (see `body.ts`), strict UTF-8, parsed once. The parsed value is `c.var.body`, and the route's validator
 * reads the same value rather than the body again.
 * @module
 */
import type { MiddlewareHandler } from "hono";
import { HostError } from "../errors.js";
import { isJsonContentType, readTextWithin } from "./body.js";
import type { AppEnv } from "./route-context.js";

/** Refuses anything but a JSON body of at most `maxBytes` before the route runs; `name` goes into the messages. */
export function jsonBody(name: string, maxBytes: number): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    // Only a JSON body, checked before a byte is read: text/plain, form and untyped POSTs are what browsers send
    // cross-origin without a CORS preflight.
    if (!isJsonContentType(c.req.raw.headers)) {
      throw new HostError("unsupported_media_type", `${name} takes a JSON body (Content-Type: application/json)`);
    }
    // Strict UTF-8: a lenient decode turned invalid bytes into U+FFFD silently, storing code nobody sent.
    const text = await readTextWithin(c.req.raw, maxBytes);
    if (typeof text !== "string") {
      throw text.refused === "too_large"
        ? new HostError("payload_too_large", `The body is larger than ${maxBytes} bytes`)
        : new HostError("invalid_json", "The body is not valid UTF-8");
    }
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch (error) {
      throw new HostError(
        "invalid_json",
        `The body is not JSON: ${error instanceof Error ? error.message : String(error)}`,
      );
    }
    c.set("body", body);
    // The route's validator asks the request for its JSON: it gets this text, and the stream is never read twice.
    // (Hono's cache holds promises, though its type says values.)
    (c.req.bodyCache as unknown as { text?: Promise<string> }).text = Promise.resolve(text);
    // The validator's own media-type check is narrower than HTTP's (it refuses `application/json ;charset=utf-8`,
    // whitespace the grammar allows): the request it sees says plainly what this middleware established. It keeps
    // the client's signal, which ends what the request holds when the client goes away.
    const headers = new Headers(c.req.raw.headers);
    headers.set("content-type", "application/json");
    c.req.raw = new Request(c.req.url, { method: c.req.method, headers, signal: c.req.raw.signal });
    await next();
  };
}
