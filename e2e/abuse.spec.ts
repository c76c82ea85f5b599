/**
 * HTTP abuse against `wrangler dev` (SECURITY.md, "The HTTP API"): bad bodies and content types, raw un-normalized
 * paths, SQL in filters, 1,000 concurrent creations, kills racing with completion and dropped event streams. Each
 * test reads the records it seeded back afterwards and expects them unchanged.
 */
import { connect } from "node:net";
import { type APIRequestContext, expect, request as requests, test } from "@playwright/test";
import { bearer, KEYS } from "./helpers.js";

test.use({ extraHTTPHeaders: bearer("alpha") });

type Rec = Record<string, unknown> & { pid: number; state: string; exitState: string | null };

async function record(request: APIRequestContext, pid: number): Promise<Rec> {
  const response = await request.get(`/processes/${pid}`);
  expect(response.status()).toBe(200);
  return (await response.json()) as Rec;
}

async function settled(request: APIRequestContext, pid: number): Promise<Rec> {
  for (let i = 0; i < 800; i++) {
    const r = await record(request, pid);
    if (r.state === "idle" && r.exitState !== null) return r;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error(`process ${pid} did not finish`);
}

/** wrangler dev's proxy answers a POST it lost on its way to the runtime so (see the 1,000-creation burst). */
const PROXY_LOST_REQUEST = "Your worker restarted mid-request";

async function create(request: APIRequestContext, code: string, extra: Record<string, unknown> = {}) {
  for (let attempt = 1; ; attempt++) {
    const response = await request.post("/processes", { data: { code, ...extra } });
    const text = await response.text();
    // Right after the burst, the local proxy may still drop a request it forwards: sent again, as a client would.
    if (response.status() === 503 && text.startsWith(PROXY_LOST_REQUEST) && attempt < 3) {
      await new Promise((resolve) => setTimeout(resolve, 500));
      continue;
    }
    expect(response.status(), text).toBe(201);
    return (JSON.parse(text) as { pid: number }).pid;
  }
}

async function list(request: APIRequestContext, query: string): Promise<Rec[]> {
  const response = await request.get(`/processes?${query}`);
  expect(response.status()).toBe(200);
  return ((await response.json()) as { processes: Rec[] }).processes;
}

async function refused(response: { status(): number; json(): Promise<unknown> }, status: number, code: string) {
  const body = (await response.json()) as { error?: { code?: string; message?: string } };
  expect({ status: response.status(), code: body.error?.code }).toEqual({ status, code });
}

/** Seeds finished processes under a fresh ref; `intact()` reads them and their listing back unchanged. */
async function seed(request: APIRequestContext, n = 2) {
  const ref = `seed-${Date.now()}-${Math.random()}`;
  const pids: number[] = [];
  for (let i = 0; i < n; i++)
    pids.push(await create(request, `console.log(${i}); cyrnel.output({ i: ${i} })`, { ref }));
  const records = await Promise.all(pids.map((pid) => settled(request, pid)));
  const listing = await list(request, `ref=${encodeURIComponent(ref)}`);
  return {
    pids,
    async intact() {
      for (const r of records) expect(await record(request, r.pid)).toEqual(r);
      expect(await list(request, `ref=${encodeURIComponent(ref)}`)).toEqual(listing);
    },
  };
}

/**
 * One HTTP/1.1 request over a raw socket, so that the path arrives exactly as written (no URL normalization), with
 * `host` as its `Host` (a DNS-rebound page's is the attacker's name).
 */
/** A body of `length` bytes, once it all arrived. */
function lengthed(body: string, length: number): string | undefined {
  return Buffer.byteLength(body) < length ? undefined : body;
}

/** A chunked body decoded, once its last chunk arrived. */
function unchunked(encoded: string): string | undefined {
  const bytes = Buffer.from(encoded);
  const parts: Buffer[] = [];
  for (let at = 0; ; ) {
    const line = bytes.indexOf("\r\n", at);
    if (line < 0) return undefined;
    const size = Number.parseInt(bytes.subarray(at, line).toString(), 16);
    if (size === 0) return Buffer.concat(parts).toString();
    if (bytes.length < line + 2 + size + 2) return undefined;
    parts.push(bytes.subarray(line + 2, line + 2 + size));
    at = line + 2 + size + 2;
  }
}

function raw(
  baseURL: string,
  method: string,
  path: string,
  host = new URL(baseURL).host,
): Promise<{ status: number; body: string }> {
  const { hostname, port } = new URL(baseURL);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname, () => {
      socket.write(
        `${method} ${path} HTTP/1.1\r\nHost: ${host}\r\nAuthorization: Bearer ${KEYS.alpha}\r\nConnection: close\r\n\r\n`,
      );
    });
    let text = "";
    socket.setEncoding("utf8");
    socket.on("error", reject);
    // workerd keeps the connection open despite `Connection: close`: the answer is complete at its Content-Length,
    // or, for a body streamed as it is read (a record's large fields), at its last chunk.
    socket.on("data", (chunk) => {
      text += chunk;
      const split = text.indexOf("\r\n\r\n");
      if (split < 0) return;
      const head = text.slice(0, split);
      const body = /\r\ntransfer-encoding: chunked/i.test(head)
        ? unchunked(text.slice(split + 4))
        : lengthed(text.slice(split + 4), Number(/\r\ncontent-length: (\d+)/i.exec(head)?.[1] ?? 0));
      if (body === undefined) return;
      socket.destroy();
      resolve({ status: Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1]), body });
    });
  });
}

