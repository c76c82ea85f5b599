/**
 * HTTP abuse against the Worker (SECURITY.md, "The HTTP API"): malformed and giant bodies, wrong content types, odd
 * unicode, path tricks in pids, SQL in filter values, a spoofed internal header, kills racing with completion and
 * event streams dropped mid-run. Every bad request gets its documented status and code, and nothing stored changes:
 * each test reads the records it seeded (and the whole listing) back afterwards.
 */
import { env, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { createHost } from "../../src/host/index.js";
import { MAX_RUN_MEMORY_BYTES } from "../../src/host/limits.js";
import type { CodeExecutionResult, RunCode } from "../../src/index.js";
import type { JsonValue } from "../../src/values/json.js";
import { fromWire } from "../../src/values/wire.js";
import wasm from "../../wasm/quickjs-fuel.wasm";
import { unwrap } from "../../worker/rpc-refusals.js";
import { edgeSandbox } from "../../worker/sandboxes.js";
import { CHUNK_BYTES, countingBody } from "../security/counting-body.js";
import { api, BASE } from "./client.js";

const JSON_TYPE = { "content-type": "application/json" };

type Rec = Record<string, unknown> & { pid: number; state: string; exitState: string | null };

const post = (path: string, body: BodyInit | null, headers: Record<string, string> = JSON_TYPE) =>
  api(path, { method: "POST", body, headers });
const get = (path: string, init?: RequestInit) => api(path, init);

/** Asserts status and error code exactly, and that the error has a message. */
async function refused(response: Response, status: number, code: string): Promise<void> {
  const body = (await response.json()) as { error?: { code?: string; message?: string } };
  expect({ status: response.status, code: body.error?.code }).toEqual({ status, code });
  expect(typeof body.error?.message).toBe("string");
}

async function record(pid: number): Promise<Rec> {
  const response = await get(`/processes/${pid}`);
  expect(response.status).toBe(200);
  return (await response.json()) as Rec;
}

async function settled(pid: number): Promise<Rec> {
  for (let i = 0; i < 400; i++) {
    const r = await record(pid);
    if (r.state === "idle" && r.exitState !== null) return r;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error(`process ${pid} did not finish`);
}

async function create(code: string, extra: Record<string, unknown> = {}): Promise<number> {
  const response = await post("/processes", JSON.stringify({ code, ...extra }));
  expect(response.status).toBe(201);
  return ((await response.json()) as { pid: number }).pid;
}

async function list(query = "limit=1000"): Promise<Rec[]> {
  const response = await get(`/processes?${query}`);
  expect(response.status).toBe(200);
  return ((await response.json()) as { processes: Rec[] }).processes;
}

/** Seeds finished processes and returns a check that they, and the whole listing, are exactly as before. */
async function seed(n = 2): Promise<{ pids: number[]; intact(opts?: { listing?: boolean }): Promise<void> }> {
  const pids: number[] = [];
  for (let i = 0; i < n; i++) {
    pids.push(await create(`console.log('seed ${i}'); cyrnel.output({ i: ${i} })`, { ref: `seed-${i}` }));
  }
  const records = await Promise.all(pids.map(settled));
  const listing = await list();
  return {
    pids,
    async intact({ listing: whole = true } = {}) {
      for (const r of records) expect(await record(r.pid)).toEqual(r);
      const now = await list();
      if (whole) expect(now).toEqual(listing);
      else for (const entry of listing) expect(now).toContainEqual(entry);
    },
  };
}

describe("malformed and giant bodies", () => {
  it("POST /processes refuses each with its documented code and stores nothing", async () => {
    const { intact } = await seed();
    const deep = `${"[".repeat(5000)}${"]".repeat(5000)}`;
    const cases: [string, BodyInit, number, string][] = [
      ["not JSON", "{nope", 400, "invalid_json"],
      ["empty", "", 400, "invalid_json"],
      ["truncated", '{"code":"1"', 400, "invalid_json"],
      ["trailing garbage", '{"code":"1"} x', 400, "invalid_json"],
      ["NaN", '{"code":"1","timeoutMs":NaN}', 400, "invalid_json"],
      ["null", "null", 400, "invalid_request"],
      ["number", "5", 400, "invalid_request"],
      ["string", '"export default 1"', 400, "invalid_request"],
      ["true", "true", 400, "invalid_request"],
      ["array", "[]", 400, "invalid_request"],
      ["array of a valid body", '[{"code":"1"}]', 400, "invalid_request"],
      ["empty object", "{}", 400, "invalid_request"],
      ["code a number", '{"code":1}', 400, "invalid_request"],
      ["code null", '{"code":null}', 400, "invalid_request"],
      ["code an object", '{"code":{"toString":"1"}}', 400, "invalid_request"],
      ["duplicate key, last wins", '{"code":"1","code":2}', 400, "invalid_request"],
      ["unknown field", '{"code":"1","pid":1}', 400, "invalid_request"],
      ["__proto__ field", '{"code":"1","__proto__":{"admin":true}}', 400, "invalid_request"],
      ["timeoutMs a string", '{"code":"1","timeoutMs":"5"}', 400, "invalid_request"],
      ["timeoutMs 0", '{"code":"1","timeoutMs":0}', 400, "invalid_request"],
      ["timeoutMs fractional", '{"code":"1","timeoutMs":1.5}', 400, "invalid_request"],
      ["timeoutMs over the max", '{"code":"1","timeoutMs":600001}', 400, "invalid_request"],
      ["timeoutMs 1e400", '{"code":"1","timeoutMs":1e400}', 400, "invalid_request"],
      ["ref empty", '{"code":"1","ref":""}', 400, "invalid_request"],
      ["ref a number", '{"code":"1","ref":7}', 400, "invalid_request"],
      ["ref 257 characters", JSON.stringify({ code: "1", ref: "r".repeat(257) }), 400, "invalid_request"],
      ["deep nesting", `{"code":"1","x":${deep}}`, 400, "invalid_json"],
      ["1 MiB + 1 body", JSON.stringify({ code: "1" }).padEnd(1024 * 1024 + 1, " "), 413, "payload_too_large"],
      ["100 KB + 1 code", JSON.stringify({ code: "x".repeat(100 * 1024 + 1) }), 413, "payload_too_large"],
      ["100 KB + 1 code in UTF-8", JSON.stringify({ code: `x${"é".repeat(50 * 1024)}` }), 413, "payload_too_large"],
      ["8 MiB body", "x".repeat(8 * 1024 * 1024), 413, "payload_too_large"],
    ];
    for (const [name, body, status, code] of cases) {
      const response = await post("/processes", body);
      await expect(refused(response, status, code), name).resolves.toBeUndefined();
    }
    await intact();
  });

  it("POST /processes takes code of exactly 100 KB, and a body of exactly 1 MiB", async () => {
    const code = `//${"x".repeat(100 * 1024 - 2)}`;
    const pid = await create(code);
    expect((await settled(pid)).exitState).toBe("success");
    expect(await (await get(`/processes/${pid}/code`)).text()).toBe(code);
    const body = JSON.stringify({ code: "export default 1" }).padEnd(1024 * 1024, " ");
    expect((await post("/processes", body)).status).toBe(201);
  });

  it("POST /run refuses each with its documented code and runs nothing", async () => {
    const { intact } = await seed(1);
    const cases: [string, BodyInit, number, string][] = [
      ["not JSON", "{nope", 400, "invalid_json"],
      ["empty", "", 400, "invalid_json"],
      ["null", "null", 400, "invalid_request"],
      ["number", "5", 400, "invalid_request"],
      ["array", '[{"source":"1"}]', 400, "invalid_request"],
      ["source missing", "{}", 400, "invalid_request"],
      ["source a number", '{"source":1}', 400, "invalid_request"],
      ["options an array", '{"source":"1","options":[]}', 400, "invalid_request"],
      ["options null", '{"source":"1","options":null}', 400, "invalid_request"],
      ["unknown field", '{"source":"1","x":1}', 400, "invalid_request"],
      ["host-only option", '{"source":"1","options":{"imports":{}}}', 400, "invalid_request"],
      ["__proto__ option", '{"source":"1","options":{"__proto__":{"x":1}}}', 400, "invalid_request"],
      ["forged wire value", '{"source":"1","options":{"globals":{"$t":"nope"}}}', 400, "invalid_request"],
      ["1 MiB + 1 body", JSON.stringify({ source: "1" }).padEnd(1024 * 1024 + 1, " "), 413, "payload_too_large"],
    ];
    for (const [name, body, status, code] of cases) {
      const response = await post("/run", body);
      await expect(refused(response, status, code), name).resolves.toBeUndefined();
    }
    // A refused run writes nothing: a run that would have set a kv key did not.
    const write = JSON.stringify({ source: "import { set } from 'kv'; await set({ key: 'abuse', value: 1 })" });
    await refused(await post("/run", `${write.slice(0, -1)},"x":1}`), 400, "invalid_request");
    await refused(await post("/run", write, { "content-type": "text/plain" }), 415, "unsupported_media_type");
    const read = await post(
      "/run",
      JSON.stringify({ source: "import { get } from 'kv'; export default await get({ key: 'abuse' })" }),
    );
    expect(((await read.json()) as { result: unknown }).result).toEqual({ found: false, value: null });
    await intact();
  });
});

describe("content types", () => {
  const body = JSON.stringify({ code: "export default 1" });
  const wrong: [string, Record<string, string> | undefined, BodyInit][] = [
    ["text/plain", { "content-type": "text/plain" }, body],
    ["text/plain;charset=UTF-8 (a string body's default)", undefined, body],
    ["form-urlencoded", { "content-type": "application/x-www-form-urlencoded" }, "code=export+default+1"],
    ["multipart", { "content-type": "multipart/form-data; boundary=x" }, body],
    ["none", {}, new TextEncoder().encode(body)],
    ["application/jsonp", { "content-type": "application/jsonp" }, body],
    ["application/json-patch+json", { "content-type": "application/json-patch+json" }, body],
  ];

  it("POST /processes takes only application/json (415 unsupported_media_type otherwise), before spending a pid", async () => {
    const { intact } = await seed(1);
    for (const [name, headers, payload] of wrong) {
      const response = await api(`/processes`, {
        method: "POST",
        body: payload,
        ...(headers === undefined ? {} : { headers }),
      });
      await expect(refused(response, 415, "unsupported_media_type"), name).resolves.toBeUndefined();
    }
    await intact();
    const before = Math.max(...(await list()).map((r) => r.pid));
    for (const type of ["application/json", "application/json; charset=utf-8", "Application/JSON ;charset=UTF-8"]) {
      const response = await post("/processes", body, { "content-type": type });
      expect(response.status, type).toBe(201);
      // Refusals spent no pid: the first accepted creation gets the next one.
      if (type === "application/json") expect(((await response.json()) as { pid: number }).pid).toBe(before + 1);
    }
  });

  it("POST /run takes only a JSON content type (415 unsupported_media_type otherwise)", async () => {
    const run = JSON.stringify({ source: "export default 1" });
    for (const [name, headers, payload] of wrong.slice(0, 5)) {
      const response = await api(`/run`, {
        method: "POST",
        body: payload === body ? run : payload,
        ...(headers === undefined ? {} : { headers }),
      });
      await expect(refused(response, 415, "unsupported_media_type"), name).resolves.toBeUndefined();
    }
    expect((await post("/run", run, { "content-type": "application/json; charset=utf-8" })).status).toBe(200);
  });
});

describe("odd unicode", () => {
  const odd = "emoji 😀👩‍👩‍👧 NUL \u0000 RTL \u202Eevil\u202C \u200F BOM \uFEFF combining e\u0301 CJK 漢字 astral 𝕏";

  it("round-trips code, ref, streams and output exactly, and filters by such a ref", async () => {
    const { intact } = await seed(1);
    const ref = `ref ${odd}`;
    // The code itself carries everything but a raw NUL (refused: see below); the string escapes one.
    const code = `// ${odd.replace("\u0000", "")}\nconst s = ${JSON.stringify(odd)};\nconsole.log(s); console.error(s); cyrnel.output({ [s]: s });`;
    const pid = await create(code, { ref });
    const r = await settled(pid);
    expect(r).toMatchObject({ ref, code, exitState: "success", stdout: `${odd}\n`, stderr: `${odd}\n` });
    expect(r.output).toEqual({ [odd]: odd });
    expect(await (await get(`/processes/${pid}/code`)).text()).toBe(code);
    expect(await (await get(`/processes/${pid}/stdout`)).text()).toBe(`${odd}\n`);
    expect(await (await get(`/processes/${pid}/output`)).json()).toEqual({ [odd]: odd });
    expect((await list(`ref=${encodeURIComponent(ref)}`)).map((p) => p.pid)).toEqual([pid]);
    expect((await list(`ref=${encodeURIComponent("ref emoji 😀")}`)).map((p) => p.pid)).toEqual([]);
    await intact({ listing: false });
  });

  it("refuses lone surrogates in code or ref, and bytes that are not UTF-8", async () => {
    const { intact } = await seed(1);
    const cases: [string, BodyInit, number, string][] = [
      ["lone high surrogate in code", '{"code":"export default \\"\\ud800\\""}', 400, "invalid_request"],
      ["lone low surrogate in code", '{"code":"// \\udc00"}', 400, "invalid_request"],
      ["reversed pair in ref", '{"code":"1","ref":"\\udc00\\ud800"}', 400, "invalid_request"],
      ["lone surrogate at the end of ref", '{"code":"1","ref":"x\\ud83d"}', 400, "invalid_request"],
      ["raw NUL in code", '{"code":"1 // \\u0000 throw 1"}', 400, "invalid_request"],
      ["raw NUL in a string literal of code", '{"code":"export default \\"a\\u0000b\\""}', 400, "invalid_request"],
      ["0xff byte", new Uint8Array([...new TextEncoder().encode('{"code":"'), 0xff, 0x22, 0x7d]), 400, "invalid_json"],
      [
        "overlong NUL",
        new Uint8Array([...new TextEncoder().encode('{"code":"'), 0xc0, 0x80, 0x22, 0x7d]),
        400,
        "invalid_json",
      ],
      [
        "CESU-8 surrogate",
        new Uint8Array([...new TextEncoder().encode('{"code":"'), 0xed, 0xa0, 0x80, 0x22, 0x7d]),
        400,
        "invalid_json",
      ],
    ];
    for (const [name, body, status, code] of cases) {
      await expect(refused(await post("/processes", body), status, code), name).resolves.toBeUndefined();
    }
    // The escaped text of a surrogate is ordinary code, and a well-formed pair (an escaped emoji) is fine.
    const escaped = await create('export default "\\ud800"', { ref: "\ud83d\ude00" });
    expect(await record(escaped)).toMatchObject({ code: 'export default "\\ud800"', ref: "😀" });
    await settled(escaped);
    await intact({ listing: false });
  });

  it("query strings: NUL, RTL and emoji match exactly; undecodable escapes and lone surrogates match nothing", async () => {
    const nul = await create("1", { ref: "a\u0000b" });
    const rtl = await create("1", { ref: "\u202Eabc" });
    await Promise.all([settled(nul), settled(rtl)]);
    const { intact } = await seed(1);
    expect((await list("ref=a%00b")).map((p) => p.pid)).toEqual([nul]);
    expect((await list("ref=a")).map((p) => p.pid)).toEqual([]);
    expect((await list("ref=%E2%80%AEabc")).map((p) => p.pid)).toEqual([rtl]);
    expect((await list("ref=abc")).map((p) => p.pid)).toEqual([]);
    for (const query of ["ref=%ED%A0%80", "ref=%FF", "ref=%", "ref=%u0041", "ref=%C0%80"]) {
      expect(await list(query), query).toEqual([]);
    }
    await intact();
  });
});

describe("path tricks in pids", () => {
  it("never answers with another process's record", async () => {
    const { pids, intact } = await seed(2);
    const [a, b] = pids as [number, number];
    const cases: [string, number, string][] = [
      ["-1", 400, "invalid_pid"],
      ["0", 400, "invalid_pid"],
      ["00", 400, "invalid_pid"],
      [`0${a}`, 400, "invalid_pid"],
      [`${a}.0`, 400, "invalid_pid"],
      ["1e3", 400, "invalid_pid"],
      ["0x10", 400, "invalid_pid"],
      ["+1", 400, "invalid_pid"],
      [" 1", 400, "invalid_pid"],
      ["1%20", 400, "invalid_pid"],
      ["Infinity", 400, "invalid_pid"],
      ["NaN", 400, "invalid_pid"],
      ["9007199254740993", 400, "invalid_pid"],
      ["9007199254740992", 400, "invalid_pid"],
      ["99999999999999999", 400, "invalid_pid"],
      ["9".repeat(4000), 400, "invalid_pid"],
      [`${a}%2F${b}`, 400, "invalid_pid"],
      [`${a}%2f..%2f${b}`, 400, "invalid_pid"],
      [`${a}%00`, 400, "invalid_pid"],
      [`${a};${b}`, 400, "invalid_pid"],
      ["%31", 404, "not_found"],
      [`${a}/`, 404, "not_found"],
      [`${a}//`, 404, "not_found"],
      [`${a}/code/`, 404, "not_found"],
      [`/${a}`, 404, "not_found"],
      [`${a}/../999999`, 404, "not_found"],
      [`${a}/%2e%2e/999999`, 404, "not_found"],
      ["9007199254740991", 404, "not_found"],
    ];
    for (const [raw, status, code] of cases) {
      await expect(refused(await get(`/processes/${raw}`), status, code), raw).resolves.toBeUndefined();
    }
    // Dot segments are resolved by URL parsing before anything routes: `a/../b` *is* `/processes/b`.
    expect(new URL(`${BASE}/processes/${a}/%2e%2e/${b}`).pathname).toBe(`/processes/${b}`);
    expect(await (await get(`/processes/${a}/../${b}`)).json()).toEqual(await record(b));
    expect(await (await get(`/processes/${a}/%2e%2e/${b}`)).json()).toEqual(await record(b));
    // `/processes/%2e%2e` is `/`: the playground, not the API.
    expect((await get("/processes/%2e%2e")).headers.get("content-type")).toContain("text/html");

    // The same tricks on the routes that change things change nothing.
    for (const raw of [`0${a}`, "%31", `${a}/`, `${a}%2F${b}`, "9007199254740993", "-1"]) {
      const del = await get(`/processes/${raw}`, { method: "DELETE" });
      expect([400, 404], `DELETE ${raw}`).toContain(del.status);
      const kill = await post(`/processes/${raw}/signals/kill`, null);
      expect([400, 404], `kill ${raw}`).toContain(kill.status);
      const rerun = await post(`/processes/${raw}/signals/run`, null);
      expect([400, 404], `run ${raw}`).toContain(rerun.status);
      expect([400, 404], `events ${raw}`).toContain((await get(`/processes/${raw}/events`)).status);
    }
    await intact();
  });

  it("ignores a client's x-runcode-pid header, which once let a creation overwrite another process's summary", async () => {
    const { pids, intact } = await seed(1);
    const victim = pids[0] as number;
    const jobs: Promise<unknown>[] = [];
    for (let i = 0; i < 10; i++) {
      jobs.push(post("/processes", JSON.stringify({ code: "export default 2", ref: "spoof" })).then((r) => r.text()));
      // Requests to the objects about to be created, each claiming the victim's pid.
      for (let delay = 0; delay < 6; delay++) {
        jobs.push(
          new Promise((resolve) => setTimeout(resolve, delay * 3)).then(() =>
            get(`/processes/${victim + 1 + i}`, { headers: { "x-runcode-pid": String(victim) } }).then((r) => r.text()),
          ),
        );
      }
      await Promise.all(jobs);
    }
    const spoofed = (await list("ref=spoof")).map((p) => p.pid);
    expect(spoofed).toHaveLength(10);
    for (const pid of spoofed) expect((await settled(pid)).pid).toBe(pid);
    await intact({ listing: false });
    expect((await list(`ref=seed-0`)).map((p) => p.pid)).toContain(victim);
  });
});

describe("creations cut off half-way", () => {
  it("a placeholder whose creation never finished stops counting as active after PENDING_TTL_MS", async () => {
    const { intact } = await seed(1);
    // What a Worker restarted between allocating a pid and the object's first report leaves behind.
    const registry = env.REGISTRY.get(env.REGISTRY.idFromName("registry"));
    const orphan = unwrap(await registry.allocate("alpha", { maxActive: 256, tenantMaxActive: 256 }));
    expect((await list("state=queued")).map((p) => p.pid)).toEqual([orphan]);
    await runInDurableObject(registry, (_instance, state) => {
      state.storage.sql.exec("UPDATE pending SET at = at - 30001 WHERE pid = ?", orphan);
    });
    const next = await create("export default 1");
    expect(next).toBe(orphan + 1);
    await settled(next);
    expect(await list("state=queued")).toEqual([]);
    await refused(await get(`/processes/${orphan}`), 404, "not_found");
    await intact({ listing: false });
  });
});

describe("filter values that try SQL injection", () => {
  const injections = [
    "' OR 1=1 --",
    "' OR '1'='1",
    '"; DROP TABLE processes; --',
    "'); DELETE FROM processes; --",
    "1 UNION SELECT summary FROM processes",
    "\u2019 OR 1=1 --",
    "\u02BC OR \u02BC1\u02BC=\u02BC1",
    "\uFF07 OR 1=1 --",
    "%' OR ref LIKE '%",
    "*",
    "NULL",
    "idle' --",
  ];

  it("answers 400 or an exact (usually empty) list, and the registry lists everything afterwards", async () => {
    const { intact } = await seed(2);
    const literal = await create("1", { ref: "' OR 1=1 --" });
    await settled(literal);
    const everything = await list();
    for (const value of injections) {
      const v = encodeURIComponent(value);
      await refused(await get(`/processes?state=${v}`), 400, "invalid_request");
      await refused(await get(`/processes?exitState=${v}`), 400, "invalid_request");
      await refused(await get(`/processes?limit=${v}`), 400, "invalid_request");
      const byRef = (await list(`ref=${v}`)).map((p) => p.pid);
      expect(byRef, value).toEqual(value === "' OR 1=1 --" ? [literal] : []);
      expect((await list(`state=idle&ref=${v}`)).map((p) => p.pid)).toEqual(byRef);
    }
    for (const query of ["limit=0", "limit=1001", "limit=-1", "limit=1.5", "limit=1e2", "limit=01", "limit=%201"]) {
      await expect(refused(await get(`/processes?${query}`), 400, "invalid_request"), query).resolves.toBeUndefined();
    }
    await refused(await get("/processes?state=idle&state=running"), 400, "invalid_request");
    await refused(await get("/processes?ref=a&ref=b"), 400, "invalid_request");
    await refused(await get("/processes?pid=1"), 400, "invalid_request");
    // `__proto__` is no filter either: an unknown parameter like any other.
    await refused(await get("/processes?__proto__=x"), 400, "invalid_request");
    expect(await list()).toEqual(everything);
    expect((await list("limit=1")).map((p) => p.pid)).toEqual([everything[0]?.pid]);
    await intact({ listing: false });
  });
});

describe("races", () => {
  it("kills racing with completion: every record ends idle, success or canceled, never stuck", async () => {
    const { intact } = await seed(1);
    const codes = [
      "export default 1",
      "await null; export default 2",
      "console.log('x')",
      "for (let i = 0; i < 50; i++) await null",
    ];
    const pids = await Promise.all(Array.from({ length: 40 }, (_, i) => create(codes[i % codes.length] as string)));
    const kills = await Promise.all(pids.map((pid) => post(`/processes/${pid}/signals/kill`, null)));
    for (const kill of kills) {
      if (kill.status === 202) {
        expect(["queued", "running", "terminating", "idle"]).toContain(((await kill.json()) as Rec).state);
      } else await refused(kill, 409, "process_not_active");
    }
    const records = await Promise.all(pids.map(settled));
    for (const r of records) expect(["success", "canceled"]).toContain(r.exitState);
    // The registry agrees with every object, and nothing is left active.
    const listed = await list("limit=1000");
    for (const r of records)
      expect(listed.find((p) => p.pid === r.pid)).toMatchObject({ state: "idle", exitState: r.exitState });
    expect(await list("state=terminating")).toEqual([]);
    expect(await list("state=running")).toEqual([]);
    // A killed or finished process can run again and be killed again.
    const again = pids[0] as number;
    expect((await post(`/processes/${again}/signals/run`, null)).status).toBe(202);
    expect([202, 409]).toContain((await post(`/processes/${again}/signals/kill`, null)).status);
    expect(["success", "canceled"]).toContain((await settled(again)).exitState);
    await intact({ listing: false });
  });

  it("event streams dropped mid-run: the process finishes, its record is complete, a new stream gets the snapshot", async () => {
    const { intact } = await seed(1);
    const code =
      "for (let i = 0; i < 5; i++) { console.log('tick', i); for (let j = 0; j < 20; j++) await cyrnel.services.kv.tools.list.invoke({}); }\ncyrnel.output({ done: true });";
    const pids = await Promise.all(Array.from({ length: 5 }, () => create(code)));
    for (const pid of pids) {
      const controller = new AbortController();
      const response = await get(`/processes/${pid}/events`, { signal: controller.signal });
      expect(response.headers.get("content-type")).toContain("text/event-stream");
      const reader = (response.body as ReadableStream<Uint8Array>).getReader();
      const first = new TextDecoder().decode((await reader.read()).value);
      expect(first).toMatch(/^event: snapshot\n/);
      if (pid % 2 === 0) controller.abort();
      else await reader.cancel();
    }
    for (const pid of pids) {
      const r = await settled(pid);
      expect(r).toMatchObject({
        exitState: "success",
        stdout: "tick 0\ntick 1\ntick 2\ntick 3\ntick 4\n",
        output: { done: true },
        error: null,
      });
      const text = await (await get(`/processes/${pid}/events`)).text();
      const events = [...text.matchAll(/^event: (.+)\ndata: (.+)$/gm)];
      expect(events.map((m) => m[1])).toEqual(["snapshot"]);
      expect(JSON.parse(events[0]?.[2] as string)).toEqual({ pid, record: r });
    }
    await intact({ listing: false });
  });
});

describe("body limits while the body arrives (issue 9, class 8)", () => {
  const MiB = 1024 * 1024;
  const stream = (path: string, body: ReadableStream<Uint8Array>, headers: Record<string, string> = JSON_TYPE) =>
    api(path, { method: "POST", body, headers });

  it("POST /run: a 48 MiB streamed body is cut off just past 1 MiB with 413 payload_too_large", async () => {
    const { stream: body, count } = countingBody(48 * MiB, JSON.stringify({ source: "export default 1" }));
    await refused(await stream("/run", body), 413, "payload_too_large");
    // Read whole before the fix (48 MiB); now the limit, the chunk that passed it and what the pipe holds.
    expect(count.pulled).toBeGreaterThan(MiB);
    expect(count.pulled).toBeLessThanOrEqual(MiB + 4 * CHUNK_BYTES);
  });

  it("POST /run: a declared content-length over the limit is refused before the body is read", async () => {
    const { stream: body, count } = countingBody(48 * MiB, JSON.stringify({ source: "export default 1" }));
    await refused(
      await stream("/run", body, { ...JSON_TYPE, "content-length": String(48 * MiB) }),
      413,
      "payload_too_large",
    );
    expect(count.pulled).toBeLessThanOrEqual(4 * CHUNK_BYTES);
  });

  it("POST /processes: a 48 MiB streamed body is cut off just past 1 MiB with 413 payload_too_large", async () => {
    const { intact } = await seed(1);
    const { stream: body, count } = countingBody(48 * MiB, JSON.stringify({ code: "export default 1" }));
    await refused(await stream("/processes", body), 413, "payload_too_large");
    expect(count.pulled).toBeGreaterThan(MiB);
    expect(count.pulled).toBeLessThanOrEqual(MiB + 4 * CHUNK_BYTES);
    await intact();
  });

  it("POST /run: bytes that are not UTF-8 are invalid_json, never run as U+FFFD", async () => {
    const bytes = new Uint8Array([...new TextEncoder().encode('{"source":"export default \''), 0xff, 0x27, 0x22, 0x7d]);
    await refused(await post("/run", bytes), 400, "invalid_json");
  });

  it("POST /run takes no JSON look-alike type (application/jsonp, application/json-patch+json)", async () => {
    const run = JSON.stringify({ source: "export default 1" });
    for (const type of ["application/jsonp", "application/json-patch+json", "application/jsonx; charset=utf-8"]) {
      await expect(
        refused(await post("/run", run, { "content-type": type }), 415, "unsupported_media_type"),
        type,
      ).resolves.toBeUndefined();
    }
  });
});

describe("POST /run answers of any length and depth (issue 9, class 9)", () => {
  async function run(source: string, options: Record<string, unknown> = {}): Promise<CodeExecutionResult> {
    const response = await post("/run", JSON.stringify({ source, options }));
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toBe("application/json");
    return fromWire((await response.json()) as JsonValue) as CodeExecutionResult;
  }

  /**
   * `POST /run` of an app of its own, with a CPU cap of its own (the pool's 2,000 ms can stop a 200,000-element encode in
   * the guest) and runs whose heap cap, and so whose answer's cap, is the largest `/run` allows.
   */
  const sandbox = edgeSandbox({ wasm, safetyCap: { cpuTimeMs: 10_000, fuel: 2_500_000_000 } }).runCode;
  /** A runner whose every run ends with `result`, as the host holds it after a run. */
  const ending =
    (result: CodeExecutionResult): RunCode =>
    () =>
      Object.assign(Promise.resolve(result), { terminate() {}, running: false, reports: [] });
  async function handled(source: string, runCode: RunCode): Promise<CodeExecutionResult> {
    const request = new Request(`${BASE}/run`, {
      method: "POST",
      headers: JSON_TYPE,
      body: JSON.stringify({ source }),
    });
    // One tenant may take the whole budget here: a run at the largest cap is over the default half.
    const admission = { tenantShare: 1 };
    const { app } = await createHost({
      app: { run: { runCode, defaultMemoryLimitBytes: MAX_RUN_MEMORY_BYTES, admission } },
    });
    const response = await app.fetch(request);
    expect(response.status).toBe(200);
    return fromWire((await response.json()) as JsonValue) as CodeExecutionResult;
  }

  it("a result of 200,000 elements and a Set of 200,000 from the sandbox: 200 with every one (was 500)", async () => {
    const list = await handled("export default Array.from({ length: 200000 }, (_, i) => i * 3)", sandbox);
    expect(list.status).toBe("success");
    expect(list.result).toEqual(Array.from({ length: 200_000 }, (_, i) => i * 3));
    const set = await handled("export default new Set(Array.from({ length: 200000 }, (_, i) => -i))", sandbox);
    expect(set.status).toBe("success");
    expect(set.result).toEqual(new Set(Array.from({ length: 200_000 }, (_, i) => -i)));
  });

  it("200,000 log entries: 200 with every one (was 500)", async () => {
    const logs = Array.from({ length: 200_000 }, (_, i) => ({
      level: "log" as const,
      args: [`line ${i}`],
      timestamp: i,
    }));
    const answer = await handled("", ending({ status: "success", result: 1, reports: [], logs, durationMs: 9 }));
    expect(answer).toEqual({ status: "success", result: 1, reports: [], logs, durationMs: 9 });
  });

  it("a client's argument nested 400,000 deep is refused before it is parsed; 2,000 deep meets the 1,000-level limit", async () => {
    const body = (levels: number) =>
      `{"source":"export default (x) => 1","options":{"execute":{"fn":"default","args":[${"[".repeat(levels)}${"]".repeat(levels)}]}}}`;
    const refusal = async (response: Response) => {
      const answer = (await response.json()) as { error: { code: string; message: string } };
      return [response.status, answer.error.code, answer.error.message];
    };
    expect(await refusal(await post("/run", body(400_000)))).toEqual([
      400,
      "invalid_json",
      "The body nests deeper than 4096 levels of arrays and objects",
    ]);
    expect(await refusal(await post("/run", body(2_000)))).toEqual([
      400,
      "invalid_options",
      expect.stringContaining("nested deeper than 1000 levels"),
    ]);
  });

  it("a 3 MiB + 1 buffer comes back byte for byte", async () => {
    const answer = await run(
      "const b = new Uint8Array(3 * 1024 * 1024 + 1); for (let i = 0; i < b.length; i += 4099) b[i] = i & 255; b[b.length - 1] = 7; export default b",
    );
    const bytes = answer.result as Uint8Array;
    expect(bytes).toBeInstanceOf(Uint8Array);
    expect(bytes.length).toBe(3 * 1024 * 1024 + 1);
    let wrong = 0;
    for (let i = 0; i < bytes.length; i++) {
      const expected = i === bytes.length - 1 ? 7 : i % 4099 === 0 ? i & 255 : 0;
      if (bytes[i] !== expected) wrong++;
    }
    expect(wrong).toBe(0);
  });

  it("an answer over the run's heap cap in characters is a memory result, decided before the base64 is made", async () => {
    // 50 MiB of buffer is 66.7 Mi characters of base64: over the 64 Mi an answer may have.
    const big = { status: "success" as const, result: new ArrayBuffer(50 * 1024 * 1024), reports: [], logs: [] };
    const answer = await handled("", ending({ ...big, durationMs: 5, memoryUsedBytes: 60_000_000 }));
    expect(answer).toEqual({
      status: "memory",
      error: {
        name: "MemoryError",
        message: `The run ended 'success', but its result, reports and logs take more than ${MAX_RUN_MEMORY_BYTES} characters of JSON to send`,
      },
      reports: [],
      logs: [],
      durationMs: 5,
      memoryUsedBytes: 60_000_000,
    });
  });
});

describe("listing, event streams and kv quotas cost what they return (test/security/host-budgets.test.ts in workerd)", () => {
  const registry = () => env.REGISTRY.get(env.REGISTRY.idFromName("registry"));
  const processObject = (pid: number) => env.PROCESSES.get(env.PROCESSES.idFromName(String(pid)));
  /** A process that stays running for a while: it awaits `calls` kv calls (each yields a turn of the loop). */
  const busy = (calls: number, extra = "") =>
    `${extra}\nfor (let i = 0; i < ${calls}; i++) await cyrnel.services.kv.tools.list.invoke({ limit: 1 });`;

  it("GET /processes?limit=1 asks the registry for one summary, not every one", async () => {
    const { intact } = await seed(3);
    const asked: [unknown, number][] = [];
    type Lister = { list(filter: unknown): Promise<unknown[]> };
    // RPC calls methods of the class, not an instance's own properties: count on the prototype, restored after.
    let prototype!: Lister;
    await runInDurableObject(registry(), (object) => {
      prototype = Object.getPrototypeOf(object) as Lister;
    });
    const original = prototype.list;
    prototype.list = async function (this: Lister, filter) {
      const rows = await original.call(this, filter);
      asked.push([filter, rows.length]);
      return rows;
    };
    try {
      expect((await list("limit=1")).map((p) => p.pid)).toHaveLength(1);
      expect((await list("limit=2&exitState=success")).every((p) => p.exitState === "success")).toBe(true);
      expect(asked).toEqual([
        [{ tenant: "alpha", limit: 1 }, 1],
        [{ tenant: "alpha", exitState: "success", limit: 2 }, 2],
      ]);
    } finally {
      prototype.list = original;
    }
    await intact();
  });

  it("HEAD on an event stream answers headers and holds no subscription", async () => {
    const pid = await create(busy(100));
    for (let i = 0; i < 5; i++) {
      const head = await get(`/processes/${pid}/events`, { method: "HEAD" });
      expect([head.status, head.headers.get("content-type"), await head.text()]).toEqual([
        200,
        "text/event-stream; charset=utf-8",
        "",
      ]);
    }
    const usage = await processObject(pid).usage();
    expect(usage?.subscribers).toBe(0);
    expect((await get("/processes/999999/events", { method: "HEAD" })).status).toBe(404);
    expect((await settled(pid)).exitState).toBe("success");
    expect(await processObject(pid).usage()).toBeNull();
  });

  it("an event stream nobody reads holds about 1 MiB, then ends with `dropped`; the process is undisturbed", async () => {
    const pid = await create(
      "for (let i = 0; i < 40; i++) { cyrnel.output({ x: String(i % 10).repeat(100000) }); await cyrnel.services.kv.tools.list.invoke({ limit: 1 }); }",
    );
    const slow = await get(`/processes/${pid}/events`);
    const r = await settled(pid);
    expect([r.exitState, (r.output as { x: string }).x]).toEqual(["success", "9".repeat(100_000)]);
    // Unread, all 40 patches were 4 MB: the stream kept at most its 1 MiB (plus the snapshot and workerd's pipe).
    const text = await slow.text();
    expect(text.length).toBeLessThan(1_048_576 + 300_000);
    const events = [...text.matchAll(/^event: (.+)$/gm)].map((m) => m[1]);
    expect([events[0], events.at(-1)]).toEqual(["snapshot", "dropped"]);
    expect(text).toMatch(
      /event: dropped\ndata: \{"pid":\d+,"reason":"the client read too slowly: \d+ bytes of events were waiting, at most \d+ are kept"\}\n\n$/,
    );
  });

  it("a run's kv calls are counted: the 1001st is refused with the quota's message", async () => {
    const pid = await create(
      `${busy(1000)}\ntry { await cyrnel.services.kv.tools.get.invoke({ key: "k" }); } catch (e) { console.log(e.message); }`,
      { timeoutMs: 60_000 },
    );
    const r = await settled(pid);
    expect([r.exitState, r.stdout]).toEqual([
      "success",
      "kv.get failed: quota exceeded: a run may make at most 1000 kv calls\n",
    ]);
  }, 60_000);

  it("the SQLite kv store counts keys and bytes with every write, refuses past a quota, and lists by prefix exactly", async () => {
    const { SqlKeyValueStore } = await import("../../worker/sql-stores.js");
    const { KeyValueQuotaError } = await import("../../src/tools/kv-store.js");
    const stub = env.KV.get(env.KV.idFromName("quota-test"));
    await runInDurableObject(stub, async (_instance, state) => {
      const store = new SqlKeyValueStore(state.storage.sql);
      const quota = { maxKeys: 3, maxBytes: 100 };
      await store.set("a", "€".repeat(13), quota);
      await store.set("a😀", 1, quota);
      expect(await store.usage()).toEqual({ keys: 2, bytes: 1 + 41 + 5 + 1 });
      await expect(store.set("b", "y".repeat(60), quota)).rejects.toThrow(
        new KeyValueQuotaError("bytes", 100, 48 + 1 + 62),
      );
      await store.set("b", 2, quota);
      await expect(store.set("c", 3, quota)).rejects.toThrow("quota exceeded: the store may hold at most 3 keys");
      expect(await store.get("c")).toBeUndefined();
      expect(await store.list({ prefix: "a" })).toEqual(["a", "a😀"]);
      expect(await store.list({ prefix: "a", limit: 1 })).toEqual(["a"]);
      expect(await store.delete("a")).toBe(true);
      expect(await store.usage()).toEqual({ keys: 2, bytes: 6 + 2 });
      // A store written before usage was counted is counted once, when it is opened.
      state.storage.sql.exec("DROP TABLE kv_usage");
      expect(await new SqlKeyValueStore(state.storage.sql).usage()).toEqual({ keys: 2, bytes: 8 });
    });
  });
});
