import { type ChildProcess, spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { type APIRequestContext, expect, test } from "@playwright/test";
import { fromWire, type JsonValue } from "../src/wire.js";

/** Polls a process until it is idle with an exit state. */
async function settled(request: APIRequestContext, pid: number, base = ""): Promise<Record<string, unknown>> {
  for (let i = 0; i < 400; i++) {
    const record = (await (await request.get(`${base}/processes/${pid}`)).json()) as Record<string, unknown>;
    if (record.state === "idle" && record.exitState !== null) return record;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error(`process ${pid} did not finish`);
}

async function create(request: APIRequestContext, code: string, extra: Record<string, unknown> = {}, base = "") {
  const response = await request.post(`${base}/processes`, { data: { code, ...extra } });
  expect(response.status()).toBe(201);
  return ((await response.json()) as { pid: number }).pid;
}

test.describe("the process API on wrangler dev", () => {
  test("submits a process, streams its events while it runs, and keeps the record", async ({ request, baseURL }) => {
    const pid = await create(
      request,
      "for (let i = 0; i < 3; i++) {\n  console.log('tick', i);\n  for (let j = 0; j < 50; j++) await cyrnel.services.kv.tools.list.invoke({});\n}\ncyrnel.output({ done: true });",
    );
    const events = await (await fetch(`${baseURL}/processes/${pid}/events`)).text();
    const names = [...events.matchAll(/^event: (.+)$/gm)].map((m) => m[1]);
    expect(names[0]).toBe("snapshot");
    expect(names.at(-1)).toBe("exit");
    const record = await settled(request, pid);
    expect(record).toMatchObject({ exitState: "success", stdout: "tick 0\ntick 1\ntick 2\n", output: { done: true } });
  });

  test("kills a running process and times out a tight loop", async ({ request }) => {
    const looping = await create(
      request,
      "for (;;) await cyrnel.services.kv.tools.get.invoke({ key: 'x' }).catch(() => null);",
    );
    const spinning = await create(request, "while (true) {}", { timeoutMs: 400 });
    const kill = await request.post(`/processes/${looping}/signals/kill`);
    expect(kill.status()).toBe(202);
    expect((await settled(request, looping)).exitState).toBe("canceled");
    const timedOut = await settled(request, spinning);
    expect(timedOut.exitState).toBe("timeout");
    expect(timedOut.error).toContain("timeoutMs");
  });

  test("answers bad requests with their documented errors", async ({ request }) => {
    const malformed = await request.post("/processes", {
      data: Buffer.from("{nope"),
      headers: { "content-type": "application/json" },
    });
    expect(malformed.status()).toBe(400);
    expect(((await malformed.json()) as { error: { code: string } }).error.code).toBe("invalid_json");
    expect((await request.post("/processes", { data: { code: 1 } })).status()).toBe(400);
    expect((await request.post("/processes", { data: { code: "x".repeat(100 * 1024 + 1) } })).status()).toBe(413);
    expect((await request.get("/processes/424242")).status()).toBe(404);
    expect((await request.get("/processes/not-a-pid")).status()).toBe(400);
    // The kv quota refuses calls past 1,000 a run; the loop goes on awaiting until the timeout.
    const looping = "for (;;) await cyrnel.services.kv.tools.get.invoke({ key: 'x' }).catch(() => null);";
    const active = await create(request, looping, {
      timeoutMs: 2000,
    });
    const refused = await request.delete(`/processes/${active}`);
    expect(refused.status()).toBe(409);
    expect((await settled(request, active)).exitState).toBe("timeout");
  });
});

test.describe("POST /run on wrangler dev", () => {
  const run = async (request: APIRequestContext, source: string, options?: Record<string, unknown>) => {
    const response = await request.post("/run", { data: options === undefined ? { source } : { source, options } });
    expect(response.status()).toBe(200);
    return fromWire((await response.json()) as JsonValue) as {
      status: string;
      result?: unknown;
      error?: { name: string; message: string; line?: number };
    };
  };

  test("gives every status", async ({ request }) => {
    expect(await run(request, "export default [1n, new Set([2])]")).toMatchObject({
      status: "success",
      result: [1n, new Set([2])],
    });
    expect(await run(request, "const a: any = null;\na.b;")).toMatchObject({
      status: "error",
      error: { name: "TypeError", line: 2 },
    });
    expect((await run(request, "import x from 'https://example.com/x.js'; x")).status).toBe("link_error");
    expect(
      (await run(request, "const a = []; for (;;) a.push(new Uint8Array(1e6));", { memoryLimitBytes: 16 << 20 }))
        .status,
    ).toBe("memory");
  });

  test("refuses bad input", async ({ request }) => {
    const wrongType = await request.post("/run", { data: "source", headers: { "content-type": "text/plain" } });
    expect(wrongType.status()).toBe(415);
    const unknown = await request.post("/run", { data: { source: "1", options: { imports: {} } } });
    expect(unknown.status()).toBe(400);
    expect(((await unknown.json()) as { error: { message: string } }).error.message).toContain("imports");
  });
});

test.describe("a restart of the edge host", () => {
  const PORT = 8797;
  const base = `http://127.0.0.1:${PORT}`;
  let server: ChildProcess | undefined;

  const start = async () => {
    server = spawn(
      "npx",
      ["wrangler", "dev", "--ip", "127.0.0.1", "--port", String(PORT), "--persist-to", ".wrangler/e2e-restart"],
      {
        cwd: fileURLToPath(new URL("..", import.meta.url)),
        detached: true,
        stdio: "ignore",
        env: { ...process.env, CLOUDFLARE_CF_FETCH_ENABLED: "false", WRANGLER_SEND_METRICS: "false" },
      },
    );
    for (let i = 0; i < 200; i++) {
      if (
        await fetch(`${base}/openapi.json`).then(
          (r) => r.ok,
          () => false,
        )
      )
        return;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    throw new Error("wrangler dev did not start");
  };
  // wrangler's workerd children outlive the npx parent: end the whole process group.
  const stop = () => {
    if (server?.pid !== undefined) process.kill(-server.pid, "SIGTERM");
    server = undefined;
  };
  test.afterAll(stop);

  test("loses no record, and pids go on where they were", async ({ request }) => {
    test.setTimeout(90_000);
    await start();
    const pid = await create(request, "console.log('persisted'); cyrnel.output({ n: 1 })", { ref: "restart" }, base);
    const before = await settled(request, pid, base);
    stop();
    await new Promise((resolve) => setTimeout(resolve, 1000));
    await start();
    expect(await (await request.get(`${base}/processes/${pid}`)).json()).toEqual(before);
    const listed = (await (await request.get(`${base}/processes?ref=restart`)).json()) as {
      processes: { pid: number }[];
    };
    expect(listed.processes.map((p) => p.pid)).toContain(pid);
    expect(await create(request, "1", {}, base)).toBeGreaterThan(pid);
  });
});