test.describe("HTTP abuse on wrangler dev", () => {
  test("bad bodies and wrong content types get their documented errors", async ({ request, baseURL }) => {
    const { intact } = await seed(request);
    const json = { "content-type": "application/json" };
    const bodies: [string, number, string][] = [
      ["{nope", 400, "invalid_json"],
      ["null", 400, "invalid_request"],
      ["42", 400, "invalid_request"],
      ['[{"code":"1"}]', 400, "invalid_request"],
      ['{"code":"1","extra":1}', 400, "invalid_request"],
      ['{"code":"\\ud800"}', 400, "invalid_request"],
      ['{"code":"1","ref":"\\udfff"}', 400, "invalid_request"],
      [JSON.stringify({ code: "x".repeat(100 * 1024 + 1) }), 413, "payload_too_large"],
      [JSON.stringify({ code: "1" }).padEnd(1024 * 1024 + 1, " "), 413, "payload_too_large"],
    ];
    for (const [body, status, code] of bodies) {
      await refused(await request.post("/processes", { data: Buffer.from(body), headers: json }), status, code);
    }
    const notUtf8 = Buffer.from([...Buffer.from('{"code":"'), 0xff, 0x22, 0x7d]);
    await refused(await request.post("/processes", { data: notUtf8, headers: json }), 400, "invalid_json");
    const runs: [string, number, string][] = [
      ["{nope", 400, "invalid_json"],
      ["[]", 400, "invalid_request"],
      ['{"source":"1","options":{"imports":{}}}', 400, "invalid_request"],
      [JSON.stringify({ source: "1" }).padEnd(1024 * 1024 + 1, " "), 413, "payload_too_large"],
    ];
    for (const [body, status, code] of runs) {
      await refused(await request.post("/run", { data: Buffer.from(body), headers: json }), status, code);
    }
    const valid = JSON.stringify({ code: "export default 1" });
    for (const route of ["/processes", "/run"]) {
      for (const headers of [
        { "content-type": "text/plain" },
        { "content-type": "application/x-www-form-urlencoded" },
        undefined,
      ]) {
        // Node's fetch, so that "no content type" really sends none.
        const response = await fetch(`${baseURL}${route}`, {
          method: "POST",
          body: new TextEncoder().encode(valid),
          headers: { ...bearer("alpha"), ...headers },
        });
        const body = (await response.json()) as { error: { code: string } };
        expect([route, response.status, body.error.code]).toEqual([route, 415, "unsupported_media_type"]);
      }
    }
    await intact();
  });

  test("path tricks, sent raw, never reach another process's record", async ({ request, baseURL }) => {
    const { pids, intact } = await seed(request);
    const [a, b] = pids as [number, number];
    const base = baseURL as string;
    const answers: [string, number[]][] = [
      [`/processes/${a}/../${b}`, [200]],
      [`/processes/${a}/%2e%2e/${b}`, [200]],
      [`/processes/${a}/..%2f${b}`, [400, 404]],
      [`/processes/${a}%2f..%2f${b}`, [400]],
      [`/processes/0${a}`, [400]],
      ["/processes/-1", [400]],
      ["/processes/0", [400]],
      ["/processes/1e3", [400]],
      ["/processes/0x10", [400]],
      ["/processes/9007199254740993", [400]],
      [`/processes/${"9".repeat(2000)}`, [400]],
      [`/processes/${a}/`, [404]],
      ["/processes/%31", [404]],
    ];
    for (const [path, statuses] of answers) {
      const answer = await raw(base, "GET", path);
      expect(statuses, path).toContain(answer.status);
      if (answer.status === 200) {
        // Dot segments resolve (as URL parsing does everywhere): the answer is b's record, never a's.
        expect(JSON.parse(answer.body), path).toEqual(await record(request, b));
      } else {
        const code = (JSON.parse(answer.body) as { error: { code: string } }).error.code;
        expect(code, path).toBe(answer.status === 400 ? "invalid_pid" : "not_found");
      }
    }
    for (const path of [`/processes/0${a}`, "/processes/%31", `/processes/${a}/`, `/processes/${a}%2f..%2f${b}`]) {
      expect([400, 404], `DELETE ${path}`).toContain((await raw(base, "DELETE", path)).status);
    }
    await intact();
  });

  test("a DNS-rebound page reads nothing and a foreign page kills nothing; the playground's own origin kills", async ({
    request,
    baseURL,
  }) => {
    const origin = baseURL as string;
    // Awaits the host at every turn (1,000 kv calls, about a second here): running, yet never holding the thread.
    const pid = await create(request, "for (;;) await cyrnel.services.kv.tools.get.invoke({ key: 'x' });");
    const port = new URL(origin).port;
    for (const path of [`/processes/${pid}`, "/processes", "/"]) {
      const rebound = await raw(origin, "GET", path, `rebound.example:${port}`);
      expect([path, rebound.status, (JSON.parse(rebound.body) as { error: { code: string } }).error.code]).toEqual([
        path,
        421,
        "misdirected_request",
      ]);
    }
    // A kill has no body: a page of any origin could send it without a preflight.
    for (const headers of [
      { origin: "https://evil.example", "sec-fetch-site": "cross-site" },
      { origin: "http://localhost:3000", "sec-fetch-site": "same-site" },
      { "sec-fetch-site": "cross-site" },
    ]) {
      await refused(await request.post(`/processes/${pid}/signals/kill`, { headers }), 403, "forbidden_origin");
    }
    expect((await record(request, pid)).state).toBe("running");
    const own = await request.post(`/processes/${pid}/signals/kill`, {
      headers: { origin, "sec-fetch-site": "same-origin" },
    });
    expect(own.status()).toBe(202);
    expect((await settled(request, pid)).exitState).toBe("canceled");
  });

  test("filter values that try SQL injection: 400 or an exact list; everything is listed afterwards", async ({
    request,
  }) => {
    const { intact } = await seed(request);
    const before = await list(request, "limit=1000");
    for (const value of ["' OR 1=1 --", '"; DROP TABLE processes; --', "\u2019 OR \u20191\u2019=\u20191", "%' --"]) {
      const v = encodeURIComponent(value);
      await refused(await request.get(`/processes?state=${v}`), 400, "invalid_request");
      await refused(await request.get(`/processes?exitState=${v}`), 400, "invalid_request");
      await refused(await request.get(`/processes?limit=${v}`), 400, "invalid_request");
      expect(await list(request, `ref=${v}`)).toEqual([]);
    }
    const after = await list(request, "limit=1000");
    expect(after.slice(0, before.length).map((p) => p.pid)).toEqual(before.map((p) => p.pid));
    await intact();
  });

  test("1,000 concurrent creations by one tenant: 201 or 429 with Retry-After, unique pids, every created record readable", async ({
    request: alpha,
    baseURL,
  }) => {
    test.setTimeout(300_000);
    const { intact } = await seed(alpha, 1);
    // Its own tenant: the burst spends that tenant's whole rate (300 a minute here), and no other test's.
    const request = await requests.newContext({ baseURL: baseURL as string, extraHTTPHeaders: bearer("burst") });
    const ref = `burst-${Date.now()}`;
    const body = JSON.stringify({ code: "export default 1", ref });
    const started = Date.now();
    const answers = await Promise.all(
      Array.from({ length: 1000 }, async () => {
        const response = await fetch(`${baseURL}/processes`, {
          method: "POST",
          body,
          headers: { "content-type": "application/json", ...bearer("burst") },
        });
        return {
          status: response.status,
          retryAfter: response.headers.get("retry-after"),
          text: await response.text(),
        };
      }),
    );
    const answered = Date.now() - started;
    const created = answers.filter((a) => a.status === 201).map((a) => (JSON.parse(a.text) as { pid: number }).pid);
    const limited = answers.filter((a) => a.status === 429);
    const codes = new Set<string>();
    for (const a of limited) {
      const { code } = (JSON.parse(a.text) as { error: { code: string } }).error;
      codes.add(code);
      expect(["too_many_processes", "tenant_too_many_processes", "rate_limited"]).toContain(code);
      expect(Number(a.retryAfter)).toBeGreaterThanOrEqual(1);
    }
    // wrangler dev answers a plain-text 503 "Your worker restarted mid-request" when it reloads the Worker (it
    // watches the tree, so any edit of a source file does it) or restarts the isolate under load. Counted, and
    // allowed only in that exact form; such a request must leave nothing behind (checked below).
    const dropped = answers.filter((a) => a.status !== 201 && a.status !== 429);
    for (const a of dropped)
      expect([a.status, a.text.slice(0, PROXY_LOST_REQUEST.length)]).toEqual([503, PROXY_LOST_REQUEST]);
    expect(new Set(created).size).toBe(created.length);
    // Without a reload, at least the tenant's active-process cap (32) is created, whatever the timing; and 1,000
    // creations are more than a minute's rate (300) plus what refills while they are answered.
    if (dropped.length === 0) {
      expect(created.length).toBeGreaterThanOrEqual(32);
      expect(codes.has("rate_limited")).toBe(true);
    }
    // Wait on the registry (one cheap list) rather than polling 500 records at once. Reading a busy record also wakes
    // its object: one cut off by a reload marks itself failed only when it next starts (process-object.ts).
    for (let i = 0; i < 200; i++) {
      const busy = (await list(request, `ref=${ref}&limit=1000`)).filter((p) => p.state !== "idle");
      if (busy.length === 0) break;
      for (let j = 0; j < busy.length && i % 10 === 9; j += 25) {
        await Promise.all(busy.slice(j, j + 25).map((p) => record(request, p.pid)));
      }
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    const settledAfter = Date.now() - started;
    const records: Rec[] = [];
    for (let i = 0; i < created.length; i += 25) {
      records.push(...(await Promise.all(created.slice(i, i + 25).map((pid) => record(request, pid)))));
    }
    for (const r of records) {
      // A reload cuts off what ran in the old isolate: that ends `failed` with a clear error, never stuck.
      if (dropped.length > 0 && r.exitState === "failed") {
        expect(r).toMatchObject({ ref, state: "idle", error: "The host restarted while this process ran" });
      } else expect(r).toMatchObject({ ref, state: "idle", exitState: "success" });
    }
    const listed = await list(request, `ref=${ref}&limit=1000`);
    expect(listed.map((p) => p.pid).sort((x, y) => x - y)).toEqual([...created].sort((x, y) => x - y));
    // Nothing is left active: the placeholder of a creation cut off by a restart expires (registry.ts,
    // PENDING_TTL_MS = 30 s) at the next allocation after that.
    if (dropped.length > 0) {
      await new Promise((resolve) => setTimeout(resolve, 31_000));
      await settled(request, await create(request, "export default 1"));
    }
    // (Records of earlier runs cut off by a reload may still be listed active until their object next wakes: see
    // SECURITY.md. Placeholders, which have no object, must be gone.)
    expect((await list(request, "state=queued&limit=1000")).filter((p) => p.createdAt === undefined)).toEqual([]);
    expect((await list(request, `ref=${ref}&limit=1000`)).filter((p) => p.state !== "idle")).toEqual([]);
    console.log(
      `1,000 concurrent creations: ${created.length} x 201, ${limited.length} x 429 (${[...codes].join(", ")}), ${dropped.length} x 503, answered in ${answered} ms, all settled after ${settledAfter} ms, read back after ${Date.now() - started} ms`,
    );
    // Another tenant sees none of them.
    expect(await list(alpha, `ref=${ref}&limit=1000`)).toEqual([]);
    await request.dispose();
    await intact();
  });

  test("kills racing with completion leave every record idle, success or canceled", async ({ request }) => {
    const { intact } = await seed(request, 1);
    const pids = await Promise.all(
      Array.from({ length: 30 }, (_, i) => create(request, i % 2 ? "export default 1" : "await null; console.log(1)")),
    );
    const kills = await Promise.all(pids.map((pid) => request.post(`/processes/${pid}/signals/kill`)));
    for (const kill of kills) {
      if (kill.status() !== 202) await refused(kill, 409, "process_not_active");
    }
    for (const pid of pids) expect(["success", "canceled"]).toContain((await settled(request, pid)).exitState);
    expect(await list(request, "state=terminating")).toEqual([]);
    await intact();
  });

  test("event streams dropped mid-run: the process finishes and a new stream gets the snapshot", async ({
    request,
    baseURL,
  }) => {
    const { intact } = await seed(request, 1);
    const code =
      "for (let i = 0; i < 3; i++) { console.log('tick', i); for (let j = 0; j < 30; j++) await cyrnel.services.kv.tools.list.invoke({}); }\ncyrnel.output({ done: true });";
    const pids = await Promise.all([1, 2, 3].map(() => create(request, code)));
    for (const pid of pids) {
      const controller = new AbortController();
      const response = await fetch(`${baseURL}/processes/${pid}/events`, {
        signal: controller.signal,
        headers: bearer("alpha"),
      });
      const reader = (response.body as ReadableStream<Uint8Array>).getReader();
      expect(new TextDecoder().decode((await reader.read()).value)).toMatch(/^event: snapshot\n/);
      controller.abort();
    }
    for (const pid of pids) {
      const r = await settled(request, pid);
      expect(r).toMatchObject({ exitState: "success", stdout: "tick 0\ntick 1\ntick 2\n", output: { done: true } });
      const text = await (await fetch(`${baseURL}/processes/${pid}/events`, { headers: bearer("alpha") })).text();
      const events = [...text.matchAll(/^event: (.+)\ndata: (.+)$/gm)];
      expect(events.map((m) => m[1])).toEqual(["snapshot"]);
      expect(JSON.parse(events[0]?.[2] as string)).toEqual({ pid, record: r });
    }
    await intact();
  });
});
