/**
 * The HTTP app on the open internet: API keys, tenants, rates per tenant, the CORS list, 405s, `/run` admission and
 * the generated OpenAPI document, in Node (test/workers/tenants.test.ts proves the same inside workerd).
 */
import { describe, expect, test, vi } from "vitest";
import { createSandbox } from "../../../node/index.js";
import { instantiate } from "../../../src/environment/index.js";
import { MemoryQuotas, takeToken } from "../../../src/host/admission/quotas.js";
import { type AdmissionCaps, RUN_MEMORY_CAP_BYTES } from "../../../src/host/admission/run-admission.js";
import { type Access, accessFrom, tenantOf } from "../../../src/host/http/auth.js";
import { createHost } from "../../../src/host/index.js";
import type { JsonValue } from "../../../src/values/json.js";
import { fromWire } from "../../../src/values/wire.js";
import { STATUSES } from "../../conformance/helpers.js";
import { inThread, wasm } from "../../environment/helpers.js";
import { gateService } from "../gate.js";

const KEYS = { alpha: "alpha-key-0123456789abcdef", beta: "beta-key-0123456789abcdef" };
const SETTINGS = `alpha:${KEYS.alpha}, beta:${KEYS.beta}`;

type Host = Awaited<ReturnType<typeof createHost>>;

async function host(access: Access, extra: Parameters<typeof createHost>[0] = {}): Promise<Host> {
  const { runCode } = createSandbox({ threads: false, wasm: await wasm() });
  return createHost({
    environment: { module: instantiate({ wasm: await wasm(), createSandbox: inThread, concurrency: 2 }) },
    ...extra,
    app: {
      access,
      run: { runCode, defaultMemoryLimitBytes: 32 * 1024 * 1024 },
      ...extra.app,
    },
  });
}

/** A keyed host whose `/run` admits 32 MiB runs under `admission`, with a `gate` service that holds runs. */
async function gatedHost(admission: Partial<AdmissionCaps>) {
  const { gate, held } = gateService();
  const h = await host(await accessFrom({ apiKeys: SETTINGS }), {
    services: [gate],
    app: {
      run: {
        runCode: createSandbox({ threads: false, wasm: await wasm() }).runCode,
        defaultMemoryLimitBytes: 32 * 1024 * 1024,
        admission,
      },
    },
  });
  return { h, held };
}

/** A request as `tenant` (its key as a bearer token), or with `authorization` exactly as given for a string. */
function as(h: Host, who: keyof typeof KEYS | { authorization: string } | null) {
  return async (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) => {
    const init: RequestInit & { headers: Record<string, string> } = { method, headers: { ...headers } };
    if (who !== null) {
      init.headers.authorization = typeof who === "string" ? `Bearer ${KEYS[who]}` : who.authorization;
    }
    if (body !== undefined) {
      init.body = JSON.stringify(body);
      init.headers["content-type"] = "application/json";
    }
    const response = await h.app.fetch(new Request(`http://host${path}`, init));
    const type = response.headers.get("content-type") ?? "";
    const payload: unknown = type.includes("json") ? await response.json() : await response.text();
    return { status: response.status, headers: response.headers, body: payload };
  };
}

async function settled(h: Host, pid: number) {
  await h.service.wait(pid);
  return h.service.get(pid);
}

