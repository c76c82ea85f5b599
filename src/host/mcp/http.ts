/**
 * MCP over Streamable HTTP, stateless (no `sessionIdGenerator`): every `POST /mcp` gets a fresh server and
 * transport, answers one JSON response (no session, no stream to resume), and closes both. So any isolate or process can serve any request, and
 * nothing of one client outlives its request. The body arrives parsed by the HTTP app, which has read it within its
 * size limit: the SDK's transport would otherwise read it whole.
 * @module
 */
import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";

/** Answers one MCP request with a server made for it. */
export async function serveMcpRequest(request: Request, parsedBody: unknown, server: McpServer): Promise<Response> {
  const transport = new WebStandardStreamableHTTPServerTransport({ enableJsonResponse: true });
  await server.connect(transport);
  try {
    return await transport.handleRequest(request, { parsedBody });
  } finally {
    await server.close();
  }
}
