import { afterEach, describe, expect, it, vi } from "vitest";
import { toWire } from "../../src/values/wire.js";
import { runOnEdge } from "../../web/edge.js";

/** Stubs `fetch` with one answer and records what the page sent. */
function answer(status: number, body: string, headers: Record<string, string> = {}): Request[] {
  const sent: Request[] = [];
  vi.stubGlobal("fetch", async (input: RequestInfo, init?: RequestInit) => {
    sent.push(new Request(new URL(input as string, location.href), init));
    return new Response(body, { status, headers });
  });
  return sent;
}

const refusal = (code: string, message: string) => JSON.stringify({ error: { code, message } });

afterEach(() => vi.unstubAllGlobals());

describe("Run on edge: POST /run", () => {
  it("sends the key as a bearer token only when there is one, and decodes the wire result", async () => {
    const result = { status: "success", result: new Map([["n", 10n]]), reports: [], logs: [], durationMs: 1 };
    const sent = answer(200, JSON.stringify(toWire(result)));
    const outcome = await runOnEdge({ source: "1" }, { key: "k".repeat(32) });
    expect(outcome.kind === "result" && outcome.result).toEqual(result);
    await runOnEdge({ source: "2" }, { key: "" });
    expect(sent.map((r) => [r.method, new URL(r.url).pathname, r.headers.get("authorization")])).toEqual([
      ["POST", "/run", `Bearer ${"k".repeat(32)}`],
      ["POST", "/run", null],
    ]);
    expect(await sent[1]?.json()).toEqual({ source: "2" });
  });

  it("names the status, the code and, on a 401, what to do", async () => {
    const cases: [number, string, Record<string, string>, string, string][] = [
      [
        401,
        refusal("unauthenticated", "Send an API key as Authorization: Bearer <key>"),
        {},
        "",
        "POST /run answered HTTP 401 unauthenticated: Send an API key as Authorization: Bearer <key> Enter this host's API key under Edge.",
      ],
      [
        401,
        refusal("unauthenticated", "The API key is not valid"),
        {},
        "wrong-key-0123456789",
        "POST /run answered HTTP 401 unauthenticated: The API key is not valid Check the API key under Edge.",
      ],
      [
        429,
        refusal("rate_limited", "This tenant may start 600 processes and /run calls per minute: retry in 3 s"),
        { "retry-after": "3" },
        "k".repeat(16),
        "POST /run answered HTTP 429 rate_limited: This tenant may start 600 processes and /run calls per minute: retry in 3 s",
      ],
      [
        503,
        refusal("overloaded", "Runs in flight hold the heap budget: retry shortly"),
        { "retry-after": "1" },
        "k".repeat(16),
        "POST /run answered HTTP 503 overloaded: Runs in flight hold the heap budget: retry shortly",
      ],
      [500, '"boom"', {}, "", 'POST /run answered HTTP 500: "boom"'],
    ];
    for (const [status, body, headers, key, message] of cases) {
      answer(status, body, headers);
      expect(await runOnEdge({ source: "1" }, { key })).toEqual({ kind: "unavailable", message });
    }
  });

  it("says the endpoint is missing when the answer is not JSON, and shows at most 300 characters of a refusal", async () => {
    answer(404, "<!doctype html>Not found");
    expect(await runOnEdge({ source: "1" }, { key: "" })).toEqual({
      kind: "unavailable",
      message:
        "Run on edge needs the Worker's POST /run on this origin (serve the page with the Worker, e.g. `npm start`). (HTTP 404, not JSON)",
    });
    answer(400, refusal("invalid_request", "x".repeat(10_000)));
    const outcome = await runOnEdge({ source: "1" }, { key: "" });
    expect(outcome).toEqual({
      kind: "unavailable",
      message: `POST /run answered HTTP 400 invalid_request: ${"x".repeat(300)}`,
    });
  });
});
