/**
 * The guest's `fetch` against real loopback servers, in-thread and on worker threads (where the worker makes the
 * requests): the allow list and its bypass attempts (a refused URL never reaches any server), redirects, every
 * limit, the timeout, and aborts (the guest's signal, the end of the run, terminate()); and that an answer reaches the
 * guest without waiting for any timer.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { createSandbox } from "../../node/index.js";
import type { FetchOptions, RunCode, SandboxOptions } from "../../src/core/types.js";
import { type LoopbackServer, type Received, startServer } from "./server.js";

let a: LoopbackServer;
let b: LoopbackServer;
beforeAll(async () => {
  [a, b] = await Promise.all([startServer(), startServer()]);
});
afterAll(async () => {
  await Promise.all([a.close(), b.close()]);
});

const MiB = 1024 * 1024;

describe.each([{ threads: false }, { threads: true }])("fetch with threads: $threads", ({ threads }) => {
  const sandbox = (fetch: Partial<FetchOptions> = {}, settings: SandboxOptions = {}): RunCode =>
    createSandbox({ threads, webApis: true, fetch: { allow: [a.origin], ...fetch }, ...settings }).runCode;

  /** The run's result, which must be a success. */
  const result = async (runCode: RunCode, source: string, globals: Record<string, unknown> = {}) => {
    const r = await runCode(source, { globals: { A: a.origin, B: b.origin, ...globals } });
    expect(r.error).toBeUndefined();
    return r.result;
  };
  /** `[name, message]` of what `fetch(url, init)` rejected with. */
  const rejection = (runCode: RunCode, url: string, init = "{}") =>
    result(runCode, `export default fetch(${url}, ${init}).then(() => "fulfilled", (e) => [e.name, e.message]);`);
  /** Paths a test waits on are its mode's own: the servers remember every request. */
  const own = (path: string) => `${path}-${threads ? "threads" : "in-thread"}`;
  const count = (server: LoopbackServer, path: string) => server.received.filter((r) => r.path === path).length;

  describe("the allow list", () => {
    it("refuses an origin off the list with a TypeError naming it, before any request", async () => {
      expect(await rejection(sandbox(), "B + '/echo/off'")).toEqual([
        "TypeError",
        `fetch: ${b.origin} is not on the sandbox's allow list`,
      ]);
      expect(count(b, "/echo/off")).toBe(0);
    });

    it("refuses userinfo that hides another host, and credentials in URLs", async () => {
      // The guest's Request refuses them (as the Fetch standard says), before the host's own check.
      const hidden = `"http://" + A.slice(7) + "@" + B.slice(7) + "/echo/userinfo"`;
      expect(await rejection(sandbox({ allow: [a.origin, b.origin] }), hidden)).toEqual([
        "TypeError",
        `Request: a URL with credentials (${b.origin}) is refused: send them in a header`,
      ]);
      expect(await rejection(sandbox(), hidden)).toEqual([
        "TypeError",
        `Request: a URL with credentials (${b.origin}) is refused: send them in a header`,
      ]);
      expect(await rejection(sandbox(), `"http://user:pw@" + A.slice(7) + "/echo/userinfo"`)).toEqual([
        "TypeError",
        `Request: a URL with credentials (${a.origin}) is refused: send them in a header`,
      ]);
      expect(count(a, "/echo/userinfo") + count(b, "/echo/userinfo")).toBe(0);
    });

    it("keeps a path prefix against dot segments, percent-encoded or not", async () => {
      const runCode = sandbox({ allow: [`${a.origin}/v1/`] });
      expect(await rejection(runCode, "A + '/v1/%2e%2e/echo/prefix'")).toEqual([
        "TypeError",
        `fetch: ${a.origin}/echo/prefix is outside the paths allowed for ${a.origin}`,
      ]);
      expect(await rejection(runCode, "A + '/v1/..%2fecho/prefix'")).toEqual([
        "TypeError",
        `fetch: ${a.origin}/v1/..%2fecho/prefix is outside the paths allowed for ${a.origin}`,
      ]);
      expect(a.received.filter((r) => r.path.includes("prefix"))).toEqual([]);
    });

    it("refuses other schemes", async () => {
      expect(await rejection(sandbox(), "'data:text/plain,hi'")).toEqual([
        "TypeError",
        "fetch: data: URLs cannot be fetched, only http: and https:",
      ]);
      expect(await rejection(sandbox(), "'file:///etc/passwd'")).toEqual([
        "TypeError",
        "fetch: file: URLs cannot be fetched, only http: and https:",
      ]);
    });

    it("refuses a relative URL: the sandbox has no base URL", async () => {
      expect(await rejection(sandbox(), "'/echo'")).toEqual([
        "TypeError",
        "Failed to parse URL from /echo: the sandbox has no base URL, use an absolute URL",
      ]);
    });
  });

  describe("requests and responses", () => {
    it("sends the method, headers and body, and reads status, headers and body", async () => {
      const source = `
        const res = await fetch(A + "/echo/round", { method: "post", headers: { "X-Id": " 7 " }, body: "héllo" });
        const echoed = await res.json();
        export default {
          status: res.status, ok: res.ok, statusText: res.statusText, type: res.type, url: res.url,
          redirected: res.redirected, contentType: res.headers.get("content-type"), bodyUsed: res.bodyUsed,
          method: echoed.method, id: echoed.headers["x-id"], sent: echoed.headers["content-type"], body: echoed.body,
        };`;
      expect(await result(sandbox(), source)).toEqual({
        status: 200,
        ok: true,
        statusText: "OK",
        type: "basic",
        url: `${a.origin}/echo/round`,
        redirected: false,
        contentType: "application/json",
        bodyUsed: true,
        method: "POST",
        id: "7",
        sent: "text/plain;charset=UTF-8",
        body: "héllo",
      });
    });

    it("sends a request without a body as it is, whether or not its URL and header values hold what JSON escapes", async () => {
      const source = `const sent = [];
        for (const [path, headers] of [
          ["/echo/plain?q=1", { "x-a": "plain", "x-b": "two words" }],
          ["/echo/escaped?q=a\\\\b", { "x-a": 'say "hi" \\\\ there', "x-t": "a\\tb" }],
          ["/echo/none", undefined],
        ]) {
          const { method, path: at, headers: got, body } = await (await fetch(A + path, { headers })).json();
          sent.push([method, at, got["x-a"] ?? null, got["x-b"] ?? null, got["x-t"] ?? null, body]);
        }
        export default sent;`;
      expect(await result(sandbox(), source)).toEqual([
        ["GET", "/echo/plain?q=1", "plain", "two words", null, ""],
        ["GET", "/echo/escaped?q=a\\b", 'say "hi" \\ there', null, "a\tb", ""],
        ["GET", "/echo/none", null, null, null, ""],
      ]);
    });

    it("sends a FormData as multipart/form-data the server parses into its fields and files", async () => {
      const path = own("/echo/form");
      const source = `const form = new FormData();
        form.append("title", "héllo"); form.append("tags", "a"); form.append("tags", "b");
        form.append("doc", new File(['{"a":1}'], "d.json", { type: "application/json" }));
        export default (await fetch(A + ${JSON.stringify(path)}, { method: "POST", body: form })).status;`;
      expect(await result(sandbox(), source)).toBe(200);
      const sent = a.received.find((r) => r.path === path) as Received;
      const type = sent.headers["content-type"] as string;
      expect(type).toMatch(/^multipart\/form-data; boundary=-+RuncodeFormBoundary[0-9a-z]{16}$/);
      const form = await new Response(sent.body, { headers: { "content-type": type } }).formData();
      const doc = form.get("doc") as File;
      expect([form.get("title"), form.getAll("tags"), doc.name, doc.type, await doc.text()]).toEqual([
        "héllo",
        ["a", "b"],
        "d.json",
        "application/json",
        '{"a":1}',
      ]);
    });

    it("gives each cookie of the response to getSetCookie", async () => {
      const source = `const res = await fetch(A + "/cookies");
        export default [res.headers.getSetCookie(), [...res.headers].filter(([name]) => name === "set-cookie")];`;
      expect(await result(sandbox(), source)).toEqual([
        ["a=1; Path=/", "b=2"],
        [
          ["set-cookie", "a=1; Path=/"],
          ["set-cookie", "b=2"],
        ],
      ]);
    });

    it("drops the headers the platform sets itself (the target host, framing, the connection)", async () => {
      const source = `const res = await fetch(A + "/echo/host", {
          method: "POST", body: "x",
          headers: { host: "internal.example", "transfer-encoding": "chunked", "content-length": "99", "x-kept": "1" },
        });
        const { headers } = await res.json();
        export default [headers.host, headers["transfer-encoding"], headers["content-length"], headers["x-kept"]];`;
      expect(await result(sandbox(), source)).toEqual([a.origin.slice(7), undefined, "1", "1"]);
    });

    it("reports a network failure as a TypeError naming the origin", async () => {
      const closed = await startServer();
      await closed.close();
      const [name, message] = (await rejection(sandbox({ allow: [closed.origin] }), `"${closed.origin}/"`)) as string[];
      expect([
        name,
        message?.startsWith(`fetch: ${closed.origin} failed: `),
        message?.includes("ECONNREFUSED"),
      ]).toEqual(["TypeError", true, true]);
    });
  });

  describe("redirects", () => {
    const to = (status: number, target: string) => `A + "/redirect/${status}?to=" + encodeURIComponent(${target})`;

    it("are followed within the list", async () => {
      const source = `const res = await fetch(${to(302, '"/echo/followed"')});
        export default [res.status, res.redirected, res.url, (await res.json()).path];`;
      expect(await result(sandbox(), source)).toEqual([200, true, `${a.origin}/echo/followed`, "/echo/followed"]);
    });

    it("to an origin off the list are refused, and that origin is never reached", async () => {
      expect(await rejection(sandbox(), to(302, 'B + "/echo/redirected-off"'))).toEqual([
        "TypeError",
        `fetch: a redirect to ${b.origin} is not on the sandbox's allow list`,
      ]);
      expect(count(b, "/echo/redirected-off")).toBe(0);
    });

    it("turn a 303, or a POST's 301 or 302, into a GET without its body; 307 and 308 keep both", async () => {
      const sent = (status: number) => `fetch(${to(status, '"/echo/method"')}, {
          method: "POST", body: "payload", headers: { "content-type": "text/x" } })
        .then((res) => res.json()).then((e) => [e.method, e.body, e.headers["content-type"] ?? null])`;
      const source = `export default Promise.all([${[301, 302, 303, 307, 308].map(sent).join(", ")}]);`;
      expect(await result(sandbox(), source)).toEqual([
        ["GET", "", null],
        ["GET", "", null],
        ["GET", "", null],
        ["POST", "payload", "text/x"],
        ["POST", "payload", "text/x"],
      ]);
    });

    it("keep credentials with their origin", async () => {
      const runCode = sandbox({ allow: [a.origin, b.origin] });
      const headers = `{ headers: { authorization: "Bearer s", cookie: "k=v", "x-other": "1" } }`;
      const source = (target: string) => `const res = await fetch(${to(307, target)}, ${headers});
        const { headers: got } = await res.json();
        export default [got.authorization ?? null, got.cookie ?? null, got["x-other"]];`;
      expect(await result(runCode, source('B + "/echo/cross"'))).toEqual([null, null, "1"]);
      expect(await result(runCode, source('A + "/echo/same"'))).toEqual(["Bearer s", "k=v", "1"]);
    });

    it("stop after 20", async () => {
      const before = count(a, "/loop");
      expect(await rejection(sandbox(), 'A + "/loop"')).toEqual(["TypeError", "fetch: more than 20 redirects"]);
      expect(count(a, "/loop") - before).toBe(21);
    });

    it('are answered as they are with redirect: "manual", and refused with "error"', async () => {
      const source = `const res = await fetch(${to(302, '"/echo/manual"')}, { redirect: "manual" });
        export default [res.status, res.redirected, res.headers.get("location")];`;
      expect(await result(sandbox(), source)).toEqual([302, false, "/echo/manual"]);
      expect(await rejection(sandbox(), to(302, '"/echo/error"'), '{ redirect: "error" }')).toEqual([
        "TypeError",
        `fetch: ${a.origin} redirects, and the request's redirect is "error"`,
      ]);
      expect(count(a, "/echo/error")).toBe(0);
    });
  });

  describe("limits", () => {
    it("counts requests per run, redirects included", async () => {
      const runCode = sandbox({ maxRequests: 3 });
      const source = `const outcomes = [];
        for (const path of ["/redirect/302?to=%2Fecho%2Fcounted", "/echo/counted", "/echo/counted"]) {
          outcomes.push(await fetch(A + path).then((res) => res.status, (e) => [e.name, e.message]));
        }
        export default outcomes;`;
      const before = count(a, "/echo/counted");
      expect(await result(runCode, source)).toEqual([
        200,
        200,
        ["RangeError", "fetch: the run made its 3 requests (fetch.maxRequests, redirects included)"],
      ]);
      expect(count(a, "/echo/counted") - before).toBe(2);
      // The next run counts from zero.
      expect(await result(runCode, 'export default (await fetch(A + "/echo/counted")).status')).toBe(200);
    });

    it("bounds a request's body before sending it", async () => {
      const runCode = sandbox({ maxRequestBytes: 1000 });
      const post = (bytes: number) => `fetch(A + "/echo/upload", { method: "POST", body: new Uint8Array(${bytes}) })`;
      const before = count(a, "/echo/upload");
      expect(await rejection(runCode, `A + "/echo/upload"`, '{ method: "POST", body: new Uint8Array(1001) }')).toEqual([
        "RangeError",
        "fetch: the request body exceeds 1000 bytes (fetch.maxRequestBytes)",
      ]);
      expect(count(a, "/echo/upload")).toBe(before);
      expect(await result(runCode, `export default (await ${post(1000)}).status`)).toBe(200);
    });

    it("bounds a request's URL and headers before sending it", async () => {
      expect(
        await rejection(sandbox({ maxHeaderBytes: 2000 }), 'A + "/echo/head"', '{ headers: { x: "v".repeat(2000) } }'),
      ).toEqual(["RangeError", "fetch: the request's URL and headers exceed 2000 bytes (fetch.maxHeaderBytes)"]);
      expect(count(a, "/echo/head")).toBe(0);
    });

    it("counts a streamed response body and drops the response past its cap", async () => {
      const runCode = sandbox({ maxResponseBytes: 100_000 });
      // More than loopback's buffers hold, so the server is still writing when the host drops the response.
      const endless = own(`/bytes/${1024 * MiB}/`);
      expect(await rejection(runCode, `A + "${endless}"`)).toEqual([
        "RangeError",
        `fetch: the response body of ${a.origin} exceeds 100000 bytes (fetch.maxResponseBytes)`,
      ]);
      await a.dropped(endless);
      const source = `export default (await (await fetch(A + "/bytes/100000")).arrayBuffer()).byteLength`;
      expect(await result(runCode, source)).toBe(100_000);
    });

    it("counts a compressed body as it decompresses: a gzip or brotli bomb is dropped at the cap", async () => {
      const runCode = sandbox();
      for (const coding of ["gzip", "br"]) {
        // 64 MiB that arrives as some tens of kilobytes.
        expect(await rejection(runCode, `A + "/${coding}/${64 * MiB}"`)).toEqual([
          "RangeError",
          `fetch: the response body of ${a.origin} exceeds ${8 * MiB} bytes (fetch.maxResponseBytes)`,
        ]);
        const source = `export default (await (await fetch(A + "/${coding}/100000")).text()).length`;
        expect(await result(runCode, source)).toBe(100_000);
      }
    });

    it("refuses a declared body over the cap before reading it", async () => {
      expect(await rejection(sandbox({ maxResponseBytes: 100_000 }), 'A + "/declared/100001"')).toEqual([
        "RangeError",
        `fetch: the response body of ${a.origin} exceeds 100000 bytes (fetch.maxResponseBytes)`,
      ]);
    });

    it("counts response bodies being read against the run's memory limit", async () => {
      const r = await sandbox()(`export default fetch(A + "/bytes/${6 * MiB}").catch((e) => [e.name, e.message])`, {
        globals: { A: a.origin },
        memoryLimitBytes: 4 * MiB,
      });
      expect(r.result).toEqual([
        "RangeError",
        `fetch: the responses being read exceed the run's memory limit (${4 * MiB} bytes)`,
      ]);
    });

    it("bounds a response's headers", async () => {
      expect(await rejection(sandbox({ maxHeaderBytes: 2000 }), 'A + "/headers/5/1000"')).toEqual([
        "RangeError",
        `fetch: the response headers of ${a.origin} exceed 2000 bytes (fetch.maxHeaderBytes)`,
      ]);
    });

    // "/hang" answers nothing; "/stall" its head and a tenth of its body.
    it.each(["/hang", "/stall"])("times each request out, and aborts it (%s)", async (path) => {
      expect(await rejection(sandbox({ timeoutMs: 200 }), `A + "${own(`${path}/timeout`)}"`)).toEqual([
        "TimeoutError",
        `fetch: ${a.origin} did not answer within 200 ms (fetch.timeoutMs)`,
      ]);
      await a.dropped(own(`${path}/timeout`));
    });

    it.runIf(!threads)("times requests out with a frozen clock", async () => {
      const runCode = sandbox({ timeoutMs: 200 }, { clock: () => 0 });
      expect(await rejection(runCode, 'A + "/hang/frozen"')).toEqual([
        "TimeoutError",
        `fetch: ${a.origin} did not answer within 200 ms (fetch.timeoutMs)`,
      ]);
    });
  });

  describe("aborts", () => {
    it("terminate() aborts the requests in flight", async () => {
      const run = sandbox()(`await fetch(A + "${own("/hang/terminate")}");`, { globals: { A: a.origin } });
      await a.arrived(own("/hang/terminate"));
      run.terminate("enough");
      expect((await run).status).toBe("terminated");
      await a.dropped(own("/hang/terminate"));
    });

    it("the end of the run aborts the requests it left in flight", async () => {
      // The run ends once the server has the request, so that it is in flight then, however loaded the machine.
      const source = `fetch(A + "${own("/hang/left")}").catch(() => {});\nawait arrived();\nexport default 1;`;
      const arrived = () => a.arrived(own("/hang/left"));
      expect(await result(sandbox(), source, { arrived })).toBe(1);
      await a.dropped(own("/hang/left"));
    });

    it.each(["/hang", "/stall"])(
      "the guest's signal aborts its request with the signal's reason (%s)",
      async (path) => {
        const source = `
        const controller = new AbortController();
        const pending = fetch(A + "${own(`${path}/signal`)}", { signal: controller.signal });
        await arrived();
        controller.abort(new Error("changed my mind"));
        export default await pending.then(() => "fulfilled", (e) => e.message);`;
        const arrived = () => a.arrived(own(`${path}/signal`));
        expect(await result(sandbox(), source, { arrived })).toBe("changed my mind");
        await a.dropped(own(`${path}/signal`));
      },
    );
  });
});

