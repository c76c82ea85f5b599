/**
 * What an upstream MCP server sends is bounded before the host works on it: schemas that blow up when written as
 * declarations, listings that page for ever, regexes in schemas, calls without end and answers without end. Each
 * upstream here is the SDK's low-level server, in process, sending what any server may send; each test failed on
 * the code before these bounds (by its assertions, or by hanging past its timeout).
 */
import { createServer, type Server as HttpServer } from "node:http";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import {
  CallToolRequestSchema,
  type CallToolResult,
  ListToolsRequestSchema,
  type ListToolsResult,
} from "@modelcontextprotocol/sdk/types.js";
import { afterEach, describe, expect, it } from "vitest";
import { createSandbox } from "../../node/index.js";
import { createHost } from "../../src/host/index.js";
import { DECLARATION_UNITS, declarationsOf, TOOL_DECLARATION_UNITS } from "../../src/tools/declarations.js";
import { ToolRegistry } from "../../src/tools/registry.js";
import {
  httpTransport,
  MAX_UPSTREAM_CALLS_PER_RUN,
  MAX_UPSTREAM_LIST_BYTES,
  MAX_UPSTREAM_PAGES,
  MAX_UPSTREAM_RESPONSE_BYTES,
  upstreamClient,
  upstreamService,
} from "../../src/tools/upstream.js";
import { compileSchema } from "../../src/tools/validate.js";
import type { JsonValue } from "../../src/values/json.js";
import { fromWire } from "../../src/values/wire.js";
import { mcpServerOf } from "../host/mcp/helpers.js";
import { sseEvents } from "../host/sse.js";

// A thousand calls through the bridge take about a second of the run's CPU time.
const { runCode } = createSandbox({ threads: false, safetyCap: { cpuTimeMs: 10_000 } });
const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

type Tool = ListToolsResult["tools"][number];
interface Upstream {
  /** Answers `tools/list` for `cursor`. */
  list(cursor: string | undefined): Promise<ListToolsResult> | ListToolsResult;
  /** Answers `tools/call`. */
  call?(name: string, args: Record<string, unknown>): CallToolResult;
}

/** An upstream MCP server that answers with whatever `upstream` says, JSON Schemas as they are. */
function upstreamServer(upstream: Upstream): Server {
  const server = new Server({ name: "up", version: "1.0.0" }, { capabilities: { tools: {} } });
  server.setRequestHandler(ListToolsRequestSchema, (request) => upstream.list(request.params?.cursor));
  server.setRequestHandler(CallToolRequestSchema, (request) =>
    (upstream.call ?? (() => ({ content: [] })))(request.params.name, request.params.arguments ?? {}),
  );
  return server;
}

/** A runcode client of `upstream`, in memory. */
async function connected(upstream: Upstream): Promise<Client> {
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await upstreamServer(upstream).connect(serverSide);
  const client = upstreamClient();
  await client.connect(clientSide);
  closers.push(() => client.close());
  return client;
}

/** `upstream` served statelessly over Streamable HTTP on 127.0.0.1; `requests` counts what reached it. */
async function overHttp(upstream: Upstream): Promise<{ url: string; requests(): number }> {
  let requests = 0;
  const http = createServer(async (request, response) => {
    requests++;
    const server = upstreamServer(upstream);
    const transport = new StreamableHTTPServerTransport({ enableJsonResponse: true });
    await server.connect(transport);
    response.on("close", () => void server.close());
    await transport.handleRequest(request, response);
  });
  return { url: await listening(http), requests: () => requests };
}

/** `http` listening on 127.0.0.1 until the test's end: its MCP endpoint's URL. */
async function listening(http: HttpServer): Promise<string> {
  await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", resolve));
  closers.push(
    () =>
      new Promise((resolve) => {
        http.closeAllConnections();
        http.close(() => resolve());
      }),
  );
  return `http://127.0.0.1:${(http.address() as { port: number }).port}/mcp`;
}

/** Runs `code` through an MCP server whose services are `upstream`'s tools as the module "up". */
async function runWith(upstream: Upstream, code: string): Promise<{ status: string; result?: unknown }> {
  const tools = new ToolRegistry().register(await upstreamService("up", await connected(upstream)));
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await mcpServerOf(runCode, tools).connect(serverSide);
  const client = new Client({ name: "test", version: "1.0.0" });
  await client.connect(clientSide);
  closers.push(() => client.close());
  const answer = (await client.callTool({ name: "run_code", arguments: { code } })) as CallToolResult;
  return fromWire(answer.structuredContent as JsonValue) as { status: string; result?: unknown };
}

const tool = (name: string, inputSchema: Record<string, unknown>, extra: Partial<Tool> = {}): Tool => ({
  name,
  description: `The tool ${name}.`,
  inputSchema: inputSchema as Tool["inputSchema"],
  ...extra,
});

