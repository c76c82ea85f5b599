/**
 * MCP over Streamable HTTP, stateless (no `sessionIdGenerator`): every `POST /mcp` gets a fresh server and transport
 * and no session, so any isolate or process can serve any request, and nothing of one client outlives its request. A
 * request that calls a tool is answered as an event stream, so the call's notifications (its console output, its
 * progress) reach the client before its result; any other request as one JSON response. The body arrives parsed by
 * the HTTP app, which has read it within its size limit: the SDK's transport would otherwise read it whole.
 * @module
 */
import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";

/**
 * Answers one MCP request with a server made for it. The server is closed, and then `ended` called, once the answer
 * is complete or its client went away (closing the server aborts the calls still running).
 */
export async function serveMcpRequest(
  request: Request,
  parsedBody: unknown,
  server: McpServer,
  ended: () => Promise<void>,
): Promise<Response> {
  const messages: unknown[] = Array.isArray(parsedBody) ? parsedBody : [parsedBody];
  const calls = messages.some((message) => (message as { method?: unknown } | null)?.method === "tools/call");
  const transport = new WebStandardStreamableHTTPServerTransport({ enableJsonResponse: !calls });
  let closed: Promise<void> | undefined;
  const close = () => {
    closed ??= server.close().then(ended);
    return closed;
  };
  await server.connect(transport);
  let response: Response;
  try {
    response = await transport.handleRequest(request, { parsedBody });
  } catch (error) {
    await close();
    throw error;
  }
  if (!calls || response.status !== 200 || response.body === null) {
    await close();
    return response;
  }
  return new Response(until(response.body, close), response);
}

/** `body` as it is, `end` called once when it is read to its end or cancelled. */
function until(body: ReadableStream<Uint8Array>, end: () => Promise<void>): ReadableStream<Uint8Array> {
  const reader = body.getReader();
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      const { done, value } = await reader.read();
      if (!done) return controller.enqueue(value);
      controller.close();
      await end();
    },
    async cancel(reason) {
      await end();
      await reader.cancel(reason);
    },
  });
}
