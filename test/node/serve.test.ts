/**
 * `runcode serve` as a user runs it: the built CLI in a child process (its own process group, killed by group in
 * `afterAll`), on port 0, with a database file in a temporary folder. The HTTP app is the edge's (test/host and
 * test/workers prove its routes); this proves the server around it: libSQL storage that survives a restart, the
 * settings read from the environment and flags, anonymous access only on loopback, and the stop that ends running
 * processes as a restart does.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { get as httpGet } from "node:http";
import { type AddressInfo, createServer, type Server as NetServer } from "node:net";
import { hostname, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { LibsqlProcessStore, openDatabase } from "../../node/serve/libsql-stores.js";
import { lockDatabase } from "../../node/serve/lock.js";
import { runMemoryBudgetOf, SERVE_USAGE, serveOptionsOf } from "../../node/serve/settings.js";
import { SETTING_DEFAULTS } from "../../src/host/limits.js";
import { CUT_OFF_BY_RESTART, STOPPED_BY_HOST } from "../../src/host/processes/restarts.js";
import { hostSettingsOf } from "../../src/host/settings.js";
import type { JsonValue } from "../../src/values/json.js";
import { fromWire } from "../../src/values/wire.js";
import { startServer } from "../fetch/server.js";
import { processRecord } from "../host/processes/records.js";

const CLI = fileURLToPath(new URL("../../dist/bundle/cli.js", import.meta.url));
const WEB = fileURLToPath(new URL("../../dist/web/", import.meta.url));
const dir = mkdtempSync(join(tmpdir(), "runcode-serve-"));
const children = new Set<ChildProcess>();
afterAll(() => {
  for (const child of children) {
    if (child.exitCode === null && child.signalCode === null) process.kill(-(child.pid as number), "SIGKILL");
  }
  rmSync(dir, { recursive: true, force: true });
});

const KEYS = { alpha: "alpha-key-0123456789abcdef", beta: "beta-key-0123456789abcdef" };
let databases = 0;
const newDatabase = () => `file:${join(dir, `${++databases}.db`)}`;

/** The environment without any runcode setting of the machine running the tests. */
const cleanEnv = () =>
  Object.fromEntries(
    Object.entries(process.env).filter(([name]) => !name.startsWith("RUNCODE_") && !(name in SETTING_DEFAULTS)),
  );

interface Server {
  url: string;
  child: ChildProcess;
  output: () => string;
  /** Sends `signal` to the server's group; resolves with its exit code. */
  stop(signal: NodeJS.Signals): Promise<number | null>;
}

/** Runs `runcode serve` with `args` and `env`; resolves with the server once it listens, or rejects with its output. */
/**
 * Tenants' shares of CPU no test here reaches: these tests are of other things, and a share would make a run wait
 * behind a tenant's spinning process, or refuse it, depending on how long the loaded machine let that process spin.
 */
const ROOMY_CPU = { RUNCODE_TENANT_CPU_MS_PER_MINUTE: "6000000", RUNCODE_TENANT_CPU_BURST_MS: "1000000" };

