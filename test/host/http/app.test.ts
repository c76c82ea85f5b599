import { describe, expect, test } from "vitest";
import { instantiate } from "../../../src/environment/index.js";
import { createHost } from "../../../src/host/index.js";
import type { ProcessRecord } from "../../../src/host/processes/storage.js";
import { inThread, wasm } from "../../environment/helpers.js";
import { sseEvents } from "../sse.js";

type Host = Awaited<ReturnType<typeof createHost>>;

/** A host with the QuickJS environment and a custom `demo` service whose `wait` tool blocks until released. */
async function host(options: Parameters<typeof createHost>[0] = {}) {
  const waiting: (() => void)[] = [];
  const h = await createHost({
    environment: { module: instantiate({ wasm: await wasm(), createSandbox: inThread, concurrency: 1 }) },
    services: [
      {
        id: "demo",
        description: "Test tools",
        tools: [
          {
            id: "greet",
            description: "Greets someone",
            inputSchema: {
              type: "object",
              properties: { name: { type: "string" } },
              required: ["name"],
              additionalProperties: false,
            },
            outputSchema: { type: "object", properties: { greeting: { type: "string" } } },
            run: (p) => ({ greeting: `hello ${String(p.name)}` }),
          },
          {
            id: "wait",
            description: "Blocks until the test releases it",
            inputSchema: { type: "object" },
            run: () => new Promise<{ released: true }>((resolve) => waiting.push(() => resolve({ released: true }))),
          },
        ],
      },
    ],
    ...options,
  });
  return { ...h, waiting };
}

const call = async (h: Host, method: string, path: string, body?: unknown, raw?: string) => {
  const init: RequestInit = { method };
  if (body !== undefined || raw !== undefined) {
    init.body = raw ?? JSON.stringify(body);
    init.headers = { "content-type": "application/json" };
  }
  const response = await h.app.fetch(new Request(`http://host${path}`, init));
  const type = response.headers.get("content-type") ?? "";
  const payload: unknown = type.includes("json") ? await response.json() : await response.text();
  return { status: response.status, type, body: payload };
};
const record = async (h: Host, pid: number) => (await call(h, "GET", `/processes/${pid}`)).body as ProcessRecord;
const until = async (check: () => Promise<boolean>) => {
  const deadline = Date.now() + 10_000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error("condition not reached");
    await new Promise((r) => setTimeout(r, 5));
  }
};

/** Reads a whole SSE body (it ends after `exit`) into `[event, data]` pairs. */
const events = async (response: Response) => sseEvents(await response.text());

