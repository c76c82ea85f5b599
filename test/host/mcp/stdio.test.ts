/**
 * `runcode mcp` over standard input and output, through the official SDK's client, against the built CLI (what an
 * MCP client's configuration starts with `npx runcode mcp`).
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { JsonValue } from "../../../src/values/json.js";
import { fromWire } from "../../../src/values/wire.js";
import { startServer } from "../../fetch/server.js";
import { serveCalcOverHttp } from "./fixtures/calc-server.mjs";

const CLI = fileURLToPath(new URL("../../../dist/bundle/cli.js", import.meta.url));

describe("runcode mcp (stdio)", () => {
  const client = new Client({ name: "test", version: "1.0.0" });
  beforeAll(async () => {
    await client.connect(new StdioClientTransport({ command: process.execPath, args: [CLI, "mcp"], stderr: "pipe" }));
  }, 30_000);
  afterAll(() => client.close());

  const run = async (code: string) =>
    (await client.callTool({ name: "run_code", arguments: { code } })) as CallToolResult;

  it("lists run_code", async () => {
    expect((await client.listTools()).tools.map((t) => t.name)).toEqual(["run_code"]);
  });

  it("runs TypeScript and answers the result losslessly", async () => {
    const result = await run("const n: bigint = 2n ** 64n;\nexport default new Set([n]);");
    expect(result.isError).toBe(false);
    expect((fromWire(result.structuredContent as JsonValue) as { result: unknown }).result).toEqual(
      new Set([2n ** 64n]),
    );
  });

  it("keeps a session's state between calls naming it, for as long as the server runs", async () => {
    const cell = async (code: string, session: string) =>
      fromWire(
        ((await client.callTool({ name: "run_code", arguments: { code, session } })) as CallToolResult)
          .structuredContent as JsonValue,
      ) as { result: unknown };
    expect((await cell("let total = 40;", "s")).result).toBeUndefined();
    expect((await cell("total += 2; total", "s")).result).toBe(42);
    expect((await cell("typeof total", "other")).result).toBe("undefined");
  });

  it("keeps kv values for as long as the server runs", async () => {
    await run('import { set } from "kv";\nawait set({ key: "visits", value: 1 });');
    const result = await run('import { get } from "kv";\nexport default (await get({ key: "visits" })).value;');
    expect((fromWire(result.structuredContent as JsonValue) as { result: unknown }).result).toBe(1);
  });
});

describe("runcode mcp --web-apis", () => {
  const client = new Client({ name: "test", version: "1.0.0" });
  beforeAll(async () => {
    const args = [CLI, "mcp", "--web-apis"];
    await client.connect(new StdioClientTransport({ command: process.execPath, args, stderr: "pipe" }));
  }, 30_000);
  afterAll(() => client.close());

  it("runs code with the Web APIs and says so in the tool's guide", async () => {
    const [tool] = (await client.listTools()).tools;
    expect(tool?.description).toContain("these Web APIs exist: `URL`");
    const code =
      "const u = new URL('https://h.example/?a=1');\nawait new Promise((r) => setTimeout(r, 5));\nexport default u.searchParams.get('a');";
    const result = (await client.callTool({ name: "run_code", arguments: { code } })) as CallToolResult;
    expect((fromWire(result.structuredContent as JsonValue) as { result: unknown }).result).toBe("1");
  });
});

describe("runcode mcp --allow-fetch", () => {
  it("gives run_code fetch reaching the origins named, and its guide names them", async () => {
    const server = await startServer();
    const client = new Client({ name: "test", version: "1.0.0" });
    const args = [CLI, "mcp", "--allow-fetch", server.origin];
    await client.connect(new StdioClientTransport({ command: process.execPath, args, stderr: "pipe" }));
    expect((await client.listTools()).tools[0]?.description).toContain(`reaches only \`${server.origin}\``);
    const code = `export default (await (await fetch("${server.origin}/echo/mcp")).json()).path;`;
    const result = (await client.callTool({ name: "run_code", arguments: { code } })) as CallToolResult;
    expect((fromWire(result.structuredContent as JsonValue) as { result: unknown }).result).toBe("/echo/mcp");
    await client.close();
    await server.close();
  }, 30_000);
});

describe("runcode mcp --config: upstream servers, over stdio and by URL, become modules", () => {
  const client = new Client({ name: "test", version: "1.0.0" });
  const dir = mkdtempSync(join(tmpdir(), "runcode-mcp-"));
  const TOKEN = "calc-token-0123456789";
  let http: Awaited<ReturnType<typeof serveCalcOverHttp>>;
  beforeAll(async () => {
    http = await serveCalcOverHttp(0, TOKEN);
    const upstream = fileURLToPath(new URL("./fixtures/calc-server.mjs", import.meta.url));
    const config = join(dir, "servers.json");
    writeFileSync(
      config,
      JSON.stringify({
        mcpServers: {
          calc: { command: process.execPath, args: [upstream, "stdio"] },
          remote: { url: http.url, headers: { authorization: `Bearer ${TOKEN}` } },
        },
      }),
    );
    await client.connect(
      new StdioClientTransport({ command: process.execPath, args: [CLI, "mcp", "--config", config], stderr: "pipe" }),
    );
  }, 30_000);
  afterAll(async () => {
    await client.close();
    await http.close();
    rmSync(dir, { recursive: true });
  });

  it("one program calls the tools of both upstream servers through the sandbox", async () => {
    const code = `import { add } from "calc";
import { text_shout } from "remote";
export default [(await add({ a: 20, b: 22 })).sum, await text_shout({ word: "both" })];`;
    const result = (await client.callTool({ name: "run_code", arguments: { code } })) as CallToolResult;
    expect((fromWire(result.structuredContent as JsonValue) as { result: unknown }).result).toEqual([42, "BOTH"]);
  });

  it("a configuration with a mistake is refused at start with one line naming it", async () => {
    const bad = join(dir, "bad.json");
    writeFileSync(bad, JSON.stringify({ mcpServers: { calc: { url: "file:///etc/passwd" } } }));
    const failing = new Client({ name: "test", version: "1.0.0" });
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [CLI, "mcp", "--config", bad],
      stderr: "pipe",
    });
    let stderr = "";
    transport.stderr?.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    await expect(failing.connect(transport)).rejects.toThrow();
    expect(stderr).toContain(`${bad}: server 'calc' needs an http or https "url"`);
  });
});