describe("the answer's way back", () => {
  it("resumes the guest within the host's promise jobs: 20 requests and their bodies with every timer frozen", async () => {
    const allow = ["https://api.example.com"];
    const answer = async () => new Response('{"ok":true}', { headers: { "content-type": "application/json" } });
    const { runCode } = createSandbox({ threads: false, webApis: true, fetch: { allow, fetch: answer } });
    // Warm: the pool's instances and the engine's code are ready before the timers stop.
    expect((await runCode("export default 0")).result).toBe(0);
    const source = `let oks = 0;
      for (let i = 0; i < 20; i++) oks += (await (await fetch("${allow[0]}/small")).json()).ok ? 1 : 0;
      export default oks;`;
    vi.useFakeTimers({
      toFake: [
        "setTimeout",
        "clearTimeout",
        "setInterval",
        "clearInterval",
        "setImmediate",
        "clearImmediate",
        "performance",
        "Date",
      ],
    });
    try {
      expect((await runCode(source)).result).toBe(20);
      expect(vi.getTimerCount()).toBe(0);
    } finally {
      vi.useRealTimers();
    }
  });
});

describe("settings", () => {
  const allow = ["https://api.example.com"];

  it("no fetch unless the host sets one, no Headers unless webApis", async () => {
    const source = "export default [typeof fetch, typeof Headers, typeof Request, typeof Response]";
    const run = (settings: SandboxOptions) => createSandbox({ threads: false, ...settings }).runCode(source);
    expect((await run({})).result).toEqual(["undefined", "undefined", "undefined", "undefined"]);
    expect((await run({ webApis: true })).result).toEqual(["undefined", "function", "function", "function"]);
    expect((await run({ webApis: true, fetch: { allow } })).result).toEqual([
      "function",
      "function",
      "function",
      "function",
    ]);
  });

  it("are checked when the sandbox is made", () => {
    const cases: [SandboxOptions, string][] = [
      [{ fetch: { allow } }, "createSandbox: fetch needs webApis: true (the guest's Request, Response and Headers)"],
      [{ webApis: "yes" as never }, "createSandbox: webApis must be a boolean"],
      [{ webApis: true, fetch: [] as never }, "createSandbox: fetch must be an object { allow: [origins], ... }"],
      [
        { webApis: true, fetch: { allow: [] } },
        "createSandbox: fetch.allow must list at least one origin, such as 'https://api.example.com'",
      ],
      [
        { webApis: true, fetch: { allow, maxBytes: 1 } as never },
        "createSandbox: fetch has no setting 'maxBytes' (it has allow, fetch, maxRequests, maxRequestBytes, maxResponseBytes, maxHeaderBytes, timeoutMs)",
      ],
      [
        { webApis: true, fetch: { allow, maxRequests: 0 } },
        "createSandbox: fetch.maxRequests must be a positive integer, got 0",
      ],
      [
        { webApis: true, fetch: { allow, timeoutMs: 1.5 } },
        "createSandbox: fetch.timeoutMs must be a positive integer, got 1.5",
      ],
      [
        { webApis: true, fetch: { allow, fetch: 1 as never } },
        "createSandbox: fetch.fetch must be a function (the platform has no global fetch)",
      ],
    ];
    for (const [settings, message] of cases) {
      expect(() => createSandbox({ threads: false, ...settings })).toThrow(new TypeError(message));
      expect(() => createSandbox({ threads: true, ...settings })).toThrow(new TypeError(message));
    }
  });

  it("an injected fetch needs threads: false (it is a function of the caller's thread)", () => {
    expect(() => createSandbox({ webApis: true, fetch: { allow, fetch: globalThis.fetch } })).toThrow(
      new TypeError("createSandbox: fetch.fetch cannot cross to a worker thread; pass threads: false to use it"),
    );
  });
});

