/**
 * The session routes over a `SessionService` (the stand-in engine of test/host/sessions/fake-engine.ts): their
 * answers, refusals, tenants and OpenAPI entries. test/node/serve-sessions.test.ts runs them on the core's sessions.
 */
import { describe, expect, test } from "vitest";
import { accessFrom } from "../../../src/host/http/auth.js";
import { createHost } from "../../../src/host/index.js";
import { DEFAULT_SESSION_LIMITS } from "../../../src/host/sessions/limits.js";
import { SessionService } from "../../../src/host/sessions/session-service.js";
import { MemorySessionStore } from "../../../src/host/sessions/store.js";
import { fakeEngine } from "../sessions/fake-engine.js";
import { sseEvents } from "../sse.js";

const KEYS = { alpha: "alpha-key-0123456789abcdef", beta: "beta-key-0123456789abcdef" };

async function host() {
  const sessions = new SessionService({
    store: new MemorySessionStore(),
    engine: fakeEngine(),
    limits: { ...DEFAULT_SESSION_LIMITS, perTenant: 3 },
    defaultMemoryLimitBytes: 1_000_000,
  });
  const { app } = await createHost({
    app: { sessions, access: await accessFrom({ apiKeys: `alpha:${KEYS.alpha},beta:${KEYS.beta}` }) },
  });
  return async (
    method: string,
    path: string,
    options: { body?: unknown; as?: keyof typeof KEYS; sse?: boolean } = {},
  ) => {
    const headers: Record<string, string> = { authorization: `Bearer ${KEYS[options.as ?? "alpha"]}` };
    if (options.body !== undefined) headers["content-type"] = "application/json";
    if (options.sse) headers.accept = "text/event-stream";
    const response = await app.fetch(
      new Request(`http://host${path}`, {
        method,
        headers,
        ...(options.body === undefined ? {} : { body: JSON.stringify(options.body) }),
      }),
    );
    const type = response.headers.get("content-type") ?? "";
    const body: unknown = type.includes("json") ? await response.json() : await response.text();
    return { status: response.status, headers: response.headers, body };
  };
}

