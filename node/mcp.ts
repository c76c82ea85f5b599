/**
 * `runcode mcp [--config file.json] [--web-apis] [--allow-fetch origin]... [--package name]... [--intl]`: the MCP server over standard input and
 * output, for MCP clients that start it as a command (`npx runcode mcp`). Runs take the host's one path for runs (its
 * caps, time limits and answers, as over HTTP) on this package's sandbox, each on a worker thread, with the Web APIs
 * for `--web-apis`, `Intl` for `--intl`, `fetch` reaching the origins of `--allow-fetch`, the npm packages of
 * `--package` (listed in `run_code`'s description), and no admission: the client is the machine's
 * user. The built-in `kv` service lives in memory for as long as the server does, and so do `run_code`'s sessions
 * (src/host/mcp/connection-sessions.ts: up to 16, on this thread, fuel bounding each cell). The configuration names upstream
 * MCP servers in the format MCP clients use (`{"mcpServers": {"github": {"command": "...", "args": [...]}, "docs":
 * {"url": "https://..."}}}`); their tools become modules of the sandbox (`import { search_issues } from "github"`).
 * Nothing but protocol messages may reach standard output.
 * @module
 */
import { readFile } from "node:fs/promises";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import type { FetchOptions } from "../src/core/types.js";
import { ConnectionSessions, MAX_CONNECTION_SESSIONS } from "../src/host/mcp/connection-sessions.js";
import { createMcpServer } from "../src/host/mcp/server.js";
import { createRunOnce } from "../src/host/runs/run-once.js";
import { kvService, memoryKeyValueStores } from "../src/tools/kv.js";
import { ToolRegistry } from "../src/tools/registry.js";
import { httpTransport, upstreamClient, upstreamService } from "../src/tools/upstream.js";
import { type Upstream, upstreamsFrom } from "../src/tools/upstream-config.js";
import { createSandbox, DEFAULT_MEMORY_LIMIT_BYTES } from "./index.js";
import { bundlePackages } from "./packages.js";
import { threadedSessions } from "./session-threads/engine.js";

/** The upstream servers of a configuration file. */
async function upstreamsOf(configPath: string): Promise<Record<string, Upstream>> {
  const text = await readFile(configPath, "utf8");
  let config: unknown;
  try {
    config = JSON.parse(text);
  } catch (error) {
    throw new TypeError(`${configPath}: not valid JSON: ${(error as Error).message}`);
  }
  return upstreamsFrom(config, configPath);
}

/** Settings of `runcode mcp`. */
interface StdioMcpOptions {
  /** A configuration file naming upstream MCP servers. */
  configPath?: string | undefined;
  /** Gives runs the Web APIs (`SandboxOptions.webApis`). */
  webApis?: boolean;
  /** Gives runs `Intl` (`SandboxOptions.intl`). */
  intl?: boolean;
  /** Gives runs `fetch` (`SandboxOptions.fetch`), and the Web APIs with it. */
  fetch?: FetchOptions | undefined;
  /** npm packages runs and cells import by name (`NodeSandboxOptions.packages`), resolved from the working directory. */
  packages?: readonly string[] | undefined;
}

export async function serveMcpOverStdio({
  configPath,
  webApis = false,
  intl = false,
  fetch,
  packages = [],
}: StdioMcpOptions = {}): Promise<void> {
  const bundles = bundlePackages(packages);
  const boot =
    bundles.length === 0
      ? {}
      : { bootModules: Object.freeze(Object.fromEntries(bundles.map((b) => [b.specifier, b.source]))) };
  const tools = new ToolRegistry().register(kvService(memoryKeyValueStores()));
  const clients: Client[] = [];
  const upstreams = configPath === undefined ? {} : await upstreamsOf(configPath);
  for (const [name, upstream] of Object.entries(upstreams)) {
    const client = upstreamClient();
    await client.connect(
      "url" in upstream ? httpTransport(upstream) : new StdioClientTransport({ ...upstream, stderr: "inherit" }),
    );
    clients.push(client);
    tools.register(await upstreamService(name, client));
  }
  const web = webApis || fetch !== undefined;
  const { runCode } = createSandbox({ webApis: web, intl, ...boot, ...(fetch === undefined ? {} : { fetch }) });
  const { run } = createRunOnce({ runCode, defaultMemoryLimitBytes: DEFAULT_MEMORY_LIMIT_BYTES, tools });
  // Cells on worker threads: a cell spinning never holds the connection (its cancellation included).
  const sessions = new ConnectionSessions({
    engine: threadedSessions({ webApis: web, intl, ...boot, ...(fetch === undefined ? {} : { fetch }) }),
    tools,
    maxLength: DEFAULT_MEMORY_LIMIT_BYTES,
  });
  const server = createMcpServer({
    run,
    tools,
    webApis: web,
    packages: bundles,
    intl,
    ...(fetch === undefined ? {} : { fetchAllow: fetch.allow }),
    sessions: {
      run: sessions.run,
      lifetime: `Sessions last as long as this server runs, at most ${MAX_CONNECTION_SESSIONS}: a new name closes the least recently used one.`,
    },
  });
  server.server.onclose = () => {
    sessions.close();
    for (const client of clients) void client.close();
  };
  await server.connect(new StdioServerTransport());
}
