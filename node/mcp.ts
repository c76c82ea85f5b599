/**
 * `runcode mcp [--config file.json]`: the MCP server over standard input and output, for MCP clients that start it
 * as a command (`npx runcode mcp`). Runs use this package's in-process sandbox; the built-in `kv` service lives in
 * memory for as long as the server does. The configuration names upstream MCP servers in the format MCP clients use
 * (`{"mcpServers": {"github": {"command": "...", "args": [...]}, "docs": {"url": "https://..."}}}`); their tools
 * become modules of the sandbox (`import { search_issues } from "github"`). Nothing but protocol messages may reach
 * standard output.
 * @module
 */
import { readFile } from "node:fs/promises";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { kvService, memoryKeyValueStores, ToolRegistry } from "../src/host/index.js";
import { createMcpServer } from "../src/mcp/server.js";
import { httpTransport, upstreamService } from "../src/mcp/upstream.js";
import { runCode } from "./index.js";

type Upstream =
  | { command: string; args?: string[]; env?: Record<string, string>; cwd?: string }
  | { url: string; headers?: Record<string, string> };

/** The `mcpServers` of a configuration file, checked enough to say clearly what is wrong. */
async function upstreamsOf(configPath: string): Promise<Record<string, Upstream>> {
  const config = JSON.parse(await readFile(configPath, "utf8")) as { mcpServers?: unknown };
  const servers = config.mcpServers ?? {};
  if (typeof servers !== "object" || servers === null || Array.isArray(servers)) {
    throw new TypeError(`${configPath}: "mcpServers" must be an object of named servers`);
  }
  for (const [name, server] of Object.entries(servers)) {
    const s = server as Partial<Record<"command" | "url", unknown>>;
    if (typeof s?.command !== "string" && typeof s?.url !== "string") {
      throw new TypeError(`${configPath}: server '${name}' needs a "command" (stdio) or a "url" (Streamable HTTP)`);
    }
  }
  return servers as Record<string, Upstream>;
}

export async function serveMcpOverStdio(configPath?: string): Promise<void> {
  const tools = new ToolRegistry().register(kvService(memoryKeyValueStores()));
  const clients: Client[] = [];
  const upstreams = configPath === undefined ? {} : await upstreamsOf(configPath);
  for (const [name, upstream] of Object.entries(upstreams)) {
    const client = new Client({ name: "runcode", version: "0.1.0" });
    await client.connect(
      "url" in upstream
        ? httpTransport(upstream.url, upstream.headers)
        : new StdioClientTransport({ ...upstream, stderr: "inherit" }),
    );
    clients.push(client);
    tools.register(await upstreamService(name, client));
  }
  const server = createMcpServer({ runCode, tools });
  server.server.onclose = () => {
    for (const client of clients) void client.close();
  };
  await server.connect(new StdioServerTransport());
}
