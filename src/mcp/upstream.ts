/**
 * Upstream MCP servers as services ("code mode"): each tool of a connected server becomes a function the sandbox
 * imports by the server's configured name (`import { search_issues } from "github"`), the same namespace as the
 * built-in `kv` and the process environment's `cyrnel.services`. The registry validates every call against the
 * tool's input schema on the host before the upstream server sees it; a result is its `structuredContent`, else its
 * text; an upstream error reaches the guest as a thrown error with the upstream message.
 * @module
 */
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { JSONSchema } from "../environment/types.js";
import { type Service, type Tool, ToolError } from "../host/tools.js";

/** Longest upstream text result or error message kept, in characters. */
export const MAX_UPSTREAM_TEXT = 1_048_576;

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
export async function upstreamService(id: string, client: Client): Promise<Service> {
  const listed = [];
  let cursor: string | undefined;
  do {
    const page = await client.listTools(cursor === undefined ? {} : { cursor });
    listed.push(...page.tools);
    cursor = page.nextCursor;
  } while (cursor !== undefined);
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

/** A transport to an upstream server over Streamable HTTP (any platform with `fetch`). */
export function httpTransport(url: string, headers: Record<string, string> = {}): StreamableHTTPClientTransport {
  return new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } });
}
