/**
 * `npm run bench:worker`: load on the local edge host (`wrangler dev` on loopback, started and stopped here), with
 * the same code's in-process `runCode` and an API request that runs nothing (what `wrangler dev` and the app cost
 * alone) from the same run as the bases of the ratios. Bounded in count and time.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { runCode } from "../node/index.js";
import { load, ready, requests } from "./http-load.js";
import { printTable, ratio, type Summary, sample, summarize } from "./stats.js";

const PORT = 8799;
const BASE = `http://127.0.0.1:${PORT}`;
const CONNECTIONS = 10;
const RUN_REQUESTS = 3_000;
const PROCESSES = 200;
const PROCESS_CONNECTIONS = 4;
const TRIVIAL = "export default 1 + 1";
/** The host runs as deployed: with an API key, and room in the tenant's rate, slots and CPU for the whole load. */
const KEY = "bench-key-0123456789abcdef";
const AUTH = { authorization: `Bearer ${KEY}` };
const VARS = [
  `RUNCODE_ORIGINS:${BASE}`,
  `RUNCODE_API_KEYS:bench:${KEY}`,
  "RUNCODE_TENANT_RUNS_PER_MINUTE:1000000",
  "RUNCODE_TENANT_MAX_ACTIVE:256",
  "RUNCODE_TENANT_CPU_MS_PER_MINUTE:6000000",
  "RUNCODE_TENANT_CPU_BURST_MS:1000000",
];

function startServer(persist: string): ChildProcess {
  const vars = VARS.flatMap((v) => ["--var", v]);
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

const { postRun, listOne, fullProcess, listed } = requests(BASE, AUTH);

const persist = mkdtempSync(join(tmpdir(), "runcode-bench-"));
const server = startServer(persist);
try {
  await ready(BASE, "wrangler dev");
  for (let i = 0; i < 50; i++) await postRun();
  for (let i = 0; i < 5; i++) await fullProcess();
  for (let i = 0; i < 50; i++) await runCode(TRIVIAL, { language: "javascript" });

  const inProcess = summarize(
    "in-process runCode, trivial JS",
    await sample(500, () => runCode(TRIVIAL, { language: "javascript" })),
  );
  const floor = await load(RUN_REQUESTS, CONNECTIONS, listOne);
  const run = await load(RUN_REQUESTS, CONNECTIONS, postRun);
  const processes = await load(PROCESSES, PROCESS_CONNECTIONS, fullProcess);
  const recorded = await listed();

  const rows: Summary[] = [
    inProcess,
    { ...summarize(`GET /processes?limit=1, ${CONNECTIONS} connections`, floor.times), perSecond: floor.perSecond },
    { ...summarize(`POST /run trivial JS, ${CONNECTIONS} connections`, run.times), perSecond: run.perSecond },
    {
      ...summarize(`process: create + events + stdout, ${PROCESS_CONNECTIONS} connections`, processes.times),
      perSecond: processes.perSecond,
    },
  ];
  console.log(`edge host bench: wrangler dev on loopback, Node ${process.version}\n`);
  printTable(rows);
  console.log();
  ratio("POST /run p50 / in-process runCode p50", rows[2] as Summary, inProcess);
  console.log(
    `${"POST /run per second / the API floor's (no run) per second".padEnd(60)} ${(run.perSecond / floor.perSecond).toFixed(2)}x`,
  );
  console.log(
    `${"POST /run requests, non-2xx or failed".padEnd(60)} ${run.times.length}, ${run.failures}  (target 0 failed, >= 800 req/s, p50 < 5 ms)`,
  );
  console.log(`${"processes run, failed".padEnd(60)} ${processes.times.length}, ${processes.failures}`);
  const lost = 5 + processes.times.length - recorded;
  console.log(`${"process records lost (created but not listed)".padEnd(60)} ${lost}`);
} finally {
  if (server.pid !== undefined) process.kill(-server.pid, "SIGTERM");
  rmSync(persist, { recursive: true, force: true });
}
