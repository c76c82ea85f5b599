/**
 * `npm run bench:serve`: `runcode serve` (Node, a libSQL database file) against `npm start`'s edge host (`wrangler
 * dev` with the same command line, on port 8790), one after the other on loopback, each started and stopped here by
 * its process group: an API request that runs nothing, trivial `POST /run` and whole processes. Both serve
 * anonymous callers on loopback, as `npm start` does, with room in the tenant's rate, slots and CPU for the whole load.
 * Bounded in count and time.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { load, ready, requests } from "./http-load.js";
import { printTable, type Summary, summarize } from "./stats.js";

const CONNECTIONS = 10;
const RUN_REQUESTS = 3_000;
const PROCESSES = 200;
const PROCESS_CONNECTIONS = 4;
const ROOM = {
  RUNCODE_TENANT_RUNS_PER_MINUTE: "1000000",
  RUNCODE_TENANT_MAX_ACTIVE: "256",
  RUNCODE_TENANT_CPU_MS_PER_MINUTE: "6000000",
  RUNCODE_TENANT_CPU_BURST_MS: "1000000",
};
const root = fileURLToPath(new URL("../..", import.meta.url));

interface Host {
  label: string;
  port: number;
  start(dir: string): ChildProcess;
}

const hosts: Host[] = [
  {
    label: "runcode serve",
    port: 8792,
    start: (dir) =>
      spawn(
        process.execPath,
        ["dist/node/cli.js", "serve", "--port", "8792", "--db", `file:${join(dir, "bench.db")}`],
        { cwd: root, detached: true, stdio: "ignore", env: { ...process.env, ...ROOM } },
      ),
  },
  {
    label: "npm start (wrangler dev)",
    port: 8790,
    start: (dir) =>
      spawn(
        "npx",
        [
          ...["wrangler", "dev", "--ip", "127.0.0.1", "--port", "8790", "--persist-to", dir],
          ...["--var", "RUNCODE_ALLOW_ANONYMOUS:true", "--var", "RUNCODE_ORIGINS:http://127.0.0.1:8790"],
          ...Object.entries(ROOM).flatMap(([name, value]) => ["--var", `${name}:${value}`]),
        ],
        {
          cwd: root,
          detached: true,
          stdio: "ignore",
          env: { ...process.env, CLOUDFLARE_CF_FETCH_ENABLED: "false", WRANGLER_SEND_METRICS: "false" },
        },
      ),
  },
];

/** The host's figures: the floor, `/run` and processes, and the records it lost. */
async function measure(host: Host) {
  const base = `http://127.0.0.1:${host.port}`;
  const dir = mkdtempSync(join(tmpdir(), "runcode-bench-serve-"));
  const server = host.start(dir);
  try {
    await ready(base, host.label);
    const { postRun, listOne, fullProcess, listed } = requests(base, {});
    for (let i = 0; i < 50; i++) await postRun();
    for (let i = 0; i < 5; i++) await fullProcess();
    const floor = await load(RUN_REQUESTS, CONNECTIONS, listOne);
    const run = await load(RUN_REQUESTS, CONNECTIONS, postRun);
    const processes = await load(PROCESSES, PROCESS_CONNECTIONS, fullProcess);
    const rows: Summary[] = [
      { ...summarize(`GET /processes?limit=1, ${CONNECTIONS} connections`, floor.times), perSecond: floor.perSecond },
      { ...summarize(`POST /run trivial JS, ${CONNECTIONS} connections`, run.times), perSecond: run.perSecond },
      {
        ...summarize(`process: create + events + stdout, ${PROCESS_CONNECTIONS} conn.`, processes.times),
        perSecond: processes.perSecond,
      },
    ];
    const failed = floor.failures + run.failures + processes.failures;
    return { rows, failed, lost: 5 + processes.times.length - (await listed()) };
  } finally {
    if (server.pid !== undefined) process.kill(-server.pid, "SIGTERM");
    await new Promise((resolve) => server.once("exit", resolve));
    rmSync(dir, { recursive: true, force: true });
  }
}

console.log(`runcode serve against npm start's edge host, on loopback, Node ${process.version}`);
const results = [];
for (const host of hosts) {
  const result = await measure(host);
  results.push(result);
  console.log(`\n${host.label}: ${result.failed} requests failed or non-2xx, ${result.lost} process records lost`);
  printTable(result.rows);
}
const [served, edge] = results as [Awaited<ReturnType<typeof measure>>, Awaited<ReturnType<typeof measure>>];
console.log();
for (const [i, what] of ["the API floor", "POST /run", "processes"].entries()) {
  const ratio = (served.rows[i] as Summary).perSecond / (edge.rows[i] as Summary).perSecond;
  console.log(`${`${what} per second, runcode serve / npm start`.padEnd(60)} ${ratio.toFixed(2)}x`);
}
