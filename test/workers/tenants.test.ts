/**
 * The edge host on the open internet, inside workerd: API keys, tenants kept apart on every route and in kv, rates
 * and slots per tenant counted in the registry, no CORS grant for a foreign origin, and `/run` admission answering
 * 503 instead of failing the isolate.
 */
import { env, listDurableObjectIds } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { JsonValue } from "../../src/values/json.js";
import { fromWire } from "../../src/values/wire.js";
import { as } from "./client.js";

const alpha = as("alpha");
const beta = as("beta");
const json = (body: unknown) => ({
  method: "POST",
  headers: { "content-type": "application/json" },
  body: JSON.stringify(body),
});
const registry = () => env.REGISTRY.get(env.REGISTRY.idFromName("registry"));

async function create(code: string, ref: string): Promise<number> {
  const response = await alpha("/processes", json({ code, ref }));
  expect(response.status).toBe(201);
  return ((await response.json()) as { pid: number }).pid;
}

async function settled(pid: number): Promise<Record<string, unknown>> {
  for (let i = 0; i < 400; i++) {
    const record = (await (await alpha(`/processes/${pid}`)).json()) as Record<string, unknown>;
    if (record.state === "idle" && record.exitState !== null) return record;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error(`process ${pid} did not finish`);
}

const runAs = async (fetcher: typeof alpha, source: string) =>
  fromWire((await (await fetcher("/run", json({ source }))).json()) as JsonValue) as { result: unknown };

describe("API keys", () => {
  it("401 with WWW-Authenticate without a key, with a wrong one and with a malformed header", async () => {
    for (const authorization of [null, "Bearer alpha-test-key-0123456789abcdeX", "alpha-test-key-0123456789abcdef"]) {
      const fetcher = as(null);
      const headers: Record<string, string> = authorization === null ? {} : { authorization };
      for (const [path, init] of [
        ["/processes", { headers }],
        ["/processes", { ...json({ code: "1" }), headers: { ...headers, "content-type": "application/json" } }],
        ["/run", { ...json({ source: "1" }), headers: { ...headers, "content-type": "application/json" } }],
        ["/processes/1/events", { headers }],
        ["/mcp", { ...json({ jsonrpc: "2.0", id: 1, method: "tools/list" }), headers: { ...headers } }],
      ] as const) {
        const response = await fetcher(path, init);
        expect([path, response.status, response.headers.get("www-authenticate")]).toEqual([
          path,
          401,
          'Bearer realm="runcode"',
        ]);
        expect(((await response.json()) as { error: { code: string } }).error.code).toBe("unauthenticated");
      }
    }
    // The playground's files need no key.
    expect((await as(null)("/")).status).toBe(200);
  });
});

describe("tenants", () => {
  it("beta cannot see, read, stream, kill, re-run or delete alpha's process; alpha's is unchanged", async () => {
    const pid = await create("console.log('alpha'); cyrnel.output({ a: 1 });", "tenancy");
    const before = await settled(pid);
    for (const [path, method] of [
      ["", "GET"],
      ["/code", "GET"],
      ["/stdout", "GET"],
      ["/stderr", "GET"],
      ["/output", "GET"],
      ["/events", "GET"],
      ["/signals/kill", "POST"],
      ["/signals/run", "POST"],
      ["", "DELETE"],
    ] as const) {
      const theirs = await beta(`/processes/${pid}${path}`, { method });
      const unknown = await beta(`/processes/999999${path}`, { method });
      expect([method, path, theirs.status, await theirs.json()]).toEqual([
        method,
        path,
        404,
        { error: { code: "not_found", message: `No process ${pid}` } },
      ]);
      expect([unknown.status, await unknown.json()]).toEqual([
        404,
        { error: { code: "not_found", message: "No process 999999" } },
      ]);
    }
    expect(await (await alpha(`/processes/${pid}`)).json()).toEqual(before);
    expect(await (await beta("/processes?ref=tenancy")).json()).toEqual({ processes: [], next: null });
  });

  it("a pid unknown to the caller's tenant creates and reads no process object, and answers as any unknown pid", async () => {
    const theirs = await create("export default 1", "probed");
    await settled(theirs);
    const before = (await listDurableObjectIds(env.PROCESSES)).length;
    const probes = [theirs, theirs + 1, 1, 2, 99, 9007199254740991];
    for (const pid of probes) {
      for (const [path, method] of [
        ["", "GET"],
        ["/events", "GET"],
        ["/signals/kill", "POST"],
        ["", "DELETE"],
      ] as const) {
        const answer = await beta(`/processes/${pid}${path}`, { method });
        expect([answer.status, await answer.json()]).toEqual([
          404,
          { error: { code: "not_found", message: `No process ${pid}` } },
        ]);
      }
    }
    expect((await listDurableObjectIds(env.PROCESSES)).length).toBe(before);
  });

  it("pids count the caller's own processes only: another tenant's creations leave no gap", async () => {
    const first = await create("export default 1", "counted");
    for (let i = 0; i < 3; i++) {
      expect((await beta("/processes", json({ code: "export default 1", ref: "counted" }))).status).toBe(201);
    }
    const second = await create("export default 1", "counted");
    expect(second - first).toBe(1);
    expect([Number.isSafeInteger(second), second > 2 ** 32]).toEqual([true, true]);
  });

  it("listing pages walk the caller's processes once each", async () => {
    const mine: number[] = [];
    for (let i = 0; i < 5; i++) mine.push(await create("export default 1", "paged"));
    await (await beta("/processes", json({ code: "export default 1", ref: "paged" }))).text();
    const seen: number[] = [];
    let after: string | null = null;
    do {
      const query: string = after === null ? "ref=paged&limit=2" : `ref=paged&limit=2&after=${after}`;
      const page = (await (await alpha(`/processes?${query}`)).json()) as {
        processes: { pid: number }[];
        next: string | null;
      };
      seen.push(...page.processes.map((p) => p.pid));
      after = page.next;
    } while (after !== null);
    expect(seen).toEqual(mine);
  });

  it("kv is a keyspace per tenant", async () => {
    await runAs(alpha, `import { set } from "kv"; await set({ key: "tenant-secret", value: "alpha's" });`);
    const read = `import { get } from "kv"; export default await get({ key: "tenant-secret" });`;
    expect((await runAs(beta, read)).result).toEqual({ found: false, value: null });
    expect((await runAs(alpha, read)).result).toEqual({ found: true, value: "alpha's" });
  });

  it("a tenant that fills its kv bytes (RUNCODE_TENANT_KV_BYTES) is refused; what it stored and beta's store stay", async () => {
    // From an empty store, each entry is 4 key bytes + 65,002 bytes of JSON = 65,006: 16 fit in the 1,048,576 bytes
    // the suite's configuration gives a tenant, the 17th does not.
    const empty = `import * as kv from "kv"; for (const key of (await kv.list({ limit: 1000 })).keys) await kv.delete({ key });`;
    await runAs(alpha, empty);
    const fill = `import { set } from "kv";
      let stored = 0, message = "";
      try { for (;;) { await set({ key: "f" + String(stored).padStart(3, "0"), value: "x".repeat(65_000) }); stored++; } }
      catch (error) { message = error.message; }
      export default [stored, message];`;
    expect((await runAs(alpha, fill)).result).toEqual([
      16,
      "kv.set failed: quota exceeded: the store may hold at most 1048576 bytes of keys and values (this write would make it 1105102)",
    ]);
    const first = `import { get } from "kv"; export default (await get({ key: "f000" })).value.length;`;
    expect((await runAs(alpha, first)).result).toBe(65_000);
    expect(
      (await runAs(beta, `import { set } from "kv"; export default await set({ key: "f000", value: 1 });`)).result,
    ).toEqual({ bytes: 1 });
    await runAs(alpha, empty);
    expect((await runAs(alpha, `import { list } from "kv"; export default await list({});`)).result).toEqual({
      keys: [],
    });
  });
});

describe("quotas in the registry", () => {
  it("runs per minute: an empty bucket is refused with rate_limited and Retry-After; another tenant is not", async () => {
    for (let i = 0; i < 3; i++) expect(await registry().admit("rated", 3)).toEqual({ value: null });
    const refused = await registry().admit("rated", 3);
    expect(refused).toEqual({
      error: {
        code: "rate_limited",
        message: "This tenant may start 3 processes and /run calls per minute: retry in 20 s",
        headers: { "retry-after": "20" },
      },
    });
    expect(await registry().admit("other", 3)).toEqual({ value: null });
  });

  it("active slots per tenant: tenant_too_many_processes while another tenant still gets a pid", async () => {
    const limits = { maxActive: 256, tenantMaxActive: 2 };
    const first = await registry().allocate("slotted", limits);
    const second = await registry().allocate("slotted", limits);
    expect(["value" in first, "value" in second]).toEqual([true, true]);
    expect(await registry().allocate("slotted", limits)).toEqual({
      error: {
        code: "tenant_too_many_processes",
        message: "This tenant has 2 processes active already: wait for one to finish",
        headers: { "retry-after": "1" },
      },
    });
    expect("value" in (await registry().allocate("unslotted", limits))).toBe(true);
    for (const answer of [first, second]) if ("value" in answer) await registry().remove(answer.value);
    expect("value" in (await registry().allocate("slotted", limits))).toBe(true);
  });
});

describe("shares of CPU in the registry", () => {
  /** 1,000,000 units of fuel a second, 10,000,000 at once. */
  const share = { fuelPerMinute: 60_000_000, burstFuel: 10_000_000 };

  it("a tenant whose bucket cannot pay is refused with rate_limited and the seconds until it can; another is not", async () => {
    expect(await registry().reserveCpu("spender", 10_000_000, share)).toEqual({ value: 10_000_000 });
    await registry().settleCpu("spender", 10_000_000, 7_300_000, share);
    // 2,700,000 left (and the few units a few milliseconds refill): 7.3 s short of 10,000,000.
    expect(await registry().reserveCpu("spender", 10_000_000, share)).toEqual({
      error: {
        code: "rate_limited",
        message: "This tenant has spent its share of CPU (60 ms per minute, 10 ms at once): retry in 8 s",
        headers: { "retry-after": "8" },
      },
    });
    expect(await registry().reserveCpu("saver", 10_000_000, share)).toEqual({ value: 10_000_000 });
  });

  it("a run waits in its tenant's line while the tenant's runs in flight may give fuel back, woken by a settlement", async () => {
    await registry().reserveCpu("waiter", 4_000_000, share);
    await registry().reserveCpu("waiter", 4_000_000, share);
    let third: unknown;
    const waiting = registry()
      .reserveCpu("waiter", 4_000_000, share)
      .then((answered) => (third = answered));
    expect(await registry().reserveCpu("bystander", 10_000_000, share)).toEqual({ value: 10_000_000 });
    expect(third).toBeUndefined();
    await registry().settleCpu("waiter", 4_000_000, 1_000_000, share);
    await waiting;
    expect(third).toEqual({ value: 4_000_000 });
  });
});

describe("the HTTP surface", () => {
  it("a foreign origin gets no CORS grant on a preflight or a request", async () => {
    const preflight = await as(null)("/processes", {
      method: "OPTIONS",
      headers: { origin: "https://attacker.example", "access-control-request-method": "POST" },
    });
    expect([preflight.status, preflight.headers.get("access-control-allow-origin")]).toEqual([204, null]);
    const get = await alpha("/processes?limit=1", { headers: { origin: "https://attacker.example" } });
    expect([get.status, get.headers.get("access-control-allow-origin")]).toEqual([200, null]);
  });

  it("405 with Allow for a wrong method; /openapi.json lists /run, /mcp and the bearer scheme", async () => {
    const put = await alpha("/processes", { method: "PUT" });
    expect([put.status, put.headers.get("allow")]).toEqual([405, "POST, GET, HEAD"]);
    const doc = (await (await as(null)("/openapi.json")).json()) as {
      paths: Record<string, unknown>;
      components: { securitySchemes: Record<string, { type: string; scheme: string }> };
    };
    expect(Object.keys(doc.paths)).toEqual(expect.arrayContaining(["/run", "/mcp", "/processes", "/processes/{pid}"]));
    expect(doc.components.securitySchemes.bearer).toMatchObject({ type: "http", scheme: "bearer" });
  });

  it("/run admission: past the budget runs wait their turn, past a tenant's part of the line they are 503; the isolate serves on", async () => {
    // 400 awaited kv calls keep a 32 MiB run (36 MiB of linear memory, a tenant's whole share) in flight: one of each
    // tenant's holds the whole budget.
    const holding = (fetcher: typeof alpha) =>
      fetcher(
        "/run",
        json({
          source: `import { list } from "kv"; for (let i = 0; i < 400; i++) await list({ limit: 1 }); export default 1;`,
          options: { memoryLimitBytes: 32 << 20 },
        }),
      );
    const held = [holding(alpha), holding(beta)];
    await new Promise((resolve) => setTimeout(resolve, 50));
    // 33 more of one tenant: 32 wait in line (half of MAX_WAITING_RUNS) and run in turn, one is refused at once.
    const answers = await Promise.all(
      Array.from({ length: 33 }, async (_, i) => {
        const response = await beta(
          "/run",
          json({ source: `export default ${i}`, options: { memoryLimitBytes: 1 << 20 } }),
        );
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
    expect((refused[0] as { body: { error: { message: string } } }).body.error.message).toMatch(
      /: 32 runs of this tenant wait already; retry shortly$/,
    );
    for (const a of answers.filter((x) => x.status === 200)) {
      expect((fromWire(a.body as JsonValue) as { result: unknown }).result).toBe(a.i);
    }
    for (const answer of held) {
      expect((fromWire((await (await answer).json()) as JsonValue) as { result: unknown }).result).toBe(1);
    }
    expect((await runAs(beta, "export default 3")).result).toBe(3);
  });
});
