/**
 * `POST /run` in Node: its body (read once, checked against the schema `/openapi.json` shows), its time limit, and
 * its answer as Server-Sent Events (log and report events as they happen, then the result), within the answer's
 * length and released when its client goes away.
 */
import { createServer } from "node:http";
import { type AddressInfo, connect } from "node:net";
import SwaggerParser from "@apidevtools/swagger-parser";
import { getRequestListener } from "@hono/node-server";
import { afterEach, describe, expect, it, vi } from "vitest";
import { createSandbox } from "../../../node/index.js";
import type { AdmissionCaps } from "../../../src/host/admission/run-admission.js";
import { createHost } from "../../../src/host/index.js";
import type { JsonValue } from "../../../src/values/json.js";
import { fromWire } from "../../../src/values/wire.js";
import { gateService } from "../gate.js";
import { sseEvents } from "../sse.js";

const HOLD = `import { hold } from "gate";`;

/** An anonymous host whose runs may import `gate`, which holds them until the test releases them. */
async function gatedHost(admission: Partial<AdmissionCaps> = {}) {
  const { gate, held } = gateService();
  const { runCode } = createSandbox({ threads: false });
  const { app } = await createHost({
    services: [gate],
    app: { run: { runCode, defaultMemoryLimitBytes: 32 * 1024 * 1024, admission } },
  });
  /** Posts `body` as JSON, or as it is when it is a string. */
  const post = (body: unknown, headers: Record<string, string> = {}, signal?: AbortSignal) =>
    app.fetch(
      new Request("http://host/run", {
        method: "POST",
        headers: { "content-type": "application/json", ...headers },
        body: typeof body === "string" ? body : JSON.stringify(body),
        ...(signal === undefined ? {} : { signal }),
      }),
    );
  const stream = (body: unknown) => post(body, { accept: "text/event-stream" });
  const heldBy = async (count: number) => {
    while (held.length < count) await new Promise((resolve) => setTimeout(resolve, 5));
  };
  return { app, post, stream, held, heldBy };
}

const decoded = async (response: Response) => fromWire((await response.json()) as JsonValue) as Record<string, unknown>;

describe("POST /run: its body", () => {
  afterEach(() => {
    vi.restoreAllMocks();
  });

  it("is read and parsed once, by the host's bounded reader: nothing asks the request or a copy for it again", async () => {
    const { post } = await gatedHost();
    const body = { source: "export default 6 * 7", timeoutMs: 5_000 };
    const text = JSON.stringify(body);
    const parse = vi.spyOn(JSON, "parse");
    const reads = [
      vi.spyOn(Request.prototype, "json"),
      vi.spyOn(Request.prototype, "text"),
      vi.spyOn(Request.prototype, "arrayBuffer"),
      vi.spyOn(Response.prototype, "json"),
      vi.spyOn(Response.prototype, "text"),
    ];
    const response = await post(body);
    const parsedBody = parse.mock.calls.filter(([parsed]) => parsed === text).length;
    const readsAsked = reads.reduce((sum, spy) => sum + spy.mock.calls.length, 0);
    vi.restoreAllMocks();
    // Before: the route's validator asked Hono for the JSON again, which parsed a copy of the text a second time.
    expect([response.status, parsedBody, readsAsked]).toEqual([200, 1, 0]);
    expect((await decoded(response)).result).toBe(42);
  });

  it("is documented in /openapi.json by the schema it is checked against: every field, timeoutMs included, no other", async () => {
    const { app } = await gatedHost();
    const document = (await (await app.fetch(new Request("http://host/openapi.json"))).json()) as {
      components: { schemas: Record<string, unknown> };
    };
    await SwaggerParser.validate(structuredClone(document) as never);
    expect(document.components.schemas.RunRequest).toEqual({
      type: "object",
      description: "Code to run once.",
      properties: {
        source: { type: "string", description: "JavaScript or TypeScript: a script or an ES module." },
        options: {
          type: "object",
          additionalProperties: {},
          description:
            "The data-only options of runCode: execute, modules, globals, language, memoryLimitBytes, filename. Values JSON cannot carry use the wire encoding.",
        },
        timeoutMs: {
          type: "integer",
          minimum: 1,
          maximum: 600_000,
          description: "Milliseconds the run may take, awaits included: 1 to 600000. Default 30000.",
        },
      },
      required: ["source"],
      additionalProperties: false,
    });
  });

  it.each([
    ["[]", "Invalid body: Invalid input: expected object, received array"],
    ['"s"', "Invalid body: Invalid input: expected object, received string"],
    ["{}", "Invalid body: source: Invalid input: expected string, received undefined"],
    ['{"source":1,"x":1}', "Invalid body: source: Invalid input: expected string, received number"],
    ['{"source":"1","options":[]}', "Invalid body: options: Invalid input: expected record, received array"],
    ['{"source":"1","x":1}', "Unknown field 'x': the body is {source, options?, timeoutMs?}"],
    ['{"source":"1","x":1,"timeoutMs":0}', "Unknown field 'x': the body is {source, options?, timeoutMs?}"],
    [
      '{"source":"1","options":{"__proto__":{"x":1}}}',
      "Unknown or non-data option '__proto__': a run takes execute, modules, globals, language, memoryLimitBytes, filename",
    ],
  ])("%s is a 400 naming what is wrong, and nothing runs", async (body, message) => {
    const { post, held } = await gatedHost();
    const response = await post(body);
    expect([response.status, await response.json(), held.length]).toEqual([
      400,
      { error: { code: "invalid_request", message } },
      0,
    ]);
  });
});