/** 1.1 KB of schema: seven levels of a `type` list of sixteen "array"s, each repeating the level below. */
function typeListBomb(levels: number): Record<string, unknown> {
  if (levels === 0) return { type: "string" };
  return { type: [...Array(16).fill("array"), "null"], items: typeListBomb(levels - 1) };
}

/** Exponential backtracking in JavaScript's engine: about 2^n steps for n word characters and a non-match. */
const BACKTRACKING = "^(\\w+\\s?)*$";

describe("declarations of upstream tools", () => {
  it("a schema that repeats its subtrees is declared loosely within its budget; the other tools are untouched", async () => {
    const bomb = { type: "object", properties: { a: typeListBomb(7) } };
    expect(JSON.stringify(bomb).length).toBe(1132);
    const client = await connected({
      list: () => ({
        tools: [tool("bomb", bomb), tool("add", { type: "object", properties: { a: { type: "number" } } })],
      }),
    });
    const tools = new ToolRegistry().register(await upstreamService("up", client));
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    await mcpServerOf(runCode, tools).connect(serverSide);
    const mcp = new Client({ name: "test", version: "1.0.0" });
    await mcp.connect(clientSide);
    closers.push(() => mcp.close());
    const [runTool] = (await mcp.listTools()).tools;
    expect(runTool?.description).toContain(
      `declare module "up" {
  /** The tool bomb. */
  // Declared loosely: writing its JSON Schemas as types takes more than ${TOOL_DECLARATION_UNITS} units of work.
  export function bomb(parameters: Record<string, unknown>): Promise<unknown>;
  /** The tool add. */
  export function add(parameters: {
    a?: number;
  }): Promise<unknown>;
}`,
    );
  });

  it("past the budget of all declarations, the remaining services are listed by name, and stay importable", () => {
    const wide = { type: "object", properties: { k: { enum: Array.from({ length: 70_000 }, (_, i) => i) } } };
    const definition = (id: string, inputSchema: Record<string, unknown>) => ({
      id,
      name: id,
      description: "d",
      inputSchema,
      outputSchema: {},
    });
    const hostile = Array.from({ length: DECLARATION_UNITS / TOOL_DECLARATION_UNITS + 1 }, (_, i) =>
      definition(`t${i}`, wide),
    );
    expect(
      declarationsOf([
        { id: "up", name: "up", description: "Hostile.", tools: hostile },
        { id: "calc", name: "calc", description: "Arithmetic.", tools: [definition("add", { type: "object" })] },
      ]),
    ).toBe('// Also importable, declarations left out for length: "up", "calc"\n');
  });
});

describe("listing an upstream's tools", () => {
  it("a tool whose schema cannot be compiled fails its own calls; the others are served", async () => {
    const twice = {
      type: "object",
      properties: { a: { $id: "https://example.com/a" }, b: { $id: "https://example.com/a" } },
    };
    const upstream: Upstream = {
      list: () => ({ tools: [tool("dup", twice), tool("ok", { type: "object" })] }),
      call: (name) => ({ content: [{ type: "text", text: `${name} ran` }] }),
    };
    const code = `import { dup, ok } from "up";
let failure = "";
try { await dup({}); } catch (error) { failure = (error as Error).message; }
export default [failure, await ok({})];`;
    expect(await runWith(upstream, code)).toMatchObject({
      status: "success",
      result: [
        'Invalid parameters for up.dup: its schema cannot be used: Duplicate schema URI "https://example.com/a".',
        "ok ran",
      ],
    });
  });

  it("a listing nested past the host's walks, or larger than the bound, leaves that server out", async () => {
    let deep: Record<string, unknown> = { type: "string" };
    for (let i = 0; i < 100_000; i++) deep = { items: deep };
    const nested = await connected({
      list: () => ({ tools: [tool("deep", { type: "object", properties: { deep } })] }),
    });
    await expect(upstreamService("up", nested)).rejects.toThrow(
      new Error("up: the tools it lists is nested deeper than 1000 levels"),
    );
    const description = "d".repeat(1 << 20);
    const large = await connected({
      list: (cursor) => ({
        tools: [0, 1].map((i) => tool(`t${cursor ?? ""}${i}`, { type: "object" }, { description })),
        nextCursor: `${Number(cursor ?? 0) + 1}`,
      }),
    });
    await expect(upstreamService("up", large)).rejects.toThrow(
      new Error(
        `up: the tools it lists needs more than ${MAX_UPSTREAM_LIST_BYTES} units of work (shared references count each time they are reached)`,
      ),
    );
  });

  it("a server that pages for ever is left out after a bounded number of pages, and POST /mcp answers", async () => {
    let page = 0;
    const upstream = await overHttp({ list: () => ({ tools: [], nextCursor: String(++page) }) });
    const h = await createHost({
      app: { run: { runCode, defaultMemoryLimitBytes: 32 << 20 }, mcpServers: { endless: { url: upstream.url } } },
    });
    const warnings: string[] = [];
    const warn = console.warn;
    console.warn = (message: string) => void warnings.push(message);
    try {
      const response = await h.app.fetch(
        new Request("http://host/mcp", {
          method: "POST",
          headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
          body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
        }),
      );
      expect(response.status).toBe(200);
      expect(((await response.json()) as { result: { tools: { name: string }[] } }).result.tools[0]?.name).toBe(
        "run_code",
      );
    } finally {
      console.warn = warn;
    }
    expect(page).toBe(MAX_UPSTREAM_PAGES);
    expect(warnings).toEqual([
      `POST /mcp: upstream MCP servers left out: endless: it lists its tools in more than ${MAX_UPSTREAM_PAGES} pages`,
    ]);
  }, 15_000);

  it("listing every page together takes at most the time given, however quickly each page comes", async () => {
    let page = 0;
    const client = await connected({
      list: async () => {
        await new Promise((resolve) => setTimeout(resolve, 20));
        return { tools: [tool(`t${page}`, { type: "object" })], nextCursor: String(++page) };
      },
    });
    await expect(upstreamService("slow", client, 300)).rejects.toThrow(
      new Error("slow: listing its tools took longer than 300 ms"),
    );
    expect(page).toBeLessThan(MAX_UPSTREAM_PAGES);
  }, 5_000);
});

