/**
 * `POST /run`: one `runCode` over HTTP. The body is `{source, options}` with the data-only options; the answer is
 * the `CodeExecutionResult` in the lossless JSON of `src/wire.ts`, whatever its status. Bad requests get
 * `{error: {code, message}}` with a 4xx status and run nothing.
 * @module
 */
import { isJsonContentType, readTextWithin } from "../src/host/body.js";
import type { CodeExecutionOptions, RunCode } from "../src/index.js";
import { resultWireText } from "../src/result-wire.js";
import { fromWire, type JsonValue } from "../src/wire.js";

/** Largest request body accepted. */
export const MAX_RUN_BODY_BYTES = 1024 * 1024;
/** Largest heap a run may ask for: well below the 128 MB a Worker isolate may use. */
export const MAX_RUN_MEMORY_BYTES = 64 * 1024 * 1024;
/**
 * Longest answer, in characters of JSON text: as many as the largest heap a run may have has bytes. What a run leaves
 * (result, reports, logs) is capped by its memory, but its encoding is not the same size (base64 is 4/3 of a buffer,
 * `undefined` is 18 characters): past this the answer is a `memory` result saying so, decided before the text is made.
 */
export const MAX_RUN_ANSWER_CHARS = MAX_RUN_MEMORY_BYTES;
/** Wall-clock budget of one run, for time spent awaiting; CPU-bound code meets the sandbox's safety cap first. */
export const RUN_TIMEOUT_MS = 10_000;

const OPTION_KEYS = new Set(["execute", "modules", "globals", "language", "memoryLimitBytes", "filename"]);

/** Answers a JSON error with a stable code. */
export function jsonError(status: number, code: string, message: string, headers?: HeadersInit): Response {
  return Response.json({ error: { code, message } }, { status, ...(headers === undefined ? {} : { headers }) });
}

/** Handles `POST /run` with the given sandbox runner and the bare-specifier modules runs may import. */
export async function handleRun(
  request: Request,
  runCode: RunCode,
  imports: () => Record<string, Record<string, unknown>> = () => ({}),
): Promise<Response> {
  if (!isJsonContentType(request.headers)) {
    return jsonError(415, "unsupported_media_type", "POST /run takes a JSON body (Content-Type: application/json)");
  }
  // Read within the limit: the body used to be read whole (48 MiB streamed were taken) before its size was checked.
  const text = await readTextWithin(request, MAX_RUN_BODY_BYTES);
  if (typeof text !== "string") {
    return text.refused === "too_large"
      ? jsonError(413, "body_too_large", `The body is over ${MAX_RUN_BODY_BYTES} bytes`)
      : jsonError(400, "malformed_json", "The body is not valid UTF-8");
  }
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return jsonError(400, "malformed_json", "The body is not valid JSON");
  }
  let parsed: ReturnType<typeof parseBody>;
  try {
    parsed = parseBody(body);
  } catch (error) {
    parsed = `A wire-encoded value is malformed: ${(error as Error).message}`;
  }
  if (typeof parsed === "string") return jsonError(400, "invalid_request", parsed);

  let run: ReturnType<RunCode>;
  try {
    run = runCode(parsed.source, { ...parsed.options, imports: imports() });
  } catch (error) {
    return jsonError(400, "invalid_options", (error as Error).message);
  }
  const budget = setTimeout(() => run.terminate(`The run exceeded ${RUN_TIMEOUT_MS} ms`), RUN_TIMEOUT_MS);
  const result = await run;
  clearTimeout(budget);
  return new Response(resultWireText(result, MAX_RUN_ANSWER_CHARS), {
    headers: { "content-type": "application/json" },
  });
}

/** The body's fields, or what is wrong with it. */
function parseBody(body: unknown): { source: string; options: CodeExecutionOptions } | string {
  if (typeof body !== "object" || body === null || Array.isArray(body))
    return "The body must be an object {source, options}";
  for (const key of Object.keys(body)) {
    if (key !== "source" && key !== "options") return `Unknown field '${key}': the body is {source, options}`;
  }
  const { source, options = {} } = body as { source?: unknown; options?: unknown };
  if (typeof source !== "string") return "'source' must be a string";
  if (typeof options !== "object" || options === null || Array.isArray(options)) return "'options' must be an object";
  for (const key of Object.keys(options)) {
    if (!OPTION_KEYS.has(key)) {
      return `Unknown or non-data option '${key}': POST /run takes ${[...OPTION_KEYS].join(", ")}`;
    }
  }
  const decoded = { ...options } as Record<string, unknown>;
  // Arguments and globals may use the wire encoding for values JSON cannot carry (bigint, Map, Date, ...).
  if (decoded.globals !== undefined) decoded.globals = fromWire(decoded.globals as JsonValue);
  const execute = decoded.execute as { args?: JsonValue } | undefined;
  if (typeof execute === "object" && execute !== null && execute.args !== undefined) {
    decoded.execute = { ...execute, args: fromWire(execute.args) };
  }
  const memory = decoded.memoryLimitBytes;
  if (typeof memory === "number" && memory > MAX_RUN_MEMORY_BYTES) {
    return `'memoryLimitBytes' may be at most ${MAX_RUN_MEMORY_BYTES} here`;
  }
  return { source, options: decoded as CodeExecutionOptions };
}
