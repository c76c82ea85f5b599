/**
 * Upstream MCP servers as services ("code mode"): each tool of a connected server becomes a function the sandbox
 * imports by the server's configured name (`import { search_issues } from "github"`), the same namespace as the
 * built-in `kv` and the process environment's `cyrnel.services`. The registry validates every call against the
 * tool's input schema on the host before the upstream server sees it; a result is its `structuredContent`, else its
 * text; an upstream error reaches the guest as a thrown error with the upstream message.
 *
 * What an upstream sends is bounded before the host works on it: the listing in pages, time and bytes, every
 * response over HTTP in bytes, the calls a run makes as `kv`'s are, and the schemas' regexes never run on the host
 * (see `compileSchema`): JavaScript's regex engine backtracks, so a `pattern` can take exponential time.
 * @module
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { FetchLike } from "@modelcontextprotocol/sdk/shared/transport.js";
import type { jsonSchemaValidator } from "@modelcontextprotocol/sdk/validation/types.js";
import { stringifyWithin, WorkBudget } from "../values/budget.js";
import { JsonNesting, MAX_JSON_TEXT_DEPTH } from "../values/json-nesting.js";
import { KV_MAX_CALLS_PER_RUN } from "./kv.js";
import { type Service, type Tool, ToolError } from "./registry.js";
import type { JSONSchema } from "./types.js";
import type { HttpUpstream } from "./upstream-config.js";
import { compileForeignSchema } from "./validate.js";

/** Longest upstream text result or error message kept, in characters. */
const MAX_UPSTREAM_TEXT = 1_048_576;

/** Tools taken from one upstream server; a server that pages on past them is cut there. */
const MAX_UPSTREAM_TOOLS = 1_000;
/** Pages of `tools/list` read from one upstream server; a server that pages on past them is left out. */
export const MAX_UPSTREAM_PAGES = 100;
/** Bytes of tool definitions (as JSON) taken from one upstream server; a server that lists more is left out. */
export const MAX_UPSTREAM_LIST_BYTES = 4_194_304;
/** Largest response body read from an upstream server over HTTP (the SDK reads a response whole). */
export const MAX_UPSTREAM_RESPONSE_BYTES = 4_194_304;
/** Calls one run may make to the tools of one upstream server, as many as it may make to `kv`. */
export const MAX_UPSTREAM_CALLS_PER_RUN = KV_MAX_CALLS_PER_RUN;
/** How long listing an upstream server's tools (every page) may take, and so may connecting to it. */
const UPSTREAM_CONNECT_TIMEOUT_MS = 10_000;

/** An MCP tool name (letters, digits, `_`, `-`, `.`) as a registry id: `.` becomes `_`, a leading digit gets `_`. */
function toolIdOf(name: string): string {
  const id = name.replace(/[^\w-]/g, "_").slice(0, 64);
  return /^[A-Za-z_]/.test(id) ? id : `_${id}`.slice(0, 64);
}

type CallResult = Awaited<ReturnType<Client["callTool"]>>;

/** The text parts of a result, joined and cut. */
function textOf(result: CallResult): string {
  const content = Array.isArray(result.content) ? result.content : [];
  return content
    .filter((part): part is { type: "text"; text: string } => part.type === "text" && typeof part.text === "string")
    .map((part) => part.text)
    .join("\n")
    .slice(0, MAX_UPSTREAM_TEXT);
}

type Listed = Awaited<ReturnType<Client["listTools"]>>["tools"];

/**
 * Every page of the server's tools, up to {@link MAX_UPSTREAM_TOOLS}; throws past {@link MAX_UPSTREAM_PAGES} pages,
 * {@link MAX_UPSTREAM_LIST_BYTES} bytes of JSON (or nesting past `MAX_WALK_DEPTH`) or `timeoutMs` for them all (a
 * server once paged on for ever, empty pages that each came at once).
 */
async function listAll(client: Client, timeoutMs: number): Promise<Listed> {
  const listed: Listed = [];
  const signal = AbortSignal.timeout(timeoutMs);
  const bytes = new WorkBudget(MAX_UPSTREAM_LIST_BYTES, "the tools it lists");
  let cursor: string | undefined;
  for (let pages = 1; ; pages++) {
    const page = await client.listTools(cursor === undefined ? {} : { cursor }, { signal }).catch((error: Error) => {
      throw signal.aborted ? new Error(`listing its tools took longer than ${timeoutMs} ms`) : error;
    });
    // The page is parsed already, within the response's bound: this counts what the host keeps of it.
    stringifyWithin(page.tools, bytes);
    listed.push(...page.tools);
    cursor = page.nextCursor;
    if (cursor === undefined || listed.length >= MAX_UPSTREAM_TOOLS) return listed.slice(0, MAX_UPSTREAM_TOOLS);
    if (pages === MAX_UPSTREAM_PAGES) throw new Error(`it lists its tools in more than ${MAX_UPSTREAM_PAGES} pages`);
  }
}