describe("HTTP API: bad requests", () => {
  test("stable error codes and statuses; nothing is stored or changed", async () => {
    const h = await host({ maxActiveProcesses: 1 });
    const cases: [string, string, unknown, string | undefined, number, string][] = [
      ["POST", "/processes", undefined, "{not json", 400, "invalid_json"],
      ["POST", "/processes", { code: "1", extra: true }, undefined, 400, "invalid_request"],
      ["POST", "/processes", { code: 1 }, undefined, 400, "invalid_request"],
      ["POST", "/processes", { code: "1", timeoutMs: 1.5 }, undefined, 400, "invalid_request"],
      ["POST", "/processes", { code: "1", timeoutMs: 600_001 }, undefined, 400, "invalid_request"],
      ["POST", "/processes", [], undefined, 400, "invalid_request"],
      ["POST", "/processes", { code: "x".repeat(102_401) }, undefined, 413, "payload_too_large"],
      ["GET", "/processes?state=sleeping", undefined, undefined, 400, "invalid_request"],
      ["GET", "/processes?color=red", undefined, undefined, 400, "invalid_request"],
      ["GET", "/processes?limit=0", undefined, undefined, 400, "invalid_request"],
      ["GET", "/processes/abc", undefined, undefined, 400, "invalid_pid"],
      ["GET", "/processes/0", undefined, undefined, 400, "invalid_pid"],
      ["GET", "/processes/99", undefined, undefined, 404, "not_found"],
      ["GET", "/processes/99/stdout", undefined, undefined, 404, "not_found"],
      ["GET", "/processes/99/events", undefined, undefined, 404, "not_found"],
      ["POST", "/processes/99/signals/kill", undefined, undefined, 404, "not_found"],
      ["POST", "/processes/99/signals/run", undefined, undefined, 404, "not_found"],
      ["DELETE", "/processes/99", undefined, undefined, 404, "not_found"],
      ["GET", "/tools/kv/nope/docs", undefined, undefined, 404, "not_found"],
      ["GET", "/nowhere", undefined, undefined, 404, "not_found"],
    ];
    for (const [method, path, body, raw, status, code] of cases) {
      const r = await call(h, method, path, body, raw);
      expect([method, path, r.status, (r.body as { error: { code: string } }).error.code]).toEqual([
        method,
        path,
        status,
        code,
      ]);
      expect(typeof (r.body as { error: { message: string } }).error.message).toBe("string");
    }
    expect((await call(h, "POST", "/processes", { code: "1" }, '{"code": 1, "x": 2}')).body).toEqual({
      error: {
        code: "invalid_request",
        message: "Invalid body: code: Invalid input: expected string, received number",
      },
    });
    for (const timeoutMs of [0, 600_001, 1.5, "5"]) {
      expect((await call(h, "POST", "/processes", { code: "1", timeoutMs })).body).toEqual({
        error: { code: "invalid_request", message: "timeoutMs must be an integer from 1 to 600000" },
      });
    }
    expect((await call(h, "GET", "/processes")).body).toEqual({ processes: [], next: null });

    // A stored record survives every refused request.
    const created = await call(h, "POST", "/processes", { code: `await cyrnel.services.demo.tools.wait.invoke({});` });
    expect(created).toMatchObject({ status: 201, body: { state: "queued" } });
    const { pid } = created.body as { pid: number };
    await until(async () => h.waiting.length === 1);
    const before = await record(h, pid);
    expect((await call(h, "POST", "/processes", { code: "2" })).body).toEqual({
      error: { code: "too_many_processes", message: "1 processes are active already: wait for one to finish" },
    });
    expect((await call(h, "DELETE", `/processes/${pid}`)).status).toBe(409);
    expect((await call(h, "POST", `/processes/${pid}/signals/run`)).status).toBe(409);
    expect(await record(h, pid)).toEqual(before);
    (h.waiting[0] as () => void)();
    await h.service.idle();
    expect((await call(h, "POST", `/processes/${pid}/signals/kill`)).body).toEqual({
      error: { code: "process_not_active", message: `Process ${pid} is idle` },
    });
    expect((await call(h, "GET", "/processes")).body).toMatchObject({ processes: [{ pid, exitState: "success" }] });
  });

  test("OpenAPI is generated from the validating schemas; docs and tools are served", async () => {
    const h = await host();
    const openapi = (await call(h, "GET", "/openapi.json")).body as {
      openapi: string;
      paths: Record<string, Record<string, unknown>>;
      components: { schemas: Record<string, { required?: string[]; additionalProperties?: boolean }> };
    };
    expect(openapi.openapi).toBe("3.1.0");
    expect(Object.keys(openapi.paths)).toEqual([
      "/processes",
      "/processes/{pid}",
      "/processes/{pid}/code",
      "/processes/{pid}/stdout",
      "/processes/{pid}/stderr",
      "/processes/{pid}/output",
      "/processes/{pid}/events",
      "/processes/{pid}/signals/kill",
      "/processes/{pid}/signals/run",
      "/environment/docs",
      "/tools",
      "/tools/{serviceId}/{toolId}/docs",
    ]);
    expect(openapi.components.schemas.CreateProcessRequest).toMatchObject({
      required: ["code"],
      additionalProperties: false,
    });
    const docs = await call(h, "GET", "/environment/docs");
    expect([docs.status, docs.type]).toEqual([200, "text/markdown; charset=utf-8"]);
    expect(docs.body).toContain("# QuickJS TypeScript environment");
    const tools = (await call(h, "GET", "/tools")).body as { services: { id: string; tools: { id: string }[] }[] };
    expect(tools.services.map((s) => [s.id, s.tools.map((t) => t.id)])).toEqual([
      ["kv", ["get", "set", "delete", "list"]],
      ["demo", ["greet", "wait"]],
    ]);
    const toolDocs = await call(h, "GET", "/tools/demo/greet/docs");
    expect(toolDocs.body).toContain('await cyrnel.services.demo.tools.greet.invoke({\n  "name": "example"\n});');
  });
});

