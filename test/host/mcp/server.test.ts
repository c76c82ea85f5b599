/**
 * The MCP server through the official SDK's client (in memory here; over stdio against the built CLI in
 * stdio.test.ts): the tool's schema and guide, every status, exact positions, lossless values, bridged services.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { type CallToolResult, LoggingMessageNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import { afterEach, describe, expect, it } from "vitest";
import { createSandbox } from "../../../node/index.js";
import { SHOWN_CHARS } from "../../../src/host/mcp/summary.js";
import { kvService, memoryKeyValueStores } from "../../../src/tools/kv.js";
import { ToolRegistry } from "../../../src/tools/registry.js";
import { upstreamService } from "../../../src/tools/upstream.js";
import type { JsonValue } from "../../../src/values/json.js";
import { fromWire } from "../../../src/values/wire.js";
import { calcServer } from "./fixtures/calc-server.mjs";
import { mcpServerOf } from "./helpers.js";

const { runCode } = createSandbox({ threads: false, safetyCap: { cpuTimeMs: 300 } });
const clients: Client[] = [];

async function connect(tools = new ToolRegistry().register(kvService(memoryKeyValueStores()))): Promise<Client> {
  const server = mcpServerOf(runCode, tools);
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await server.connect(serverSide);
  const client = new Client({ name: "test", version: "1.0.0" });
  await client.connect(clientSide);
  clients.push(client);
  return client;
}

afterEach(async () => {
  for (const client of clients.splice(0)) await client.close();
});

async function call(client: Client, args: Record<string, unknown>): Promise<CallToolResult> {
  return (await client.callTool({ name: "run_code", arguments: args })) as CallToolResult;
}
const textOf = (result: CallToolResult) => (result.content[0] as { text: string }).text;
const decoded = (result: CallToolResult) => fromWire(result.structuredContent as JsonValue) as Record<string, unknown>;

describe("MCP: the run_code tool", () => {
  it("is listed with its JSON Schema and a guide that declares the bridged services", async () => {
    const { tools } = await (await connect()).listTools();
    expect(tools.map((t) => t.name)).toEqual(["run_code"]);
    const [tool] = tools;
    expect(Object.keys(tool?.inputSchema.properties ?? {})).toEqual([
      "code",
      "language",
      "globals",
      "execute",
      "memoryLimitBytes",
      "timeoutMs",
    ]);
    expect(tool?.inputSchema.required).toEqual(["code"]);
    expect(tool?.description).toContain('declare module "kv" {');
    expect(tool?.description).toContain(
      "export function get(parameters: {\n    /** The key. */\n    key: string;\n  })",
    );
  });

  it.each([
    ["success", "export default 1 + 1;", {}, false, "status: success"],
    [
      "error",
      "const x: number = 1;\nthrow new TypeError('boom ' + x);",
      {},
      true,
      "error: TypeError: boom 1 at <runCode>:2:20",
    ],
    ["link_error", "export default 1 +;", {}, true, "status: link_error"],
    [
      "memory",
      "const a = []; for (;;) a.push(new Array(1e5).fill(1));",
      { memoryLimitBytes: 16 << 20 },
      true,
      "status: memory",
    ],
    ["terminated", "for (;;) {}", {}, true, "status: terminated"],
  ])("%s", async (status, code, extra, isError, text) => {
    const result = await call(await connect(), { code, ...extra });
    expect({ status: decoded(result).status, isError: result.isError }).toEqual({ status, isError });
    expect(textOf(result)).toContain(text);
  });

  it("a call's timeoutMs stops a run that awaits the host", async () => {
    const slow = { id: "slow", description: "A tool that never answers.", tools: [] };
    const tools = new ToolRegistry().register({
      ...slow,
      tools: [
        {
          id: "wait",
          description: "Waits forever.",
          inputSchema: { type: "object" },
          run: () => new Promise(() => {}),
        },
      ],
    });
    const client = await connect(tools);
    const result = await call(client, { code: 'import { wait } from "slow";\nawait wait({});', timeoutMs: 200 });
    expect(decoded(result).error).toMatchObject({
      name: "TerminatedError",
      message: "The run's time limit of 200 ms ran out",
    });
  });

  it("answers Map, bigint, -0 and undefined losslessly in structuredContent", async () => {
    const code = "export default new Map<string, unknown>([['big', 2n ** 70n], ['zero', -0], ['none', undefined]]);";
    const result = await call(await connect(), { code });
    expect(decoded(result).result).toEqual(
      new Map<string, unknown>([
        ["big", 2n ** 70n],
        ["zero", -0],
        ["none", undefined],
      ]),
    );
  });

  it("runs a module without a default export as a script: success with its logs; a named export stays required", async () => {
    const client = await connect();
    const script = await call(client, { code: "console.log('hi', 1 + 1);" });
    const answer = decoded(script);
    expect({
      isError: script.isError,
      status: answer.status,
      hasResult: "result" in answer,
      result: answer.result,
      logs: (answer.logs as { args: unknown[] }[]).map((log) => log.args),
    }).toEqual({ isError: false, status: "success", hasResult: true, result: undefined, logs: [["hi", 2]] });
    expect(textOf(script)).toContain("logs (1):\n  [log] hi 2");
    const named = await call(client, { code: "console.log('hi');", execute: { fn: "default" } });
    expect({ isError: named.isError, error: decoded(named).error }).toEqual({
      isError: true,
      error: { name: "LinkError", message: "The module does not export 'default'", code: "missing_export" },
    });
  });

  it("takes wire-encoded globals and arguments", async () => {
    const code = "export function f(m: Map<string, bigint>) { return [big, m.get('k')]; }";
    const args = [{ $t: "map", v: [["k", { $t: "bigint", v: "5" }]] }];
    const result = await call(await connect(), {
      code,
      globals: { big: { $t: "bigint", v: "7" } },
      execute: { fn: "f", args },
    });
    expect(decoded(result).result).toEqual([7n, 5n]);
  });

  it("bridges kv as a module; a failing call throws the service's message in the guest", async () => {
    const client = await connect();
    const code = `import { get, set } from "kv";
await set({ key: "k", value: { a: [1, 2] } });
let failure = "";
try { await get({}); } catch (error) { failure = (error as Error).message; }
export default [await get({ key: "k" }), failure];`;
    const result = await call(client, { code });
    expect(decoded(result).result).toEqual([
      { found: true, value: { a: [1, 2] } },
      'Invalid parameters for kv.get: Instance does not have required property "key".',
    ]);
  });

  it.each([0, 600_001, 1.5, "5"])(
    "refuses a timeoutMs of %j naming the range, as every door does",
    async (timeoutMs) => {
      const result = await call(await connect(), { code: "export default 1;", timeoutMs });
      expect([result.isError, textOf(result), result.structuredContent]).toEqual([
        true,
        "MCP error -32602: Input validation error: Invalid arguments for tool run_code: timeoutMs must be an integer from 1 to 600000 at timeoutMs",
        undefined,
      ]);
    },
  );

  it("refuses arguments outside the schema without running anything", async () => {
    const result = await call(await connect(), { code: "export default 1;", memoryLimitBytes: 2 ** 40 });
    expect(result.isError).toBe(true);
    expect(textOf(result)).toContain("memoryLimitBytes");
    expect(result.structuredContent).toBeUndefined();
  });

  it("cuts each value in the text, never the structured result", async () => {
    const result = await call(await connect(), { code: "export default 'x'.repeat(50_000);" });
    expect(textOf(result)).toBe(
      `status: success (${Math.round(decoded(result).durationMs as number)} ms)\nresult: (more than ${SHOWN_CHARS} characters: see structuredContent)`,
    );
    expect(decoded(result).result).toBe("x".repeat(50_000));
  });

  it("serves its guide as a resource", async () => {
    const client = await connect();
    const { resources } = await client.listResources();
    expect(resources.map((r) => r.uri)).toEqual(["runcode://docs/run-code"]);
    const { contents } = await client.readResource({ uri: "runcode://docs/run-code" });
    const { tools } = await client.listTools();
    expect((contents[0] as { text: string }).text).toBe(tools[0]?.description);
  });
});

