import { env, SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { ProcessRecord, ProcessSummary } from "../../src/host/processes/storage.js";
import type { JsonValue } from "../../src/values/json.js";
import { fromWire } from "../../src/values/wire.js";
import { sseEvents } from "../host/sse.js";
import { api, KEYS } from "./client.js";

const post = (path: string, body: unknown, headers: Record<string, string> = { "content-type": "application/json" }) =>
  api(path, {
    method: "POST",
    headers,
    body: typeof body === "string" ? body : JSON.stringify(body),
  });

async function run(source: string, options?: Record<string, unknown>) {
  const response = await post("/run", options === undefined ? { source } : { source, options });
  expect(response.status).toBe(200);
  return fromWire((await response.json()) as JsonValue) as {
    status: string;
    result?: unknown;
    error?: { name: string; message: string };
  };
}

/** Polls a process until it is idle again. */
async function settled(pid: number): Promise<Record<string, unknown>> {
  for (let i = 0; i < 200; i++) {
    const record = (await (await api(`/processes/${pid}`)).json()) as Record<string, unknown>;
    if (record.state === "idle" && record.exitState !== null) return record;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error(`process ${pid} did not finish`);
}

async function create(code: string, extra: Record<string, unknown> = {}): Promise<number> {
  const response = await post("/processes", { code, ...extra });
  expect(response.status).toBe(201);
  const body = (await response.json()) as { pid: number; state: string };
  expect(body.state).toBe("queued");
  return body.pid;
}

/** The stop of a run limited to 300 ms by its safety cap: its CPU time where clocks run (as here), else its fuel. */
const ONE_STOP_AT_300_MS =
  /^Execution stopped by (its timeoutMs \(300 ms\)|its fuel cap \(300000000 units: its timeoutMs of 300 ms at 1000000 units per ms\))$/;

describe("POST /run", () => {
  it("answers the result in the lossless wire encoding", async () => {
    const result = await run(
      "export default { n: 1n, m: new Map([[1, new Set([NaN])]]), d: new Date(5), u: undefined }",
    );
    expect(result).toMatchObject({ status: "success" });
    expect(result.result).toEqual({ n: 1n, m: new Map([[1, new Set([Number.NaN])]]), d: new Date(5), u: undefined });
  });

  it("runs every status", async () => {
    expect((await run("throw new RangeError('no')")).error).toEqual(
      expect.objectContaining({ name: "RangeError", message: "no" }),
    );
    expect((await run("import x from 'nowhere'; export default x")).status).toBe("link_error");
    expect(
      (await run("const a = []; for (;;) a.push(new Uint8Array(1e6))", { memoryLimitBytes: 16 << 20 })).status,
    ).toBe("memory");
    const stopped = await run("while (true) {}");
    expect(stopped.status).toBe("terminated");
    // The test pool's RUN_CPU_MS (vitest.workers.config.ts) where clocks run, as here; else its RUN_FUEL.
    expect(stopped.error?.message).toMatch(
      /^Execution stopped by the host's (CPU cap per run \(RUN_CPU_MS = 2000 ms\)|fuel cap per run \(RUN_FUEL = 1000000000 units\))$/,
    );
  });

  it("holds a timeoutMs below its cap, synchronous code included (each run's own safety cap), and names a bad one", async () => {
    const stopped = fromWire(
      (await (await post("/run", { source: "while (true) {}", timeoutMs: 300 })).json()) as JsonValue,
    ) as { status: string; error: { message: string } };
    expect(stopped.status).toBe("terminated");
    expect(stopped.error.message).toMatch(ONE_STOP_AT_300_MS);
    const refused = await post("/run", { source: "export default 1", timeoutMs: 600_001 });
    expect([refused.status, await refused.json()]).toEqual([
      400,
      { error: { code: "invalid_request", message: "timeoutMs must be an integer from 1 to 600000" } },
    ]);
  });

  it("with Accept: text/event-stream, answers log and report events as they happen, then the result", async () => {
    const response = await post(
      "/run",
      { source: "console.info('a', 1n);\nreport([2]);\nexport default 3;" },
      { "content-type": "application/json", accept: "text/event-stream" },
    );
    expect(response.headers.get("content-type")).toBe("text/event-stream; charset=utf-8");
    const events = sseEvents(await response.text());
    expect(events.map(([type, data]) => [type, type === "result" ? data.result : (data.args ?? data)])).toEqual([
      ["log", ["a", { $t: "bigint", v: "1" }]],
      ["report", [2]],
      ["result", 3],
    ]);
  });

  it("takes wire-encoded globals and arguments", async () => {
    const result = await run("export const f = (a: bigint) => [a * 2n, input.get('k')]", {
      execute: { fn: "f", args: [{ $t: "bigint", v: "21" }] },
      globals: { input: { $t: "map", v: [["k", "v"]] } },
    });
    expect(result.result).toEqual([42n, "v"]);
  });

  it("imports the built-in kv service, whose values outlive a run", async () => {
    await run("import { set } from 'kv'; await set({ key: 'greeting', value: { hi: 1 } })");
    const read = await run("import { get } from 'kv'; export default await get({ key: 'greeting' })");
    expect(read.result).toEqual({ found: true, value: { hi: 1 } });
  });

  it("refuses bad requests with a stable code and runs nothing", async () => {
    const cases: [Response, number, string][] = [
      [await post("/run", "{nope", { "content-type": "application/json" }), 400, "invalid_json"],
      [await post("/run", { source: "1" }, { "content-type": "text/plain" }), 415, "unsupported_media_type"],
      [await post("/run", { source: 1 }), 400, "invalid_request"],
      [await post("/run", { source: "1", extra: true }), 400, "invalid_request"],
      [await post("/run", { source: "1", options: { report: "x" } }), 400, "invalid_request"],
      [await post("/run", { source: "1", options: { memoryLimitBytes: 1 << 30 } }), 400, "invalid_request"],
      [await post("/run", { source: "1", options: { language: "python" } }), 400, "invalid_options"],
      [await post("/run", { source: "x".repeat(1024 * 1024 + 1) }), 413, "payload_too_large"],
    ];
    for (const [response, status, code] of cases) {
      expect(response.status).toBe(status);
      expect(((await response.json()) as { error: { code: string } }).error.code).toBe(code);
    }
  });

  it("grants no other origin CORS unless RUNCODE_CORS_ORIGINS lists it (none here), nor lets it POST", async () => {
    const preflight = await api(`/run`, {
      method: "OPTIONS",
      headers: { origin: "https://elsewhere.example", "access-control-request-method": "POST" },
    });
    expect([preflight.status, preflight.headers.get("access-control-allow-origin")]).toEqual([204, null]);
    const response = await post(
      "/run",
      { source: "export default 1" },
      {
        "content-type": "application/json",
        origin: "https://elsewhere.example",
      },
    );
    expect([response.status, response.headers.get("access-control-allow-origin"), await response.json()]).toEqual([
      403,
      null,
      { error: { code: "forbidden_origin", message: 'Origin "https://elsewhere.example" may not POST here' } },
    ]);
  });

  it("answers only the names of RUNCODE_ORIGINS: a DNS-rebound Host is 421, the playground's files included", async () => {
    for (const path of ["/processes", "/", "/openapi.json"]) {
      const response = await SELF.fetch(`http://rebound.example${path}`, {
        headers: { authorization: `Bearer ${KEYS.alpha}` },
      });
      expect([path, response.status, ((await response.json()) as { error: { code: string } }).error.code]).toEqual([
        path,
        421,
        "misdirected_request",
      ]);
    }
  });
});

describe("RUNCODE_WEB_APIS", () => {
  it("gives /run the Web APIs, a timer's run waiting for it", async () => {
    const result = await run(
      "const out = [new URL('../x', 'https://h.example/a/b').href, new TextDecoder().decode(new TextEncoder().encode('é'))];\nsetTimeout(() => out.push(typeof crypto.randomUUID()), 10);\nexport default out;",
    );
    expect(result).toMatchObject({ status: "success", result: ["https://h.example/x", "é", "string"] });
  });

  it("gives processes the Web APIs, and their documentation lists them", async () => {
    const pid = await create(
      "await new Promise((r) => setTimeout(r, 10));\nconsole.log(btoa('hi'), typeof AbortController);",
    );
    const record = await settled(pid);
    expect(record.exitState).toBe("success");
    expect(await (await api(`/processes/${pid}/stdout`)).text()).toBe("aGk= function\n");
    expect(await (await api("/environment/docs")).text()).toContain("| Web APIs | `URL`");
  });

  it('is "true" or "false": any other value names the setting', async () => {
    const { configOf } = await import("../../worker/config.js");
    await expect(configOf({ ...env, RUNCODE_WEB_APIS: "yes" } as unknown as Env)).rejects.toThrow(
      new TypeError('RUNCODE_WEB_APIS must be "true" or "false", got "yes"'),
    );
    expect((await configOf({ ...env, RUNCODE_WEB_APIS: "false" } as unknown as Env)).webApis).toBe(false);
  });
});

describe("RUNCODE_INTL", () => {
  it("is \"true\" or \"false\", and gives /run's, sessions' and processes' sandbox intl (the edge sandbox's Intl: conformance §14)", async () => {
    const { configOf } = await import("../../worker/config.js");
    const { environmentOptionsOf, runSandboxOptionsOf } = await import("../../src/host/settings.js");
    await expect(configOf({ ...env, RUNCODE_INTL: "yes" } as unknown as Env)).rejects.toThrow(
      new TypeError('RUNCODE_INTL must be "true" or "false", got "yes"'),
    );
    expect(runSandboxOptionsOf(await configOf({ ...env, RUNCODE_INTL: "true" } as unknown as Env)).intl).toBe(true);
    expect(runSandboxOptionsOf(await configOf(env)).intl).toBe(false);
    const intl = await configOf({ ...env, RUNCODE_INTL: "true" } as unknown as Env);
    expect(environmentOptionsOf(intl)).toEqual({
      maxCpuMs: 2000,
      maxCpuMsSetting: "RUN_CPU_MS",
      webApis: true,
      intl: true,
    });
  });
});

describe("processes on Durable Objects", () => {
  it("creates, runs and persists a process with its output", async () => {
    const pid = await create(
      "console.log('héllo'); console.error('bad'); cyrnel.output({ a: 1 }); cyrnel.output({ b: 2 })",
      {
        ref: "job-1",
      },
    );
    const record = await settled(pid);
    expect(record).toMatchObject({
      pid,
      ref: "job-1",
      exitState: "success",
      stdout: "héllo\n",
      stderr: "bad\n",
      output: { a: 1, b: 2 },
    });
    expect(await (await api(`/processes/${pid}/stdout`)).text()).toBe("héllo\n");
    // The record lives in the process's own object: read it there directly, as a restarted Worker would.
    const stub = env.PROCESSES.get(env.PROCESSES.idFromName(String(pid)));
    const { tenant, ...direct } = (await stub.summary(pid)) as unknown as ProcessSummary;
    const { code: _c, stdout: _s, stderr: _e, output: _o, ...summary } = record as unknown as ProcessRecord;
    expect([tenant, direct]).toEqual(["alpha", summary]);
    expect(await stub.read(pid, "stdout", 0)).toEqual({ text: "héllo\n", next: undefined });
  });

  it("lists through the registry with filters, safely against SQL in filter values", async () => {
    const ok = await create("export default 1", { ref: "list-ok" });
    const bad = await create("throw new Error('x')", { ref: "list-bad" });
    await settled(ok);
    await settled(bad);
    const list = async (query: string) =>
      ((await (await api(`/processes?${query}`)).json()) as { processes: { pid: number }[] }).processes.map(
        (p) => p.pid,
      );
    expect(await list("ref=list-ok")).toEqual([ok]);
    expect(await list("ref=list-bad&exitState=failed")).toEqual([bad]);
    expect(await list(`ref=${encodeURIComponent("x' OR '1'='1")}`)).toEqual([]);
  });

  it("kills a process while it awaits tool calls, and times out a tight loop", async () => {
    const waiting = await create("for (;;) await cyrnel.services.kv.tools.get.invoke({ key: 'k' })");
    const spinning = await create("while (true) {}", { timeoutMs: 300 });
    const kill = await post(`/processes/${waiting}/signals/kill`, "");
    expect([200, 202]).toContain(kill.status);
    expect((await settled(waiting)).exitState).toBe("canceled");
    expect((await settled(spinning)).exitState).toBe("timeout");
  });

  it("answers 404 for an unknown pid and 400 for a malformed one", async () => {
    const unknown = await api(`/processes/999999`);
    expect(unknown.status).toBe(404);
    const malformed = await api(`/processes/01x`);
    expect(malformed.status).toBe(400);
  });

  it("gives 200 concurrent creations unique pids and loses no record", async () => {
    const pids = await Promise.all(
      Array.from({ length: 200 }, (_, i) => create(`export default ${i}`, { ref: "burst" })),
    );
    expect(new Set(pids).size).toBe(200);
    const records = await Promise.all(pids.map((pid) => settled(pid)));
    expect(records.map((r) => r.exitState)).toEqual(Array(200).fill("success"));
    const listed = (await (await api(`/processes?ref=burst&limit=500`)).json()) as {
      processes: unknown[];
    };
    expect(listed.processes).toHaveLength(200);
  }, 120_000);

  it("imports its modules (./util.js) as /run does, in its own object, again when it runs again", async () => {
    const modules = {
      "./util.js":
        'import { set, get } from "kv";\nexport const bump = async () => { await set({ key: "m", value: 1 }); return (await get({ key: "m" })).value; };',
    };
    const code = 'import { bump } from "./util.js";\nconsole.log(await bump());';
    const pid = await create(code, { modules });
    expect(await settled(pid)).toMatchObject({ exitState: "success", stdout: "1\n", code, modules });
    expect((await post(`/processes/${pid}/signals/run`, "")).status).toBe(202);
    for (let i = 0; i < 200 && (await settled(pid)).runs !== 2; i++) await new Promise((r) => setTimeout(r, 25));
    expect(await settled(pid)).toMatchObject({ exitState: "success", stdout: "1\n", runs: 2 });
  });

  it("refuses a bad creation without spending a record", async () => {
    const before = ((await (await api(`/processes?limit=500`)).json()) as { processes: unknown[] }).processes.length;
    expect((await post("/processes", { code: 5 })).status).toBe(400);
    expect((await post("/processes", "{")).status).toBe(400);
    expect((await post("/processes", { code: "x".repeat(100 * 1024 + 1) })).status).toBe(413);
    expect(await (await post("/processes", { code: "1", modules: { util: "1" } })).json()).toEqual({
      error: {
        code: "invalid_request",
        message: "runCode: options.modules key 'util' must be a relative specifier such as './helpers.js'",
      },
    });
    expect(await (await post("/processes", { code: "1", modules: { "./a.js": 1 } })).json()).toEqual({
      error: {
        code: "invalid_request",
        message: "runCode: options.modules['./a.js'] must be a source string, got number",
      },
    });
    const large = { "./a.js": "x".repeat(100 * 1024) };
    expect((await post("/processes", { code: "1", modules: large })).status).toBe(413);
    expect(await (await post("/processes", { code: "1", timeoutMs: 600_001 })).json()).toEqual({
      error: { code: "invalid_request", message: "timeoutMs must be an integer from 1 to 600000" },
    });
    const after = ((await (await api(`/processes?limit=500`)).json()) as { processes: unknown[] }).processes.length;
    expect(after).toBe(before);
  });
});

describe("documentation routes", () => {
  it("serves the environment docs, tools and OpenAPI", async () => {
    expect(await (await api(`/environment/docs`)).text()).toContain("cyrnel.services");
    const tools = (await (await api(`/tools`)).json()) as { services: { id: string }[] };
    expect(tools.services.map((s) => s.id)).toContain("kv");
    const openapi = (await (await api(`/openapi.json`)).json()) as { paths: Record<string, unknown> };
    expect(Object.keys(openapi.paths)).toContain("/processes");
  });
});

describe("POST /mcp", () => {
  it("run_code holds its timeoutMs as over stdio, synchronous code included; console output arrives first", async () => {
    const call = {
      jsonrpc: "2.0",
      id: 1,
      method: "tools/call",
      params: { name: "run_code", arguments: { code: "console.log('spinning');\nwhile (true) {}", timeoutMs: 300 } },
    };
    const response = await post("/mcp", call, {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
    });
    expect(response.headers.get("content-type")).toBe("text/event-stream");
    const [[, notification], [, answer]] = sseEvents(await response.text()) as [
      [string, { method: string; params: { level: string; data: { args: unknown[] } } }],
      [string, { result: { structuredContent: JsonValue } }],
    ];
    expect([notification.method, notification.params.level, notification.params.data.args]).toEqual([
      "notifications/message",
      "info",
      ["spinning"],
    ]);
    const result = fromWire(answer.result.structuredContent) as { status: string; error: { message: string } };
    expect(result.status).toBe("terminated");
    expect(result.error.message).toMatch(ONE_STOP_AT_300_MS);
  });
});
