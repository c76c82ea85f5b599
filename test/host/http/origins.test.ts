/**
 * The browser's tricks against a host on loopback, as `npm start` serves it (anonymous, `http://127.0.0.1:8787`): a
 * page of another origin sending a request that needs no preflight (a kill with no body, a form post), a DNS-rebound
 * page reaching the host under the attacker's name and setting `Host` and `Origin` alike. The host's own origins come
 * from its configuration; every request must name one of them in `Host`, and an unsafe method must come from one of
 * them or from an origin on the CORS list. e2e/abuse.spec.ts sends the same requests to `wrangler dev`.
 */
import { describe, expect, test } from "vitest";
import { createSandbox } from "../../../node/index.js";
import { instantiate } from "../../../src/environment/index.js";
import { accessFrom } from "../../../src/host/http/auth.js";
import { originOf } from "../../../src/host/http/origins.js";
import { createHost } from "../../../src/host/index.js";
import { inThread, wasm } from "../../environment/helpers.js";

const OWN = ["http://127.0.0.1:8787", "http://localhost:8787", "http://[::1]:8787"];

async function host(app: { origins?: string[]; corsOrigins?: string[] } = { origins: OWN }) {
  const { runCode } = createSandbox({ threads: false, wasm: await wasm(), safetyCap: { cpuTimeMs: 2_000 } });
  return createHost({
    environment: { module: instantiate({ wasm: await wasm(), createSandbox: inThread, concurrency: 2 }) },
    app: {
      access: await accessFrom({ allowAnonymous: true }),
      run: { runCode, defaultMemoryLimitBytes: 32 * 1024 * 1024 },
      fallback: () => new Response("<!doctype html>the playground"),
      ...app,
    },
  });
}
type Host = Awaited<ReturnType<typeof host>>;

/** A request to `h` as a browser would send it: `Host`, and whatever `Origin` and `Sec-Fetch-Site` it sets. */
async function send(h: Host, method: string, path: string, headers: Record<string, string>, body?: unknown) {
  const init: RequestInit & { headers: Record<string, string> } = { method, headers: { ...headers } };
  if (body !== undefined) {
    init.body = JSON.stringify(body);
    init.headers["content-type"] = "application/json";
  }
  const response = await h.app.fetch(new Request(`http://127.0.0.1:8787${path}`, init));
  const text = await response.text();
  return { status: response.status, body: text.startsWith("{") ? (JSON.parse(text) as unknown) : text };
}

const refusal = (code: string, message: string) => ({ error: { code, message } });
const LOOPBACK = { host: "127.0.0.1:8787" };

describe("Host: only the names the host is for", () => {
  test("a DNS-rebound page (Host and Origin its own) reads nothing, runs nothing, and sees no playground", async () => {
    const h = await host();
    const created = await send(h, "POST", "/processes", LOOPBACK, { code: "cyrnel.output({ secret: 42 })" });
    expect(created.status).toBe(201);
    const { pid } = created.body as { pid: number };
    const rebound = { host: "rebound.example:8787", origin: "http://rebound.example:8787" };
    const misdirected = refusal(
      "misdirected_request",
      'Host "rebound.example:8787" is not a name this server answers for',
    );
    for (const [method, path, body] of [
      ["GET", "/processes"],
      ["GET", `/processes/${pid}`],
      ["GET", `/processes/${pid}/output`],
      ["GET", "/openapi.json"],
      ["GET", "/"],
      ["POST", "/run", { source: "export default 1" }],
      ["POST", "/mcp", { jsonrpc: "2.0", id: 1, method: "tools/list" }],
      ["POST", `/processes/${pid}/signals/run`],
      ["OPTIONS", "/run"],
    ] as const) {
      expect([method, path, await send(h, method, path, rebound, body)]).toEqual([
        method,
        path,
        { status: 421, body: misdirected },
      ]);
    }
    expect((await h.service.get(pid))?.runs).toBe(1);
  });

  test("every loopback name of the configured port passes, in any case; another port or a bare name does not", async () => {
    const h = await host();
    for (const name of ["127.0.0.1:8787", "LOCALHOST:8787", "[::1]:8787"]) {
      expect([name, (await send(h, "GET", "/processes", { host: name })).status]).toEqual([name, 200]);
    }
    for (const name of ["127.0.0.1:8788", "localhost", "127.0.0.1"]) {
      expect([name, (await send(h, "GET", "/processes", { host: name })).status]).toEqual([name, 421]);
    }
  });

  test("a request made in-process without a Host header is judged by its URL's host", async () => {
    const h = await host();
    expect((await h.app.fetch(new Request("http://localhost:8787/processes"))).status).toBe(200);
    expect((await h.app.fetch(new Request("http://rebound.example/processes"))).status).toBe(421);
  });

  test("configured origins must be origins: a path, a bare name or a typo is refused when the app is made", async () => {
    for (const bad of [
      "https://runcode.example/app",
      "runcode.example",
      "https://",
      "null",
      "https://u@runcode.example",
    ]) {
      await expect(host({ origins: [bad] }), bad).rejects.toThrow(
        `origins: ${JSON.stringify(bad)} is not an origin like https://runcode.example.com`,
      );
    }
    expect(originOf("HTTPS://Runcode.Example:443/", "RUNCODE_ORIGINS")).toBe("https://runcode.example");
  });
});

