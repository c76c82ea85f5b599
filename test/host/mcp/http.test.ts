/**
 * `POST /mcp` of the HTTP app through the official SDK's Streamable HTTP client: keys and tenants as on every API
 * route, stateless (each request its own server), the tenant's kv, the rate per tenant, the shared heap budget, and
 * the Origin check against DNS rebinding.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { type CallToolResult, LoggingMessageNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import { afterEach, describe, expect, it } from "vitest";
import { createSandbox } from "../../../node/index.js";
import { linearMemoryBytes } from "../../../src/core/engine.js";
import { MemoryQuotas } from "../../../src/host/admission/quotas.js";
import { type AdmissionCaps, RUN_MEMORY_CAP_BYTES } from "../../../src/host/admission/run-admission.js";
import { accessFrom } from "../../../src/host/http/auth.js";
import { createHost } from "../../../src/host/index.js";
import { MAX_CODE_BYTES } from "../../../src/host/limits.js";
import { httpUpstreamsFrom, upstreamsFrom } from "../../../src/tools/upstream-config.js";
import type { JsonValue } from "../../../src/values/json.js";
import { fromWire } from "../../../src/values/wire.js";
import { gateService } from "../gate.js";
import { sseEvents } from "../sse.js";
import { serveCalcOverHttp } from "./fixtures/calc-server.mjs";

const KEYS = { alpha: "alpha-key-0123456789abcdef", beta: "beta-key-0123456789abcdef" };
const { runCode } = createSandbox({ threads: false, safetyCap: { cpuTimeMs: 300 } });
type Host = Awaited<ReturnType<typeof createHost>>;
const clients: Client[] = [];

afterEach(async () => {
  for (const client of clients.splice(0)) await client.close();
});

/** Runs that import `gate` wait in `held` until the test releases them. */
const { gate, held } = gateService();

async function host(
  extra: { quotas?: MemoryQuotas; admission?: Partial<AdmissionCaps>; origins?: string[] } = {},
): Promise<Host> {
  const { admission, ...app } = extra;
  return createHost({
    services: [gate],
    app: {
      access: await accessFrom({ apiKeys: `alpha:${KEYS.alpha},beta:${KEYS.beta}` }),
      run: { runCode, defaultMemoryLimitBytes: 32 * 1024 * 1024, ...(admission === undefined ? {} : { admission }) },
      ...app,
    },
  });
}

/** An SDK client of `h`'s `/mcp` as `tenant`, every request going to the app's fetch. */
async function connect(h: Host, tenant: keyof typeof KEYS): Promise<Client> {
  const transport = new StreamableHTTPClientTransport(new URL("http://host/mcp"), {
    requestInit: { headers: { authorization: `Bearer ${KEYS[tenant]}` } },
    fetch: (url, init) => Promise.resolve(h.app.fetch(new Request(url, init))),
  });
  const client = new Client({ name: "test", version: "1.0.0" });
  await client.connect(transport);
  clients.push(client);
  return client;
}

const run = async (client: Client, code: string, extra: Record<string, unknown> = {}) =>
  (await client.callTool({ name: "run_code", arguments: { code, ...extra } })) as CallToolResult;
const resultOf = (answer: CallToolResult) =>
  (fromWire(answer.structuredContent as JsonValue) as { result?: unknown }).result;

/** One raw request to `/mcp`, as a client that is not the SDK might send it. */
const postText = (h: Host, body: string, headers: Record<string, string> = {}) =>
  h.app.fetch(
    new Request("http://host/mcp", {
      method: "POST",
      headers: {
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
        authorization: `Bearer ${KEYS.alpha}`,
        ...headers,
      },
      body,
    }),
  );
/** One JSON-RPC request (or batch) to `/mcp`. */
const post = (h: Host, body: unknown, headers: Record<string, string> = {}) =>
  postText(h, JSON.stringify(body), headers);
const listTools = { jsonrpc: "2.0", id: 1, method: "tools/list" };

