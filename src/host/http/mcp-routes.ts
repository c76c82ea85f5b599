/**
 * `POST /mcp`: runcode's MCP server (`mcp/server.ts`) over Streamable HTTP, stateless: every request gets a server
 * made for its tenant, answers (an event stream for a request that calls tools, JSON otherwise) and closes. The body
 * is read once by the app's JSON reader within its limit (the SDK's transport would read it whole); each `tools/call`
 * counts against the tenant's rate (so does a request that reaches upstream servers), and its run takes the host's
 * one path for runs, waiting in the same admission as `POST /run` and keeping its room, as `/run`'s do, until the
 * answer has been read whole or its client went away; a call with a `session` name runs a cell of the
 * tenant's session of that name in the host's sessions (`SessionBackend.open`), durable across requests. The app refuses a foreign `Host` or
 * browser origin before this route (the MCP specification's defence against DNS rebinding), and what the SDK's
 * transport refuses is answered as every refusal is, `{error: {code, message}}`.
 * @module
 */
import { createRoute, type OpenAPIHono, z } from "@hono/zod-openapi";
import { ToolRegistry } from "../../tools/registry.js";
import { connectHttpUpstreams } from "../../tools/upstream.js";
import type { HttpUpstream } from "../../tools/upstream-config.js";
import { HostError, type HostErrorCode } from "../errors.js";
import { MAX_RUN_BODY_BYTES } from "../limits.js";
import { serveMcpRequest } from "../mcp/http.js";
import { createMcpServer, type McpSessions } from "../mcp/server.js";
import { createRunOnce, type RunOnceOptions } from "../runs/run-once.js";
import type { SessionBackend } from "../sessions/backend.js";
import type { Catalog } from "./catalog-routes.js";
import { jsonBody } from "./json-body.js";
import {
  type AppEnv,
  documented,
  errorResponses,
  jsonOrEventStream,
  requireTenant,
  routes,
  secured,
} from "./route-context.js";
import type { RunRouteOptions } from "./run-routes.js";

const JsonRpc = z
  .union([z.record(z.string(), z.unknown()), z.array(z.record(z.string(), z.unknown()))])
  .openapi("JsonRpcMessage", { description: "A JSON-RPC 2.0 message of the Model Context Protocol, or a batch." });

const route = createRoute(
  secured({
    method: "post",
    path: "/mcp",
    summary: "The Model Context Protocol (Streamable HTTP, stateless): the run_code tool",
    request: { body: { required: true, content: { "application/json": { schema: JsonRpc } } } },
    responses: {
      200: jsonOrEventStream(
        "The JSON-RPC response; for a request that calls tools, an event stream of the calls' notifications (console output, progress) and then the responses",
        JsonRpc,
      ),
      202: { description: "A notification or response was accepted" },
      ...errorResponses(
        "invalid_json",
        "invalid_request",
        "not_acceptable",
        "payload_too_large",
        "unsupported_media_type",
        "rate_limited",
      ),
    },
  }),
);

const methodOf = (message: unknown) => (message as { method?: unknown } | null)?.method;

/**
 * The codes of what the SDK's transport refuses (its JSON-RPC error bodies): an `Accept` without both JSON and event
 * streams, a body that is not JSON, a message that is not JSON-RPC, two `initialize` in one batch, an unsupported
 * `MCP-Protocol-Version`. Any other refusal would be a fault of this route.
 */
const TRANSPORT_REFUSALS: Partial<Record<number, HostErrorCode>> = {
  400: "invalid_request",
  406: "not_acceptable",
  415: "unsupported_media_type",
};

/** `response` if the transport answered, else its refusal in the app's error shape. */
async function answered(response: Response): Promise<Response> {
  if (response.status < 400) return response;
  const text = await response.text();
  let message = text;
  try {
    message = String((JSON.parse(text) as { error: { message: unknown } }).error.message);
  } catch {}
  throw new HostError(TRANSPORT_REFUSALS[response.status] ?? "internal", message.slice(0, 500));
}

/**
 * `POST /mcp`: its runs made as `runs` says (admitted where `POST /run`'s are). The tools of `mcpServers` are
 * importable in `run_code`; the route keeps no state between requests, so they are connected for each request that
 * lists or calls tools, and one that cannot be reached is left out of that request. With `sessions`, `run_code` takes
 * a `session` name: its cells run in the tenant's session of that name (made on first use), which imports the host's
 * tools but not the upstream ones (a session outlives the request that connected them).
 */
