/**
 * `npm run bench:serve`: `runcode serve` (Node, a libSQL database file) against `npm start`'s edge host (`wrangler
 * dev` with the same command line), one after the other on loopback, each started and stopped here by its process
 * group: the floor (an authenticated API request that runs nothing), trivial `POST /run` at 1 and 10 connections, and
 * whole processes; `/run` per second is also printed as a share of the floor's at the same connections. Both take an
 * API key, as deployed, with room in the tenant's rate, slots and CPU for the whole load. `-- --serve-only` measures
 * `runcode serve` alone; `--port` and `--edge-port` move them (8792, 8790). For `runcode serve` it also prints the
 * CPU its process (every thread) spent per request of each kind (Linux), which a machine loaded by other work inflates
 * far less than it does the rates, and the CPU the load itself (this process, which shares the cores) spent per
 * request. Bounded in count and time.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { availableParallelism, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { load, ready, requests } from "./http-load.js";
import { printTable, type Summary, summarize } from "./stats.js";

const { values: flags } = parseArgs({
  options: {
    "serve-only": { type: "boolean", default: false },
    port: { type: "string", default: "8792" },
    "edge-port": { type: "string", default: "8790" },
  },
});
const CONNECTIONS = 10;
const RUN_REQUESTS = 3_000;
/** Requests of each kind over one connection. */
const SERIAL_REQUESTS = 1_000;
const PROCESSES = 200;
const PROCESS_CONNECTIONS = 4;
const KEY = "bench-key-0123456789abcdef";
const AUTH = { authorization: `Bearer ${KEY}` };
const ROOM = {
  RUNCODE_API_KEYS: `bench:${KEY}`,
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
  /** Whether the process started is the server itself, whose CPU is then its own (not `npx` in front of workerd). */
  ownCpu: boolean;
}

/** CPU milliseconds process `pid` has spent, all its threads, user and system (`/proc/<pid>/stat`, 100 ticks a second). */
function cpuMsOf(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]?.split(" ") ?? [];
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

const servePort = Number(flags.port);
const edgePort = Number(flags["edge-port"]);
const hosts: Host[] = [
  {
    label: "runcode serve",
    port: servePort,
    ownCpu: true,
    start: (dir) =>
      spawn(
        process.execPath,
        ["dist/node/cli.js", "serve", "--port", String(servePort), "--db", `file:${join(dir, "bench.db")}`],
        { cwd: root, detached: true, stdio: "ignore", env: { ...process.env, ...ROOM } },
      ),
  },
  {
    label: "npm start (wrangler dev)",
    port: edgePort,
    ownCpu: false,
    start: (dir) =>
      spawn(
        "npx",
        [
          ...["wrangler", "dev", "--ip", "127.0.0.1", "--port", String(edgePort), "--persist-to", dir],
          ...["--var", `RUNCODE_ORIGINS:http://127.0.0.1:${edgePort}`],
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
    const { postRun, listOne, fullProcess, listed } = requests(base, AUTH);
    for (let i = 0; i < 50; i++) await postRun();
    for (let i = 0; i < 5; i++) await fullProcess();
    /**
     * `load(...)` with the server's CPU per request meanwhile (`NaN` when its CPU is not its own), and this process's
     * (the load's, which shares the cores).
     */
    const timed = async (label: string, ...args: Parameters<typeof load>) => {
      const cpu = () => (host.ownCpu && server.pid !== undefined ? cpuMsOf(server.pid) : Number.NaN);
      const before = cpu();
      const loadBefore = process.cpuUsage();
      const result = await load(...args);
      const { user, system } = process.cpuUsage(loadBefore);
      const count = result.times.length;
      return {
        label,
        ...result,
        cpuMsPerRequest: (cpu() - before) / count,
        loadCpuMsPerRequest: (user + system) / 1000 / count,
      };
    };
    const loads = [
      await timed("GET /processes?limit=1 (the floor), 1 connection", SERIAL_REQUESTS, 1, listOne),
      await timed("POST /run trivial JS, 1 connection", SERIAL_REQUESTS, 1, postRun),
      await timed(`GET /processes?limit=1 (the floor), ${CONNECTIONS} connections`, RUN_REQUESTS, CONNECTIONS, listOne),
      await timed(`POST /run trivial JS, ${CONNECTIONS} connections`, RUN_REQUESTS, CONNECTIONS, postRun),
      await timed(
        `process: create + events + stdout, ${PROCESS_CONNECTIONS} conn.`,
        PROCESSES,
        PROCESS_CONNECTIONS,
        fullProcess,
      ),
    ];
    const rows: Summary[] = loads.map(({ label, times, perSecond }) => ({ ...summarize(label, times), perSecond }));
    const failed = loads.reduce((sum, { failures }) => sum + failures, 0);
    const cpu = loads.map(({ label, cpuMsPerRequest, loadCpuMsPerRequest }) => ({
      label,
      cpuMsPerRequest,
      loadCpuMsPerRequest,
    }));
    return { rows, cpu, failed, lost: 5 + (loads[4]?.times.length ?? 0) - (await listed()) };
  } finally {
    if (server.pid !== undefined) process.kill(-server.pid, "SIGTERM");
    await new Promise((resolve) => server.once("exit", resolve));
    rmSync(dir, { recursive: true, force: true });
  }
}

const perSecond = (rows: Summary[], i: number) => (rows[i] as Summary).perSecond;
console.log(
  `${flags["serve-only"] ? "runcode serve" : "runcode serve against npm start's edge host"}, on loopback, Node ${process.version}`,
);
const results = [];
for (const host of flags["serve-only"] ? hosts.slice(0, 1) : hosts) {
  const result = await measure(host);
  results.push(result);
  console.log(`\n${host.label}: ${result.failed} requests failed or non-2xx, ${result.lost} process records lost`);
  printTable(result.rows);
  for (const { label, cpuMsPerRequest, loadCpuMsPerRequest } of result.cpu) {
    if (!Number.isNaN(cpuMsPerRequest)) {
      const most = (availableParallelism() * 1000) / cpuMsPerRequest;
      console.log(
        `${`server CPU ms per request: ${label}`.padEnd(96)} ${cpuMsPerRequest.toFixed(3)} (at most ${most.toFixed(0)}/s on ${availableParallelism()} cores)`,
      );
    }
    console.log(`${`the load's CPU ms per request: ${label}`.padEnd(96)} ${loadCpuMsPerRequest.toFixed(3)}`);
  }
  for (const [run, floor, connections] of [
    [1, 0, 1],
    [3, 2, CONNECTIONS],
  ] as const) {
    const share = perSecond(result.rows, run) / perSecond(result.rows, floor);
    console.log(
      `${`POST /run per second / the floor's, ${connections} connection(s)`.padEnd(60)} ${(share * 100).toFixed(0)}%`,
    );
  }
}
if (results.length === 2) {
  const [served, edge] = results as [Awaited<ReturnType<typeof measure>>, Awaited<ReturnType<typeof measure>>];
  console.log();
  for (const [row, what] of [
    [2, `the API floor, ${CONNECTIONS} connections`],
    [3, `POST /run, ${CONNECTIONS} connections`],
    [4, "processes"],
  ] as const) {
    const ratio = perSecond(served.rows, row) / perSecond(edge.rows, row);
    console.log(`${`${what} per second, runcode serve / npm start`.padEnd(60)} ${ratio.toFixed(2)}x`);
  }
}