describe("POST /run: timeoutMs", () => {
  it("stops a run that awaits the host at its figure, with the message every door gives", async () => {
    const { post } = await gatedHost();
    const response = await post({ source: `${HOLD} await hold({});`, timeoutMs: 200 });
    expect([response.status, (await decoded(response)).error]).toEqual([
      200,
      { name: "TerminatedError", message: "The run's time limit of 200 ms ran out" },
    ]);
  });

  it.each([
    ["0", 0],
    ["negative", -5],
    ["fractional", 1.5],
    ["a string", "100"],
    ["null", null],
    ["over the cap", 600_001],
  ])("%s is a 400 that says what it may be, and nothing runs", async (_what, timeoutMs) => {
    const { post, held } = await gatedHost();
    const response = await post({ source: `${HOLD} await hold({});`, timeoutMs });
    expect([response.status, await response.json(), held.length]).toEqual([
      400,
      { error: { code: "invalid_request", message: "timeoutMs must be an integer from 1 to 600000" } },
      0,
    ]);
  });
});

describe("POST /run: an answer its client has not read", () => {
  // One run at the default limit takes the whole budget; the next waits at most 300 ms for room.
  const one = { memoryBudgetBytes: 36 * 1024 * 1024, tenantShare: 1, maxWaitMs: 300 };
  const LARGE = { source: "export default 'x'.repeat(200_000)" };
  const overloaded = async (response: Response) => [
    response.status,
    ((await response.json()) as { error: { code: string } }).error.code,
  ];

  it("keeps its run's room until the client has read it, as JSON or as an event stream; a small one does not", async () => {
    // Before: the room went back when the run ended, so a client that read nothing kept answer after answer in the
    // host's memory, each tens of megabytes at most, as long as it kept its connections.
    const { post, stream } = await gatedHost(one);
    const unread = await post(LARGE);
    expect(unread.status).toBe(200);
    expect(await overloaded(await post({ source: "export default 2" }))).toEqual([503, "overloaded"]);
    expect((await decoded(unread)).result).toBe("x".repeat(200_000));
    expect((await decoded(await post({ source: "export default 3" }))).result).toBe(3);
    const events = await stream(LARGE);
    expect(await overloaded(await post({ source: "export default 4" }))).toEqual([503, "overloaded"]);
    await events.text();
    expect((await decoded(await post({ source: "export default 5" }))).result).toBe(5);
    // An answer of 64 KiB or less goes out whole, its room given back at once.
    const small = await post({ source: "export default 'x'.repeat(60_000)" });
    expect((await decoded(await post({ source: "export default 6" }))).result).toBe(6);
    expect((await decoded(small)).result).toBe("x".repeat(60_000));
  });

  it("gives the room back when the client goes away before reading it all, over a Node HTTP server", async () => {
    const { app, post } = await gatedHost(one);
    const server = createServer(getRequestListener(app.fetch));
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    try {
      const { port } = server.address() as AddressInfo;
      const body = JSON.stringify({ source: "export default 'x'.repeat(5_000_000)" });
      const head = `POST /run HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: ${body.length}`;
      // The client reads the first bytes of the answer, then goes away.
      await new Promise<void>((resolve) => {
        const socket = connect(port, "127.0.0.1", () => socket.write(`${head}\r\n\r\n${body}`));
        socket.once("data", () => {
          socket.destroy();
          resolve();
        });
      });
      for (;;) {
        const next = await post({ source: "export default 7" });
        if (next.status === 200) return expect((await decoded(next)).result).toBe(7);
        expect(await overloaded(next)).toEqual([503, "overloaded"]);
      }
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });
});

describe("POST /run with Accept: text/event-stream", () => {
  it("log and report events in the wire encoding, in the order the guest made them, then the answer as a result event", async () => {
    const { post, stream } = await gatedHost();
    const source =
      "console.log('a', 1n);\nreport(new Map([[1, -0]]));\nconsole.warn({ u: undefined });\nexport default 7n;";
    const response = await stream({ source });
    expect([response.status, response.headers.get("content-type")]).toEqual([200, "text/event-stream; charset=utf-8"]);
    const events = sseEvents(await response.text());
    expect(events.map(([type, data]) => [type, type === "log" ? { ...data, timestamp: 0 } : data])).toEqual([
      ["log", { level: "log", args: ["a", { $t: "bigint", v: "1" }], timestamp: 0 }],
      ["report", { $t: "map", v: [[1, { $t: "number", v: "-0" }]] }],
      ["log", { level: "warn", args: [{ u: { $t: "undefined" } }], timestamp: 0 }],
      ["result", expect.objectContaining({ status: "success", result: { $t: "bigint", v: "7" } })],
    ]);
    // The result event is what the JSON answer is (but for times, and the fuel of the pool's first run, which boots).
    const {
      durationMs: _d,
      fuelUsed: _f,
      ...result
    } = fromWire(events[3]?.[1] as JsonValue) as Record<string, unknown>;
    const { durationMs: _e, fuelUsed: _g, ...answer } = await decoded(await post({ source }));
    expect({ ...result, logs: [] }).toEqual({ ...answer, logs: [] });
    expect((result.logs as { args: unknown[] }[]).map((log) => log.args)).toEqual([["a", 1n], [{ u: undefined }]]);
  });

  it("the headers come once the run starts and each event as it happens, before the run ends", async () => {
    const { stream, held, heldBy } = await gatedHost();
    const response = await stream({
      source: `${HOLD}\nconsole.log("before");\nawait hold({});\nconsole.log("after");\nexport default 1;`,
    });
    expect(response.status).toBe(200);
    const reader = (response.body as ReadableStream<Uint8Array>).getReader();
    const decoder = new TextDecoder();
    let text = "";
    for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) {
      text += decoder.decode(chunk.value, { stream: true });
      if (text.endsWith("\n\n")) break;
    }
    expect(sseEvents(text).map(([type, data]) => [type, data.args])).toEqual([["log", ["before"]]]);
    await heldBy(1);
    (held.pop() as () => void)();
    for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) text += decoder.decode(chunk.value);
    expect(sseEvents(text).map(([type, data]) => [type, data.args ?? data.status])).toEqual([
      ["log", ["before"]],
      ["log", ["after"]],
      ["result", "success"],
    ]);
  });

  it("a refusal comes before any stream, with its own status", async () => {
    const { stream } = await gatedHost();
    const response = await stream({ source: "export default 1", options: { imports: {} } });
    expect([response.status, response.headers.get("content-type"), await response.json()]).toEqual([
      400,
      "application/json",
      {
        error: {
          code: "invalid_request",
          message:
            "Unknown or non-data option 'imports': a run takes execute, modules, globals, language, memoryLimitBytes, filename",
        },
      },
    ]);
  });

  it("a client that goes away stops the run, whose room is free for the next at once", async () => {
    // One run at the default limit takes the whole budget; the next waits at most 300 ms for it.
    const { post, stream, held, heldBy } = await gatedHost({
      memoryBudgetBytes: 36 * 1024 * 1024,
      tenantShare: 1,
      maxWaitMs: 300,
    });
    const response = await stream({ source: `${HOLD} await hold({}); export default 1;` });
    expect(response.headers.get("content-type")).toBe("text/event-stream; charset=utf-8");
    await heldBy(1);
    await (response.body as ReadableStream<Uint8Array>).cancel();
    const next = await post({ source: "export default 2" });
    expect([next.status, (await decoded(next)).result, held.length]).toEqual([200, 2, 1]);
  });

  it("events stop before their texts together pass the answer's length; the result says the answer is too long", async () => {
    const { stream } = await gatedHost();
    const memoryLimitBytes = 4 * 1024 * 1024;
    // Each entry holds 1.2 MB of the host's memory and takes 1.6 million characters in the wire encoding (base64).
    const source =
      "const bytes = new Uint8Array(1_200_000);\nfor (let i = 0; i < 3; i++) console.log(bytes);\nexport default 0;";
    const events = sseEvents(await (await stream({ source, options: { memoryLimitBytes } })).text());
    const logs = events.filter(([type]) => type === "log");
    const sent = logs.reduce((sum, [, data]) => sum + JSON.stringify(data).length, 0);
    expect([logs.length, sent <= memoryLimitBytes]).toEqual([2, true]);
    expect(events.at(-1)).toEqual([
      "result",
      expect.objectContaining({
        status: "memory",
        error: {
          name: "MemoryError",
          message: `The run ended 'success', but its result, reports and logs take more than ${memoryLimitBytes} characters of JSON to send`,
        },
      }),
    ]);
  });
});
