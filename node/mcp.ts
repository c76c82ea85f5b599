/**
 * `runcode mcp`: the MCP server over standard input and output, for MCP clients that start it as a command
 * (`npx runcode mcp`). Runs use this package's in-process sandbox; the built-in `kv` service lives in memory for as
 * long as the server does. Nothing but protocol messages may reach standard output.
 * @module
 */
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { kvService, MemoryKeyValueStore, ToolRegistry } from "../src/host/index.js";
import { createMcpServer } from "../src/mcp/server.js";
import { runCode } from "./index.js";

export async function serveMcpOverStdio(): Promise<void> {
  const tools = new ToolRegistry().register(kvService(new MemoryKeyValueStore()));
  const server = createMcpServer({ runCode, tools });
  await server.connect(new StdioServerTransport());
}