describe("POST /mcp", () => {
  it("lists run_code and runs TypeScript with the caller's kv, per tenant", async () => {
    const h = await host();
    const alpha = await connect(h, "alpha");
    const beta = await connect(h, "beta");
    expect((await alpha.listTools()).tools.map((t) => t.name)).toEqual(["run_code"]);
    const typed = await run(alpha, "const n: number = 20; export default [n + 1, 2n ** 70n];");
    expect([typed.isError, resultOf(typed)]).toEqual([false, [21, 2n ** 70n]]);
    await run(alpha, `import { set } from "kv"; await set({ key: "k", value: "alpha's" });`);
    const read = `import { get } from "kv"; export default await get({ key: "k" });`;
    expect(resultOf(await run(beta, read))).toEqual({ found: false, value: null });
    expect(resultOf(await run(alpha, read))).toEqual({ found: true, value: "alpha's" });
  });

  it("401 without a key; 403 forbidden_origin from a foreign browser origin; the host's own origin passes", async () => {
    const h = await host({ origins: ["http://host"] });
    const anonymous = await post(h, listTools, { authorization: "" });
    expect([anonymous.status, ((await anonymous.json()) as { error: { code: string } }).error.code]).toEqual([
      401,
      "unauthenticated",
    ]);
    const foreign = await post(h, listTools, { origin: "https://rebound.example" });
    expect([foreign.status, await foreign.json()]).toEqual([
      403,
      { error: { code: "forbidden_origin", message: 'Origin "https://rebound.example" may not POST here' } },
    ]);
    const own = await post(h, listTools, { origin: "http://host" });
    expect(own.status).toBe(200);
    expect(((await own.json()) as { result: { tools: { name: string }[] } }).result.tools[0]?.name).toBe("run_code");
  });

  it("every status POST /mcp answers is in /openapi.json, each refusal as {error: {code, message}} of that status", async () => {
    const h = await host({ origins: ["http://host"], quotas: new MemoryQuotas(1, () => 0) });
    const raw = (body: string, headers: Record<string, string>) => postText(h, body, headers);
    const initialize = {
      jsonrpc: "2.0",
      method: "initialize",
      params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "t", version: "1" } },
    };
    const call = { jsonrpc: "2.0", method: "tools/call", params: { name: "run_code", arguments: { code: "1" } } };
    const cases: [string, Response | Promise<Response>, number, string | null][] = [
      ["a request", post(h, listTools), 200, null],
      ["a notification", post(h, { jsonrpc: "2.0", method: "notifications/initialized" }), 202, null],
      ["not JSON", raw("{", {}), 400, "invalid_json"],
      ["not an object", post(h, 7), 400, "invalid_request"],
      ["not JSON-RPC", post(h, { hello: 1 }), 400, "invalid_request"],
      [
        "two initialize in a batch",
        post(h, [
          { ...initialize, id: 1 },
          { ...initialize, id: 2 },
        ]),
        400,
        "invalid_request",
      ],
      [
        "an unsupported protocol version",
        post(h, listTools, { "mcp-protocol-version": "1999-01-01" }),
        400,
        "invalid_request",
      ],
      ["no key", post(h, listTools, { authorization: "" }), 401, "unauthenticated"],
      ["a foreign page", post(h, listTools, { origin: "https://rebound.example" }), 403, "forbidden_origin"],
      ["no event streams in Accept", post(h, listTools, { accept: "application/json" }), 406, "not_acceptable"],
      ["over 1 MiB", post(h, { ...listTools, params: { pad: "x".repeat(1024 * 1024) } }), 413, "payload_too_large"],
      ["text", raw(JSON.stringify(listTools), { "content-type": "text/plain" }), 415, "unsupported_media_type"],
      ["a foreign Host", post(h, listTools, { host: "rebound.example" }), 421, "misdirected_request"],
      [
        "past the rate",
        post(h, [
          { ...call, id: 1 },
          { ...call, id: 2 },
        ]),
        429,
        "rate_limited",
      ],
    ];
    const doc = (await (await h.app.fetch(new Request("http://host/openapi.json"))).json()) as {
      paths: { "/mcp": { post: { responses: Record<string, { description: string; content?: unknown }> } } };
    };
    const documented = doc.paths["/mcp"].post.responses;
    const ERROR_SCHEMA = { "application/json": { schema: { $ref: "#/components/schemas/Error" } } };
    for (const [what, answer, status, code] of cases) {
      const response = await answer;
      const body: unknown = response.status === 202 ? null : await response.json();
      expect([what, response.status]).toEqual([what, status]);
      expect([what, documented[status] !== undefined]).toEqual([what, true]);
      if (code === null) continue;
      expect([what, body]).toEqual([what, { error: { code, message: expect.any(String) } }]);
      expect([what, documented[status]?.description.split(", ").includes(code), documented[status]?.content]).toEqual([
        what,
        true,
        ERROR_SCHEMA,
      ]);
    }
  });

  it("stateless: GET and DELETE are 405; a body over 1 MiB is refused before the SDK sees it", async () => {
    const h = await host();
    for (const method of ["GET", "DELETE"]) {
      const response = await h.app.fetch(
        new Request("http://host/mcp", { method, headers: { authorization: `Bearer ${KEYS.alpha}` } }),
      );
      expect([method, response.status, response.headers.get("allow")]).toEqual([method, 405, "POST"]);
    }
    const big = await post(h, { ...listTools, params: { pad: "x".repeat(1024 * 1024) } });
    expect([big.status, ((await big.json()) as { error: { code: string } }).error.code]).toEqual([
      413,
      "payload_too_large",
    ]);
  });

  it("each tools/call counts against the tenant's rate; listing does not", async () => {
    const h = await host({ quotas: new MemoryQuotas(2, () => 0) });
    const alpha = await connect(h, "alpha");
    for (let i = 0; i < 3; i++) await alpha.listTools();
    expect(resultOf(await run(alpha, "export default 1"))).toBe(1);
    expect(resultOf(await run(alpha, "export default 2"))).toBe(2);
    const call = {
      jsonrpc: "2.0",
      id: 9,
      method: "tools/call",
      params: { name: "run_code", arguments: { code: "1" } },
    };
    const limited = await post(h, call);
    expect([
      limited.status,
      limited.headers.get("retry-after"),
      ((await limited.json()) as { error: { code: string } }).error.code,
    ]).toEqual([429, "30", "rate_limited"]);
  });

  it("every tools/call of a batch counts: three calls in one request against a rate of two are refused", async () => {
    const h = await host({ quotas: new MemoryQuotas(2, () => 0) });
    const call = (id: number) => ({
      jsonrpc: "2.0",
      id,
      method: "tools/call",
      params: { name: "run_code", arguments: { code: "1" } },
    });
    const limited = await post(h, [call(1), call(2), call(3)]);
    expect([limited.status, ((await limited.json()) as { error: { code: string } }).error.code]).toEqual([
      429,
      "rate_limited",
    ]);
  });

  it("run_code shares /run's admission: past the tenant's share and a full line the call is an error result saying so", async () => {
    const h = await host({ admission: { maxWaiting: 0 } });
    const alpha = await connect(h, "alpha");
    // A 32 MiB cap takes 36 MiB of linear memory, a tenant's whole share of the 72 MiB budget.
    const cap = 32 * 1024 * 1024;
    const holding = run(alpha, `import { hold } from "gate"; await hold({}); export default 1;`, {
      memoryLimitBytes: cap,
    });
    while (held.length === 0) await new Promise((resolve) => setTimeout(resolve, 5));
    const refused = await run(alpha, "export default 2", { memoryLimitBytes: 1024 * 1024 });
    (held.shift() as () => void)();
    expect(resultOf(await holding)).toBe(1);
    expect(refused.isError).toBe(true);
    expect((refused.content[0] as { text: string }).text).toBe(
      `run_code: Runs in flight here hold ${linearMemoryBytes(cap)} of ${RUN_MEMORY_CAP_BYTES} bytes of linear memory, and this one needs ${linearMemoryBytes(1024 * 1024)}: 0 runs wait already; retry shortly`,
    );
    expect(resultOf(await run(alpha, "export default 3", { memoryLimitBytes: cap }))).toBe(3);
  });

  it("a call is answered as an event stream: its console output as logging notifications as it runs, then the result", async () => {
    const h = await host();
    const alpha = await connect(h, "alpha");
    const heard: unknown[] = [];
    alpha.setNotificationHandler(LoggingMessageNotificationSchema, ({ params }) => {
      heard.push([params.level, (params.data as { args: unknown }).args, held.length]);
    });
    const answer = run(
      alpha,
      `import { hold } from "gate";\nconsole.warn("held");\nawait hold({});\nexport default 1;`,
    );
    while (held.length === 0) await new Promise((resolve) => setTimeout(resolve, 5));
    while (heard.length === 0) await new Promise((resolve) => setTimeout(resolve, 5));
    (held.shift() as () => void)();
    expect([heard, resultOf(await answer)]).toEqual([[["warning", ["held"], 1]], 1]);
    const listed = await post(h, listTools);
    expect(listed.headers.get("content-type")).toBe("application/json");
  });

  it("a client that leaves a call's stream stops its run, whose room is free for the next at once", async () => {
    // One run at the default limit takes the whole budget; the next waits at most 300 ms for it.
    const h = await host({ admission: { memoryBudgetBytes: 36 * 1024 * 1024, tenantShare: 1, maxWaitMs: 300 } });
    const call = { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "run_code", arguments: {} } };
    const code = `import { hold } from "gate"; await hold({}); export default 1;`;
    const response = await post(h, { ...call, params: { ...call.params, arguments: { code } } });
    expect(response.headers.get("content-type")).toBe("text/event-stream");
    while (held.length === 0) await new Promise((resolve) => setTimeout(resolve, 5));
    await (response.body as ReadableStream<Uint8Array>).cancel();
    const next = await post(h, { ...call, params: { ...call.params, arguments: { code: "export default 2" } } });
    const [[, message]] = sseEvents(await next.text()) as [[string, { result: CallToolResult }]];
    expect([resultOf(message.result), held.splice(0).length]).toEqual([2, 1]);
  });

  it("a call's run keeps its room until the client has read its answer, as /run's does", async () => {
    // Before: the room went back when the run ended, so a client that read no answer kept answer after answer in the
    // host's memory. One run at the default limit takes the whole budget; the next waits up to 2 s for it.
    const h = await host({ admission: { memoryBudgetBytes: 36 * 1024 * 1024, tenantShare: 1, maxWaitMs: 2_000 } });
    const call = (code: string) => ({
      jsonrpc: "2.0",
      id: 1,
      method: "tools/call",
      params: { name: "run_code", arguments: { code } },
    });
    const answer = await post(h, call(`console.log("first");\nexport default "x".repeat(200_000);`));
    const reader = (answer.body as ReadableStream<Uint8Array>).getReader();
    const first = new TextDecoder().decode((await reader.read()).value);
    expect(sseEvents(first).map(([, message]) => (message as { method?: string }).method)).toEqual([
      "notifications/message",
    ]);
    const refused = sseEvents(await (await post(h, call("export default 2"))).text()) as [
      [string, { result: CallToolResult }],
    ];
    expect((refused[0][1].result.content[0] as { text: string }).text).toMatch(/^run_code: Runs in flight here hold/);
    let rest = "";
    for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read())
      rest += new TextDecoder().decode(chunk.value);
    const [[, message]] = sseEvents(rest) as [[string, { result: CallToolResult }]];
    expect(resultOf(message.result)).toBe("x".repeat(200_000));
    const [[, next]] = sseEvents(await (await post(h, call("export default 3"))).text()) as [
      [string, { result: CallToolResult }],
    ];
    expect(resultOf(next.result)).toBe(3);
  });

  it("a batch that repeats a request id is refused before any call runs: no call outlives its answer to wedge admission", async () => {
    const h = await host({ admission: { maxWaitMs: 300 } });
    const call = (code: string) => ({
      jsonrpc: "2.0",
      id: 7,
      method: "tools/call",
      params: { name: "run_code", arguments: { code, memoryLimitBytes: 32 * 1024 * 1024 } },
    });
    const hold = `import { hold } from "gate"; await hold({}); export default 1;`;
    const answer = await post(h, [call("export default 0"), call(hold), call(hold)]);
    expect([answer.status, await answer.json()]).toEqual([
      400,
      { error: { code: "invalid_request", message: "The batch repeats the request id 7" } },
    ]);
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(held.length).toBe(0);
    // Every tenant's runs are admitted as before.
    const beta = await connect(h, "beta");
    expect(resultOf(await run(beta, "export default 2"))).toBe(2);
    expect(resultOf(await run(await connect(h, "alpha"), "export default 3"))).toBe(3);
  });
});