describe("API keys", () => {
  test("settings: tenant:key entries; a bad entry is named without its key", async () => {
    const access = await accessFrom({ apiKeys: SETTINGS });
    expect([access.keys.map((k) => k.tenant), access.allowAnonymous]).toEqual([["alpha", "beta"], false]);
    await expect(accessFrom({ apiKeys: "alpha:short" })).rejects.toThrow(
      "RUNCODE_API_KEYS entry 1 (tenant alpha): the key must be 16 to 512 characters",
    );
    await expect(accessFrom({ apiKeys: `alpha:${KEYS.alpha},bad tenant:${KEYS.beta}` })).rejects.toThrow(
      "RUNCODE_API_KEYS entry 2 must be tenant:key with a tenant matching",
    );
    await expect(accessFrom({ apiKeys: `a:${KEYS.alpha},b:${KEYS.alpha}` })).rejects.toThrow(
      "RUNCODE_API_KEYS entry 2 (tenant b) repeats a key of an earlier entry",
    );
    expect((await accessFrom({ allowAnonymous: "true" })).allowAnonymous).toBe(true);
    expect((await accessFrom({ allowAnonymous: "yes" })).allowAnonymous).toBe(false);
  });

  test("every API route answers 401 without a key, with a wrong one and with a malformed header", async () => {
    const h = await host(await accessFrom({ apiKeys: SETTINGS }));
    const routes: [string, string, unknown?][] = [
      ["GET", "/processes"],
      ["POST", "/processes", { code: "1" }],
      ["GET", "/processes/1"],
      ["GET", "/processes/1/events"],
      ["POST", "/processes/1/signals/kill"],
      ["DELETE", "/processes/1"],
      ["POST", "/run", { source: "1" }],
      ["GET", "/tools"],
      ["GET", "/environment/docs"],
    ];
    const callers = [
      null,
      { authorization: `Bearer ${KEYS.alpha}x` },
      { authorization: `Basic ${KEYS.alpha}` },
      { authorization: "Bearer" },
      { authorization: `Bearer ${"k".repeat(10_000)}` },
    ];
    for (const caller of callers) {
      for (const [method, path, body] of routes) {
        const r = await as(h, caller)(method, path, body);
        expect([method, path, r.status, (r.body as { error: { code: string } }).error.code]).toEqual([
          method,
          path,
          401,
          "unauthenticated",
        ]);
        expect(r.headers.get("www-authenticate")).toBe('Bearer realm="runcode"');
      }
    }
    // Nothing was created by a refused request.
    expect(await h.service.list()).toEqual([]);
    expect((await as(h, "alpha")("GET", "/processes")).status).toBe(200);
    expect((await as(h, { authorization: `bearer   ${KEYS.beta}` })("GET", "/processes")).status).toBe(200);
  });

  test("no keys and anonymous access off: 401 naming RUNCODE_API_KEYS; on: everyone is `anonymous`", async () => {
    const closed = await host(await accessFrom({}));
    expect((await as(closed, null)("GET", "/processes")).body).toEqual({
      error: {
        code: "unauthenticated",
        message:
          "This API has no keys configured and anonymous access is off: set RUNCODE_API_KEYS (tenant:key entries) or RUNCODE_ALLOW_ANONYMOUS=true",
      },
    });
    const open = await host(await accessFrom({ allowAnonymous: "true" }));
    const created = await as(open, null)("POST", "/processes", { code: "export default 1" });
    expect(created.status).toBe(201);
    const pid = (created.body as { pid: number }).pid;
    expect((await settled(open, pid))?.tenant).toBe("anonymous");
  });

  test("keys resolve to their tenants, whichever of several matches", async () => {
    const access = await accessFrom({ apiKeys: SETTINGS });
    expect(await tenantOf(access, `Bearer ${KEYS.beta}`)).toBe("beta");
    expect(await tenantOf(access, `Bearer ${KEYS.alpha}`)).toBe("alpha");
    await expect(tenantOf(access, `Bearer ${KEYS.beta.slice(0, -1)}`)).rejects.toThrow("The API key is not valid");
  });

  test("a key that matched is hashed once; a wrong key after it is refused, and hashed every time", async () => {
    const access = await accessFrom({ apiKeys: SETTINGS });
    const digest = vi.spyOn(crypto.subtle, "digest");
    try {
      expect(await tenantOf(access, `Bearer ${KEYS.alpha}`)).toBe("alpha");
      expect(await tenantOf(access, `Bearer ${KEYS.alpha}`)).toBe("alpha");
      const wrong = [
        `${KEYS.alpha}x`,
        KEYS.alpha.slice(0, -1),
        `${KEYS.alpha.slice(0, -1)}X`,
        KEYS.alpha.toUpperCase(),
      ];
      for (const key of [...wrong, ...wrong]) {
        await expect(tenantOf(access, `Bearer ${key}`)).rejects.toThrow("The API key is not valid");
      }
      expect(await tenantOf(access, `Bearer ${KEYS.beta}`)).toBe("beta");
      expect(await tenantOf(access, `bearer  ${KEYS.alpha}`)).toBe("alpha");
      // alpha once, each wrong key each time, beta once: only keys that matched are kept.
      expect(digest).toHaveBeenCalledTimes(1 + 2 * wrong.length + 1);
    } finally {
      digest.mockRestore();
    }
  });

  test("a key taken out of the list or rotated stops working at once, though it matched before", async () => {
    const keys = [...(await accessFrom({ apiKeys: SETTINGS })).keys];
    const access: Access = { keys, allowAnonymous: false };
    expect(await tenantOf(access, `Bearer ${KEYS.alpha}`)).toBe("alpha");
    keys.splice(0, 1);
    await expect(tenantOf(access, `Bearer ${KEYS.alpha}`)).rejects.toThrow("The API key is not valid");
    expect(await tenantOf(access, `Bearer ${KEYS.beta}`)).toBe("beta");
    const rotated = "alpha-key-rotated-0123456789";
    const before = await accessFrom({ apiKeys: SETTINGS });
    expect(await tenantOf(before, `Bearer ${KEYS.alpha}`)).toBe("alpha");
    const after = await accessFrom({ apiKeys: `alpha:${rotated}, beta:${KEYS.beta}` });
    await expect(tenantOf(after, `Bearer ${KEYS.alpha}`)).rejects.toThrow("The API key is not valid");
    expect(await tenantOf(after, `Bearer ${rotated}`)).toBe("alpha");
    await expect(tenantOf(before, `Bearer ${rotated}`)).rejects.toThrow("The API key is not valid");
  });
});

