/**
 * Upstream MCP servers as services ("code mode"): each tool of a connected server becomes a function the sandbox
 * imports by the server's configured name (`import { search_issues } from "github"`), the same namespace as the
 * built-in `kv` and the process environment's `cyrnel.services`. The registry validates every call against the
 * tool's input schema on the host before the upstream server sees it; a result is its `structuredContent`, else its
 * text; an upstream error reaches the guest as a thrown error with the upstream message.
 * @module
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { CfWorkerJsonSchemaValidator } from "@modelcontextprotocol/sdk/validation/cfworker-provider.js";
import type { JSONSchema } from "../environment/types.js";
import { type Service, type Tool, ToolError } from "../host/tools.js";
import type { HttpUpstream } from "./upstream-config.js";

/** Longest upstream text result or error message kept, in characters. */
export const MAX_UPSTREAM_TEXT = 1_048_576;

/** Tools taken from one upstream server; a server that pages on past them is cut there. */
export const MAX_UPSTREAM_TOOLS = 1_000;

/** An MCP tool name (letters, digits, `_`, `-`, `.`) as a registry id: `.` becomes `_`, a leading digit gets `_`. */
export function toolIdOf(name: string): string {
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

/** The tools of a connected upstream server as one service named `id`. */
export async function upstreamService(id: string, client: Client, timeoutMs?: number): Promise<Service> {
  const listed = [];
  let cursor: string | undefined;
  do {
    const page = await client.listTools(
      cursor === undefined ? {} : { cursor },
      timeoutMs === undefined ? {} : { timeout: timeoutMs },
    );
    listed.push(...page.tools);
    cursor = page.nextCursor;
  } while (cursor !== undefined && listed.length < MAX_UPSTREAM_TOOLS);
  const seen = new Set<string>();
  const tools: Tool[] = [];
  for (const tool of listed.slice(0, MAX_UPSTREAM_TOOLS)) {
    const toolId = toolIdOf(tool.name);
    if (seen.has(toolId)) continue;
    seen.add(toolId);
    tools.push({
      id: toolId,
      name: tool.name,
      description: tool.description ?? tool.title ?? tool.name,
      inputSchema: tool.inputSchema as JSONSchema,
      ...(tool.outputSchema === undefined ? {} : { outputSchema: tool.outputSchema as JSONSchema }),
      async run(parameters) {
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
    tools,
  };
}

/**
 * A client for an upstream server. It checks tool results against their output schemas with the validator that
 * compiles nothing, as workerd forbids generating code at run time.
 */
export function upstreamClient(): Client {
  return new Client({ name: "runcode", version: "0.1.0" }, { jsonSchemaValidator: new CfWorkerJsonSchemaValidator() });
}

/** A transport to an upstream server over Streamable HTTP (any platform with `fetch`). */
export function httpTransport({ url, headers = {} }: HttpUpstream): StreamableHTTPClientTransport {
  return new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } });
}

/** How long connecting to an upstream server and listing its tools may take before it is left out. */
export const UPSTREAM_CONNECT_TIMEOUT_MS = 10_000;

export interface ConnectedUpstreams {
  services: Service[];
  /** `name: why` of each server that could not be reached in time; its module is absent from the runs. */
  failed: string[];
  close(): Promise<void>;
}

/**
 * Connects to every server at once and lists its tools. A server that fails or takes longer than
 * {@link UPSTREAM_CONNECT_TIMEOUT_MS} is left out rather than failing the others.
 */
export async function connectHttpUpstreams(servers: Record<string, HttpUpstream>): Promise<ConnectedUpstreams> {
  const clients: Client[] = [];
  const settled = await Promise.allSettled(
    Object.entries(servers).map(async ([name, upstream]) => {
      const client = upstreamClient();
      clients.push(client);
      try {
        await client.connect(httpTransport(upstream), { timeout: UPSTREAM_CONNECT_TIMEOUT_MS });
        return await upstreamService(name, client, UPSTREAM_CONNECT_TIMEOUT_MS);
      } catch (error) {
        throw new Error(`${name}: ${(error as Error).message.slice(0, 500)}`);
      }
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