describe("one bound on code at every front door", () => {
  it("POST /run (source and modules together), POST /processes and run_code refuse MAX_CODE_BYTES + 1 bytes of UTF-8 alike", async () => {
    const h = await host();
    const client = await connect(h, "alpha");
    // 2-byte characters: within 100,000 characters (run_code's former bound), over the bytes.
    const code = (bytes: number) => `export default 1;//${"é".repeat((bytes - 19) / 2)}`;
    const fits = code(MAX_CODE_BYTES - 1);
    const over = code(MAX_CODE_BYTES + 1);
    const message = `is larger than ${MAX_CODE_BYTES} bytes`;
    const request = (path: string, body: unknown) =>
      h.app.fetch(
        new Request(`http://host${path}`, {
          method: "POST",
          headers: { "content-type": "application/json", authorization: `Bearer ${KEYS.alpha}` },
          body: JSON.stringify(body),
        }),
      );
    const refusal = async (response: Response) => [
      response.status,
      ((await response.json()) as { error: { message: string } }).error.message,
    ];
    const half = code(MAX_CODE_BYTES / 2 + 1);
    expect(await refusal(await request("/run", { source: half, options: { modules: { "./a.js": half } } }))).toEqual([
      413,
      `The code (its source and modules together) ${message}`,
    ]);
    expect(await refusal(await request("/processes", { code: over }))).toEqual([
      413,
      `The code (its source and modules together) ${message}`,
    ]);
    const answer = await run(client, over);
    expect([answer.isError, answer.content]).toEqual([
      true,
      [{ type: "text", text: `run_code: The code (its source and modules together) ${message}` }],
    ]);

    expect((await request("/run", { source: fits })).status).toBe(200);
    expect(resultOf(await run(client, fits))).toBe(1);
  });
});