/** The tools of a connected upstream server as one service named `id`; listing them takes at most `timeoutMs`. */
export async function upstreamService(
  id: string,
  client: Client,
  timeoutMs = UPSTREAM_CONNECT_TIMEOUT_MS,
): Promise<Service> {
  let listed: Listed;
  try {
    listed = await listAll(client, timeoutMs);
  } catch (error) {
    throw new Error(`${id}: ${(error as Error).message.slice(0, 500)}`);
  }
  const seen = new Set<string>();
  const tools: Tool[] = [];
  for (const tool of listed) {
    const toolId = toolIdOf(tool.name);
    if (seen.has(toolId)) continue;
    seen.add(toolId);
    tools.push({
      id: toolId,
      name: tool.name,
      description: tool.description ?? tool.title ?? tool.name,
      inputSchema: tool.inputSchema as JSONSchema,
      ...(tool.outputSchema === undefined ? {} : { outputSchema: tool.outputSchema as JSONSchema }),
      async run(parameters, { scope }) {
        if (!scope.take(id, MAX_UPSTREAM_CALLS_PER_RUN)) {
          throw new ToolError(
            "quota_exceeded",
            `${id}.${toolId} failed: quota exceeded: a run may make at most ${MAX_UPSTREAM_CALLS_PER_RUN} ${id} calls`,
          );
        }
        const result = await client.callTool({ name: tool.name, arguments: parameters });
        if (result.isError === true) {
          throw new ToolError("tool_failed", `${id}.${toolId} failed: ${textOf(result) || "the upstream tool failed"}`);
        }
        return result.structuredContent ?? textOf(result);
      },
    });
  }
  const info = client.getServerVersion();
  return {
    id,
    name: info?.title ?? info?.name ?? id,
    description: client.getInstructions()?.slice(0, 1000) ?? `Tools of the MCP server '${id}'.`,
    foreignSchemas: true,
    tools,
  };
}

/**
 * Tool results checked against the upstream's output schemas as the registry checks arguments: within a budget of
 * work, the schemas' regexes left to the upstream (the SDK's own validator runs both unbounded), each compiled when
 * its tool first answers (the SDK asks for every tool's at each listing).
 */
const outputValidator: jsonSchemaValidator = {
  getValidator<T>(schema: unknown) {
    const check = compileForeignSchema(schema as JSONSchema);
    return (input: unknown) => {
      const problem = check(input);
      return problem === undefined
        ? { valid: true as const, data: input as T, errorMessage: undefined }
        : { valid: false as const, data: undefined, errorMessage: problem };
    };
  },
};

/** A client for an upstream server. */
export function upstreamClient(): Client {
  return new Client({ name: "runcode", version: "0.1.0" }, { jsonSchemaValidator: outputValidator });
}

/**
 * `fetch` whose response bodies fail past {@link MAX_UPSTREAM_RESPONSE_BYTES}, before the SDK holds them whole, or
 * once they nest deeper than {@link MAX_JSON_TEXT_DEPTH}, before the SDK parses them (4 MiB of `[` would hold the host
 * a second in `JSON.parse`, every call).
 */
const boundedFetch: FetchLike = async (url, init) => {
  const response = await fetch(url, init);
  if (response.body === null) return response;
  let bytes = 0;
  const nesting = new JsonNesting();
  const body = response.body.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        bytes += chunk.byteLength;
        if (bytes > MAX_UPSTREAM_RESPONSE_BYTES)
          controller.error(new Error(`the upstream's answer is more than ${MAX_UPSTREAM_RESPONSE_BYTES} bytes`));
        else if (!nesting.read(chunk))
          controller.error(new Error(`the upstream's answer nests deeper than ${MAX_JSON_TEXT_DEPTH} levels`));
        else controller.enqueue(chunk);
      },
    }),
  );
  return new Response(body, response);
};

/** A transport to an upstream server over Streamable HTTP (any platform with `fetch`). */
export function httpTransport({ url, headers = {} }: HttpUpstream): StreamableHTTPClientTransport {
  return new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers }, fetch: boundedFetch });
}

interface ConnectedUpstreams {
  services: Service[];
  /** `name: why` of each server that could not be reached in time; its module is absent from the runs. */
  failed: string[];
  close(): Promise<void>;
}

/**
 * Connects to every server at once and lists its tools. A server that fails, takes longer than
 * {@link UPSTREAM_CONNECT_TIMEOUT_MS} to connect or as long again to list its tools, or lists past the bounds of
 * `upstreamService` is left out rather than failing the others.
 */
export async function connectHttpUpstreams(servers: Record<string, HttpUpstream>): Promise<ConnectedUpstreams> {
  const clients: Client[] = [];
  const settled = await Promise.allSettled(
    Object.entries(servers).map(async ([name, upstream]) => {
      const client = upstreamClient();
      clients.push(client);
      try {
        await client.connect(httpTransport(upstream), { timeout: UPSTREAM_CONNECT_TIMEOUT_MS });
      } catch (error) {
        throw new Error(`${name}: ${(error as Error).message.slice(0, 500)}`);
      }
      return await upstreamService(name, client);
    }),
  );
  return {
    services: settled.flatMap((outcome) => (outcome.status === "fulfilled" ? [outcome.value] : [])),
    failed: settled.flatMap((outcome) => (outcome.status === "rejected" ? [(outcome.reason as Error).message] : [])),
    close: async () => {
      await Promise.allSettled(clients.map((client) => client.close()));
    },
  };
}
