/** What the MCP tests share. */
import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import type { RunCode } from "../../../src/core/types.js";
import { createRunOnce, type ToolRegistry } from "../../../src/host/index.js";
import { createMcpServer, type McpServerOptions } from "../../../src/host/mcp/server.js";
import { DEFAULT_MEMORY_LIMIT_BYTES } from "../../../src/index.js";

/**
 * An MCP server whose calls take the host's one path for runs on `runCode`, importing `tools`, as stdio's does;
 * `sandbox` says what `runCode`'s sandbox gives the guest (its Web APIs, the origins its `fetch` reaches).
 */
export function mcpServerOf(
  runCode: RunCode,
  tools?: ToolRegistry,
  sandbox: Pick<McpServerOptions, "webApis" | "intl" | "fetchAllow"> = {},
): McpServer {
  const withTools = tools === undefined ? {} : { tools };
  const { run } = createRunOnce({ runCode, defaultMemoryLimitBytes: DEFAULT_MEMORY_LIMIT_BYTES, ...withTools });
  return createMcpServer({ run, ...sandbox, ...withTools });
}