describe("fetch(url) and text(), on their short paths", () => {
  const origin = "https://api.example.com";
  /** A sandbox whose injected fetch answers each request with `body` and keeps what it was asked. */
  const answering = (body: Uint8Array<ArrayBuffer>) => {
    const asked: { url: string; method: string; headers: [string, string][]; redirect: string }[] = [];
    const fetch = async (url: string, init: RequestInit) => {
      asked.push({
        url,
        method: init.method as string,
        headers: init.headers as [string, string][],
        redirect: init.redirect as string,
      });
      return new Response(body, { headers: { "content-type": "text/plain" } });
    };
    const { runCode } = createSandbox({ threads: false, webApis: true, fetch: { allow: [origin], fetch } });
    return { runCode, asked };
  };
  const bytes = (...parts: (string | number[])[]): Uint8Array<ArrayBuffer> =>
    new Uint8Array(
      Buffer.concat(parts.map((part) => (typeof part === "string" ? Buffer.from(part) : Buffer.from(part)))),
    );

  it("decodes a body as the Encoding standard's UTF-8 decode, on either side of the ASCII path's 8,192 bytes", async () => {
    const cases: [Uint8Array<ArrayBuffer>, string][] = [
      [bytes(""), ""],
      [bytes('{"ok":true}'), '{"ok":true}'],
      [bytes([0xef, 0xbb, 0xbf], "bom"), "bom"],
      [bytes("h", [0xc3, 0xa9], "llo"), "héllo"],
      [bytes("a", [0x80], "b"), "a\ufffdb"],
      [bytes("x".repeat(8192)), "x".repeat(8192)],
      [bytes("x".repeat(8193)), "x".repeat(8193)],
      [bytes("x".repeat(8191), [0xc3, 0xa9]), `${"x".repeat(8191)}é`],
    ];
    for (const [body, text] of cases) {
      const { runCode } = answering(body);
      const r = await runCode(`export default await (await fetch("${origin}/t")).text();`);
      expect([r.error, r.result]).toEqual([undefined, text]);
    }
  });

  it("sends for fetch(url) what it sends for fetch(new Request(url)), and refuses the same URLs alike", async () => {
    const { runCode, asked } = answering(bytes("{}"));
    const source = `const url = "${origin}/p?q=1";
      const [a, b] = [await fetch(url), await fetch(new Request(url))];
      const refusals = [];
      for (const bad of ["/relative", "https://u:p@api.example.com/", "http://[::1"]) {
        refusals.push(await fetch(bad).then(() => "fulfilled", (e) => [e.name, e.message]));
        refusals.push(await fetch(new Request("${origin}/")).then(() => new Request(bad)).then(() => "made", (e) => [e.name, e.message]));
      }
      export default { a: [a.status, a.url, a.type, a.redirected, [...a.headers]], b: [b.status, b.url, b.type, b.redirected, [...b.headers]], refusals };`;
    const r = await runCode(source);
    expect(r.error).toBeUndefined();
    const { a, b, refusals } = r.result as { a: unknown; b: unknown; refusals: unknown[] };
    expect(a).toEqual([200, `${origin}/p?q=1`, "basic", false, [["content-type", "text/plain"]]]);
    expect(b).toEqual(a);
    expect(asked[0]).toEqual({ url: `${origin}/p?q=1`, method: "GET", headers: [], redirect: "manual" });
    expect(asked[1]).toEqual(asked[0]);
    for (let i = 0; i < refusals.length; i += 2) expect(refusals[i]).toEqual(refusals[i + 1]);
    expect(refusals[2]).toEqual([
      "TypeError",
      "Request: a URL with credentials (https://api.example.com) is refused: send them in a header",
    ]);
  });
});
