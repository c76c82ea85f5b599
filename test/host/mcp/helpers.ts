/** What the MCP tests share. */
import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import type { RunCode } from "../../../src/core/types.js";
import { createRunOnce, type ToolRegistry } from "../../../src/host/index.js";
import { createMcpServer } from "../../../src/host/mcp/server.js";
import { DEFAULT_MEMORY_LIMIT_BYTES } from "../../../src/index.js";

/**
 * An MCP server whose calls take the host's one path for runs on `runCode`, importing `tools`, as stdio's does;
 * `webApis` says whether `runCode`'s sandbox has them.
 */
export function mcpServerOf(runCode: RunCode, tools?: ToolRegistry, webApis = false): McpServer {
  const withTools = tools === undefined ? {} : { tools };
  const { execute } = createRunOnce({ runCode, defaultMemoryLimitBytes: DEFAULT_MEMORY_LIMIT_BYTES, ...withTools });
  return createMcpServer({ execute, webApis, ...withTools });
}
