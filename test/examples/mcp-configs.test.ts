/**
 * examples/mcp/*.json as an MCP client reads them: the stdio entry starts the built `runcode mcp` (what `npx runcode`
 * runs once the package is installed), the Streamable HTTP entry reaches `POST /mcp` with its URL and headers, the
 * key filled in. Both through the official SDK's client, on this machine only.
 */
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { afterEach, describe, expect, it } from "vitest";
import { createSandbox } from "../../node/index.js";
import { accessFrom } from "../../src/host/http/auth.js";
import { createHost } from "../../src/host/index.js";
import type { JsonValue } from "../../src/values/json.js";
import { fromWire } from "../../src/values/wire.js";

const CLI = fileURLToPath(new URL("../../dist/bundle/cli.js", import.meta.url));
const config = (name: string) =>
  JSON.parse(readFileSync(new URL(`../../examples/mcp/${name}`, import.meta.url), "utf8")) as {
    mcpServers: { runcode: { command?: string; args?: string[]; url?: string; headers?: Record<string, string> } };
  };
const clients: Client[] = [];
afterEach(async () => {
  for (const client of clients.splice(0)) await client.close();
});

/** Runs a script that only prints through `client` and answers what a model would read. */
async function printHello(client: Client) {
  const answer = (await client.callTool({
    name: "run_code",
    arguments: { code: "const who: string = 'runcode';\nconsole.log('hello from', who);" },
  })) as CallToolResult;
  const { status, logs } = fromWire(answer.structuredContent as JsonValue) as {
    status: string;
    logs: { args: unknown[] }[];
  };
  return { isError: answer.isError, status, logs: logs.map((log) => log.args) };
}
const HELLO = { isError: false, status: "success", logs: [["hello from", "runcode"]] };

describe("examples/mcp", () => {
  it("stdio.json starts `runcode mcp`, which serves run_code", async () => {
    const { command, args } = config("stdio.json").mcpServers.runcode;
    expect({ command, args }).toEqual({ command: "npx", args: ["runcode", "mcp"] });
    // `npx runcode` runs the installed package's bin, dist/bundle/cli.js, with the arguments after the package name.
    const client = new Client({ name: "example", version: "1.0.0" });
    clients.push(client);
    await client.connect(
      new StdioClientTransport({ command: process.execPath, args: [CLI, ...(args ?? []).slice(1)], stderr: "pipe" }),
    );
    expect((await client.listTools()).tools.map((tool) => tool.name)).toEqual(["run_code"]);
    expect(await printHello(client)).toEqual(HELLO);
  }, 30_000);

  it("streamable-http.json reaches POST /mcp with its URL and a Bearer key", async () => {
    const { url, headers } = config("streamable-http.json").mcpServers.runcode;
    expect({ path: new URL(url ?? "").pathname, headers }).toEqual({
      path: "/mcp",
      headers: { Authorization: "Bearer YOUR_RUNCODE_API_KEY" },
    });
    const key = "example-key-0123456789abcdef";
    const { app } = await createHost({
      app: {
        access: await accessFrom({ apiKeys: `example:${key}` }),
        run: { runCode: createSandbox({ threads: false }).runCode, defaultMemoryLimitBytes: 32 * 1024 * 1024 },
      },
    });
    const filled = Object.fromEntries(
      Object.entries(headers ?? {}).map(([name, value]) => [name, value.replace("YOUR_RUNCODE_API_KEY", key)]),
    );
    const client = new Client({ name: "example", version: "1.0.0" });
    clients.push(client);
    await client.connect(
      new StreamableHTTPClientTransport(new URL(url ?? ""), {
        requestInit: { headers: filled },
        fetch: (request, init) => Promise.resolve(app.fetch(new Request(request, init))),
      }),
    );
    expect(await printHello(client)).toEqual(HELLO);
  });
});