function start(args: string[], env: Record<string, string> = {}): Promise<Server> {
  const child = spawn(process.execPath, [CLI, "serve", "--port", "0", ...args], {
    detached: true,
    env: { ...cleanEnv(), ...ROOMY_CPU, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  children.add(child);
  let output = "";
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  return new Promise((resolve, reject) => {
    const failed = setTimeout(() => reject(new Error(`runcode serve did not start: ${output}`)), 30_000);
    const read = (chunk: Buffer) => {
      output += chunk.toString();
      const url = /listening on (http:\/\/\S+)/.exec(output)?.[1];
      if (url === undefined) return;
      clearTimeout(failed);
      resolve({
        url,
        child,
        output: () => output,
        stop: (signal) => {
          process.kill(-(child.pid as number), signal);
          return exited;
        },
      });
    };
    child.stdout?.on("data", read);
    child.stderr?.on("data", read);
    exited.then((code) => {
      clearTimeout(failed);
      reject(Object.assign(new Error(`runcode serve exited ${code}: ${output}`), { code, output }));
    });
  });
}

/** Runs `runcode serve` with options it refuses: its exit code and standard error. */
async function refused(args: string[], env: Record<string, string> = {}) {
  const error = (await start(args, env).then(
    () => expect.fail("it started"),
    (e: unknown) => e,
  )) as { code: number; output: string };
  return { code: error.code, output: error.output.trim() };
}

/** A client of `server` as `tenant` (its key as a bearer token), or anonymous. */
function client(server: Server, tenant?: keyof typeof KEYS) {
  const call = async (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) => {
    const init: RequestInit & { headers: Record<string, string> } = { method, headers: { ...headers } };
    if (tenant !== undefined) init.headers.authorization = `Bearer ${KEYS[tenant]}`;
    if (body !== undefined) {
      init.body = JSON.stringify(body);
      init.headers["content-type"] = "application/json";
    }
    const response = await fetch(`${server.url}${path}`, init);
    const type = response.headers.get("content-type") ?? "";
    const payload: unknown = type.includes("json") ? await response.json() : await response.text();
    return { status: response.status, headers: response.headers, body: payload as Record<string, unknown> };
  };
  const run = async (source: string) => {
    const answer = await call("POST", "/run", { source });
    return { status: answer.status, result: fromWire(answer.body as JsonValue) as Record<string, unknown> };
  };
  const create = async (code: string, extra: Record<string, unknown> = {}) => {
    const answer = await call("POST", "/processes", { code, ...extra });
    expect(answer.status).toBe(201);
    return answer.body.pid as number;
  };
  const until = async (pid: number, done: (record: Record<string, unknown>) => boolean) => {
    for (let i = 0; i < 600; i++) {
      const { body } = await call("GET", `/processes/${pid}`);
      if (done(body)) return body;
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
    throw new Error(`process ${pid} never got there`);
  };
  const settled = (pid: number) => until(pid, (r) => r.state === "idle");
  return { call, run, create, until, settled };
}

/** `GET /processes` naming `host` in `Host` (which `fetch` will not send): the status and the error's code. */
function statusAsHost(server: Server, host: string): Promise<[number, string | undefined]> {
  return new Promise((resolve, reject) => {
    const request = httpGet(`${server.url}/processes`, { headers: { host } }, (response) => {
      let text = "";
      response.on("data", (chunk: Buffer) => {
        text += chunk.toString();
      });
      response.on("end", () =>
        resolve([response.statusCode ?? 0, (JSON.parse(text) as { error?: { code: string } }).error?.code]),
      );
    });
    request.on("error", reject);
  });
}

/** A server listening on a loopback port, and the port. */
async function loopbackPort(): Promise<{ server: NetServer; port: number }> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { server, port: (server.address() as AddressInfo).port };
}

describe("runcode serve", () => {
  it("serves /run, processes (create, read, list, follow, kill, run again, delete), /mcp, the catalog and the playground", async () => {
    const server = await start(["--db", newDatabase()]);
    expect(server.output()).toContain(`listening on ${server.url} (anonymous callers; database file:`);
    const { call, run, create, until, settled } = client(server);

    expect(await run("export default [1n, new Set([2])]")).toMatchObject({
      status: 200,
      result: { status: "success", result: [1n, new Set([2])] },
    });

    const pid = await create("console.log('hello'); cyrnel.output({ n: 42 });", { ref: "greeting" });
    const events = await call("GET", `/processes/${pid}/events`);
    expect(events.headers.get("content-type")).toBe("text/event-stream; charset=utf-8");
    const names = [...String(events.body).matchAll(/^event: (.+)$/gm)].map((m) => m[1]);
    // Followed while it runs: its snapshot, its events, its exit; followed after it ended: its snapshot, which holds
    // the exit (on a loaded machine the process may end before the client asks).
    if (names.length === 1) {
      expect(names).toEqual(["snapshot"]);
      expect(String(events.body)).toContain('"exitState":"success"');
    } else expect([names[0], names.at(-1)]).toEqual(["snapshot", "exit"]);
    expect(await settled(pid)).toMatchObject({ pid, ref: "greeting", exitState: "success", output: { n: 42 } });
    expect((await call("GET", `/processes/${pid}/stdout`)).body).toBe("hello\n");
    expect((await call("GET", "/processes?ref=greeting")).body).toMatchObject({
      processes: [{ pid, exitState: "success" }],
      next: null,
    });

    const loop = await create("console.log('spinning'); for (;;) {}");
    await until(loop, (r) => r.stdout !== "");
    expect((await call("POST", `/processes/${loop}/signals/kill`)).body).toEqual({ pid: loop, state: "terminating" });
    expect(await settled(loop)).toMatchObject({ exitState: "canceled", stdout: "spinning\n" });

    expect((await call("POST", `/processes/${pid}/signals/run`)).status).toBe(202);
    expect(await until(pid, (r) => r.runs === 2 && r.state === "idle")).toMatchObject({ exitState: "success" });
    expect((await call("DELETE", `/processes/${pid}`)).status).toBe(204);
    expect((await call("GET", `/processes/${pid}`)).body).toEqual({
      error: { code: "not_found", message: `No process ${pid}` },
    });

    const mcp = await call(
      "POST",
      "/mcp",
      { jsonrpc: "2.0", id: 1, method: "tools/list" },
      {
        accept: "application/json, text/event-stream",
      },
    );
    expect(JSON.stringify(mcp.body)).toContain('"name":"run_code"');
    expect(((await call("GET", "/tools")).body.services as { id: string }[]).map((s) => s.id)).toEqual(["kv"]);
    expect((await call("GET", "/openapi.json")).status).toBe(200);

    // The playground's files, as `npm run build:web` wrote them; nothing outside them.
    const index = await call("GET", "/");
    expect([index.status, index.body]).toEqual(
      existsSync(join(WEB, "index.html"))
        ? [200, readFileSync(join(WEB, "index.html"), "utf8")]
        : [404, { error: { code: "not_found", message: "No route GET /" } }],
    );
    expect((await call("GET", "/%2e%2e/%2e%2e/package.json")).status).toBe(404);
    expect((await call("GET", "/processes/x/y/z")).body).toMatchObject({ error: { code: "not_found" } });
    expect(await server.stop("SIGINT")).toBe(0);
  });

  it("keys name tenants: no key is 401, processes and kv values are each tenant's own, each tenant's kv bytes are its quota", async () => {
    const server = await start(["--db", newDatabase()], {
      RUNCODE_API_KEYS: `alpha:${KEYS.alpha},beta:${KEYS.beta}`,
      RUNCODE_TENANT_KV_BYTES: "100",
    });
    expect(server.output()).toContain("(2 API keys;");
    const [alpha, beta, nobody] = [client(server, "alpha"), client(server, "beta"), client(server)];
    const unauthenticated = await nobody.call("GET", "/processes");
    expect([unauthenticated.status, unauthenticated.headers.get("www-authenticate")]).toEqual([
      401,
      'Bearer realm="runcode"',
    ]);

    const pid = await alpha.create(
      `await cyrnel.services.kv.tools.set.invoke({ key: "k", value: "alpha's" });
       try { await cyrnel.services.kv.tools.set.invoke({ key: "big", value: "x".repeat(200) }); }
       catch (e) { console.log(e.message); }`,
    );
    expect(await alpha.settled(pid)).toMatchObject({
      exitState: "success",
      stdout:
        "kv.set failed: quota exceeded: the store may hold at most 100 bytes of keys and values (this write would make it 215)\n",
    });
    expect((await beta.call("GET", `/processes/${pid}`)).status).toBe(404);
    expect((await beta.call("GET", "/processes")).body).toEqual({ processes: [], next: null });
    const read = `import { get } from "kv"; export default await get({ key: "k" });`;
    expect((await alpha.run(read)).result.result).toEqual({ found: true, value: "alpha's" });
    expect((await beta.run(read)).result.result).toEqual({ found: false, value: null });
    expect(await server.stop("SIGTERM")).toBe(0);
  });

  it("rates and slots per tenant from the environment, a flag winning over it", async () => {
    const server = await start(["--db", newDatabase(), "--tenant-runs-per-minute", "2"], {
      RUNCODE_TENANT_RUNS_PER_MINUTE: "1000",
      RUNCODE_TENANT_MAX_ACTIVE: "1",
      RUN_CPU_MS: "60000",
    });
    const { call, create, until } = client(server);
    const loop = await create("for (;;) {}", { timeoutMs: 60_000 });
    await until(loop, (r) => r.state === "running");
    const busy = await call("POST", "/processes", { code: "1" });
    expect([busy.status, busy.body]).toEqual([
      429,
      {
        error: {
          code: "tenant_too_many_processes",
          message: "This tenant has 1 processes active already: wait for one to finish",
        },
      },
    ]);
    await call("POST", `/processes/${loop}/signals/kill`);
    const limited = await call("POST", "/run", { source: "1" });
    expect([limited.status, (limited.body.error as { code: string }).code]).toEqual([429, "rate_limited"]);
    expect(await server.stop("SIGTERM")).toBe(0);
  });

  it("a process imports the registry's tools as run_code does, and still reaches them on cyrnel", async () => {
    const server = await start(["--db", newDatabase()]);
    const { call, create, settled } = client(server);
    const pid = await create(`import { get, set } from "kv";
await set({ key: "k", value: "by import" });
console.log(JSON.stringify(await get({ key: "k" })));
console.log(JSON.stringify(await cyrnel.services.kv.tools.get.invoke({ key: "k" })));`);
    expect((await settled(pid)).exitState).toBe("success");
    expect((await call("GET", `/processes/${pid}/stdout`)).body).toBe(
      '{"found":true,"value":"by import"}\n{"found":true,"value":"by import"}\n',
    );
    expect(await server.stop("SIGTERM")).toBe(0);
  });

  it("a process spinning under a timeoutMs longer than RUN_CPU_MS is stopped by the CPU cap, and its error says so, as /run's does", async () => {
    const server = await start(["--db", newDatabase()], { RUN_CPU_MS: "200" });
    const { create, settled, run } = client(server);
    const pid = await create("for (;;) {}", { timeoutMs: 60_000 });
    const record = await settled(pid);
    expect([record.exitState, record.error]).toEqual([
      "timeout",
      "Timeout: the process was stopped by the host's CPU cap per run (RUN_CPU_MS = 200 ms) before its timeoutMs (60000 ms)",
    ]);
    expect((await run("for (;;) {}")).result.error).toEqual({
      name: "TerminatedError",
      message: "Execution stopped by the host's CPU cap per run (RUN_CPU_MS = 200 ms)",
    });
    expect(await server.stop("SIGTERM")).toBe(0);
  });

  it("a process imports its modules (./util.ts) on every run, kept in the database across a restart", async () => {
    const db = newDatabase();
    const first = await start(["--db", db]);
    const one = client(first);
    const modules = { "./util.ts": "export const twice = (n: number): number => n * 2;" };
    const pid = await one.create('import { twice } from "./util.ts";\nconsole.log(twice(21));', { modules });
    expect(await one.settled(pid)).toMatchObject({ exitState: "success", stdout: "42\n", modules });
    expect(await first.stop("SIGTERM")).toBe(0);
    const second = await start(["--db", db]);
    const two = client(second);
    expect((await two.call("POST", `/processes/${pid}/signals/run`)).status).toBe(202);
    expect(await two.until(pid, (r) => r.runs === 2 && r.state === "idle")).toMatchObject({
      exitState: "success",
      stdout: "42\n",
      modules,
    });
    expect(await second.stop("SIGTERM")).toBe(0);
  });

  it("--web-apis true (RUNCODE_WEB_APIS) gives runs and processes the Web APIs; any value but true or false is refused", async () => {
    const server = await start(["--db", newDatabase(), "--web-apis", "true"]);
    const { call, run, create, settled } = client(server);
    expect(await run("export default [typeof URL, new URL('../b', 'https://h.example/a/c').href]")).toEqual({
      status: 200,
      result: expect.objectContaining({ status: "success", result: ["function", "https://h.example/b"] }),
    });
    const pid = await create("await new Promise((r) => setTimeout(r, 5));\nconsole.log(btoa('hi'));");
    expect((await settled(pid)).exitState).toBe("success");
    expect((await call("GET", `/processes/${pid}/stdout`)).body).toBe("aGk=\n");
    expect(await server.stop("SIGTERM")).toBe(0);
    expect(await refused([], { RUNCODE_WEB_APIS: "yes" })).toEqual({
      code: 2,
      output: 'runcode serve: RUNCODE_WEB_APIS must be "true" or "false", got "yes" (runcode serve --help)',
    });
  });

  it("--intl true (RUNCODE_INTL) gives runs and processes Intl in UTC whatever the host's zone; any value but true or false is refused", async () => {
    const server = await start(["--db", newDatabase(), "--intl", "true"]);
    const { call, run, create, settled } = client(server);
    const pid = await create(
      'console.log(new Intl.NumberFormat("de-DE").format(1234.5), new Date(0).toLocaleString());',
    );
    expect((await settled(pid)).exitState).toBe("success");
    expect((await call("GET", `/processes/${pid}/stdout`)).body).toBe("1.234,5 1/1/1970, 12:00:00 AM\n");
    const source = `export default [typeof URL, new Intl.NumberFormat("de-DE", { style: "currency", currency: "EUR" })
      .format(1234.5), new Date(Date.UTC(2024, 0, 2, 3, 4)).toLocaleString()]`;
    expect(await run(source)).toEqual({
      status: 200,
      result: expect.objectContaining({
        status: "success",
        result: ["undefined", "1.234,50\u00a0€", "1/2/2024, 3:04:00 AM"],
      }),
    });
    expect(await server.stop("SIGTERM")).toBe(0);
    expect(await refused([], { RUNCODE_INTL: "yes" })).toEqual({
      code: 2,
      output: 'runcode serve: RUNCODE_INTL must be "true" or "false", got "yes" (runcode serve --help)',
    });
  });

  it("--fetch-allow (RUNCODE_FETCH_ALLOW) gives runs and processes fetch reaching those origins only; a bad one is refused", async () => {
    const upstream = await startServer();
    const server = await start(["--db", newDatabase(), "--fetch-allow", upstream.origin]);
    const { call, run, create, settled } = client(server);
    const pid = await create(`console.log((await (await fetch("${upstream.origin}/echo/process")).json()).path);
console.log(await fetch("https://evil.example/").catch((e) => e.message));`);
    expect((await settled(pid)).exitState).toBe("success");
    expect((await call("GET", `/processes/${pid}/stdout`)).body).toBe(
      "/echo/process\nfetch: https://evil.example is not on the sandbox's allow list\n",
    );
    const source = `export default [(await (await fetch("${upstream.origin}/echo/serve")).json()).path,
  await fetch("https://evil.example/").catch((e) => e.message)];`;
    expect(await run(source)).toEqual({
      status: 200,
      result: expect.objectContaining({
        status: "success",
        result: ["/echo/serve", "fetch: https://evil.example is not on the sandbox's allow list"],
      }),
    });
    expect(await server.stop("SIGTERM")).toBe(0);
    await upstream.close();
    expect(await refused([], { RUNCODE_FETCH_ALLOW: "ftp://x.org" })).toEqual({
      code: 2,
      output:
        'runcode serve: RUNCODE_FETCH_ALLOW entry 1 must be an http: or https: origin, got "ftp://x.org" (runcode serve --help)',
    });
  });

  it("answers only for its own names: another Host is 421, a foreign page may not POST, a CORS origin may", async () => {
    const server = await start(["--db", newDatabase(), "--cors-origins", "https://app.example"]);
    const { call } = client(server);
    const port = new URL(server.url).port;
    expect(await statusAsHost(server, `evil.example:${port}`)).toEqual([421, "misdirected_request"]);
    expect(await statusAsHost(server, `localhost:${port}`)).toEqual([200, undefined]);
    const foreign = await call("POST", "/run", { source: "1" }, { origin: "https://evil.example" });
    expect([foreign.status, (foreign.body.error as { code: string }).code]).toEqual([403, "forbidden_origin"]);
    const granted = await call("POST", "/run", { source: "1" }, { origin: "https://app.example" });
    expect([granted.status, granted.headers.get("access-control-allow-origin")]).toEqual([200, "https://app.example"]);
    expect(await server.stop("SIGTERM")).toBe(0);
  });

  it("a stop ends running processes (canceled, saying the host stopped); a restart keeps every acknowledged record and kv value", async () => {
    const db = newDatabase();
    const first = await start(["--db", db], { RUN_CPU_MS: "60000" });
    const one = client(first);
    const pids: number[] = [];
    for (let i = 0; i < 20; i++) pids.push(await one.create(`console.log(${i})`, { ref: "batch" }));
    const finished = await Promise.all(pids.map((pid) => one.settled(pid)));
    expect((await one.run(`import { set } from "kv"; await set({ key: "kept", value: [1, "two"] });`)).status).toBe(
      200,
    );
    const running = await one.create("console.log('before the stop'); for (;;) {}", { timeoutMs: 60_000 });
    await one.until(running, (r) => r.state === "running" && r.stdout !== "");
    expect(await first.stop("SIGTERM")).toBe(0);
    expect(first.output()).toContain("runcode serve: SIGTERM: stopping");

    const second = await start(["--db", db]);
    expect(second.output()).not.toContain("cut off");
    const two = client(second);
    expect(await two.call("GET", `/processes/${running}`)).toMatchObject({
      body: {
        state: "idle",
        exitState: "canceled",
        error: STOPPED_BY_HOST,
        stdout: "before the stop\n",
      },
    });
    const listed = (await two.call("GET", "/processes?ref=batch")).body.processes as { pid: number }[];
    expect(listed.map((p) => p.pid)).toEqual(pids);
    const again = await Promise.all(pids.map(async (pid) => (await two.call("GET", `/processes/${pid}`)).body));
    expect(again).toEqual(finished);
    expect(again.map((r) => r.stdout)).toEqual(pids.map((_, i) => `${i}\n`));
    const read = `import { get } from "kv"; export default await get({ key: "kept" });`;
    expect((await two.run(read)).result.result).toEqual({ found: true, value: [1, "two"] });
    // Pids go on from where they were, never handed out again.
    const next = await two.create("1");
    expect(next).toBe(running + 1);
    await two.settled(next);

    // Killed outright, the server cannot end its runs: the next start does.
    const cut = await two.create("for (;;) {}", { timeoutMs: 60_000 });
    await two.until(cut, (r) => r.state === "running");
    expect(await second.stop("SIGKILL")).toBe(null);
    const third = await start(["--db", db]);
    expect(third.output()).toContain("runcode serve: 1 runs the last stop cut off are marked failed");
    expect((await client(third).call("GET", `/processes/${cut}`)).body).toMatchObject({
      state: "idle",
      exitState: "failed",
      error: CUT_OFF_BY_RESTART,
    });
    expect(await third.stop("SIGTERM")).toBe(0);
  });

  it("one server owns a database file: a second start on it exits 1 and says so, touching nothing; a crashed server's lock is taken over", async () => {
    const db = newDatabase();
    const file = db.slice("file:".length);
    const first = await start(["--db", db]);
    const one = client(first);
    const running = await one.create("console.log('on'); for (;;) {}", { timeoutMs: 60_000 });
    await one.until(running, (r) => r.state === "running" && r.stdout !== "");
    expect(await refused(["--db", db])).toEqual({
      code: 1,
      output: `runcode serve: the database ${db} is in use by another runcode serve (pid ${first.child.pid} on ${hostname()}, lock file ${file}.lock): one server owns a database; if no server runs, delete the lock file`,
    });
    expect((await one.call("GET", `/processes/${running}`)).body).toMatchObject({ state: "running", error: null });
    expect(await first.stop("SIGKILL")).toBe(null);
    const second = await start(["--db", db]);
    expect(second.output()).toContain("runcode serve: 1 runs the last stop cut off are marked failed");
    expect(await second.stop("SIGTERM")).toBe(0);
    expect(existsSync(`${file}.lock`)).toBe(false);
  });

  it("the lock: one of this host whose pid is gone, or is the starting server's own (a restarted container), is taken over; another host's stands", () => {
    const file = join(dir, "locked.db");
    const url = `file:${file}`;
    const lock = `${file}.lock`;
    const inUse = (pid: number, host: string) =>
      `the database ${url} is in use by another runcode serve (pid ${pid} on ${host}, lock file ${lock}): one server owns a database; if no server runs, delete the lock file`;
    writeFileSync(lock, `${process.pid} ${hostname()}\n`);
    const held = lockDatabase(url);
    expect(readFileSync(lock, "utf8")).toBe(`${process.pid} ${hostname()}\n`);
    expect(() => lockDatabase(url)).toThrow(inUse(process.pid, hostname()));
    held.release();
    expect(existsSync(lock)).toBe(false);
    writeFileSync(lock, `2147483647 ${hostname()}\n`);
    lockDatabase(url).release();
    writeFileSync(lock, `${process.pid} elsewhere.example\n`);
    expect(() => lockDatabase(url)).toThrow(inUse(process.pid, "elsewhere.example"));
    expect(readFileSync(lock, "utf8")).toBe(`${process.pid} elsewhere.example\n`);
    rmSync(lock);
  });

  it("SIGTERM ends the processes first (canceled, stored), then lets a streamed /run in flight finish, then exits 0", async () => {
    const db = newDatabase();
    // With the Web APIs, a run can wait on a timer (the wait is paid for in fuel: room for it).
    const server = await start(["--db", db, "--web-apis", "true", "--run-fuel", "100000000000"]);
    const { create, until } = client(server);
    const running = await create("console.log('spinning'); for (;;) {}", { timeoutMs: 60_000 });
    await until(running, (r) => r.state === "running" && r.stdout !== "");
    const arrived: string[] = [];
    const events = await fetch(`${server.url}/processes/${running}/events`);
    const exited = events.text().then((text) => {
      arrived.push(`process: ${/event: exit\ndata: (.*)/.exec(text)?.[1]}`);
    });
    const run = await fetch(`${server.url}/run`, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "text/event-stream" },
      body: JSON.stringify({
        source: "console.log('started'); await new Promise((r) => setTimeout(r, 3000)); export default 42",
      }),
    });
    const reader = (run.body as ReadableStream<Uint8Array>).getReader();
    const decoder = new TextDecoder();
    let streamed = "";
    while (!streamed.includes("started")) {
      const chunk = await reader.read();
      if (chunk.done) throw new Error(`the streamed run ended before it started: ${streamed}`);
      streamed += decoder.decode(chunk.value, { stream: true });
    }
    const stopped = server.stop("SIGTERM");
    for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) {
      streamed += decoder.decode(chunk.value, { stream: true });
    }
    const result = /event: result\ndata: (.*)/.exec(streamed)?.[1];
    arrived.push(
      `run: ${(fromWire(JSON.parse(result ?? "null") as JsonValue) as { result?: unknown } | null)?.result}`,
    );
    await exited;
    expect(await stopped).toBe(0);
    expect(arrived).toEqual([
      `process: ${JSON.stringify({ pid: running, exitState: "canceled", error: STOPPED_BY_HOST })}`,
      "run: 42",
    ]);
    const again = await start(["--db", db]);
    expect((await client(again).call("GET", `/processes/${running}`)).body).toMatchObject({
      state: "idle",
      exitState: "canceled",
      error: STOPPED_BY_HOST,
      stdout: "spinning\n",
    });
    expect(await again.stop("SIGTERM")).toBe(0);
  });

  it("--tenant-storage-bytes (RUNCODE_TENANT_STORAGE_BYTES): 413 for a record it could never hold, output cut at it, then 507; large fields read whole", async () => {
    const server = await start(["--db", newDatabase(), "--tenant-storage-bytes", "50000"], {
      RUNCODE_API_KEYS: `alpha:${KEYS.alpha},beta:${KEYS.beta}`,
    });
    const [alpha, beta] = [client(server, "alpha"), client(server, "beta")];
    const error = (code: string, message: string) => ({ error: { code, message } });
    // A record's summary as stored: its JSON (ASCII here), the tenant's name with it. A creation counts the widest pid.
    const summaryBytes = (fields: Record<string, unknown>) => {
      const { code: _c, stdout: _o, stderr: _e, output: _p, ...summary } = fields;
      return JSON.stringify({ ...summary, tenant: "alpha" }).length;
    };
    const draft = summaryBytes({
      pid: 2 ** 53 - 1,
      state: "queued",
      exitState: null,
      timeoutMs: 30_000,
      error: null,
      truncated: { stdout: false, stderr: false, output: false },
      runs: 1,
      createdAt: Date.now(),
      startedAt: null,
      finishedAt: null,
    });
    expect((await alpha.call("POST", "/processes", { code: `// ${"x".repeat(49_996)}` })).body).toEqual(
      error(
        "payload_too_large",
        `This process's record would hold ${50_001 + draft} bytes of code and summary, more than the tenant's whole storage quota of 50000 bytes`,
      ),
    );
    const code = "console.log('a'.repeat(20000)); console.log('b'.repeat(40000))";
    const pid = await alpha.create(code);
    const record = await alpha.settled(pid);
    const marker = "\n[stdout truncated: the tenant's storage quota of 50000 bytes is full]\n";
    // Cut while it ran: its summary then said so, with no end and no truncation yet.
    const running = { ...record, state: "running", exitState: null, finishedAt: null };
    const truncated = { stdout: false, stderr: false, output: false };
    const kept = 50_000 - code.length - 2 - 20_001 - summaryBytes({ ...running, truncated });
    expect(record.stdout).toBe(`${"a".repeat(20_000)}\n${"b".repeat(kept)}${marker}`);
    expect((await alpha.call("GET", `/processes/${pid}/stdout`)).body).toBe(record.stdout);
    const refused = await alpha.call("POST", "/processes", { code: "1" });
    const used = code.length + 2 + (record.stdout as string).length + summaryBytes(record);
    expect(used - 50_000).toBe(marker.length + summaryBytes(record) - summaryBytes({ ...running, truncated }));
    expect([refused.status, refused.body]).toEqual([
      507,
      error(
        "storage_full",
        `The tenant's storage quota is full: its processes hold ${used} of 50000 bytes (code, stdout, stderr, output, records) and this one needs ${3 + draft}: delete processes to make room`,
      ),
    ]);
    expect((await beta.settled(await beta.create("console.log('mine')"))).stdout).toBe("mine\n");
    expect((await alpha.call("DELETE", `/processes/${pid}`)).status).toBe(204);
    expect((await alpha.settled(await alpha.create("console.log('room')"))).stdout).toBe("room\n");
    expect(await server.stop("SIGTERM")).toBe(0);
  });

  it("--run-memory-budget-bytes (RUNCODE_RUN_MEMORY_BUDGET_BYTES) caps /run's memory in flight, a tenant's at most half; by default the machine's", async () => {
    const MiB = 1024 * 1024;
    // The default: each of the pool's threads holds a run at the largest memory limit (68 MiB of linear memory), within
    // a quarter of the machine's memory, never below the edge's 72 MiB.
    expect([
      runMemoryBudgetOf(64 * 1024 * MiB, 8),
      runMemoryBudgetOf(1024 * MiB, 8),
      runMemoryBudgetOf(128 * MiB, 8),
    ]).toEqual([544 * MiB, 256 * MiB, 72 * MiB]);
    const largest = { source: "export default 1", options: { memoryLimitBytes: 64 * MiB } };
    const keys = { RUNCODE_API_KEYS: `alpha:${KEYS.alpha}` };
    const machine = await start(["--db", newDatabase()], keys);
    // The edge's 72 MiB refuses this run (over a tenant's half); this machine's budget holds it.
    const admitted = await client(machine, "alpha").call("POST", "/run", largest);
    expect([admitted.status, (fromWire(admitted.body as JsonValue) as { status: string }).status]).toEqual([
      200,
      "success",
    ]);
    await machine.stop("SIGTERM");
    const small = await start(["--db", newDatabase(), "--run-memory-budget-bytes", String(72 * MiB)], keys);
    expect((await client(small, "alpha").call("POST", "/run", largest)).body).toEqual({
      error: {
        code: "invalid_request",
        message: `This run needs ${68 * MiB} bytes of linear memory, more than one tenant's runs may hold here (${36 * MiB}): ask for a smaller memoryLimitBytes`,
      },
    });
    await small.stop("SIGTERM");
    expect(await refused([], { RUNCODE_RUN_MEMORY_BUDGET_BYTES: String(72 * MiB - 1) })).toEqual({
      code: 2,
      output: `runcode serve: RUNCODE_RUN_MEMORY_BUDGET_BYTES must be an integer of at least ${72 * MiB} (a tenant's half holds a run at the default memory limit), got "${72 * MiB - 1}" (runcode serve --help)`,
    });
    expect((await serveOptionsOf(["--run-memory-budget-bytes", "100000000"], {})).runMemoryBudgetBytes).toBe(
      100_000_000,
    );
    expect((await serveOptionsOf([], {})).runMemoryBudgetBytes).toBeUndefined();
  });

  it("--retention-days (RUNCODE_RETENTION_DAYS) deletes processes that ended longer ago, any tenant's, from its start; younger and cut-off ones stay", async () => {
    const db = newDatabase();
    const day = 86_400_000;
    const seeded = await openDatabase(db);
    const store = new LibsqlProcessStore(seeded);
    const seed = async (tenant: string, patch: Parameters<typeof processRecord>[1]) => {
      const pid = await store.nextPid(tenant);
      await store.create(processRecord(pid, { tenant, ...patch }));
      return pid;
    };
    const ended = (ago: number) => ({ state: "idle", exitState: "success", finishedAt: Date.now() - ago }) as const;
    const old = await seed("alpha", ended(day + 60_000));
    const young = await seed("alpha", ended(day - 3_600_000));
    const running = await seed("alpha", { state: "running", createdAt: Date.now() - 9 * day });
    const othersOld = await seed("beta", ended(2 * day));
    const othersYoung = await seed("beta", ended(60_000));
    seeded.close();

    const server = await start(["--db", db, "--retention-days", "1"], {
      RUNCODE_API_KEYS: `alpha:${KEYS.alpha},beta:${KEYS.beta}`,
    });
    const [alpha, beta] = [client(server, "alpha"), client(server, "beta")];
    const gone = (pid: number) => ({
      status: 404,
      body: { error: { code: "not_found", message: `No process ${pid}` } },
    });
    const read = async (tenant: typeof alpha, pid: number) => {
      const { status, body } = await tenant.call("GET", `/processes/${pid}`);
      return { status, body };
    };
    // The first sweep runs beside the server's start.
    await alpha.until(old, (r) => r.error !== undefined);
    expect(await read(alpha, old)).toEqual(gone(old));
    expect(await read(beta, othersOld)).toEqual(gone(othersOld));
    const listed = async (tenant: typeof alpha) =>
      ((await tenant.call("GET", "/processes")).body.processes as { pid: number }[]).map((p) => p.pid);
    expect([await listed(alpha), await listed(beta)]).toEqual([[young, running], [othersYoung]]);
    expect((await read(alpha, running)).body).toMatchObject({
      state: "idle",
      exitState: "failed",
      error: CUT_OFF_BY_RESTART,
    });
    expect(await server.stop("SIGTERM")).toBe(0);
  });

  it("sessions live in its database: state kept between cells, across a SIGTERM that ends a running cell and a restart; quotas from flags", async () => {
    const db = newDatabase();
    // The Web APIs give a cell a timer to wait on (a promise nothing can settle is a deadlock, answered at once).
    const first = await start(["--db", db, "--web-apis", "true"]);
    const a = client(first);
    const created = await a.call("POST", "/sessions", { name: "work" });
    expect(created.status).toBe(201);
    const id = created.body.id as string;
    const cell = async (c: ReturnType<typeof client>, source: string) => {
      const answer = await c.call("POST", `/sessions/${id}/run`, { source });
      return { status: answer.status, result: fromWire(answer.body as JsonValue) as Record<string, unknown> };
    };
    expect(await cell(a, "let x = 41")).toMatchObject({ status: 200, result: { status: "success" } });
    // The cell's log event says it has run up to its wait (on its worker thread) when the server is told to stop.
    const running = await fetch(`${first.url}/sessions/${id}/run`, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "text/event-stream" },
      body: JSON.stringify({
        source:
          "var y = 'set before the stop'; console.log('waiting'); await new Promise((r) => setTimeout(r, 60_000))",
      }),
    });
    expect(running.status).toBe(200);
    const events = (running.body as ReadableStream<Uint8Array>).getReader();
    const decoder = new TextDecoder();
    let streamed = "";
    while (!streamed.includes("event: log")) {
      const chunk = await events.read();
      if (chunk.done) break;
      streamed += decoder.decode(chunk.value, { stream: true });
    }
    expect(await first.stop("SIGTERM")).toBe(0);
    for (let chunk = await events.read(); !chunk.done; chunk = await events.read()) {
      streamed += decoder.decode(chunk.value, { stream: true });
    }
    expect(streamed).toMatch(/^event: log\n[\s\S]*event: result\ndata: \{"status":"terminated"/);

    const second = await start(["--db", db, "--web-apis", "true", "--sessions-per-tenant", "2"]);
    const b = client(second);
    expect(await cell(b, "[x + 1, y]")).toMatchObject({
      status: 200,
      result: { status: "success", result: [42, "set before the stop"] },
    });
    expect((await b.call("GET", `/sessions/${id}`)).body).toMatchObject({ id, name: "work", cells: 3 });
    expect((await b.call("POST", "/sessions", {})).status).toBe(201);
    expect(await b.call("POST", `/sessions/${id}/fork`)).toMatchObject({
      status: 429,
      body: { error: { code: "too_many_sessions" } },
    });
    expect(await second.stop("SIGTERM")).toBe(0);
  });

  it("runs sessions' cells off its event loop: other requests are answered while a cell spins", async () => {
    const server = await start(["--db", newDatabase()]);
    const a = client(server);
    const id = (await a.call("POST", "/sessions", {})).body.id as string;
    // A first cell, so the spinning one waits for nothing before it spins.
    expect((await a.call("POST", `/sessions/${id}/run`, { source: "1" })).status).toBe(200);
    const spinning = await fetch(`${server.url}/sessions/${id}/run`, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "text/event-stream" },
      body: JSON.stringify({ source: "for (;;) {}", language: "javascript", timeoutMs: 10_000 }),
    });
    expect(spinning.status).toBe(200);
    // Answered while the cell spins, so the deletion is what ends it (on the server's thread the cell would hold both
    // requests until its fuel ran out, and end by the safety cap).
    expect((await a.call("GET", `/sessions/${id}`)).status).toBe(200);
    expect((await a.call("DELETE", `/sessions/${id}`)).status).toBe(204);
    expect(await spinning.text()).toMatch(
      /^event: result\ndata: \{"status":"terminated","error":\{"name":"TerminatedError","message":"The session was deleted"\}/,
    );
    expect(await server.stop("SIGTERM")).toBe(0);
  });

  it("refuses options it cannot serve with: one line on standard error, exit 2 (1 for a database or an address it cannot use)", async () => {
    expect(await refused(["--port", "http"])).toEqual({
      code: 2,
      output: 'runcode serve: --port must be a port number from 0 to 65535, got "http" (runcode serve --help)',
    });
    expect(await refused(["--host", "0.0.0.0"])).toEqual({
      code: 2,
      output:
        "runcode serve: --host 0.0.0.0 is not a loopback address: set RUNCODE_ORIGINS (or --origins) to the origins clients reach it at (runcode serve --help)",
    });
    expect(await refused(["--host", "0.0.0.0", "--origins", "https://runcode.example"])).toEqual({
      code: 2,
      output:
        "runcode serve: --host 0.0.0.0 is not a loopback address: set RUNCODE_API_KEYS (tenant:key entries), or RUNCODE_ALLOW_ANONYMOUS=true to serve anyone (runcode serve --help)",
    });
    expect(await refused([], { RUNCODE_TENANT_MAX_ACTIVE: "lots" })).toEqual({
      code: 2,
      output: 'runcode serve: RUNCODE_TENANT_MAX_ACTIVE must be a positive integer, got "lots" (runcode serve --help)',
    });
    expect(await refused([], { RUNCODE_RETENTION_DAYS: "0" })).toEqual({
      code: 2,
      output: 'runcode serve: RUNCODE_RETENTION_DAYS must be a positive integer, got "0" (runcode serve --help)',
    });
    expect(await refused(["--retention-days", "36501"])).toEqual({
      code: 2,
      output: "runcode serve: RUNCODE_RETENTION_DAYS must be at most 36500 days, got 36501 (runcode serve --help)",
    });
    const missing = join(dir, "no-such-folder", "x.db");
    const unopened = await refused(["--db", `file:${missing}`]);
    expect([
      unopened.code,
      unopened.output.startsWith(`runcode serve: cannot open the database file:${missing}: `),
    ]).toEqual([1, true]);
    // A libSQL server that is not there: a loopback port nothing listens on (libsql: is TLS over it).
    const gone = await loopbackPort();
    await new Promise((resolve) => gone.server.close(resolve));
    expect(await refused(["--db", `libsql://127.0.0.1:${gone.port}`, "--db-auth-token", "t"])).toEqual({
      code: 1,
      output: `runcode serve: cannot open the database libsql://127.0.0.1:${gone.port}: fetch failed (connect ECONNREFUSED 127.0.0.1:${gone.port})`,
    });
    const taken = await loopbackPort();
    try {
      expect(await refused(["--db", newDatabase(), "--port", String(taken.port)])).toEqual({
        code: 1,
        output: `runcode serve: cannot listen on 127.0.0.1:${taken.port}: listen EADDRINUSE: address already in use 127.0.0.1:${taken.port}`,
      });
    } finally {
      taken.server.close();
    }
  });

  it("its defaults are the host's table, its address deciding anonymous callers and origins", async () => {
    const options = await serveOptionsOf(["--port", "8090"], {});
    expect(options.settings).toEqual(
      await hostSettingsOf({
        ...SETTING_DEFAULTS,
        RUNCODE_ALLOW_ANONYMOUS: "true",
        RUNCODE_ORIGINS: "http://127.0.0.1:8090,http://localhost:8090,http://[::1]:8090",
      }),
    );
  });

  it("docs/deploy.md's flag table names every flag its usage lists", () => {
    const deploy = readFileSync(fileURLToPath(new URL("../../docs/deploy.md", import.meta.url)), "utf8");
    const table = deploy.slice(deploy.indexOf("| flag | environment | default |"));
    const documented = new Set(table.slice(0, table.indexOf("\n\n")).match(/--[a-z-]+/g));
    const listed = [...SERVE_USAGE.matchAll(/\[(--[a-z-]+)/g)].map(([, flag]) => flag);
    expect(listed.filter((flag) => !documented.has(flag as string))).toEqual([]);
  });
});