describe("tenants", () => {
  test("another tenant's process answers exactly as an unknown pid, for every route, and stays as it was", async () => {
    const h = await host(await accessFrom({ apiKeys: SETTINGS }));
    const alpha = as(h, "alpha");
    const beta = as(h, "beta");
    const created = await alpha("POST", "/processes", { code: "console.log('mine'); cyrnel.output({ a: 1 });" });
    const pid = (created.body as { pid: number }).pid;
    await settled(h, pid);
    const before = await alpha("GET", `/processes/${pid}`);
    expect(before.status).toBe(200);
    expect(before.body).not.toHaveProperty("tenant");
    const unknown = 999_999;
    for (const [method, path] of [
      ["GET", ""],
      ["GET", "/code"],
      ["GET", "/stdout"],
      ["GET", "/stderr"],
      ["GET", "/output"],
      ["GET", "/events"],
      ["POST", "/signals/kill"],
      ["POST", "/signals/run"],
      ["DELETE", ""],
    ] as const) {
      const theirs = await beta(method, `/processes/${pid}${path}`);
      const none = await beta(method, `/processes/${unknown}${path}`);
      expect([method, path, theirs.status, theirs.body]).toEqual([
        method,
        path,
        404,
        { error: { code: "not_found", message: `No process ${pid}` } },
      ]);
      expect([none.status, none.body]).toEqual([
        404,
        { error: { code: "not_found", message: `No process ${unknown}` } },
      ]);
    }
    expect((await alpha("GET", `/processes/${pid}`)).body).toEqual(before.body);
    expect((await beta("GET", "/processes")).body).toEqual({ processes: [], next: null });
    expect(((await alpha("GET", "/processes")).body as { processes: { pid: number }[] }).processes).toHaveLength(1);
  });

  test("listing pages: `next` and `after` walk the caller's processes once each, never another's", async () => {
    const h = await host(await accessFrom({ apiKeys: SETTINGS }));
    const mine: number[] = [];
    for (let i = 0; i < 5; i++) {
      for (const tenant of ["alpha", "beta"] as const) {
        const r = await as(h, tenant)("POST", "/processes", { code: "export default 1" });
        if (tenant === "alpha") mine.push((r.body as { pid: number }).pid);
      }
    }
    await h.service.idle();
    const seen: number[] = [];
    let after: string | null = null;
    let pages = 0;
    do {
      const query: string = after === null ? "limit=2" : `limit=2&after=${after}`;
      const page = (await as(h, "alpha")("GET", `/processes?${query}`)).body as {
        processes: { pid: number }[];
        next: string | null;
      };
      seen.push(...page.processes.map((p) => p.pid));
      after = page.next;
      pages++;
    } while (after !== null);
    expect(seen).toEqual(mine);
    expect(pages).toBe(3);
    expect((await as(h, "alpha")("GET", "/processes?after=x")).status).toBe(400);
  });

  test("kv is a keyspace per tenant, from processes and from /run", async () => {
    const h = await host(await accessFrom({ apiKeys: SETTINGS }));
    const run = async (tenant: "alpha" | "beta", source: string) => {
      const r = await as(h, tenant)("POST", "/run", { source });
      expect(r.status).toBe(200);
      return fromWire(r.body as JsonValue) as { status: string; result: unknown };
    };
    await run("alpha", `import { set } from "kv"; await set({ key: "secret", value: "alpha's" });`);
    expect(
      (await run("beta", `import { get } from "kv"; export default await get({ key: "secret" });`)).result,
    ).toEqual({
      found: false,
      value: null,
    });
    const created = await as(h, "beta")("POST", "/processes", {
      code: `const r = await cyrnel.services.kv.tools.get.invoke({ key: "secret" }); cyrnel.output({ r });`,
    });
    const pid = (created.body as { pid: number }).pid;
    expect((await settled(h, pid))?.output).toEqual({ r: { found: false, value: null } });
    expect(
      (await run("alpha", `import { get } from "kv"; export default await get({ key: "secret" });`)).result,
    ).toEqual({ found: true, value: "alpha's" });
  });
});

