/**
 * The process routes: create, list (a page at a time), read, follow, signal and delete processes. Every process
 * belongs to the tenant that created it: another tenant's pid answers 404 exactly as an unknown one does, and a
 * listing shows the caller's processes only.
 * @module
 */
import { createRoute, type OpenAPIHono, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import { HostError } from "../errors.js";
import { sourcesTooLarge } from "../limits.js";
import { type CreateProcessInput, processModulesOf } from "../processes/process-service.js";
import {
  type HostState,
  type LargeField,
  type ProcessFilter,
  type ProcessSummary,
  recordJson,
} from "../processes/storage.js";
import { type BodyRefusal, jsonBody } from "./json-body.js";
import {
  type AppEnv,
  documented,
  errorResponses,
  preEncoded,
  requireTenant,
  routes,
  SSE_HEADERS,
  secured,
} from "./route-context.js";
import { refusedBody } from "./run-routes.js";
import {
  CreateProcessRequest,
  ListProcessesQuery,
  PID_PATTERN,
  PidParameter,
  ProcessPage,
  ProcessRecordSchema,
  ProcessState,
} from "./schemas.js";

/** What the process routes ask of processes: the `ProcessService` in one process, Durable Objects on the edge. */
export interface ProcessBackend {
  /** Throws a `HostError` (429 `too_many_processes`, `tenant_too_many_processes`) when no slot is free. */
  create(input: CreateProcessInput & { tenant: string }): Promise<{ pid: number; state: HostState }>;
  /**
   * `tenant`'s process `pid`, without its large fields. A backend that keeps each process in an object of its own
   * finds out whose the pid is first: another tenant's pid, like an unknown one, creates and reads no object.
   */
  summary(pid: number, tenant: string): Promise<ProcessSummary | undefined>;
  /** A large field's text (`output` as JSON) in chunks, each read as the response takes the one before. */
  read(pid: number, field: LargeField): AsyncIterable<string>;
  list(filter: ProcessFilter): Promise<ProcessSummary[]>;
  events(pid: number): Promise<ReadableStream<Uint8Array> | undefined>;
  kill(pid: number): Promise<{ pid: number; state: HostState }>;
  run(pid: number): Promise<{ pid: number; state: HostState }>;
  delete(pid: number): Promise<void>;
}

/** A UTF-16 code unit of a surrogate pair without its other half (`u` mode matches only unpaired ones). */
const LONE_SURROGATE = /\p{Cs}/u;
const json = <T extends z.ZodType>(schema: T, description: string) => ({
  description,
  content: { "application/json": { schema } },
});
const text = (description: string) => ({ description, content: { "text/plain": { schema: z.string() } } });
const pidErrors = errorResponses("invalid_pid", "not_found");
const refusedAsRun = refusedBody("{code, modules?, timeoutMs?, ref?}");
/** A body the schema refuses, in the words of `POST /run`'s refusals: its modules', its time limit's, its fields'. */
const refused: BodyRefusal = (issues, body) => {
  if (issues.some((issue) => issue.path[0] === "modules")) processModulesOf((body as { modules?: unknown }).modules);
  return refusedAsRun(issues, body);
};

/** The fields of a record a list shows (no code, streams or output, nor the tenant: the caller is the tenant). */
export function listedOf(r: ProcessSummary): Omit<ProcessSummary, "tenant" | "truncated"> {
  const { tenant: _n, truncated: _t, ...summary } = r;
  return summary;
}

const encoder = new TextEncoder();

/**
 * `chunks` as a body the client pulls: each chunk is read when the client has taken the one before, so a response
 * holds one chunk however large the field (a zero high-water mark reads nothing ahead).
 */
function pulled(chunks: AsyncIterable<string>): ReadableStream<Uint8Array> {
  const iterator = chunks[Symbol.asyncIterator]();
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        const { done, value } = await iterator.next();
        if (done) controller.close();
        else controller.enqueue(encoder.encode(value));
      },
      async cancel() {
        await iterator.return?.();
      },
    },
    { highWaterMark: 0 },
  );
}

