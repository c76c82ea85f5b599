/**
 * The one reader of request bodies in the HTTP app: exactly `application/json`, read once within a size limit while
 * the body streams (see `body.ts`), strict UTF-8, its nesting bounded before it is parsed (`json-nesting.ts`), parsed
 * once and checked against the route's schema, the one its
 * `/openapi.json` entry shows. The checked value is the route's validated `json` (`c.req.valid("json")`); nothing
 * reads the body again.
 * @module
 */
import type { z } from "@hono/zod-openapi";
import type { MiddlewareHandler } from "hono";
import { MAX_JSON_TEXT_DEPTH, nestsWithin } from "../../values/json-nesting.js";
import { HostError } from "../errors.js";
import {
  isJsonContentType,
  MIN_CHUNK_BYTES,
  maxChunksWithin,
  type BodyRefusal as RefusedBody,
  readTextWithin,
} from "./body.js";
import { type AppEnv, invalidInput } from "./route-context.js";

/** The refusal of a body its schema does not take: by default the first problems, named by where they are. */
export type BodyRefusal = (issues: readonly z.core.$ZodIssue[], body: unknown) => HostError;

/**
 * Refuses anything but a JSON body of at most `maxBytes` that `schema` takes, before the route runs; `name` goes into
 * the messages.
 */
export function jsonBody<S extends z.ZodType>(
  name: string,
  maxBytes: number,
  schema: S,
  refusal: BodyRefusal = (issues) => invalidInput("json", issues),
): MiddlewareHandler<AppEnv, string, { in: { json: z.input<S> }; out: { json: z.input<S> } }> {
  return async (c, next) => {
    // Only a JSON body, checked before a byte is read: text/plain, form and untyped POSTs are what browsers send
    // cross-origin without a CORS preflight.
    if (!isJsonContentType(c.req.raw.headers)) {
      throw new HostError("unsupported_media_type", `${name} takes a JSON body (Content-Type: application/json)`);
    }
    // Strict UTF-8: a lenient decode turned invalid bytes into U+FFFD silently, storing code nobody sent.
    const text = await readTextWithin(c.req.raw, maxBytes);
    if (typeof text !== "string") throw refusedBody(text.refused, maxBytes);
    // Before parsing: the platform's parser takes a fraction of a microsecond a level.
    if (!nestsWithin(text)) {
      throw new HostError(
        "invalid_json",
        `The body nests deeper than ${MAX_JSON_TEXT_DEPTH} levels of arrays and objects`,
      );
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
    const checked = schema.safeParse(body);
    if (!checked.success) throw refusal(checked.error.issues, body);
    // The value as parsed, which the schema took (no route's schema transforms): zod's copy of a record drops an own
    // `__proto__` key (it becomes the copy's prototype), which the run's own check of its options must still see.
    c.req.addValidatedData("json", body as object);
    await next();
  };
}

/** The error for a body `readTextWithin` refused. */
function refusedBody(why: RefusedBody, maxBytes: number): HostError {
  switch (why) {
    case "too_large":
      return new HostError("payload_too_large", `The body is larger than ${maxBytes} bytes`);
    case "too_many_chunks":
      return new HostError(
        "payload_too_large",
        `The body came in more than ${maxChunksWithin(maxBytes)} chunks: send it with a Content-Length, or in chunks of ${MIN_CHUNK_BYTES} bytes or more`,
      );
    case "not_utf8":
      return new HostError("invalid_json", "The body is not valid UTF-8");
  }
}