describe("quotas", () => {
  test("the token bucket: a minute's allowance at once, then one token per 60/rate seconds", () => {
    let bucket = takeToken(undefined, 2, 0);
    expect(bucket).toEqual({ bucket: { tokens: 1, at: 0 }, retryAfterSeconds: null });
    bucket = takeToken(bucket.bucket, 2, 0);
    expect(bucket).toEqual({ bucket: { tokens: 0, at: 0 }, retryAfterSeconds: null });
    expect(takeToken(bucket.bucket, 2, 0).retryAfterSeconds).toBe(30);
    expect(takeToken(bucket.bucket, 2, 15_000).retryAfterSeconds).toBe(15);
    expect(takeToken(bucket.bucket, 2, 30_000)).toEqual({ bucket: { tokens: 0, at: 30_000 }, retryAfterSeconds: null });
  });

  test("runs per minute: 429 rate_limited with Retry-After for the tenant over it; others and stored records untouched", async () => {
    let now = 0;
    const h = await host(await accessFrom({ apiKeys: SETTINGS }), {
      app: { quotas: new MemoryQuotas(3, () => now) },
    });
    const alpha = as(h, "alpha");
    const first = await alpha("POST", "/processes", { code: "export default 1" });
    const pid = (first.body as { pid: number }).pid;
    await settled(h, pid);
    expect((await alpha("POST", "/run", { source: "1" })).status).toBe(200);
    expect((await alpha("POST", `/processes/${pid}/signals/run`)).status).toBe(202);
    await settled(h, pid);
    const stored = await h.service.get(pid);
    for (const [method, path, body] of [
      ["POST", "/processes", { code: "1" }],
      ["POST", "/run", { source: "1" }],
      ["POST", `/processes/${pid}/signals/run`, undefined],
    ] as const) {
      const refused = await alpha(method, path, body);
      expect([refused.status, refused.headers.get("retry-after"), refused.body]).toEqual([
        429,
        "20",
        {
          error: {
            code: "rate_limited",
            message: "This tenant may start 3 processes and /run calls per minute: retry in 20 s",
          },
        },
      ]);
    }
    expect(await h.service.get(pid)).toEqual(stored);
    expect(await h.service.list({ tenant: "alpha" })).toHaveLength(1);
    expect((await as(h, "beta")("POST", "/run", { source: "1" })).status).toBe(200);
    now = 20_000;
    expect((await alpha("POST", "/run", { source: "1" })).status).toBe(200);
  });

  test("active processes per tenant: 429 tenant_too_many_processes with Retry-After while another tenant starts", async () => {
    const waiting: (() => void)[] = [];
    const h = await host(await accessFrom({ apiKeys: SETTINGS }), {
      maxActivePerTenant: 1,
      services: [
        {
          id: "demo",
          description: "Blocks until released",
          tools: [
            {
              id: "wait",
              description: "Blocks",
              inputSchema: { type: "object" },
              run: () => new Promise((resolve) => waiting.push(() => resolve(1))),
            },
          ],
        },
      ],
    });
    const code = "await cyrnel.services.demo.tools.wait.invoke({});";
    expect((await as(h, "alpha")("POST", "/processes", { code })).status).toBe(201);
    const refused = await as(h, "alpha")("POST", "/processes", { code });
    expect([refused.status, refused.headers.get("retry-after"), refused.body]).toEqual([
      429,
      "1",
      {
        error: {
          code: "tenant_too_many_processes",
          message: "This tenant has 1 processes active already: wait for one to finish",
        },
      },
    ]);
    expect((await as(h, "beta")("POST", "/processes", { code })).status).toBe(201);
    while (waiting.length < 2) await new Promise((r) => setTimeout(r, 5));
    for (const release of waiting) release();
    await h.service.idle();
    // Pids ascend within a tenant; across tenants their order is their random tags'.
    expect((await h.service.list()).map((r) => [r.tenant, r.exitState]).sort()).toEqual([
      ["alpha", "success"],
      ["beta", "success"],
    ]);
  });
});