function pidOf(c: Context): number {
  const raw = c.req.param("pid") ?? "";
  if (!PID_PATTERN.test(raw) || !Number.isSafeInteger(Number(raw))) {
    throw new HostError("invalid_pid", `pid must be a positive integer, got ${JSON.stringify(raw.slice(0, 40))}`);
  }
  // The router decodes the segment: `%31` would be pid 1. A pid is written in digits, or it names no process.
  if (new URL(c.req.url).pathname.split("/")[2] !== raw) throw new HostError("not_found", "No such process");
  return Number(raw);
}

const create = createRoute(
  secured({
    method: "post",
    path: "/processes",
    summary: "Create and start a process",
    request: { body: { required: true, content: { "application/json": { schema: CreateProcessRequest } } } },
    responses: {
      201: json(ProcessState, "Created; the process is queued"),
      ...errorResponses(
        "invalid_json",
        "invalid_request",
        "payload_too_large",
        "unsupported_media_type",
        "too_many_processes",
        "tenant_too_many_processes",
        "rate_limited",
        "storage_full",
      ),
    },
  }),
);

/** The process routes over `processes`; a `POST /processes` body may take `maxBodyBytes`. */
export function processRoutes(processes: ProcessBackend, maxBodyBytes: number): OpenAPIHono<AppEnv> {
  const app = routes();
  /** The caller's process: 404 for an unknown pid and for another tenant's, alike. */
  const owned = async (c: Context<AppEnv>): Promise<ProcessSummary> => {
    const pid = pidOf(c);
    const tenant = c.get("tenant");
    const found = await processes.summary(pid, tenant);
    if (found === undefined || found.tenant !== tenant) throw new HostError("not_found", `No process ${pid}`);
    return found;
  };

  documented(app, create);
  app.post(
    create.path,
    requireTenant,
    jsonBody("POST /processes", maxBodyBytes, CreateProcessRequest, refused),
    async (c) => {
      const input = c.req.valid("json");
      const modules = processModulesOf(input.modules);
      const tooLarge = sourcesTooLarge(input.code, modules);
      if (tooLarge !== undefined) throw tooLarge;
      const texts: [string, string | undefined][] = [
        ["code", input.code],
        ["ref", input.ref],
        ...Object.entries(modules ?? {}).flatMap(([name, source]): [string, string][] => [
          [`modules key ${JSON.stringify(name)}`, name],
          [`modules[${JSON.stringify(name)}]`, source],
        ]),
      ];
      // A lone surrogate (valid as a JSON escape) cannot be stored faithfully: `/code` answers it as U+FFFD and the
      // registry's SQLite index turned a `ref` with one into text no list filter could ever match.
      for (const [field, value] of texts) {
        const lone = value === undefined ? null : LONE_SURROGATE.exec(value);
        if (lone !== null) {
          const unit = lone[0].charCodeAt(0).toString(16).toUpperCase();
          throw new HostError("invalid_request", `Invalid body: ${field} contains a lone surrogate (U+${unit})`);
        }
      }
      // The environment compiles code as a C string, which a raw NUL would cut short: `1 // \0 throw x` would run
      // as `1`. Refused while the engine cannot take NUL (write `\0` in strings).
      for (const [field, value] of texts) {
        if (field !== "ref" && value?.includes("\0")) {
          throw new HostError("invalid_request", `Invalid body: ${field} contains a NUL character (U+0000)`);
        }
      }
      const tenant = c.get("tenant");
      await c.get("quotas").admit(tenant);
      const created = await processes.create({ ...input, tenant });
      return c.json({ pid: created.pid, state: created.state }, 201, { location: `/processes/${created.pid}` });
    },
  );

  app.openapi(
    createRoute(
      secured({
        method: "get",
        path: "/processes",
        summary: "List the caller's processes, ascending by pid, a page at a time",
        request: { query: ListProcessesQuery },
        responses: { 200: json(ProcessPage, "A page of summaries"), ...errorResponses("invalid_request") },
      }),
    ),
    async (c) => {
      const { limit, after, ...rest } = c.req.valid("query");
      const pageSize = limit === undefined ? 100 : Number(limit);
      const filter: ProcessFilter = { ...rest, tenant: c.get("tenant"), limit: pageSize };
      if (after !== undefined) filter.after = Number(after);
      const page = await processes.list(filter);
      const last = page.at(-1);
      const next = page.length === pageSize && last !== undefined ? String(last.pid) : null;
      return c.json({ processes: page.map(listedOf), next }, 200);
    },
  );

  const read = { method: "get", request: { params: PidParameter } } as const;
  app.openapi(
    createRoute(
      secured({
        ...read,
        path: "/processes/{pid}",
        summary: "A process's record",
        responses: { 200: json(ProcessRecordSchema, "The record"), ...pidErrors },
      }),
    ),
    async (c) => {
      const summary = await owned(c);
      const body = pulled(recordJson(summary, (field) => processes.read(summary.pid, field)));
      return preEncoded(new Response(body, { status: 200, headers: { "content-type": "application/json" } }));
    },
  );
  for (const stream of ["code", "stdout", "stderr"] as const) {
    app.openapi(
      createRoute(
        secured({
          ...read,
          path: `/processes/{pid}/${stream}`,
          summary: `A process's ${stream}`,
          responses: { 200: text(`The ${stream}`), ...pidErrors },
        }),
      ),
      async (c) => {
        const { pid } = await owned(c);
        const body = pulled(processes.read(pid, stream));
        return preEncoded(
          new Response(body, { status: 200, headers: { "content-type": "text/plain; charset=UTF-8" } }),
        );
      },
    );
  }
  app.openapi(
    createRoute(
      secured({
        ...read,
        path: "/processes/{pid}/output",
        summary: "A process's merged output",
        responses: { 200: json(z.record(z.string(), z.unknown()), "The output"), ...pidErrors },
      }),
    ),
    async (c) => {
      const { pid } = await owned(c);
      const body = pulled(processes.read(pid, "output"));
      return preEncoded(new Response(body, { status: 200, headers: { "content-type": "application/json" } }));
    },
  );
  app.openapi(
    createRoute(
      secured({
        method: "get",
        path: "/processes/{pid}/events",
        summary: "Follow a process: a snapshot, then every event until exit (Server-Sent Events)",
        request: { params: PidParameter },
        responses: {
          200: { description: "The event stream", content: { "text/event-stream": { schema: z.string() } } },
          ...pidErrors,
          ...errorResponses("too_many_subscribers"),
        },
      }),
    ),
    async (c) => {
      const { pid } = await owned(c);
      // Hono answers HEAD with the GET route minus its body, and a body dropped that way is never cancelled: the
      // subscription it made stayed until the process exited. HEAD gets the headers and subscribes to nothing.
      if (c.req.method === "HEAD") return preEncoded(new Response(null, { status: 200, headers: SSE_HEADERS }));
      const stream = await processes.events(pid);
      if (stream === undefined) throw new HostError("not_found", `No process ${pid}`);
      return preEncoded(new Response(stream, { status: 200, headers: SSE_HEADERS }));
    },
  );

  const signal = (name: "kill" | "run", summary: string, refusals: Parameters<typeof errorResponses>) =>
    createRoute(
      secured({
        method: "post",
        path: `/processes/{pid}/signals/${name}`,
        summary,
        request: { params: PidParameter },
        responses: { 202: json(ProcessState, "Accepted"), ...pidErrors, ...errorResponses(...refusals) },
      }),
    );
  app.openapi(signal("kill", "Stop a queued or running process", ["process_not_active"]), async (c) => {
    const { pid } = await owned(c);
    const killed = await processes.kill(pid);
    return c.json({ pid: killed.pid, state: killed.state }, 202);
  });
  app.openapi(
    signal("run", "Run an idle process again", [
      "process_active",
      "too_many_processes",
      "tenant_too_many_processes",
      "rate_limited",
    ]),
    async (c) => {
      const { pid } = await owned(c);
      await c.get("quotas").admit(c.get("tenant"));
      const queued = await processes.run(pid);
      return c.json({ pid: queued.pid, state: queued.state }, 202);
    },
  );
  app.openapi(
    createRoute(
      secured({
        method: "delete",
        path: "/processes/{pid}",
        summary: "Delete an idle process",
        request: { params: PidParameter },
        responses: { 204: { description: "Deleted" }, ...pidErrors, ...errorResponses("process_active") },
      }),
    ),
    async (c) => {
      const { pid } = await owned(c);
      await processes.delete(pid);
      return c.body(null, 204);
    },
  );
  return app;
}