describe("schema regexes of upstream tools", () => {
  const evil = "a".repeat(25);

  it("never run on the host over arguments: the upstream checks them; the rest of the schema is still checked", async () => {
    const upstream: Upstream = {
      list: () => ({
        tools: [
          tool("echo", {
            type: "object",
            properties: { q: { type: "string", pattern: BACKTRACKING } },
            required: ["q"],
          }),
        ],
      }),
      call: (_name, args) => ({ content: [{ type: "text", text: `the upstream got ${String(args.q).length}` }] }),
    };
    const code = `import { echo } from "up";
let invalid = "";
try { await echo({ q: 5 }); } catch (error) { invalid = (error as Error).message; }
export default [await echo({ q: ${JSON.stringify(`${evil}!`)} }), invalid];`;
    expect(await runWith(upstream, code)).toMatchObject({
      status: "success",
      result: [
        "the upstream got 26",
        'Invalid parameters for up.echo: q: Instance type "number" is invalid. Expected "string".',
      ],
    });
  }, 5_000);

  it("compileSchema({ regexes: false }) drops pattern keywords where that only loosens, else checks nothing", () => {
    const loose = compileSchema({ type: "string", pattern: BACKTRACKING, maxLength: 30 }, { regexes: false });
    expect([loose(`${evil}!`), loose("x".repeat(31))]).toEqual([undefined, "String is too long (31 > 30)."]);
    expect(compileSchema({ type: "string", pattern: "^a" })("b")).toBe("String does not match pattern.");
    // Dropped under `not`, the pattern would refuse every string: such a schema is left to the upstream whole.
    const negated = compileSchema(
      { type: "object", properties: { s: { not: { pattern: "^a" } } } },
      { regexes: false },
    );
    expect([negated({ s: "abc" }), negated(5)]).toEqual([undefined, undefined]);
    // A value that only looks like a keyword (in `const`) is data, and stays as it is.
    const data = compileSchema(
      { type: "object", properties: { p: { const: { pattern: BACKTRACKING } } } },
      { regexes: false },
    );
    expect([data({ p: { pattern: BACKTRACKING } }), data({ p: {} })]).toEqual([
      undefined,
      'p: Instance does not match {"pattern":"^(\\\\w+\\\\s?)*$"}.',
    ]);
  });

  it("never run on the host over results (the SDK's validator of output schemas is replaced)", async () => {
    const upstream: Upstream = {
      list: () => ({
        tools: [
          tool(
            "answer",
            { type: "object" },
            {
              outputSchema: {
                type: "object",
                properties: { s: { type: "string", pattern: BACKTRACKING }, n: { type: "number" } },
              },
            },
          ),
        ],
      }),
      call: (_name, args) => ({
        content: [],
        structuredContent: args.bad === true ? { n: "one" } : { s: `${evil}!`, n: 1 },
      }),
    };
    const code = `import { answer } from "up";
let invalid = "";
try { await answer({ bad: true }); } catch (error) { invalid = (error as Error).message; }
export default [await answer({}), invalid];`;
    expect(await runWith(upstream, code)).toMatchObject({
      status: "success",
      result: [
        { s: `${evil}!`, n: 1 },
        expect.stringMatching(/^up\.answer failed: .*Structured content does not match the tool's output schema/),
      ],
    });
  }, 5_000);
});

describe("calls to upstream tools", () => {
  it(`a run makes at most ${MAX_UPSTREAM_CALLS_PER_RUN} calls to one upstream server, then a call throws`, async () => {
    let calls = 0;
    const upstream: Upstream = {
      list: () => ({ tools: [tool("ping", { type: "object" })] }),
      call: () => {
        calls++;
        return { content: [{ type: "text", text: "pong" }] };
      },
    };
    const code = `import { ping } from "up";
let made = 0;
let failure = "";
try { for (;;) { await ping({}); made++; } } catch (error) { failure = (error as Error).message; }
export default [made, failure];`;
    expect(await runWith(upstream, code)).toMatchObject({
      status: "success",
      result: [
        MAX_UPSTREAM_CALLS_PER_RUN,
        `up.ping failed: quota exceeded: a run may make at most ${MAX_UPSTREAM_CALLS_PER_RUN} up calls`,
      ],
    });
    expect(calls).toBe(MAX_UPSTREAM_CALLS_PER_RUN);
  }, 20_000);

  it("an answer over HTTP larger than the bound fails the call instead of being held whole", async () => {
    const upstream = await overHttp({
      list: () => ({ tools: [tool("big", { type: "object" }), tool("small", { type: "object" })] }),
      call: (name) => ({
        content: [{ type: "text", text: "x".repeat(name === "big" ? MAX_UPSTREAM_RESPONSE_BYTES : 10) }],
      }),
    });
    const h = await createHost({
      app: { run: { runCode, defaultMemoryLimitBytes: 32 << 20 }, mcpServers: { up: { url: upstream.url } } },
    });
    const response = await h.app.fetch(
      new Request("http://host/mcp", {
        method: "POST",
        headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
        body: JSON.stringify({
          jsonrpc: "2.0",
          id: 1,
          method: "tools/call",
          params: {
            name: "run_code",
            arguments: {
              code: `import { big, small } from "up";
let failure = "";
try { await big({}); } catch (error) { failure = (error as Error).message; }
export default [failure, await small({})];`,
            },
          },
        }),
      }),
    );
    // A request that calls a tool is answered as an event stream: the call's notifications, then its response.
    const [[, answer]] = sseEvents(await response.text()).filter(([, message]) => "result" in message) as [
      [string, { result: CallToolResult }],
    ];
    const { result } = answer;
    expect(fromWire(result.structuredContent as JsonValue)).toMatchObject({
      status: "success",
      result: [expect.stringContaining(`more than ${MAX_UPSTREAM_RESPONSE_BYTES} bytes`), "x".repeat(10)],
    });
  }, 10_000);

  it("an answer over HTTP nesting past 4,096 levels fails the call before the SDK parses it", async () => {
    // An upstream that writes its answers itself: `deep` answers with 2 MB of brackets (the SDK's own server cannot
    // send them). Before: parsed whole by the SDK, a fraction of a microsecond a level, every call.
    const levels = 1_000_000;
    const http = createServer(async (request, response) => {
      // No stream of its own (GET) and no session to end (DELETE).
      if (request.method !== "POST") return void response.writeHead(405).end();
      let text = "";
      for await (const chunk of request) text += chunk;
      const message = JSON.parse(text) as { id?: number; method: string; params?: { name?: string } };
      if (message.id === undefined) return void response.writeHead(202).end();
      const result =
        message.method === "initialize"
          ? '{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"up","version":"1"}}'
          : message.method === "tools/list"
            ? JSON.stringify({ tools: [tool("deep", { type: "object" }), tool("flat", { type: "object" })] })
            : message.params?.name === "deep"
              ? `{"content":[],"structuredContent":{"deep":${"[".repeat(levels)}${"]".repeat(levels)}}}`
              : '{"content":[{"type":"text","text":"flat"}]}';
      response.writeHead(200, { "content-type": "application/json" });
      response.end(`{"jsonrpc":"2.0","id":${message.id},"result":${result}}`);
    });
    const url = await listening(http);
    const client = upstreamClient();
    await client.connect(httpTransport({ url }));
    closers.push(() => client.close());
    const tools = new ToolRegistry().register(await upstreamService("up", client));
    const code = `import { deep, flat } from "up";
let failure = "";
try { await deep({}); } catch (error) { failure = (error as Error).message; }
export default [failure, await flat({})];`;
    const result = await runCode(code, { imports: tools.modules() });
    expect(result.result).toEqual([
      expect.stringContaining("the upstream's answer nests deeper than 4096 levels"),
      "flat",
    ]);
  }, 20_000);
});