describe("HTTP API end to end (QuickJS environment)", () => {
  test("submit, stream events, read stdout with a split character, call kv and a custom tool, check the record", async () => {
    const h = await host();
    // The process waits until the stream is open, so every event after the snapshot is streamed.
    const code = `await cyrnel.services.demo.tools.wait.invoke({});
const greeting = await cyrnel.services.demo.tools.greet.invoke({ name: "Ada" });
console.log(greeting.greeting, "€");
const before = await cyrnel.services.kv.tools.get.invoke({ key: "visits" });
const visits = (before.found ? (before.value as number) : 0) + 1;
await cyrnel.services.kv.tools.set.invoke({ key: "visits", value: visits });
cyrnel.output({ visits });
console.error("done");
cyrnel.output({ last: true });`;
    const bytes: Uint8Array[] = [];
    const emit = h.service.emitStdout.bind(h.service);
    // Re-chunk stdout byte by byte: every multi-byte character arrives split.
    h.service.emitStdout = (eid, data) => {
      bytes.push(data);
      for (let i = 0; i < data.length; i++) emit(eid, data.slice(i, i + 1));
    };
    const created = await call(h, "POST", "/processes", { code, ref: "e2e" });
    expect(created).toMatchObject({ status: 201, body: { state: "queued" } });
    const { pid } = created.body as { pid: number };
    const stream = await h.app.fetch(new Request(`http://host/processes/${pid}/events`));
    expect(stream.headers.get("content-type")).toBe("text/event-stream; charset=utf-8");
    const streamed = events(stream);
    await until(async () => h.waiting.length === 1);
    (h.waiting[0] as () => void)();
    const seen = await streamed;
    expect(seen[0]?.[0]).toBe("snapshot");
    const rest = seen
      .slice(1)
      .map(([event, data]) => (event === "stdout" || event === "stderr" ? `${event}:${String(data.data)}` : event));
    expect(rest.at(-1)).toBe("exit");
    const stdoutEvents = rest.filter((e) => e.startsWith("stdout:")).map((e) => e.slice("stdout:".length));
    // One event per decoded byte, except the two that only start "€": the decoder holds them back.
    const snapshot = (seen[0] as [string, { record: ProcessRecord }])[1].record.stdout;
    expect([...snapshot, ...stdoutEvents]).toEqual([..."hello Ada €\n"]);
    expect(rest).toContain("stderr:done\n");
    expect(rest.filter((e) => e === "output")).toHaveLength(2);
    expect(seen.at(-1)?.[1]).toEqual({ pid, exitState: "success", error: null });
    expect(bytes.map((b) => b.length)).toEqual([14]);

    const r = await record(h, pid);
    expect(r).toMatchObject({
      pid,
      ref: "e2e",
      state: "idle",
      exitState: "success",
      code,
      stdout: "hello Ada €\n",
      stderr: "done\n",
      output: { visits: 1, last: true },
      error: null,
      runs: 1,
      timeoutMs: 30_000,
    });
    expect((await call(h, "GET", `/processes/${pid}/stdout`)).body).toBe("hello Ada €\n");
    expect((await call(h, "GET", `/processes/${pid}/stderr`)).body).toBe("done\n");
    expect((await call(h, "GET", `/processes/${pid}/code`)).body).toBe(code);
    expect((await call(h, "GET", `/processes/${pid}/output`)).body).toEqual({ visits: 1, last: true });

    // State kept between runs through kv.
    expect((await call(h, "POST", `/processes/${pid}/signals/run`)).body).toEqual({ pid, state: "queued" });
    await until(async () => h.waiting.length === 2);
    (h.waiting[1] as () => void)();
    await h.service.idle();
    expect(await record(h, pid)).toMatchObject({ exitState: "success", output: { visits: 2, last: true }, runs: 2 });
    // A late subscriber of an idle process gets the record and the stream ends.
    const late = await events(await h.app.fetch(new Request(`http://host/processes/${pid}/events`)));
    expect(late.map(([e]) => e)).toEqual(["snapshot"]);
    expect((late[0] as [string, { record: ProcessRecord }])[1].record.output).toEqual({ visits: 2, last: true });
  });

  test("output readable while running; timeout; kill while queued and while awaiting a tool; every record after", async () => {
    const h = await host();
    const post = async (body: Record<string, unknown>) =>
      ((await call(h, "POST", "/processes", body)).body as { pid: number }).pid;

    const waiting = await post({
      code: `console.log("started");\ncyrnel.output({ phase: "waiting" });\nawait cyrnel.services.demo.tools.wait.invoke({});\nconsole.log("never");`,
    });
    const queued = await post({ code: `console.log("never ran");`, ref: "q" });
    await until(async () => (await record(h, waiting)).state === "running" && h.waiting.length === 1);
    expect((await call(h, "GET", `/processes/${waiting}/stdout`)).body).toBe("started\n");
    expect((await call(h, "GET", `/processes/${waiting}/output`)).body).toEqual({ phase: "waiting" });
    expect((await record(h, queued)).state).toBe("queued");

    expect((await call(h, "POST", `/processes/${queued}/signals/kill`)).body).toEqual({ pid: queued, state: "queued" });
    await until(async () => (await record(h, queued)).state === "idle");
    expect((await call(h, "POST", `/processes/${waiting}/signals/kill`)).body).toEqual({
      pid: waiting,
      state: "terminating",
    });
    await until(async () => (await record(h, waiting)).state === "idle");

    const looping = await post({ code: "let n = 0;\nwhile (true) { n++; }", timeoutMs: 300 });
    const failing = await post({ code: "const o: any = null;\nconsole.log(o.field);" });
    await h.service.idle();

    const all = ((await call(h, "GET", "/processes")).body as { processes: ProcessRecord[] }).processes;
    expect(all.map((p) => [p.pid, p.state, p.exitState, p.error])).toEqual([
      [waiting, "idle", "canceled", null],
      [queued, "idle", "canceled", null],
      [looping, "idle", "timeout", "Timeout: the process ran longer than its timeoutMs (300 ms) and was stopped"],
      [failing, "idle", "failed", "TypeError: cannot read property 'field' of null (at line 2, column 14)"],
    ]);
    expect(await record(h, waiting)).toMatchObject({ stdout: "started\n", output: { phase: "waiting" } });
    expect(await record(h, queued)).toMatchObject({ stdout: "", startedAt: null, ref: "q" });
    expect(
      ((await call(h, "GET", "/processes?exitState=canceled")).body as { processes: unknown[] }).processes,
    ).toHaveLength(2);
    expect(
      ((await call(h, "GET", "/processes?ref=q&state=idle")).body as { processes: { pid: number }[] }).processes,
    ).toEqual([expect.objectContaining({ pid: queued })]);
    expect(
      ((await call(h, "GET", "/processes?limit=1")).body as { processes: { pid: number }[] }).processes.map(
        (p) => p.pid,
      ),
    ).toEqual([waiting]);
    expect((await call(h, "DELETE", `/processes/${failing}`)).status).toBe(204);
    expect((await call(h, "GET", `/processes/${failing}`)).status).toBe(404);
    expect(((await call(h, "POST", "/processes", { code: "1" })).body as { pid: number }).pid).toBe(failing + 1);
    await h.service.idle();
  });
});

