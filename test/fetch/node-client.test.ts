/**
 * Node's client for the guest's requests (node/http-exchange.ts): undici's dispatcher in place of Node's `fetch`,
 * answering the guest as Node's `fetch` does (compared with a sandbox given Node's `fetch` itself), without the global
 * `fetch`, its connections kept between requests and runs, the pieces of a chunked body paid for. fetch.test.ts holds it
 * to every limit, timeout and abort.
 */
import { gzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { createSandbox } from "../../node/index.js";
import { FETCH_PIECE_FUEL, FETCH_READ_FUEL } from "../../src/core/host-fuel.js";
import type { RunCode } from "../../src/core/types.js";
import { type LoopbackServer, startServer } from "./server.js";

let a: LoopbackServer;
beforeAll(async () => {
  a = await startServer();
});
afterAll(() => a.close());

/** The run's result, which must be a success. */
async function result(runCode: RunCode, source: string, globals: Record<string, unknown> = {}): Promise<unknown> {
  const r = await runCode(source, { globals: { A: a.origin, ...globals } });
  expect(r.error).toBeUndefined();
  return r.result;
}

/** What the guest sees of each request: status, reason, headers but `date`, body bytes as text, or its error. */
const SEEN = `const seen = [];
for (const [path, init] of REQUESTS) {
  try {
    const res = await fetch(A + path, init);
    const headers = [...res.headers].filter(([name]) => name !== "date");
    seen.push([path, res.status, res.statusText, headers, new TextDecoder().decode(await res.arrayBuffer())]);
  } catch (e) {
    seen.push([path, e.name, e.message]);
  }
}
export default seen;`;

const REQUESTS = [
  ["/reason/200/Custom%20Reason", undefined],
  ["/reason/201/Created%20Here", { method: "POST" }],
  ["/reason/202/Ok", { method: "PUT", body: "x", headers: { Accept: "text/plain", "User-Agent": "me" } }],
  ["/reason/200/Head", { method: "HEAD" }],
  ["/reason/204/Nothing", { method: "DELETE" }],
  ["/reason/200/Mode", { headers: { "sec-fetch-mode": "navigate" } }],
  ...[
    "gzip",
    "x-gzip",
    "deflate",
    "raw",
    "br",
    "gzip, br",
    "br, deflate, gzip",
    "GZIP",
    "compress",
    "gzip, identity",
    "gzip,",
    "gzip,gzip,gzip,gzip,gzip",
    "gzip,gzip,gzip,gzip,gzip,gzip",
  ].map((codings) => [`/coded?${encodeURIComponent(codings)}`, undefined]),
];

describe("Node's client for the guest's fetch", () => {
  it("answers the guest as Node's fetch does: heads, reasons, request headers, codings and their failures", async () => {
    const settings = { threads: false, webApis: true } as const;
    const byClient = createSandbox({ ...settings, fetch: { allow: [a.origin] } }).runCode;
    const byFetch = createSandbox({ ...settings, fetch: { allow: [a.origin], fetch: globalThis.fetch } }).runCode;
    const seen = (await result(byClient, SEEN, { REQUESTS })) as unknown[][];
    expect(seen).toEqual(await result(byFetch, SEEN, { REQUESTS }));
    const coded = "coded ".repeat(50);
    const gzipped = new TextDecoder().decode(gzipSync(coded));
    const received = (at: number) => JSON.parse(seen[at]?.[4] as string) as [string, string[]];
    expect([seen[0]?.slice(1, 4), received(0)]).toEqual([
      [
        200,
        "Custom Reason",
        [
          ["connection", "keep-alive"],
          ["keep-alive", "timeout=60"],
          ["set-cookie", "c=1"],
          ["set-cookie", "d=2"],
          ["transfer-encoding", "chunked"],
          ["x-a", "1 "],
          ["x-b", "2, 3"],
        ],
      ],
      [
        "GET",
        [
          ...["host", a.origin.slice(7), "connection", "keep-alive", "accept", "*/*", "accept-language", "*"],
          ...["sec-fetch-mode", "cors", "user-agent", "node", "accept-encoding", "gzip, deflate"],
        ],
      ],
    ]);
    expect(received(1)[1].slice(-2)).toEqual(["content-length", "0"]);
    expect(received(2)[1].slice(4, 8)).toEqual(["accept", "text/plain", "user-agent", "me"]);
    expect([seen[3]?.[4], seen[4]?.slice(1, 3), seen[4]?.[4]]).toEqual(["", [204, "Nothing"], ""]);
    expect(received(5)[1].slice(4, 6)).toEqual(["sec-fetch-mode", "cors"]);
    expect(seen.slice(6).map((request) => request.slice(-1)[0])).toEqual([
      ...[coded, coded, coded, coded, coded, coded, coded],
      `fetch: the response body of ${a.origin} failed: incorrect header check`,
      coded,
      // A coding Node's fetch does not know: the body as it came.
      gzipped,
      gzipped,
      coded,
      `fetch: ${a.origin} failed: too many content-encodings in response: 6, maximum allowed is 5`,
    ]);
  });

  it("makes the guest's requests without the global fetch, which a host may have replaced", async () => {
    vi.stubGlobal("fetch", () => Promise.reject(new Error("the global fetch was called")));
    try {
      const runCode = createSandbox({ threads: false, webApis: true, fetch: { allow: [a.origin] } }).runCode;
      const source = `export default (await fetch(A + "/reason/200/Own")).statusText;`;
      expect(await result(runCode, source)).toBe("Own");
    } finally {
      vi.unstubAllGlobals();
    }
  });

  it.each([{ threads: false }, { threads: true }])(
    "keeps its connections for the requests of the next runs (threads: $threads)",
    async ({ threads }) => {
      const server = await startServer();
      try {
        const runCode = createSandbox({ threads, webApis: true, fetch: { allow: [server.origin] } }).runCode;
        const source = `for (let i = 0; i < 5; i++) await (await fetch(A + "/echo/" + i)).text();\nexport default 1;`;
        expect(await result(runCode, source, { A: server.origin })).toBe(1);
        const opened = server.connections();
        for (let run = 0; run < 3; run++) expect(await result(runCode, source, { A: server.origin })).toBe(1);
        expect([server.received.length, server.connections()]).toEqual([20, opened]);
      } finally {
        await server.close();
      }
    },
  );

  it("charges each piece of a chunked body a read takes beyond its first", async () => {
    const runCode = createSandbox({ threads: false, webApis: true, fetch: { allow: [a.origin] } }).runCode;
    const pieces = 20_000;
    const fuelOf = async (path: string) => {
      const source = `export default (await (await fetch(A + "${path}")).text()).length;`;
      const r = await runCode(source, { globals: { A: a.origin } });
      expect(r.result).toBe(pieces);
      return r.fuelUsed as number;
    };
    // The same bytes, in one piece of a declared length and in 20,000 of one byte: a read's first piece is in its fee,
    // and a read takes what one wake of the socket brought (at most 4,096 pieces, so 5 reads at least; tens here,
    // fewer than 1,000 however the socket is woken), where a read a piece would pay 400 million.
    const extra = (await fuelOf(`/pieces/${pieces}`)) - (await fuelOf(`/declared/${pieces}`));
    expect(extra).toBeGreaterThanOrEqual((pieces - 1) * FETCH_PIECE_FUEL);
    expect(extra).toBeLessThan(pieces * FETCH_PIECE_FUEL + 1_000 * FETCH_READ_FUEL);
  });
});