describe("the HTTP surface", () => {
  test("CORS only for listed origins: a foreign preflight and a foreign GET get no grant", async () => {
    const h = await host(await accessFrom({ apiKeys: SETTINGS }), {
      app: { corsOrigins: ["https://app.example"] },
    });
    const preflight = (origin: string) =>
      h.app.fetch(
        new Request("http://host/run", {
          method: "OPTIONS",
          headers: {
            origin,
            "access-control-request-method": "POST",
            "access-control-request-headers": "authorization, content-type",
          },
        }),
      );
    const foreign = await preflight("https://evil.example");
    expect([foreign.status, foreign.headers.get("access-control-allow-origin")]).toEqual([204, null]);
    const listed = await preflight("https://app.example");
    expect([
      listed.headers.get("access-control-allow-origin"),
      listed.headers.get("access-control-allow-headers"),
    ]).toEqual(["https://app.example", "authorization,content-type"]);
    const get = await as(h, "alpha")("GET", "/processes", undefined, { origin: "https://evil.example" });
    expect([get.status, get.headers.get("access-control-allow-origin")]).toEqual([200, null]);
  });

  test("CORS headers exactly, on preflights, answers, refusals and the fallback's answers", async () => {
    let page: Response | undefined;
    const h = await host(await accessFrom({ apiKeys: SETTINGS }), {
      app: {
        corsOrigins: ["https://app.example"],
        // As the edge's static files: an answer of `fetch`, whose headers cannot change; or one whose headers can.
        fallback: (request) => {
          if (!request.url.endsWith("/page")) return Response.redirect("http://host/index.html", 302);
          page = new Response("a page");
          return page;
        },
      },
    });
    const headersOf = async (method: string, path: string, headers: Record<string, string>, body?: string) => {
      const response = await h.app.fetch(new Request(`http://host${path}`, { method, headers, body: body ?? null }));
      return [response.status, Object.fromEntries([...response.headers].filter(([name]) => name !== "date"))];
    };
    const app = "https://app.example";
    const request = { "access-control-request-method": "POST", "access-control-request-headers": "authorization" };
    const preflight = {
      "access-control-allow-headers": "authorization,content-type",
      "access-control-allow-methods": "GET,POST,DELETE",
      "access-control-expose-headers": "location,retry-after",
      "access-control-max-age": "86400",
      vary: "Origin, Access-Control-Request-Headers",
    };
    expect(await headersOf("OPTIONS", "/run", { origin: app, ...request })).toEqual([
      204,
      { ...preflight, "access-control-allow-origin": app },
    ]);
    expect(await headersOf("OPTIONS", "/run", { origin: "https://evil.example", ...request })).toEqual([
      204,
      preflight,
    ]);
    const json = { "content-type": "application/json", "access-control-expose-headers": "location,retry-after" };
    const key = { authorization: `Bearer ${KEYS.alpha}` };
    expect(await headersOf("GET", "/processes", { origin: app, ...key })).toEqual([
      200,
      { ...json, "access-control-allow-origin": app, vary: "Origin" },
    ]);
    expect(await headersOf("GET", "/processes", key)).toEqual([200, { ...json, vary: "Origin" }]);
    const run = { origin: app, ...key, "content-type": "application/json" };
    expect(await headersOf("POST", "/run", run, '{"source":"export default 1"}')).toEqual([
      200,
      { ...json, "access-control-allow-origin": app, vary: "Origin" },
    ]);
    expect(await headersOf("GET", "/processes", { origin: app })).toEqual([
      401,
      {
        ...json,
        "access-control-allow-origin": app,
        vary: "Origin",
        "www-authenticate": 'Bearer realm="runcode"',
      },
    ]);
    expect(await headersOf("GET", "/index", { origin: app })).toEqual([
      302,
      {
        "access-control-allow-origin": app,
        "access-control-expose-headers": "location,retry-after",
        location: "http://host/index.html",
        vary: "Origin",
      },
    ]);
    // An answer whose headers can change is the route's own, not a copy with its body streamed again.
    const answer = await h.app.fetch(new Request("http://host/page", { headers: { origin: app } }));
    expect([answer === page, answer.headers.get("access-control-allow-origin"), await answer.text()]).toEqual([
      true,
      app,
      "a page",
    ]);
  });

  test("a known path with a wrong method: 405 with Allow; an unknown path: 404", async () => {
    const h = await host(await accessFrom({ apiKeys: SETTINGS }));
    const put = await as(h, null)("PUT", "/processes");
    expect([put.status, put.headers.get("allow"), put.body]).toEqual([
      405,
      "POST, GET, HEAD",
      { error: { code: "method_not_allowed", message: "/processes takes POST, GET, HEAD, not PUT" } },
    ]);
    expect((await as(h, null)("GET", "/run")).status).toBe(405);
    expect((await as(h, "alpha")("GET", "/nothing")).body).toEqual({
      error: { code: "not_found", message: "No route GET /nothing" },
    });
  });

  test("/openapi.json is made from the routes: every route, its errors and the bearer scheme", async () => {
    const h = await host(await accessFrom({ apiKeys: SETTINGS }));
    const doc = (await as(h, null)("GET", "/openapi.json")).body as {
      openapi: string;
      paths: Record<string, Record<string, { security?: unknown; responses: Record<string, unknown> }>>;
      components: { securitySchemes: Record<string, unknown> };
    };
    expect(doc.openapi).toBe("3.1.0");
    expect(Object.keys(doc.paths).sort()).toEqual([
      "/environment/docs",
      "/mcp",
      "/processes",
      "/processes/{pid}",
      "/processes/{pid}/code",
      "/processes/{pid}/events",
      "/processes/{pid}/output",
      "/processes/{pid}/signals/kill",
      "/processes/{pid}/signals/run",
      "/processes/{pid}/stderr",
      "/processes/{pid}/stdout",
      "/run",
      "/tools",
      "/tools/{serviceId}/{toolId}/docs",
    ]);
    expect(doc.components.securitySchemes.bearer).toMatchObject({ type: "http", scheme: "bearer" });
    for (const [path, operations] of Object.entries(doc.paths)) {
      for (const [method, operation] of Object.entries(operations)) {
        expect([path, method, operation.security]).toEqual([path, method, [{ bearer: [] }]]);
        expect(Object.keys(operation.responses), `${method} ${path}`).toContain("401");
      }
    }
    expect(Object.keys(doc.paths["/run"]?.post?.responses ?? {}).sort()).toEqual([
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
  });

  test("/openapi.json names exactly the statuses a run can end with", async () => {
    const h = await host(await accessFrom({ apiKeys: SETTINGS }));
    const doc = (await as(h, null)("GET", "/openapi.json")).body as {
      components: { schemas: Record<string, { description?: string }> };
    };
    const named = doc.components.schemas.RunResult?.description?.match(/whatever its status \(([^)]*)\)/)?.[1];
    expect(named?.split(", ")).toEqual([...STATUSES]);
  });

  test("/run admission: each tenant's runs hold at most half the budget; past it a run waits its turn, and a full line is 503", async () => {
    const { h, held } = await gatedHost({ maxWaiting: 1, maxWaitMs: 10_000 });
    // A run at 32 MiB holds 36 MiB of linear memory: a tenant's whole share, and with the other's the whole budget.
    const holding = (tenant: keyof typeof KEYS) =>
      as(h, tenant)("POST", "/run", {
        source: `import { hold } from "gate"; await hold({}); export default 1;`,
        options: { memoryLimitBytes: 32 * 1024 * 1024 },
      });
    const first = holding("alpha");
    while (held.length < 1) await new Promise((r) => setTimeout(r, 5));
    const second = holding("beta");
    while (held.length < 2) await new Promise((r) => setTimeout(r, 5));
    const waiting = as(h, "beta")("POST", "/run", {
      source: "export default 3",
      options: { memoryLimitBytes: 1024 * 1024 },
    });
    await new Promise((r) => setTimeout(r, 20));
    const refused = await as(h, "beta")("POST", "/run", { source: "1", options: { memoryLimitBytes: 1024 * 1024 } });
    expect([refused.status, refused.headers.get("retry-after"), refused.body]).toEqual([
      503,
      "1",
      {
        error: {
          code: "overloaded",
          message: `Runs in flight here hold ${RUN_MEMORY_CAP_BYTES} of ${RUN_MEMORY_CAP_BYTES} bytes of linear memory, and this one needs 16777216: 1 runs wait already; retry shortly`,
        },
      },
    ]);
    (held.pop() as () => void)();
    // The waiting run got the room its tenant's first one left.
    expect((fromWire((await waiting).body as JsonValue) as { result: unknown }).result).toBe(3);
    (held.pop() as () => void)();
    expect([(await first).status, (await second).status]).toEqual([200, 200]);
    const after = await as(h, "beta")("POST", "/run", { source: "export default 2" });
    expect((fromWire(after.body as JsonValue) as { result: unknown }).result).toBe(2);
  });

  test("one tenant's flood of /run within its rate never makes another tenant's /run wait or fail", async () => {
    const { h, held } = await gatedHost({ maxWaitMs: 300 });
    const flood = Array.from({ length: 6 }, () =>
      as(h, "alpha")("POST", "/run", { source: `import { hold } from "gate"; await hold({}); export default 1;` }),
    );
    while (held.length < 1) await new Promise((r) => setTimeout(r, 5));
    const other = await as(h, "beta")("POST", "/run", { source: "export default 2" });
    expect([other.status, (fromWire(other.body as JsonValue) as { result: unknown }).result]).toEqual([200, 2]);
    // The flood's runs go one at a time within alpha's share.
    expect(held.length).toBe(1);
    let settled = false;
    const answers = Promise.all(flood).finally(() => (settled = true));
    while (!settled) {
      for (const release of held.splice(0)) release();
      await new Promise((r) => setTimeout(r, 5));
    }
    await answers;
  });

  test("a /run whose request ends releases its admission: the run is stopped and its memory free for others", async () => {
    // One run at the default cap takes the whole budget.
    const { h, held } = await gatedHost({ memoryBudgetBytes: 36 * 1024 * 1024, tenantShare: 1, maxWaitMs: 300 });
    const client = new AbortController();
    const abandoned = h.app.fetch(
      new Request("http://host/run", {
        method: "POST",
        signal: client.signal,
        headers: { authorization: `Bearer ${KEYS.alpha}`, "content-type": "application/json" },
        body: JSON.stringify({ source: `import { hold } from "gate"; await hold({}); export default 1;` }),
      }),
    );
    while (held.length < 1) await new Promise((r) => setTimeout(r, 5));
    client.abort();
    const next = await as(h, "beta")("POST", "/run", { source: "export default 2" });
    expect([next.status, (fromWire(next.body as JsonValue) as { result: unknown }).result]).toEqual([200, 2]);
    const stopped = fromWire((await (await abandoned).json()) as JsonValue) as { status: string; error: unknown };
    expect(stopped).toMatchObject({ status: "terminated", error: { message: "The request ended" } });
  });
});