describe("POST /processes with modules (what /run's modules option takes)", () => {
  test("the code imports ./util.js (which imports a tool and another module), again when run again; the record shows them", async () => {
    const h = await host();
    const modules = {
      "./util.js": `import { greet } from "demo";\nimport { suffix } from "./lib/suffix.ts";\nexport const hello = async (name) => (await greet({ name })).greeting + suffix;`,
      "./lib/suffix.ts": `export const suffix: string = "!";`,
    };
    const code = `import { hello } from "./util.js";\nconsole.log(await hello("Ada"));`;
    const created = await call(h, "POST", "/processes", { code, modules });
    expect(created).toMatchObject({ status: 201, body: { state: "queued" } });
    const { pid } = created.body as { pid: number };
    await h.service.idle();
    expect(await record(h, pid)).toMatchObject({ exitState: "success", stdout: "hello Ada!\n", code, modules });
    expect((await call(h, "GET", "/processes")).body).toEqual({
      processes: [expect.not.objectContaining({ modules: expect.anything() })],
      next: null,
    });
    await call(h, "POST", `/processes/${pid}/signals/run`);
    await h.service.idle();
    expect(await record(h, pid)).toMatchObject({ exitState: "success", stdout: "hello Ada!\n", runs: 2 });
    // Without modules a record has no such field.
    const plain = (await call(h, "POST", "/processes", { code: "1" })).body as { pid: number };
    await h.service.idle();
    expect(Object.keys(await record(h, plain.pid))).not.toContain("modules");
  });

  test("a module's error is positioned in that module", async () => {
    const h = await host();
    const modules = { "./bad.js": "export const f = () => {\n  throw new RangeError('deep');\n};" };
    const { pid } = (await call(h, "POST", "/processes", { code: `import { f } from "./bad.js";\nf();`, modules }))
      .body as { pid: number };
    await h.service.idle();
    const r = await record(h, pid);
    // The position is the process code's, where it called into the module.
    expect([r.exitState, r.error?.split("\n")[0]]).toEqual(["failed", "RangeError: deep (at line 2, column 2)"]);
  });

  test.each([
    [
      "a bare name",
      { util: "export const a = 1;" },
      400,
      "invalid_request",
      "runCode: options.modules key 'util' must be a relative specifier such as './helpers.js'",
    ],
    [
      "a source that is not a string",
      { "./util.js": 1 },
      400,
      "invalid_request",
      "runCode: options.modules['./util.js'] must be a source string, got number",
    ],
    [
      "not an object",
      ["./util.js"],
      400,
      "invalid_request",
      "runCode: options.modules must be an object of relative specifier -> source, got an array",
    ],
    [
      "the process's own module's name",
      { "./process.ts": "1" },
      400,
      "invalid_request",
      "modules['./process.ts'] is the name the environment gives the process's own graph: rename it",
    ],
    [
      "a NUL in a source",
      { "./util.js": "1 // \0 x" },
      400,
      "invalid_request",
      'Invalid body: modules["./util.js"] contains a NUL character (U+0000)',
    ],
    [
      "a lone surrogate in a name",
      { "./\uD800.js": "1" },
      400,
      "invalid_request",
      'Invalid body: modules key "./\\ud800.js" contains a lone surrogate (U+D800)',
    ],
    [
      "too large with the code",
      { "./a.js": "x".repeat(60_000), "./b.js": "y".repeat(42_400) },
      413,
      "payload_too_large",
      "The code (its source and modules together) is larger than 102400 bytes",
    ],
  ])("%s is refused, and nothing is stored", async (_what, modules, status, code, message) => {
    const h = await host();
    expect(await call(h, "POST", "/processes", { code: "1", modules })).toEqual({
      status,
      type: "application/json",
      body: { error: { code, message } },
    });
    expect((await call(h, "GET", "/processes")).body).toEqual({ processes: [], next: null });
  });

  test("/openapi.json documents modules on the request and the record", async () => {
    const h = await host();
    type Schema = { properties: Record<string, unknown>; required?: string[]; allOf?: Schema[] };
    const { components } = (await call(h, "GET", "/openapi.json")).body as {
      components: { schemas: Record<string, Schema> };
    };
    const modules = { type: "object", additionalProperties: { type: "string" } };
    expect(components.schemas.CreateProcessRequest?.properties.modules).toMatchObject(modules);
    expect(components.schemas.ProcessRecord?.allOf?.[1]?.properties.modules).toMatchObject(modules);
    expect(components.schemas.ProcessRecord?.allOf?.[1]?.required).not.toContain("modules");
    expect(components.schemas.CreateProcessRequest?.required).toEqual(["code"]);
  });
});