describe("POST /mcp with upstream MCP servers over Streamable HTTP (code mode on every host)", () => {
  const TOKEN = "calc-token-0123456789";

  it("run_code imports the upstream's tools; the request carries the configured headers; a dead server is left out", async () => {
    const calc = await serveCalcOverHttp(0, TOKEN);
    try {
      const h = await createHost({
        app: {
          run: { runCode, defaultMemoryLimitBytes: 32 * 1024 * 1024 },
          mcpServers: {
            calc: { url: calc.url, headers: { authorization: `Bearer ${TOKEN}` } },
            // Nothing listens on port 9: refused at once, the request goes on without it.
            down: { url: "http://127.0.0.1:9/mcp" },
          },
        },
      });
      const client = await connect(h, "alpha");
      const { tools } = await client.listTools();
      expect(tools[0]?.description).toContain('declare module "calc" {\n  /** Adds two numbers. */');
      expect(tools[0]?.description).not.toContain('declare module "down"');
      const answer = await run(
        client,
        `import { add, refuse } from "calc";
         const { sum } = await add({ a: 40, b: 2 });
         let failure = "";
         try { await refuse({}); } catch (error) { failure = (error as Error).message; }
         export default { sum, failure };`,
      );
      expect(resultOf(answer)).toEqual({ sum: 42, failure: "calc.refuse failed: refused: the answer is no" });
      const down = await run(client, `import { x } from "down"; export default x;`);
      expect((fromWire(down.structuredContent as JsonValue) as { status: string }).status).toBe("link_error");
      // Connecting and listing happen only for requests that list or call tools: initialize reached nobody.
      const before = calc.requests();
      await connect(h, "beta");
      expect(calc.requests()).toBe(before);
    } finally {
      await calc.close();
    }
  });

  it("a request that reaches the upstream servers counts against the tenant's rate, listing included", async () => {
    const calc = await serveCalcOverHttp(0, TOKEN);
    try {
      const h = await createHost({
        app: {
          quotas: new MemoryQuotas(1, () => 0),
          run: { runCode, defaultMemoryLimitBytes: 32 * 1024 * 1024 },
          mcpServers: { calc: { url: calc.url, headers: { authorization: `Bearer ${TOKEN}` } } },
        },
      });
      const list = { jsonrpc: "2.0", id: 1, method: "tools/list" };
      expect((await post(h, list)).status).toBe(200);
      const before = calc.requests();
      const limited = await post(h, list);
      expect([limited.status, ((await limited.json()) as { error: { code: string } }).error.code]).toEqual([
        429,
        "rate_limited",
      ]);
      expect(calc.requests()).toBe(before);
    } finally {
      await calc.close();
    }
  });

  it("an upstream that refuses the host's credentials is left out with the others still served", async () => {
    const calc = await serveCalcOverHttp(0, TOKEN);
    try {
      const h = await createHost({
        app: {
          run: { runCode, defaultMemoryLimitBytes: 32 * 1024 * 1024 },
          mcpServers: { calc: { url: calc.url, headers: { authorization: "Bearer wrong-token-0123456789" } } },
        },
      });
      const answer = await run(await connect(h, "alpha"), `import { add } from "calc"; export default 1;`);
      expect((fromWire(answer.structuredContent as JsonValue) as { status: string }).status).toBe("link_error");
      expect(resultOf(await run(await connect(h, "alpha"), "export default 7"))).toBe(7);
    } finally {
      await calc.close();
    }
  });
});

