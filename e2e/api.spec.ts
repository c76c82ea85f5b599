import { type ChildProcess, spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import SwaggerParser from "@apidevtools/swagger-parser";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { type APIRequestContext, expect, test } from "@playwright/test";
import type { JsonValue } from "../src/values/json.js";
import { fromWire } from "../src/values/wire.js";
import { serveCalcOverHttp } from "../test/host/mcp/fixtures/calc-server.mjs";
import { bearer, CALC_PORT, CALC_TOKEN, KEYS } from "./helpers.js";

test.use({ extraHTTPHeaders: bearer("alpha") });

/** Polls a process until it is idle with an exit state. */
async function settled(request: APIRequestContext, pid: number, base = ""): Promise<Record<string, unknown>> {
  for (let i = 0; i < 400; i++) {
    const record = (await (await request.get(`${base}/processes/${pid}`)).json()) as Record<string, unknown>;
    if (record.state === "idle" && record.exitState !== null) return record;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error(`process ${pid} did not finish`);
}

async function create(request: APIRequestContext, code: string, extra: Record<string, unknown> = {}, base = "") {
  const response = await request.post(`${base}/processes`, { data: { code, ...extra } });
  expect(response.status()).toBe(201);
  return ((await response.json()) as { pid: number }).pid;
}

test.describe("the process API on wrangler dev", () => {
  test("submits a process, streams its events while it runs, and keeps the record", async ({ request, baseURL }) => {
    const pid = await create(
      request,
      "for (let i = 0; i < 3; i++) {\n  console.log('tick', i);\n  for (let j = 0; j < 50; j++) await cyrnel.services.kv.tools.list.invoke({});\n}\ncyrnel.output({ done: true });",
    );
    const events = await (await fetch(`${baseURL}/processes/${pid}/events`, { headers: bearer("alpha") })).text();
    const names = [...events.matchAll(/^event: (.+)$/gm)].map((m) => m[1]);
    expect(names[0]).toBe("snapshot");
    expect(names.at(-1)).toBe("exit");
    const record = await settled(request, pid);
    expect(record).toMatchObject({ exitState: "success", stdout: "tick 0\ntick 1\ntick 2\n", output: { done: true } });
  });

  test("kills a running process and times out a tight loop", async ({ request }) => {
    const looping = await create(
      request,
      "for (;;) await cyrnel.services.kv.tools.get.invoke({ key: 'x' }).catch(() => null);",
    );
    const spinning = await create(request, "while (true) {}", { timeoutMs: 400 });
    const kill = await request.post(`/processes/${looping}/signals/kill`);
    expect(kill.status()).toBe(202);
    expect((await settled(request, looping)).exitState).toBe("canceled");
    const timedOut = await settled(request, spinning);
    expect(timedOut.exitState).toBe("timeout");
    expect(timedOut.error).toContain("timeoutMs");
  });

  test("answers bad requests with their documented errors", async ({ request }) => {
    const malformed = await request.post("/processes", {
      data: Buffer.from("{nope"),
      headers: { "content-type": "application/json" },
    });
    expect(malformed.status()).toBe(400);
    expect(((await malformed.json()) as { error: { code: string } }).error.code).toBe("invalid_json");
    expect((await request.post("/processes", { data: { code: 1 } })).status()).toBe(400);
    expect((await request.post("/processes", { data: { code: "x".repeat(100 * 1024 + 1) } })).status()).toBe(413);
    expect((await request.get("/processes/424242")).status()).toBe(404);
    expect((await request.get("/processes/not-a-pid")).status()).toBe(400);
    // The kv quota refuses calls past 1,000 a run; the loop goes on awaiting until the timeout.
    const looping = "for (;;) await cyrnel.services.kv.tools.get.invoke({ key: 'x' }).catch(() => null);";
    const active = await create(request, looping, {
      timeoutMs: 2000,
    });
    const refused = await request.delete(`/processes/${active}`);
    expect(refused.status()).toBe(409);
    expect((await settled(request, active)).exitState).toBe("timeout");
  });
});

test.describe("POST /run on wrangler dev", () => {
  const run = async (request: APIRequestContext, source: string, options?: Record<string, unknown>) => {
    const response = await request.post("/run", { data: options === undefined ? { source } : { source, options } });
    expect(response.status()).toBe(200);
    return fromWire((await response.json()) as JsonValue) as {
      status: string;
      result?: unknown;
      error?: { name: string; message: string; line?: number };
    };
  };

  test("gives every status", async ({ request }) => {
    expect(await run(request, "export default [1n, new Set([2])]")).toMatchObject({
      status: "success",
      result: [1n, new Set([2])],
    });
    expect(await run(request, "const a: any = null;\na.b;")).toMatchObject({
      status: "error",
      error: { name: "TypeError", line: 2 },
    });
    expect((await run(request, "import x from 'https://example.com/x.js'; x")).status).toBe("link_error");
    expect(
      (await run(request, "const a = []; for (;;) a.push(new Uint8Array(1e6));", { memoryLimitBytes: 16 << 20 }))
        .status,
    ).toBe("memory");
  });

  test("survives a user's sequence that ends in a /run stopped by the CPU cap, then serves the playground and runs", async ({
    request,
  }) => {
    test.setTimeout(60_000);
    // The runtime shares one thread with the connections between wrangler's processes: a run that held it for
    // seconds made the next request fail ("Network connection lost"), and for `GET /` wrangler exited.
    const pids: number[] = [];
    for (let i = 0; i < 12; i++) {
      pids.push(
        await create(request, i === 5 ? "while (true) {}" : `console.log(${i})`, i === 5 ? { timeoutMs: 300 } : {}),
      );
    }
    expect([202, 409]).toContain((await request.post(`/processes/${pids[5]}/signals/kill`)).status());
    for (let i = 0; i < 3; i++) expect((await run(request, `export default ${i}`)).result).toBe(i);
    // Date.now() calls make polls rare: the cap's CPU time, not its poll count, stops this loop.
    expect((await run(request, "while (true) Date.now();")).error?.message).toMatch(
      /^Execution stopped by the host's CPU cap per run \(RUN_CPU_MS = \d+ ms\)$/,
    );
    expect((await request.get("/")).status()).toBe(200);
    expect((await run(request, "export default 'still serving'")).result).toBe("still serving");
    // A process spinning under its default 30 s timeoutMs holds the same thread, as long as RUN_CPU_MS lets it.
    pids.push(await create(request, "while (true) {}"));
    expect((await request.get("/")).status()).toBe(200);
    expect((await settled(request, pids[12] as number)).error).toBe(
      "Timeout: the process was stopped by the host's CPU cap per run (RUN_CPU_MS = 2000 ms) before its timeoutMs (30000 ms)",
    );
    expect((await run(request, "export default 'still serving'")).result).toBe("still serving");
    for (const pid of pids) expect((await settled(request, pid)).state).toBe("idle");
  });

  test("refuses bad input", async ({ request }) => {
    const wrongType = await request.post("/run", { data: "source", headers: { "content-type": "text/plain" } });
    expect(wrongType.status()).toBe(415);
    const unknown = await request.post("/run", { data: { source: "1", options: { imports: {} } } });
    expect(unknown.status()).toBe(400);
    expect(((await unknown.json()) as { error: { message: string } }).error.message).toContain("imports");
  });
});

test.describe("a restart of the edge host", () => {
  const PORT = 8797;
  const base = `http://127.0.0.1:${PORT}`;
  let server: ChildProcess | undefined;

  /** Starts a host with no keys: anonymous callers are served only when `anonymous` says so. */
  const start = async (anonymous = true) => {
    const args = [
      "wrangler",
      "dev",
      "--ip",
      "127.0.0.1",
      "--port",
      String(PORT),
      "--persist-to",
      ".wrangler/e2e-restart",
      "--var",
      `RUNCODE_ORIGINS:${base}`,
    ];
    if (anonymous) args.push("--var", "RUNCODE_ALLOW_ANONYMOUS:true");
    server = spawn("npx", args, {
      cwd: fileURLToPath(new URL("..", import.meta.url)),
      detached: true,
      stdio: "ignore",
      env: { ...process.env, CLOUDFLARE_CF_FETCH_ENABLED: "false", WRANGLER_SEND_METRICS: "false" },
    });
    for (let i = 0; i < 200; i++) {
      if (
        await fetch(`${base}/openapi.json`).then(
          (r) => r.ok,
          () => false,
        )
      )
        return;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    throw new Error("wrangler dev did not start");
  };
  // wrangler's workerd children outlive the npx parent: end the whole process group.
  const stop = () => {
    if (server?.pid !== undefined) process.kill(-server.pid, "SIGTERM");
    server = undefined;
  };
  test.afterAll(stop);

  test("without keys, serves anonymous callers only when RUNCODE_ALLOW_ANONYMOUS is true", async () => {
    test.setTimeout(90_000);
    await start(false);
    const closed = await fetch(`${base}/processes`);
    expect([closed.status, closed.headers.get("www-authenticate"), await closed.json()]).toEqual([
      401,
      'Bearer realm="runcode"',
      {
        error: {
          code: "unauthenticated",
          message:
            "This API has no keys configured and anonymous access is off: set RUNCODE_API_KEYS (tenant:key entries) or RUNCODE_ALLOW_ANONYMOUS=true",
        },
      },
    ]);
    // The playground's files need no key.
    expect((await fetch(`${base}/`)).status).toBe(200);
    stop();
    await new Promise((resolve) => setTimeout(resolve, 1000));
    await start(true);
    expect((await fetch(`${base}/processes`)).status).toBe(200);
    stop();
    await new Promise((resolve) => setTimeout(resolve, 1000));
  });

  test("loses no record, and pids go on where they were", async ({ request }) => {
    test.setTimeout(90_000);
    await start();
    const pid = await create(request, "console.log('persisted'); cyrnel.output({ n: 1 })", { ref: "restart" }, base);
    const before = await settled(request, pid, base);
    stop();
    await new Promise((resolve) => setTimeout(resolve, 1000));
    await start();
    expect(await (await request.get(`${base}/processes/${pid}`)).json()).toEqual(before);
    const listed = (await (await request.get(`${base}/processes?ref=restart`)).json()) as {
      processes: { pid: number }[];
    };
    expect(listed.processes.map((p) => p.pid)).toContain(pid);
    expect(await create(request, "1", {}, base)).toBeGreaterThan(pid);
  });
});

test.describe("the edge host on the internet: keys, tenants, CORS, admission", () => {
  test("401 without a key and with a wrong one, on every kind of route; the playground needs none", async ({
    baseURL,
  }) => {
    for (const headers of [{}, { authorization: `Bearer ${KEYS.alpha}-wrong` }]) {
      for (const [method, path] of [
        ["GET", "/processes"],
        ["POST", "/processes"],
        ["POST", "/run"],
        ["GET", "/processes/1/events"],
        ["GET", "/tools"],
      ] as const) {
        const response = await fetch(`${baseURL}${path}`, {
          method,
          headers: { ...headers, "content-type": "application/json" },
          ...(method === "POST" ? { body: JSON.stringify({ code: "1", source: "1" }) } : {}),
        });
        const body = (await response.json()) as { error: { code: string } };
        expect([method, path, response.status, body.error.code, response.headers.get("www-authenticate")]).toEqual([
          method,
          path,
          401,
          "unauthenticated",
          'Bearer realm="runcode"',
        ]);
      }
    }
    const page = await fetch(`${baseURL}/`);
    expect([page.status, page.headers.get("content-type")]).toEqual([200, "text/html; charset=utf-8"]);
  });

  test("tenant beta cannot see, read, stream, kill, re-run or delete alpha's process, nor read alpha's kv", async ({
    request,
    baseURL,
  }) => {
    const key = `secret-${Date.now()}`;
    const pid = await create(
      request,
      `await cyrnel.services.kv.tools.set.invoke({ key: ${JSON.stringify(key)}, value: "alpha's" }); console.log("mine");`,
      { ref: "tenancy" },
    );
    const before = await settled(request, pid);
    const asBeta = (path: string, method = "GET") => fetch(`${baseURL}${path}`, { method, headers: bearer("beta") });
    for (const [path, method] of [
      [`/processes/${pid}`, "GET"],
      [`/processes/${pid}/stdout`, "GET"],
      [`/processes/${pid}/code`, "GET"],
      [`/processes/${pid}/output`, "GET"],
      [`/processes/${pid}/events`, "GET"],
      [`/processes/${pid}/signals/kill`, "POST"],
      [`/processes/${pid}/signals/run`, "POST"],
      [`/processes/${pid}`, "DELETE"],
    ] as const) {
      const response = await asBeta(path, method);
      expect([method, path, response.status, await response.json()]).toEqual([
        method,
        path,
        404,
        { error: { code: "not_found", message: `No process ${pid}` } },
      ]);
    }
    const listed = (await (await asBeta("/processes?ref=tenancy")).json()) as { processes: unknown[] };
    expect(listed.processes).toEqual([]);
    const betaRead = await fetch(`${baseURL}/run`, {
      method: "POST",
      headers: { ...bearer("beta"), "content-type": "application/json" },
      body: JSON.stringify({
        source: `import { get } from "kv"; export default await get({ key: ${JSON.stringify(key)} });`,
      }),
    });
    expect((fromWire((await betaRead.json()) as JsonValue) as { result: unknown }).result).toEqual({
      found: false,
      value: null,
    });
    expect(await (await request.get(`/processes/${pid}`)).json()).toEqual(before);
    const alphaRead = await request.post("/run", {
      data: { source: `import { get } from "kv"; export default await get({ key: ${JSON.stringify(key)} });` },
    });
    expect((fromWire((await alphaRead.json()) as JsonValue) as { result: unknown }).result).toEqual({
      found: true,
      value: "alpha's",
    });
  });

  test("a foreign origin gets no CORS grant, on a preflight or on a request", async ({ baseURL }) => {
    const preflight = await fetch(`${baseURL}/run`, {
      method: "OPTIONS",
      headers: {
        origin: "https://attacker.example",
        "access-control-request-method": "POST",
        "access-control-request-headers": "authorization, content-type",
      },
    });
    expect(preflight.headers.get("access-control-allow-origin")).toBeNull();
    const get = await fetch(`${baseURL}/processes`, {
      headers: { ...bearer("alpha"), origin: "https://attacker.example" },
    });
    expect([get.status, get.headers.get("access-control-allow-origin")]).toEqual([200, null]);
  });

  test("/run admission: past the isolate's budget runs wait their turn, past a tenant's part of the line 503 with Retry-After, never a failed isolate", async ({
    baseURL,
  }) => {
    test.setTimeout(60_000);
    const post = (tenant: "alpha" | "beta", source: string, memoryLimitBytes: number) =>
      fetch(`${baseURL}/run`, {
        method: "POST",
        headers: { ...bearer(tenant), "content-type": "application/json" },
        body: JSON.stringify({ source, options: { memoryLimitBytes } }),
      });
    // 200 awaited kv calls 5 ms apart keep a 32 MiB run (36 MiB of linear memory, a tenant's whole share) in flight
    // for over a second on 1 s of guest CPU (RUN_CPU_MS is 2 s); the awaits let other requests in: one of each
    // tenant's fills the 72 MiB budget.
    const hold = (tenant: "alpha" | "beta") =>
      post(
        tenant,
        `import { list } from "kv";
         for (let i = 0; i < 200; i++) { await list({ limit: 1 }); const t = Date.now() + 5; while (Date.now() < t); }
         export default 1;`,
        32 << 20,
      );
    const holding = [hold("alpha"), hold("beta")];
    await new Promise((resolve) => setTimeout(resolve, 300));
    // 33 more of one tenant at once: 32 wait in line (its half of 64) and run in turn; one is refused at once.
    const answers = await Promise.all(
      Array.from({ length: 33 }, async (_, i) => {
        const response = await post("beta", `export default ${i}`, 1 << 20);
        return {
          i,
          status: response.status,
          retryAfter: response.headers.get("retry-after"),
          body: await response.json(),
        };
      }),
    );
    const refused = answers.filter((a) => a.status !== 200);
    expect(refused.map((a) => [a.status, a.retryAfter, (a.body as { error: { code: string } }).error.code])).toEqual([
      [503, "1", "overloaded"],
    ]);
    for (const a of answers.filter((x) => x.status === 200)) {
      expect((fromWire(a.body as JsonValue) as { result: unknown }).result).toBe(a.i);
    }
    for (const held of holding) {
      expect((fromWire((await (await held).json()) as JsonValue) as { status: string }).status).toBe("success");
    }
    const after = await post("beta", "export default 3", 32 << 20);
    expect((fromWire((await after.json()) as JsonValue) as { result: unknown }).result).toBe(3);
  });

  test("/openapi.json is a valid OpenAPI 3.1 document that lists /run, its errors and the bearer scheme", async ({
    request,
  }) => {
    const document = (await (await request.get("/openapi.json")).json()) as {
      paths: Record<string, Record<string, { responses: Record<string, unknown> }>>;
      components: { securitySchemes: Record<string, unknown> };
    };
    await SwaggerParser.validate(structuredClone(document) as never);
    expect(Object.keys(document.paths["/run"]?.post?.responses ?? {}).sort()).toEqual([
      "200",
      "400",
      "401",
      "403",
      "413",
      "415",
      "421",
      "429",
      "500",
      "503",
    ]);
    expect(document.components.securitySchemes.bearer).toEqual({
      type: "http",
      scheme: "bearer",
      description: "An API key of RUNCODE_API_KEYS (none when the host serves anonymous callers).",
    });
  });
});

test.describe("MCP over Streamable HTTP on wrangler dev (the official SDK's client)", () => {
  const clients: Client[] = [];
  test.afterEach(async () => {
    for (const client of clients.splice(0)) await client.close();
  });
  const connect = async (baseURL: string, tenant: keyof typeof KEYS) => {
    const client = new Client({ name: "e2e", version: "1.0.0" });
    await client.connect(
      new StreamableHTTPClientTransport(new URL("/mcp", baseURL), { requestInit: { headers: bearer(tenant) } }),
    );
    clients.push(client);
    return client;
  };
  const call = async (client: Client, args: Record<string, unknown>) =>
    (await client.callTool({ name: "run_code", arguments: args })) as CallToolResult;
  const decoded = (answer: CallToolResult) =>
    fromWire(answer.structuredContent as JsonValue) as {
      status: string;
      result?: unknown;
      error?: { name: string; message: string; line?: number; column?: number };
    };

  test("lists run_code and gives every status, positions and lossless values", async ({ baseURL }) => {
    const client = await connect(baseURL as string, "alpha");
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toEqual(["run_code"]);
    expect(tools[0]?.description).toContain('declare module "kv"');
    const ok = await call(client, { code: "export default new Map<string, bigint>([['n', 2n ** 64n]]);" });
    expect([ok.isError, decoded(ok)]).toEqual([
      false,
      expect.objectContaining({ status: "success", result: new Map([["n", 2n ** 64n]]) }),
    ]);
    const thrown = decoded(await call(client, { code: "const a: number = 1;\nthrow new RangeError('no ' + a);" }));
    expect([thrown.status, thrown.error?.name, thrown.error?.message, thrown.error?.line]).toEqual([
      "error",
      "RangeError",
      "no 1",
      2,
    ]);
    expect(decoded(await call(client, { code: "import x from 'nowhere'; export default x;" })).status).toBe(
      "link_error",
    );
    const memory = await call(client, {
      code: "const a = []; for (;;) a.push(new Uint8Array(1e6));",
      memoryLimitBytes: 16 << 20,
    });
    expect([memory.isError, decoded(memory).status]).toEqual([true, "memory"]);
    // Host calls 2 ms apart: the budget's timer fires between them, long before the run's 1,000 kv calls are spent.
    const stopped = await call(client, {
      code: "import { list } from 'kv'; for (;;) { await list({ limit: 1 }); const t = Date.now() + 2; while (Date.now() < t); }",
      timeoutMs: 500,
    });
    expect([stopped.isError, decoded(stopped).status]).toEqual([true, "terminated"]);
    // The time limit's timer, or the CPU cap it lowers the safety cap to when the guest's busy waits use up 500 ms of
    // CPU first (on a loaded machine either may come first).
    expect(["The run's time limit of 500 ms ran out", "Execution stopped by its timeoutMs (500 ms)"]).toContain(
      decoded(stopped).error?.message,
    );
  });

  test("code mode: one program calls the upstream server's tools (RUNCODE_MCP_SERVERS) and returns one answer", async ({
    baseURL,
  }) => {
    const calc = await serveCalcOverHttp(CALC_PORT, CALC_TOKEN);
    try {
      const client = await connect(baseURL as string, "alpha");
      const { tools } = await client.listTools();
      expect(tools[0]?.description).toContain('declare module "calc" {\n  /** Adds two numbers. */');
      const answer = await call(client, {
        code: `import { add, text_shout, refuse } from "calc";
          const { sum } = await add({ a: 40, b: 2 });
          const word = await text_shout({ word: "edge" });
          let failure = "";
          try { await refuse({}); } catch (error) { failure = (error as Error).message; }
          export default { sum, word, failure };`,
      });
      expect(decoded(answer).result).toEqual({
        sum: 42,
        word: "EDGE",
        failure: "calc.refuse failed: refused: the answer is no",
      });
    } finally {
      await calc.close();
    }
  });

  test("kv belongs to the caller's tenant; a request without a key is refused", async ({ baseURL }) => {
    const key = `mcp-${Date.now()}`;
    const alpha = await connect(baseURL as string, "alpha");
    const beta = await connect(baseURL as string, "beta");
    await call(alpha, { code: `import { set } from "kv"; await set({ key: "${key}", value: [1, 2] });` });
    const read = `import { get } from "kv"; export default await get({ key: "${key}" });`;
    expect(decoded(await call(beta, { code: read })).result).toEqual({ found: false, value: null });
    expect(decoded(await call(alpha, { code: read })).result).toEqual({ found: true, value: [1, 2] });
    const nobody = new Client({ name: "e2e", version: "1.0.0" });
    await expect(nobody.connect(new StreamableHTTPClientTransport(new URL("/mcp", baseURL)))).rejects.toThrow(
      '{"error":{"code":"unauthenticated","message":"Send an API key as Authorization: Bearer <key>"}}',
    );
  });
});
