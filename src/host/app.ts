/**
 * The HTTP API as a fetch-style handler: `createApp({ service }).fetch(request) -> Response`, on Hono, so the same
 * app serves Node, Workers and Durable Objects. Every error is `{ error: { code, message } }` with a stable code
 * (see `ERROR_STATUS`); a refused request never changes a stored record.
 * @module
 */
import { type Context, Hono } from "hono";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import { isJsonContentType, readTextWithin } from "./body.js";
import { HostError, isHostError } from "./errors.js";
import { openApiDocument } from "./openapi.js";
import type { ProcessEvent, ProcessService } from "./process-service.js";
import { CreateProcessRequest, ListProcessesQuery } from "./schemas.js";
import type { ProcessFilter, ProcessRecord } from "./storage.js";
import { compileSchema } from "./validate.js";

export interface AppOptions {
  service: ProcessService;
  /** Largest request body in bytes (before the 100 KB code check). Default 1 MiB. */
  maxBodyBytes?: number;
}

/** Largest request body in bytes when `AppOptions.maxBodyBytes` is not given. */
export const DEFAULT_MAX_BODY_BYTES = 1_048_576;
const PID = /^[1-9][0-9]{0,15}$/;
const checkCreate = compileSchema(CreateProcessRequest);
const checkList = compileSchema(ListProcessesQuery);
const encoder = new TextEncoder();
/** A UTF-16 code unit of a surrogate pair without its other half (`u` mode matches only unpaired ones). */
const LONE_SURROGATE = /\p{Cs}/u;

/**
 * Bytes of events an event stream holds for a client that reads slower than the process writes, beyond the snapshot.
 * Past it the client is dropped: its stream ends with a `dropped` event and the process forgets it.
 */