describe("MCP: a call's output while it runs", () => {
  const CONSOLE = "console.log('a', 1n); console.info('i'); console.warn('w'); console.error('e'); console.debug('d');";

  /** The logging notifications `client` hears, as `[level, logger, args]`. */
  function logsHeard(client: Client): unknown[] {
    const heard: unknown[] = [];
    client.setNotificationHandler(LoggingMessageNotificationSchema, ({ params }) => {
      heard.push([params.level, params.logger, (params.data as { args: unknown }).args]);
    });
    return heard;
  }

  it("each console entry reaches the client as a logging notification, the level by method, before the result", async () => {
    const client = await connect();
    const heard = logsHeard(client);
    await call(client, { code: CONSOLE });
    expect(heard).toEqual([
      ["info", "run_code", ["a", { $t: "bigint", v: "1" }]],
      ["info", "run_code", ["i"]],
      ["warning", "run_code", ["w"]],
      ["error", "run_code", ["e"]],
      ["debug", "run_code", ["d"]],
    ]);
  });

  it("logging/setLevel holds back the entries below the level the client set", async () => {
    const client = await connect();
    const heard = logsHeard(client);
    await client.setLoggingLevel("warning");
    await call(client, { code: CONSOLE });
    expect(heard).toEqual([
      ["warning", "run_code", ["w"]],
      ["error", "run_code", ["e"]],
    ]);
  });

  it("with a progressToken, each reported value is a progress notification: the count so far and the value", async () => {
    const client = await connect();
    const progress: unknown[] = [];
    const code = "report(1);\nreport({ big: 2n, text: 'x'.repeat(3_000) });\nexport default 0;";
    await client.callTool({ name: "run_code", arguments: { code } }, undefined, {
      onprogress: (notification) => progress.push(notification),
    });
    const value = `{"big":{"$t":"bigint","v":"2"},"text":"${"x".repeat(3_000)}"}`;
    expect(progress).toEqual([
      { progress: 1, message: "report 1: 1" },
      { progress: 2, message: `report 2: ${value.slice(0, SHOWN_CHARS)}... (${value.length - SHOWN_CHARS} more)` },
    ]);
  });
});