describe("unsafe methods: only from the host's own pages or the CORS list", () => {
  test("a foreign page cannot kill a running process with a body-less POST (no preflight), nor run one again", async () => {
    const h = await host();
    const created = await send(h, "POST", "/processes", LOOPBACK, { code: "while (true) {}", timeoutMs: 60_000 });
    expect(created.status).toBe(201);
    const { pid } = created.body as { pid: number };
    const foreign = { ...LOOPBACK, origin: "https://evil.example", "sec-fetch-site": "cross-site" };
    const forbidden = (method: string) =>
      refusal("forbidden_origin", `Origin "https://evil.example" may not ${method} here`);
    expect(await send(h, "POST", `/processes/${pid}/signals/kill`, foreign)).toEqual({
      status: 403,
      body: forbidden("POST"),
    });
    expect(await send(h, "POST", `/processes/${pid}/signals/run`, foreign)).toEqual({
      status: 403,
      body: forbidden("POST"),
    });
    expect(await send(h, "DELETE", `/processes/${pid}`, foreign)).toEqual({ status: 403, body: forbidden("DELETE") });
    expect(await send(h, "POST", "/run", foreign, { source: "export default 1" })).toEqual({
      status: 403,
      body: forbidden("POST"),
    });
    expect((await h.service.get(pid))?.state).toBe("running");
    // The host's own page (the playground) kills it.
    const own = { ...LOOPBACK, origin: "http://127.0.0.1:8787", "sec-fetch-site": "same-origin" };
    expect(await send(h, "POST", `/processes/${pid}/signals/kill`, own)).toEqual({
      status: 202,
      body: { pid, state: "terminating" },
    });
    await h.service.wait(pid);
  });

  test("which pages may POST: own origins and the CORS list; not another port, a null origin or a cross-site fetch", async () => {
    const h = await host({ origins: OWN, corsOrigins: ["https://app.example"] });
    const run = (headers: Record<string, string>) =>
      send(h, "POST", "/run", { ...LOOPBACK, ...headers }, { source: "export default 1" });
    for (const [headers, status] of [
      [{}, 200],
      [{ origin: "http://127.0.0.1:8787", "sec-fetch-site": "same-origin" }, 200],
      [{ origin: "http://localhost:8787" }, 200],
      [{ origin: "https://app.example", "sec-fetch-site": "cross-site" }, 200],
      [{ "sec-fetch-site": "same-origin" }, 200],
      [{ origin: "http://localhost:3000", "sec-fetch-site": "same-site" }, 403],
      [{ origin: "null", "sec-fetch-site": "cross-site" }, 403],
      [{ "sec-fetch-site": "cross-site" }, 403],
      [{ origin: "https://app.example.evil" }, 403],
    ] as const) {
      expect([headers, (await run(headers)).status]).toEqual([headers, status]);
    }
    expect((await run({ "sec-fetch-site": "cross-site" })).body).toEqual(
      refusal("forbidden_origin", "A cross-site page may not POST here"),
    );
    // Safe methods from a foreign page are answered (without a CORS grant, the browser keeps the answer from it).
    expect(
      (
        await send(h, "GET", "/processes", {
          ...LOOPBACK,
          origin: "https://evil.example",
          "sec-fetch-site": "cross-site",
        })
      ).status,
    ).toBe(200);
  });

  test("without configured origins (an embedding) Host is not checked, and no page is the host's own", async () => {
    const h = await host({});
    expect((await send(h, "GET", "/processes", { host: "anything.example" })).status).toBe(200);
    expect((await send(h, "POST", "/run", { host: "anything.example" }, { source: "export default 1" })).status).toBe(
      200,
    );
    expect(
      await send(h, "POST", "/run", { host: "anything.example", origin: "http://anything.example" }, { source: "1" }),
    ).toEqual({ status: 403, body: refusal("forbidden_origin", 'Origin "http://anything.example" may not POST here') });
  });

  test("/openapi.json lists 421 on every operation and 403 forbidden_origin on every unsafe one", async () => {
    const h = await host();
    const doc = (await send(h, "GET", "/openapi.json", LOOPBACK)).body as {
      paths: Record<string, Record<string, { responses: Record<string, { description: string }> }>>;
    };
    for (const [path, operations] of Object.entries(doc.paths)) {
      for (const [method, { responses }] of Object.entries(operations)) {
        const unsafe = ["post", "put", "patch", "delete"].includes(method);
        expect([path, method, responses["421"]?.description, responses["403"]?.description]).toEqual([
          path,
          method,
          "misdirected_request",
          unsafe ? "forbidden_origin" : undefined,
        ]);
      }
    }
  });
});
