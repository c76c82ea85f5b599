/**
 * `run_code`'s `session` as `runcode mcp` keeps them (in process, per connection; ConnectionSessions), through the
 * official SDK's client in memory: state shared by the calls naming one session, none across names or without a
 * session, the bound on sessions kept, the tools importable in cells, and malformed requests refused.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { afterEach, describe, expect, it } from "vitest";
import { createSandbox, createSession, DEFAULT_MEMORY_LIMIT_BYTES } from "../../../node/index.js";
import { ConnectionSessions } from "../../../src/host/mcp/connection-sessions.js";
import { createMcpServer } from "../../../src/host/mcp/server.js";
import { createRunOnce } from "../../../src/host/runs/run-once.js";
import { kvService, memoryKeyValueStores } from "../../../src/tools/kv.js";
import { ToolRegistry } from "../../../src/tools/registry.js";
import type { JsonValue } from "../../../src/values/json.js";
import { fromWire } from "../../../src/values/wire.js";

const { runCode } = createSandbox({ threads: false, safetyCap: { cpuTimeMs: 300 } });
const clients: Client[] = [];

afterEach(async () => {
  for (const client of clients.splice(0)) await client.close();
});

/** A client of a server whose sessions are kept as `runcode mcp` keeps them, at most `max`; `made` counts them. */
async function connect(max?: number) {
  const tools = new ToolRegistry().register(kvService(memoryKeyValueStores()));
  const counted = { made: 0 };
  const sessions = new ConnectionSessions({
    engine: {
      create: (options) => {
        counted.made++;
        return createSession(options);
      },
      restore: () => Promise.reject(new Error("a connection's sessions are never restored")),
    },
    tools,
    maxLength: DEFAULT_MEMORY_LIMIT_BYTES,
    ...(max === undefined ? {} : { max }),
  });
  const { run } = createRunOnce({ runCode, defaultMemoryLimitBytes: DEFAULT_MEMORY_LIMIT_BYTES, tools });
  const server = createMcpServer({ run, tools, sessions: { run: sessions.run, lifetime: "They last." } });
  server.server.onclose = () => sessions.close();
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await server.connect(serverSide);
  const client = new Client({ name: "test", version: "1.0.0" });
  await client.connect(clientSide);
  clients.push(client);
  return { client, counted };
}

const call = async (client: Client, args: Record<string, unknown>) =>
  (await client.callTool({ name: "run_code", arguments: args })) as CallToolResult;
const resultOf = (answer: CallToolResult) =>
  (fromWire(answer.structuredContent as JsonValue) as { result?: unknown }).result;
const textOf = (answer: CallToolResult) => (answer.content[0] as { text: string }).text;

describe("MCP over stdio: run_code's session", () => {
  it("shares state between calls with the same name; other names and calls without session see none", async () => {
    const { client } = await connect();
    const declared = await call(client, {
      code: "let x: number = 1;\nfunction twice(n: number) { return 2 * n; }",
      session: "a",
    });
    expect([declared.isError, resultOf(declared)]).toEqual([false, undefined]);
    expect(resultOf(await call(client, { code: "x + 1", session: "a" }))).toBe(2);
    expect(resultOf(await call(client, { code: "x = twice(x + 1); x", session: "a" }))).toBe(4);
    expect(resultOf(await call(client, { code: "typeof x", session: "b" }))).toBe("undefined");
    expect(resultOf(await call(client, { code: "export default typeof x;" }))).toBe("undefined");
    // A module's declarations are its own: nothing persists without a session.
    await call(client, { code: "var y = 1;" });
    expect(resultOf(await call(client, { code: "export default typeof y;" }))).toBe("undefined");
    expect(resultOf(await call(client, { code: "x", session: "a" }))).toBe(4);
  });

  it("a cell that throws keeps what it did before; the session goes on", async () => {
    const { client } = await connect();
    const failed = await call(client, { code: 'var kept = "before";\nthrow new Error("boom");', session: "s" });
    expect([failed.isError, textOf(failed)]).toEqual([true, expect.stringContaining("error: Error: boom")]);
    expect(resultOf(await call(client, { code: "kept", session: "s" }))).toBe("before");
  });

  it("as the guide says: let and const may be declared again; a cell out of time keeps what it did", async () => {
    const { client } = await connect();
    await call(client, { code: "const c = 1;\nlet l = 'a';", session: "g" });
    const again = await call(client, { code: "const c = 2;\nlet l = 'b';\n[c, l]", session: "g" });
    expect(resultOf(again)).toEqual([2, "b"]);
    const late = await call(client, { code: "var t = 'set';\nfor (;;) {}", session: "g", timeoutMs: 200 });
    expect([late.isError, (fromWire(late.structuredContent as JsonValue) as { status: string }).status]).toEqual([
      true,
      "terminated",
    ]);
    expect(resultOf(await call(client, { code: "t", session: "g" }))).toBe("set");
  });

  it("cells import the host's services, as runs do", async () => {
    const { client } = await connect();
    await call(client, {
      code: 'import { set } from "kv";\nawait set({ key: "k", value: 7 });',
      session: "t",
    });
    const read = await call(client, {
      code: 'import { get } from "kv";\n(await get({ key: "k" })).value',
      session: "t",
    });
    expect(resultOf(read)).toBe(7);
  });

  it("keeps at most `max` sessions: a new name closes the least recently used one", async () => {
    const { client, counted } = await connect(2);
    await call(client, { code: "var v = 'a';", session: "a" });
    await call(client, { code: "var v = 'b';", session: "b" });
    expect(resultOf(await call(client, { code: "v", session: "a" }))).toBe("a");
    await call(client, { code: "var v = 'c';", session: "c" });
    expect(counted.made).toBe(3);
    // "b" was the least recently used: made again, empty; "a" is still there.
    expect(resultOf(await call(client, { code: "v", session: "a" }))).toBe("a");
    expect(resultOf(await call(client, { code: "typeof v", session: "b" }))).toBe("undefined");
    expect(counted.made).toBe(4);
  });

  it("refuses a malformed session name, and options that do not apply to a cell, with a clear error", async () => {
    const { client, counted } = await connect();
    for (const name of ["", "has space", "x".repeat(65), "slash/no"]) {
      const refused = await call(client, { code: "1", session: name });
      expect([refused.isError, textOf(refused)]).toEqual([
        true,
        expect.stringContaining("A session name is 1 to 64 letters, digits, '_', '-', '.' or ':'"),
      ]);
    }
    const withExecute = await call(client, { code: "1", session: "ok", execute: { fn: "f" } });
    expect([withExecute.isError, textOf(withExecute)]).toEqual([
      true,
      "run_code: 'execute' does not apply to a session's cell",
    ]);
    const withGlobals = await call(client, { code: "1", session: "ok", globals: { a: 1 }, memoryLimitBytes: 1e6 });
    expect(textOf(withGlobals)).toBe("run_code: 'globals' and 'memoryLimitBytes' do not apply to a session's cell");
    expect(counted.made).toBe(0);
  });

  it("the tool's schema and guide describe session", async () => {
    const { client } = await connect();
    const [tool] = (await client.listTools()).tools;
    expect(Object.keys(tool?.inputSchema.properties ?? {})).toEqual([
      "code",
      "language",
      "globals",
      "execute",
      "memoryLimitBytes",
      "timeoutMs",
      "session",
    ]);
    expect(tool?.description).toContain("With `session`, the code is a cell: a script, not a module.");
    expect(tool?.description).toContain("The result is the cell's completion value");
    expect(tool?.description).toContain("They last.");
  });
});