export const EVENT_STREAM_BUFFER_BYTES = 1_048_576;
const SSE_HEADERS = { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache" };
/** An event's SSE frame, encoded once however many streams send it (each stream gets the same event object). */
const frames = new WeakMap<ProcessEvent, Uint8Array>();
const frame = (type: string, data: unknown) => encoder.encode(`event: ${type}\ndata: ${JSON.stringify(data)}\n\n`);
function frameOf(event: ProcessEvent): Uint8Array {
  let bytes = frames.get(event);
  if (bytes === undefined) {
    const { type, ...data } = event;
    bytes = frame(type, data);
    frames.set(event, bytes);
  }
  return bytes;
}

const fail = (c: Context, error: HostError) =>
  c.json({ error: { code: error.code, message: error.message } }, error.status as ContentfulStatusCode);

function pidOf(c: Context): number {
  const raw = c.req.param("pid") ?? "";
  if (!PID.test(raw) || !Number.isSafeInteger(Number(raw))) {
    throw new HostError("invalid_pid", `pid must be a positive integer, got ${JSON.stringify(raw)}`);
  }
  return Number(raw);
}

/** The fields of a record a list shows (no code, streams or output). */
export function summaryOf(
  r: ProcessRecord,
): Omit<ProcessRecord, "code" | "output" | "stdout" | "stderr" | "truncated"> {
  const { code: _c, output: _o, stdout: _s, stderr: _e, truncated: _t, ...summary } = r;
  return summary;
}

export function createApp(options: AppOptions): Hono {
  const { service } = options;
  const maxBodyBytes = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  const app = new Hono();

  const record = async (c: Context): Promise<ProcessRecord> => {
    const pid = pidOf(c);
    const found = await service.get(pid);
    if (found === undefined) throw new HostError("not_found", `No process ${pid}`);
    return found;
  };
  const plain = (c: Context, body: string) => c.body(body, 200, { "content-type": "text/plain; charset=utf-8" });

  app.post("/processes", async (c) => {
    // Only a JSON body, checked before a byte is read: text/plain, form and untyped POSTs are what browsers send
    // cross-origin without a CORS preflight (this route used to take them).
    if (!isJsonContentType(c.req.raw.headers)) {
      throw new HostError(
        "unsupported_media_type",
        "POST /processes takes a JSON body (Content-Type: application/json)",
      );
    }
    // Read within the limit (a 48 MiB upload used to be read whole first), and strict UTF-8: a lenient decode turned
    // invalid bytes into U+FFFD silently, storing code nobody sent.
    const text = await readTextWithin(c.req.raw, maxBodyBytes);
    if (typeof text !== "string") {
      throw text.refused === "too_large"
        ? new HostError("payload_too_large", `The body is larger than ${maxBodyBytes} bytes`)
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
    const code = (body as { code?: unknown } | null)?.code;
    if (typeof code === "string" && encoder.encode(code).length > 100 * 1024) {
      throw new HostError("payload_too_large", "code is larger than 102400 bytes");
    }
    const problem = checkCreate(body);
    if (problem !== undefined) throw new HostError("invalid_request", `Invalid body: ${problem}`);
    const input = body as { code: string; timeoutMs?: number; ref?: string };
    // A lone surrogate (valid as a JSON escape) cannot be stored faithfully: `/code` answers it as U+FFFD and the
    // registry's SQLite index turned a `ref` with one into text no list filter could ever match.
    for (const field of ["code", "ref"] as const) {
      const value = input[field];
      const lone = value === undefined ? null : LONE_SURROGATE.exec(value);
      if (lone !== null) {
        const unit = lone[0].charCodeAt(0).toString(16).toUpperCase();
        throw new HostError("invalid_request", `Invalid body: ${field} contains a lone surrogate (U+${unit})`);
      }
    }
    // The environment compiles code as a C string: a raw NUL cut it there, so `1 // \0 throw x` ran as `1` and a
    // NUL in a string literal was a SyntaxError. Refused until the engine takes NUL (write `\0` in strings).
    if (input.code.includes("\0")) {
      throw new HostError("invalid_request", "Invalid body: code contains a NUL character (U+0000)");
    }
    const created = await service.create(input);
    return c.json({ pid: created.pid, state: created.state }, 201, { location: `/processes/${created.pid}` });
  });

  app.get("/processes", async (c) => {
    const queries = c.req.queries();
    const query: Record<string, string> = {};
    for (const [key, values] of Object.entries(queries)) {
      if (values.length !== 1) throw new HostError("invalid_request", `Query parameter '${key}' is repeated`);
      query[key] = values[0] as string;
    }
    const problem = checkList(query);
    if (problem !== undefined) throw new HostError("invalid_request", `Invalid query: ${problem}`);
    const filter = {
      ...query,
      limit: query.limit === undefined ? 100 : Number(query.limit),
    } as ProcessFilter;
    const processes = await service.list(filter);
    return c.json({ processes: processes.map(summaryOf) });
  });

  app.get("/processes/:pid", async (c) => c.json(await record(c)));
  app.get("/processes/:pid/code", async (c) => plain(c, (await record(c)).code));
  app.get("/processes/:pid/stdout", async (c) => plain(c, (await record(c)).stdout));
  app.get("/processes/:pid/stderr", async (c) => plain(c, (await record(c)).stderr));
  app.get("/processes/:pid/output", async (c) => c.json((await record(c)).output));

  app.get("/processes/:pid/events", async (c) => {
    const pid = pidOf(c);
    // Hono answers HEAD with the GET route minus its body, and a body dropped that way is never cancelled: the
    // subscription it made stayed until the process exited. HEAD gets the headers and subscribes to nothing.
    if (c.req.method === "HEAD") {
      await record(c);
      return new Response(null, { status: 200, headers: SSE_HEADERS });
    }
    let controller!: ReadableStreamDefaultController<Uint8Array>;
    let closed = false;
    let unsubscribe = () => {};
    /** Bytes the stream may hold: the snapshot, and EVENT_STREAM_BUFFER_BYTES of events after it. */
    let room = EVENT_STREAM_BUFFER_BYTES;
    const close = () => {
      if (closed) return;
      closed = true;
      unsubscribe();
      controller.close();
    };
    // A zero high-water mark: `desiredSize` is minus the bytes the client has not read yet.
    const stream = new ReadableStream<Uint8Array>(
      {
        start(c) {
          controller = c;
        },
        cancel() {
          closed = true;
          unsubscribe();
        },
      },
      { highWaterMark: 0, size: (chunk) => chunk.byteLength },
    );
    const send = (event: ProcessEvent) => {
      if (closed) return;
      const bytes = frameOf(event);
      const waiting = -(controller.desiredSize ?? 0);
      if (event.type === "snapshot") room += bytes.byteLength;
      else if (waiting + bytes.byteLength > room) {
        const reason = `the client read too slowly: ${waiting} bytes of events were waiting, at most ${room} are kept`;
        controller.enqueue(frame("dropped", { pid, reason }));
        close();
        return;
      }
      controller.enqueue(bytes);
      if (event.type === "exit") close();
    };
    const watching = await service.watch(pid, send);
    if (watching === undefined) throw new HostError("not_found", `No process ${pid}`);
    unsubscribe = watching.unsubscribe;
    // Closed while subscribing (the snapshot was the exit's): `close` ran before it could unsubscribe.
    if (closed) unsubscribe();
    else if (watching.ended) close();
    return new Response(stream, { status: 200, headers: SSE_HEADERS });
  });

  app.post("/processes/:pid/signals/kill", async (c) => {
    const killed = await service.kill(pidOf(c));
    return c.json({ pid: killed.pid, state: killed.state }, 202);
  });
  app.post("/processes/:pid/signals/run", async (c) => {
    const queued = await service.run(pidOf(c));
    return c.json({ pid: queued.pid, state: queued.state }, 202);
  });
  app.delete("/processes/:pid", async (c) => {
    await service.delete(pidOf(c));
    return c.body(null, 204);
  });

  app.get("/environment/docs", async (c) =>
    c.body(await service.environments.docs(), 200, { "content-type": "text/markdown; charset=utf-8" }),
  );
  app.get("/tools", (c) => c.json({ services: service.tools.list() }));
  app.get("/tools/:serviceId/:toolId/docs", async (c) => {
    const serviceId = c.req.param("serviceId");
    const toolId = c.req.param("toolId");
    const tool = service.tools.tool(serviceId, toolId);
    if (tool === undefined) throw new HostError("not_found", `No tool ${serviceId}.${toolId}`);
    const markdown = await service.environments.toolDocs({
      serviceId,
      toolId,
      description: tool.description,
      inputSchema: tool.inputSchema,
      outputSchema: tool.outputSchema,
    });
    return c.body(markdown, 200, { "content-type": "text/markdown; charset=utf-8" });
  });
  app.get("/openapi.json", (c) => c.json(openApiDocument()));

  app.notFound((c) => fail(c, new HostError("not_found", `No route ${c.req.method} ${new URL(c.req.url).pathname}`)));
  app.onError((error, c) => {
    if (isHostError(error)) return fail(c, error);
    return fail(c, new HostError("internal", error instanceof Error ? error.message : String(error)));
  });
  return app;
}
