/**
 * `npm run bench:session-resume`: an idle session resumed from storage on the edge host (`wrangler dev` on loopback,
 * started, restarted and stopped here, its state in a directory of its own). Sessions are made and used, the server
 * is restarted (every session object's memory is gone; their SQLite stays), the isolate is warmed with a session of
 * its own, and then each earlier session's first cell (its object constructed, its snapshot read and restored) is
 * timed against its second (warm). Bounded in count and time.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { ready } from "./http-load.js";
import { printTable, type Summary, summarize } from "./stats.js";

const PORT = 18_641;
const BASE = `http://127.0.0.1:${PORT}`;
const KEY = "bench-key-0123456789abcdef";
const HEADERS = { authorization: `Bearer ${KEY}`, "content-type": "application/json" };
const SESSIONS = 12;
const WARM_CELLS = 20;
/** Live data of each kind of session: a few bytes, and some 4 MiB of objects and strings. */
const STATES = {
  small: "let x = 41",
  "4 MiB":
    "let x = 41; const rows = Array.from({ length: 40000 }, (_, i) => ({ i, name: 'row ' + i, tags: [i % 7, i % 11] }))",
};
const CELL = "x + 1";

function startServer(persist: string): ChildProcess {
  const vars = [
    `RUNCODE_ORIGINS:${BASE}`,
    `RUNCODE_API_KEYS:bench:${KEY}`,
    "RUNCODE_SESSION_CELLS_PER_MINUTE:1000000",
    "RUNCODE_TENANT_RUNS_PER_MINUTE:1000000",
    "RUNCODE_TENANT_CPU_MS_PER_MINUTE:6000000",
    "RUNCODE_TENANT_CPU_BURST_MS:1000000",
  ].flatMap((v) => ["--var", v]);
  return spawn(
    "npx",
    ["wrangler", "dev", "--ip", "127.0.0.1", "--port", String(PORT), "--persist-to", persist, ...vars],
    {
      cwd: fileURLToPath(new URL("../..", import.meta.url)),
      detached: true,
      stdio: "ignore",
      env: { ...process.env, CLOUDFLARE_CF_FETCH_ENABLED: "false", WRANGLER_SEND_METRICS: "false" },
    },
  );
}

async function stop(server: ChildProcess): Promise<void> {
  if (server.pid === undefined || server.exitCode !== null) return;
  const exited = new Promise((resolve) => server.once("exit", resolve));
  process.kill(-server.pid, "SIGTERM");
  await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 10_000))]);
}

async function create(): Promise<string> {
  const response = await fetch(`${BASE}/sessions`, { method: "POST", headers: HEADERS, body: "{}" });
  if (response.status !== 201) throw new Error(`POST /sessions: ${response.status} ${await response.text()}`);
  return ((await response.json()) as { id: string }).id;
}

/** Milliseconds of one cell's request; throws unless it succeeded with `expected`. */
async function timedCell(id: string, source: string, expected?: unknown): Promise<number> {
  const started = performance.now();
  const response = await fetch(`${BASE}/sessions/${id}/run`, {
    method: "POST",
    headers: HEADERS,
    body: JSON.stringify({ source, language: "javascript" }),
  });
  const answer = (await response.json()) as { status?: string; result?: unknown };
  const ms = performance.now() - started;
  if (answer.status !== "success" || (expected !== undefined && answer.result !== expected)) {
    throw new Error(`cell of ${id}: ${response.status} ${JSON.stringify(answer).slice(0, 300)}`);
  }
  return ms;
}

const persist = mkdtempSync(join(tmpdir(), "runcode-session-bench-"));
let server = startServer(persist);
try {
  await ready(BASE, "wrangler dev");
  const made: Record<string, string[]> = {};
  for (const [kind, state] of Object.entries(STATES)) {
    made[kind] = [];
    for (let i = 0; i < SESSIONS; i++) {
      const id = await create();
      await timedCell(id, state);
      await timedCell(id, CELL, 42);
      made[kind].push(id);
    }
  }
  await stop(server);

  server = startServer(persist);
  await ready(BASE, "wrangler dev");
  // The isolate warm (its wasm compiled, the code paths taken) with a session of its own, so that what the earlier
  // sessions' first cells add is their resumption alone.
  const warmup = await create();
  await timedCell(warmup, STATES.small);
  for (let i = 0; i < WARM_CELLS; i++) await timedCell(warmup, CELL, 42);

  const rows: Summary[] = [];
  for (const [kind, ids] of Object.entries(made)) {
    const first: number[] = [];
    const warm: number[] = [];
    for (const id of ids) {
      first.push(await timedCell(id, CELL, 42));
      for (let i = 0; i < 3; i++) warm.push(await timedCell(id, CELL, 42));
    }
    rows.push(summarize(`${kind}: first cell, resumed from storage`, first));
    rows.push(summarize(`${kind}: warm cell`, warm));
  }
  console.log(`edge sessions resumed from storage: wrangler dev on loopback, Node ${process.version}\n`);
  printTable(rows);
  console.log();
  for (let at = 0; at < rows.length; at += 2) {
    const [resumed, warm] = [rows[at] as Summary, rows[at + 1] as Summary];
    console.log(
      `${`${resumed.label.split(":")[0]}: first - warm, p50`.padEnd(60)} ${(resumed.p50 - warm.p50).toFixed(1)} ms  (target within 50 ms)`,
    );
  }
} finally {
  await stop(server);
  rmSync(persist, { recursive: true, force: true });
}