export function mcpRoutes(
  runs: RunOnceOptions & Pick<RunRouteOptions, "webApis" | "intl" | "fetchAllow" | "packages">,
  catalog: Catalog,
  mcpServers: Record<string, HttpUpstream> = {},
  sessions?: SessionBackend,
): OpenAPIHono<AppEnv> {
  const bridged = Object.keys(mcpServers).length > 0;
  const app = routes();
  documented(app, route);
  app.post(route.path, requireTenant, jsonBody("POST /mcp", MAX_RUN_BODY_BYTES, JsonRpc), async (c) => {
    const body = c.req.valid("json");
    const messages: unknown[] = Array.isArray(body) ? body : [body];
    // The transport answers a batch once each id has an answer: the calls behind a repeated id were left running
    // after the answer, holding their admission for ever on the edge.
    const ids = new Set<unknown>();
    for (const message of messages) {
      const { method, id } = (message ?? {}) as { method?: unknown; id?: unknown };
      if (method === undefined || id === undefined) continue;
      if (ids.has(id))
        throw new HostError("invalid_request", `The batch repeats the request id ${JSON.stringify(id).slice(0, 100)}`);
      ids.add(id);
    }
    const methods = messages.map(methodOf);
    const reachesUpstreams = bridged && (methods.includes("tools/call") || methods.includes("tools/list"));
    // Every call in a batch is a run, and a request that reaches upstream servers costs them three exchanges each:
    // both count against the tenant's rate, one token apiece.
    const tokens = methods.filter((method) => method === "tools/call").length + (reachesUpstreams ? 1 : 0);
    for (let i = 0; i < tokens; i++) await c.get("quotas").admit(c.get("tenant"));
    // Whatever ends this request releases every run it admitted and stops every wait for admission.
    const ended = new AbortController();
    const signal = AbortSignal.any([c.req.raw.signal, ended.signal]);
    const tenant = c.get("tenant");
    const upstreams = reachesUpstreams ? await connectHttpUpstreams(mcpServers) : undefined;
    /** The rooms of the calls' runs, kept until the answer is read whole or the client went away (as `/run`'s). */
    const rooms: (() => void)[] = [];
    let ending: Promise<void> | undefined;
    const end = () => {
      ended.abort(new HostError("internal", "The request ended"));
      for (const release of rooms.splice(0)) release();
      ending ??= Promise.resolve(upstreams?.close());
      return ending;
    };
    let response: Response;
    try {
      if (upstreams !== undefined && upstreams.failed.length > 0)
        console.warn(`POST /mcp: upstream MCP servers left out: ${upstreams.failed.join("; ")}`);
      const tools =
        upstreams === undefined ? runs.tools : (runs.tools ?? new ToolRegistry()).extendedWith(upstreams.services);
      const { run } = createRunOnce({ ...runs, ...(tools === undefined ? {} : { tools }) });
      const server = createMcpServer({
        run: async (request, caller = {}) => {
          const answer = await run(request, {
            ...caller,
            tenant,
            signal: caller.signal === undefined ? signal : AbortSignal.any([caller.signal, signal]),
            keepRoom: true,
          });
          if (answer.release !== undefined) {
            if (ended.signal.aborted) answer.release();
            else rooms.push(answer.release);
          }
          return answer;
        },
        webApis: runs.webApis ?? false,
        intl: runs.intl ?? false,
        environmentDocs: () => catalog.environments.docs(),
        ...(tools === undefined ? {} : { tools }),
        ...(runs.fetchAllow === undefined ? {} : { fetchAllow: runs.fetchAllow }),
        ...(runs.packages === undefined ? {} : { packages: runs.packages }),
        ...(sessions === undefined ? {} : { sessions: tenantSessions(sessions, tenant, signal) }),
      });
      response = await serveMcpRequest(c.req.raw, body, server, end);
    } catch (error) {
      await end();
      throw error;
    }
    return answered(response);
  });
  return app;
}

/** `run_code`'s sessions over HTTP: the tenant's named sessions in the host's `backend`, stopped with the request. */
function tenantSessions(backend: SessionBackend, tenant: string, request: AbortSignal): McpSessions {
  return {
    run: async (name, cell, caller) => {
      const { id } = await backend.open(tenant, name);
      const signal = caller.signal === undefined ? request : AbortSignal.any([caller.signal, request]);
      return (await backend.run(tenant, id, cell, { ...caller, signal })).answer;
    },
    lifetime:
      "Sessions belong to your API key's tenant and outlive this request and restarts of the host, until deleted or idle past the host's time to live; they import the host's own services, not upstream servers' tools.",
  };
}