describe("session routes", () => {
  test("create, run cells as JSON and as events, fork, read, list and delete", async () => {
    const call = await host();
    const created = await call("POST", "/sessions", { body: { name: "work" } });
    expect(created.status).toBe(201);
    const { id } = created.body as { id: string };
    expect(created.headers.get("location")).toBe(`/sessions/${id}`);

    const first = await call("POST", `/sessions/${id}/run`, { body: { source: "state.x = 41n" } });
    expect(first).toMatchObject({ status: 200, body: { status: "success", result: { $t: "bigint", v: "41" } } });
    const streamed = await call("POST", `/sessions/${id}/run`, { body: { source: "state.x + 1n" }, sse: true });
    expect(streamed.headers.get("content-type")).toBe("text/event-stream; charset=utf-8");
    const events = sseEvents(streamed.body as string);
    expect(events.map(([event]) => event)).toEqual(["log", "result"]);
    expect(events[1]?.[1]).toMatchObject({ status: "success", result: { $t: "bigint", v: "42" } });

    const forked = await call("POST", `/sessions/${id}/fork`);
    expect(forked.status).toBe(201);
    const child = (forked.body as { id: string }).id;
    expect(await call("GET", `/sessions/${child}`)).toMatchObject({ status: 200, body: { id: child, cells: 2 } });
    expect((await call("GET", `/sessions/${id}`)).body).toMatchObject({ id, name: "work", cells: 2 });

    const page = await call("GET", "/sessions?limit=1");
    const [low, high] = [id, child].sort();
    expect(page.body).toMatchObject({ sessions: [{ id: low }], next: low });
    expect((await call("GET", `/sessions?limit=1&cursor=${low}`)).body).toMatchObject({
      sessions: [{ id: high }],
      next: high,
    });

    expect(await call("DELETE", `/sessions/${id}`)).toMatchObject({ status: 204, body: "" });
    expect(await call("GET", `/sessions/${id}`)).toEqual({
      status: 404,
      headers: expect.anything(),
      body: { error: { code: "not_found", message: `No session "${id}"` } },
    });
  });

  test("another tenant's session is answered as an unknown one by every route", async () => {
    const call = await host();
    const { id } = (await call("POST", "/sessions", { body: {} })).body as { id: string };
    const unknown = "f".repeat(32);
    for (const target of [id, unknown]) {
      const notFound = { error: { code: "not_found", message: `No session "${target}"` } };
      for (const [method, path, body] of [
        ["GET", `/sessions/${target}`],
        ["POST", `/sessions/${target}/run`, { source: "1" }],
        ["POST", `/sessions/${target}/fork`],
        ["DELETE", `/sessions/${target}`],
      ] as const) {
        expect(await call(method, path, { as: "beta", ...(body === undefined ? {} : { body }) })).toMatchObject({
          status: 404,
          body: notFound,
        });
      }
    }
    expect((await call("GET", "/sessions", { as: "beta" })).body).toEqual({ sessions: [], next: null });
    expect((await call("GET", `/sessions/${id}`)).status).toBe(200);
    expect((await call("GET", "/sessions/%66%66", { as: "alpha" })).status).toBe(404);
  });

  test("bad bodies and the tenant's count are refused with their codes", async () => {
    const call = await host();
    expect(await call("POST", "/sessions", { body: { options: { fetch: true } } })).toMatchObject({
      status: 400,
      body: { error: { code: "invalid_request" } },
    });
    expect(await call("POST", "/sessions", { body: { colour: "red" } })).toMatchObject({
      status: 400,
      body: { error: { code: "invalid_request", message: "Unknown field 'colour': the body is {name?, options?}" } },
    });
    const { id } = (await call("POST", "/sessions", { body: {} })).body as { id: string };
    expect(await call("POST", `/sessions/${id}/run`, { body: { source: "1", timeoutMs: 0 } })).toMatchObject({
      status: 400,
      body: { error: { code: "invalid_request", message: "timeoutMs must be an integer from 1 to 600000" } },
    });
    expect(await call("POST", `/sessions/${id}/run`, { body: { code: "1" } })).toMatchObject({ status: 400 });
    await call("POST", "/sessions", { body: {} });
    await call("POST", "/sessions", { body: {} });
    expect(await call("POST", "/sessions", { body: {} })).toMatchObject({
      status: 429,
      body: {
        error: { code: "too_many_sessions", message: "This tenant keeps 3 sessions, its most (3): delete one first" },
      },
    });
    expect((await call("POST", `/sessions/${id}/fork`)).status).toBe(429);
  });

  test("/openapi.json documents every session route with its refusals", async () => {
    const call = await host();
    const { paths } = (await call("GET", "/openapi.json")).body as {
      paths: Record<string, Record<string, { responses: Record<string, { description: string }> }>>;
    };
    const statuses = (path: string, method: string) => Object.keys(paths[path]?.[method]?.responses ?? {}).sort();
    expect(statuses("/sessions", "post")).toEqual([
      "201",
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
    expect(paths["/sessions"]?.post?.responses["429"]?.description).toBe("rate_limited, too_many_sessions");
    expect(paths["/sessions"]?.post?.responses["413"]?.description).toBe("payload_too_large, session_storage_full");
    expect(statuses("/sessions", "get")).toEqual(["200", "400", "401", "421", "500"]);
    expect(statuses("/sessions/{id}/run", "post")).toEqual([
      "200",
      "400",
      "401",
      "403",
      "404",
      "413",
      "415",
      "421",
      "429",
      "500",
      "503",
    ]);
    expect(paths["/sessions/{id}/run"]?.post?.responses["429"]?.description).toBe("rate_limited, session_busy");
    expect(statuses("/sessions/{id}/fork", "post")).toEqual([
      "201",
      "401",
      "403",
      "404",
      "413",
      "421",
      "429",
      "500",
      "503",
    ]);
    expect(statuses("/sessions/{id}", "get")).toEqual(["200", "401", "404", "421", "500"]);
    expect(statuses("/sessions/{id}", "delete")).toEqual(["204", "401", "403", "404", "421", "500"]);
  });
});