describe("MCP: upstream servers as modules (code mode)", () => {
  async function withCalc(): Promise<Client> {
    const upstream = new Client({ name: "runcode", version: "0.1.0" });
    const [upstreamClient, upstreamServer] = InMemoryTransport.createLinkedPair();
    await calcServer().connect(upstreamServer);
    await upstream.connect(upstreamClient);
    clients.push(upstream);
    const tools = new ToolRegistry().register(await upstreamService("calc", upstream));
    return connect(tools);
  }

  it("declares the upstream tools in the guide", async () => {
    const { tools } = await (await withCalc()).listTools();
    expect(tools[0]?.description).toContain(
      '/** calc: Arithmetic for the tests. */\ndeclare module "calc" {\n  /** Adds two numbers. */\n  export function add(parameters: {\n    a: number;\n    b: number;\n  }): Promise<{\n    sum: number;\n  }>;',
    );
    expect(tools[0]?.description).toContain(
      "export function text_shout(parameters: {\n    word: string;\n  }): Promise<unknown>;",
    );
  });

  it("one program calls several upstream tools and returns one answer; failures throw the upstream message", async () => {
    const code = `import { add, text_shout, refuse } from "calc";
const { sum } = await add({ a: 2, b: 3 });
const word = await text_shout({ word: "hi" });
let failure = "";
try { await refuse({}); } catch (error) { failure = (error as Error).message; }
let invalid = "";
try { await add({ a: "2" }); } catch (error) { invalid = (error as Error).message; }
export default { sum, word, failure, invalid };`;
    const result = await call(await withCalc(), { code });
    expect(decoded(result).result).toEqual({
      sum: 5,
      word: "HI",
      failure: "calc.refuse failed: refused: the answer is no",
      invalid: expect.stringMatching(/^Invalid parameters for calc\.add: /),
    });
  });
});
