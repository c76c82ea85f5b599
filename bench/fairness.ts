/**
 * `npm run bench:fairness`: another tenant's latency while one tenant floods within its quotas, on `runcode serve` and
 * on `npm start`'s edge host (`wrangler dev`, one isolate), each started and stopped here by its process group with
 * its default settings and two API keys. The flooding tenant keeps two runaway `POST /run`s and three runaway
 * processes going, each stopped by its CPU cap and re-issued as it ends (after the `Retry-After` of a refusal); the
 * other sends a trivial `POST /run` and a `GET /processes?limit=1` in turns, first with no flood (idle), then during
 * it. Bounded in time. `-- serve` or `-- edge` measures one host only.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { ready } from "./http-load.js";

const KEYS = { flood: "flood-key-0123456789abcdef", other: "other-key-0123456789abcdef" };
const API_KEYS = `flood:${KEYS.flood},other:${KEYS.other}`;
const IDLE_MS = 8_000;
const FLOOD_MS = 30_000;
/** The other tenant's pause between its requests. */
const PAUSE_MS = 200;
const RUNAWAY = "for (;;) {}";
const root = fileURLToPath(new URL("../..", import.meta.url));

interface Host {
  label: string;
  port: number;
  start(dir: string): ChildProcess;
}

const detached = { cwd: root, detached: true, stdio: "ignore" } as const;
const hosts: Host[] = [
  {
    label: "runcode serve",
    port: 8841,
    start: (dir) =>
      spawn(process.execPath, ["dist/node/cli.js", "serve", "--port", "8841", "--db", `file:${join(dir, "f.db")}`], {
        ...detached,
        env: { ...process.env, RUNCODE_API_KEYS: API_KEYS },
      }),
  },
  {
    label: "npm start (wrangler dev)",
    port: 8842,
    start: (dir) =>
      spawn(
        "npx",
        [
          ...["wrangler", "dev", "--ip", "127.0.0.1", "--port", "8842", "--persist-to", dir],
          ...["--var", `RUNCODE_API_KEYS:${API_KEYS}`, "--var", "RUNCODE_ORIGINS:http://127.0.0.1:8842"],
        ],
        { ...detached, env: { ...process.env, CLOUDFLARE_CF_FETCH_ENABLED: "false", WRANGLER_SEND_METRICS: "false" } },
      ),
  },
];

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function client(base: string, who: keyof typeof KEYS) {
  const headers = { authorization: `Bearer ${KEYS[who]}`, "content-type": "application/json" };
  const post = (path: string, body: unknown) =>
    fetch(`${base}${path}`, { method: "POST", headers, body: JSON.stringify(body) });
  const get = (path: string) => fetch(`${base}${path}`, { headers });
  return { post, get };
}

/** Waits out a refusal's `Retry-After` (a 429 or 503), until `until` at most; `true` when the answer was not one. */
async function honoured(response: Response, until: number): Promise<boolean> {
  if (response.status !== 429 && response.status !== 503) return true;
  await response.arrayBuffer();
  await sleep(Math.min(Number(response.headers.get("retry-after") ?? "1") * 1000, until - Date.now()));
  return false;
}

/** The flooding tenant until `until`: two runaway `/run`s and three runaway processes, each re-issued as it ends. */
async function flood(base: string, until: number) {
  const { post, get } = client(base, "flood");
  const counts = { runs: 0, processes: 0, refused: 0 };
  const runs = async () => {
    while (Date.now() < until) {
      const response = await post("/run", { source: RUNAWAY, options: { language: "javascript" } });
      if (await honoured(response, until)) {
        await response.arrayBuffer();
        counts.runs++;
      } else counts.refused++;
    }
  };
  const processes = async () => {
    while (Date.now() < until) {
      const created = await post("/processes", { code: RUNAWAY, timeoutMs: 30_000 });
      if (!(await honoured(created, until))) {
        counts.refused++;
        continue;
      }
      const { pid } = (await created.json()) as { pid: number };
      // The event stream ends when the process exits.
      await (await get(`/processes/${pid}/events`)).text();
      counts.processes++;
    }
  };
  await Promise.all([runs(), runs(), processes(), processes(), processes()]);
  return counts;
}

/** The other tenant's requests in turns until `until`: their times in milliseconds, and the requests that failed. */
async function other(base: string, until: number) {
  const { post, get } = client(base, "other");
  const times = { run: [] as number[], get: [] as number[] };
  let failed = 0;
  while (Date.now() < until) {
    let t = performance.now();
    const run = await post("/run", { source: "export default 1 + 1", options: { language: "javascript" } });
    // A host that restarted answers text: a failure, not the bench's end.
    const body = (await run.json().catch(() => ({}))) as { status?: string };
    times.run.push(performance.now() - t);
    if (!run.ok || body.status !== "success") failed++;
    await sleep(PAUSE_MS / 2);
    t = performance.now();
    const listed = await get("/processes?limit=1");
    await listed.arrayBuffer();
    times.get.push(performance.now() - t);
    if (!listed.ok) failed++;
    await sleep(PAUSE_MS / 2);
  }
  return { times, failed };
}

const median = (times: number[]) => [...times].sort((a, b) => a - b)[Math.floor(times.length / 2)] ?? Number.NaN;
const worst = (times: number[]) => Math.max(...times);

async function measure(host: Host) {
  const base = `http://127.0.0.1:${host.port}`;
  const dir = mkdtempSync(join(tmpdir(), "runcode-bench-fairness-"));
  const server = host.start(dir);
  try {
    await ready(base, host.label);
    // Warm both tenants' paths (the first run boots the engine and the transpiler).
    await other(base, Date.now() + 2_000);
    const idle = await other(base, Date.now() + IDLE_MS);
    const until = Date.now() + FLOOD_MS;
    const [flooded, counts] = await Promise.all([other(base, until), flood(base, until)]);
    return { idle, flooded, counts };
  } finally {
    if (server.pid !== undefined) process.kill(-server.pid, "SIGTERM");
    await new Promise((resolve) => server.once("exit", resolve));
    rmSync(dir, { recursive: true, force: true });
  }
}

console.log(`fairness: another tenant's latency while one floods within its quotas, Node ${process.version}`);
const only = process.argv[2];
for (const host of hosts.filter((h) => only === undefined || h.label.includes(only === "edge" ? "wrangler" : only))) {
  const { idle, flooded, counts } = await measure(host);
  console.log(
    `\n${host.label}: the flood ran ${counts.runs} runaway /runs and ${counts.processes} runaway processes in ${FLOOD_MS / 1000} s (${counts.refused} refusals waited out); the other's failed requests: ${idle.failed} idle, ${flooded.failed} flooded`,
  );
  console.log(
    `${"the other tenant's".padEnd(24)} ${"idle p50".padStart(9)} ${"flooded p50".padStart(12)} ${"ratio".padStart(7)} ${"flooded max".padStart(12)}`,
  );
  for (const what of ["run", "get"] as const) {
    const [before, during] = [idle.times[what], flooded.times[what]];
    const label = what === "run" ? "POST /run trivial" : "GET /processes?limit=1";
    console.log(
      `${label.padEnd(24)} ${median(before).toFixed(1).padStart(9)} ${median(during).toFixed(1).padStart(12)} ${`${(median(during) / median(before)).toFixed(2)}x`.padStart(7)} ${worst(during).toFixed(0).padStart(12)}`,
    );
  }
}