describe("upstream configuration (mcpServers as MCP clients write it)", () => {
  it("reads commands and URLs, and names exactly what is wrong", () => {
    expect(
      upstreamsFrom(
        {
          mcpServers: {
            github: { command: "npx", args: ["-y", "server"], env: { T: "1" } },
            docs: { url: "https://docs.example/mcp", headers: { authorization: "Bearer t" } },
          },
        },
        "servers.json",
      ),
    ).toEqual({
      github: { command: "npx", args: ["-y", "server"], env: { T: "1" } },
      docs: { url: "https://docs.example/mcp", headers: { authorization: "Bearer t" } },
    });
    expect(upstreamsFrom({}, "x")).toEqual({});
    const refusals: [unknown, string][] = [
      [[], 'S: must be a JSON object with "mcpServers"'],
      [{ mcpServers: [] }, 'S: "mcpServers" must be an object of named servers'],
      [{ mcpServers: { "a b": { url: "https://x" } } }, "S: server 'a b' needs a name that is a module name"],
      [{ mcpServers: { a: "https://x" } }, "S: server 'a' must be an object"],
      [{ mcpServers: { a: {} } }, `S: server 'a' needs a "command" (stdio) or a "url" (Streamable HTTP)`],
      [{ mcpServers: { a: { url: "not a url" } } }, `S: server 'a' has a "url" that is not a URL`],
      [{ mcpServers: { a: { url: "file:///etc/passwd" } } }, `S: server 'a' needs an http or https "url"`],
      [
        { mcpServers: { a: { url: "https://x", headers: { h: 1 } } } },
        `S: server 'a' needs "headers" of string values`,
      ],
      [{ mcpServers: { a: { command: "x", args: "y" } } }, `S: server 'a' needs "args" of strings`],
    ];
    for (const [config, message] of refusals) expect(() => upstreamsFrom(config, "S")).toThrow(message);
    expect(() => httpUpstreamsFrom({ mcpServers: { gh: { command: "npx" } } }, "RUNCODE_MCP_SERVERS")).toThrow(
      `RUNCODE_MCP_SERVERS: server 'gh' is a command; this host reaches upstream servers by "url" only`,
    );
  });
});
