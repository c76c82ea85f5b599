/**
 * `npm run bench:admission`: how long another tenant's `POST /run` takes while one tenant floods `/run` within its
 * rate with runs that hold their memory while they await a service (as runs awaiting kv do), through the HTTP app in
 * this process with the edge's figures (a 72 MiB admission budget, a 32 MiB default cap, 600 runs per minute).
 * Each case runs 10 s: the flooding tenant keeps 6 runs in flight (retrying a 503 after its `Retry-After`), the
 * other sends a trivial run every 250 ms.
 *
 * Then the turns of Node's default path, where each run is attempted on the caller's thread for a slice of fuel: the
 * flooding tenant keeps 16 runs in flight that each spend most of the slice there (~1.5 ms), the other runs a trivial
 * run every 50 ms, 10 s alone and 10 s flooded; with `runCode` in this process, then through `POST /run` on
 * `runcode serve`, started here in a process group of its own with quotas the flood stays within. `-- turns`
 * measures these only.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { createSandbox } from "../node/index.js";
import { accessFrom } from "../src/host/http/auth.js";
import { createHost } from "../src/host/index.js";
import type { Service } from "../src/tools/registry.js";
import type { JsonValue } from "../src/values/json.js";
import { fromWire } from "../src/values/wire.js";
import { ready } from "./http-load.js";

const MiB = 1024 * 1024;
const KEYS = { flood: "flood-key-0123456789abcdef", other: "other-key-0123456789abcdef" };
const CASE_MS = 10_000;
/** What a flooding run awaits, as a run waiting on kv would. */
const HOLD_MS = 2_000;

const wait: Service = {
  id: "wait",
  description: "Resolves after ms milliseconds",
  tools: [
    {
      id: "sleep",
      description: "Sleeps",
      inputSchema: { type: "object", properties: { ms: { type: "number" } } },
      run: ({ ms }) => new Promise((resolve) => setTimeout(() => resolve(null), ms as number)),
    },
  ],
};

const { runCode } = createSandbox({ threads: false });
const { app } = await createHost({
  services: [wait],
  app: {
    access: await accessFrom({ apiKeys: `flood:${KEYS.flood},other:${KEYS.other}` }),
    run: { runCode, defaultMemoryLimitBytes: 32 * MiB },
  },
});

const post = (who: keyof typeof KEYS, source: string, memoryLimitBytes?: number) =>
  app.fetch(
    new Request("http://host/run", {
      method: "POST",
      headers: { authorization: `Bearer ${KEYS[who]}`, "content-type": "application/json" },
      body: JSON.stringify({ source, options: memoryLimitBytes === undefined ? {} : { memoryLimitBytes } }),
    }),
  );
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
/** The `q` quantile of `times`. */
const at = (times: number[], q: number) => {
  const sorted = [...times].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN;
};

/** The other tenant's latencies (ms) and refusals over one case, with `flooders` runs of `floodCap` in flight. */
async function measure(flooders: number, floodCap: number) {
  const end = performance.now() + CASE_MS;
  const flood = Array.from({ length: flooders }, async () => {
    while (performance.now() < end) {
      const answer = await post("flood", `import { sleep } from "wait"; await sleep({ ms: ${HOLD_MS} });`, floodCap);
      if (answer.status !== 200) await sleep(1000 * Number(answer.headers.get("retry-after") ?? 1));
      else await answer.text();
    }
  });
  await sleep(300);
  const times: number[] = [];
  let refused = 0;
  while (performance.now() < end) {
    const start = performance.now();
    const answer = await post("other", "export default 1");
    const body = await answer.json();
    times.push(performance.now() - start);
    if (answer.status !== 200 || (fromWire(body as JsonValue) as { result?: unknown }).result !== 1) refused++;
    await sleep(250);
  }
  await Promise.all(flood);
  return { runs: times.length, refused, p50: at(times, 0.5), p90: at(times, 0.9), max: Math.max(...times) };
}

if (process.argv[2] !== "turns") {
  console.log(
    `${"case".padEnd(40)} ${"runs".padStart(5)} ${"503".padStart(4)} ${"p50 ms".padStart(8)} ${"p90 ms".padStart(8)} ${"max ms".padStart(8)}`,
  );
  for (const [label, flooders, cap] of [
    ["alone", 0, 32 * MiB],
    ["6 flooding runs at 32 MiB", 6, 32 * MiB],
    ["6 flooding runs at 64 MiB", 6, 64 * MiB],
  ] as const) {
    const r = await measure(flooders, cap);
    console.log(
      `${label.padEnd(40)} ${String(r.runs).padStart(5)} ${String(r.refused).padStart(4)} ${r.p50.toFixed(1).padStart(8)} ${r.p90.toFixed(1).padStart(8)} ${r.max.toFixed(1).padStart(8)}`,
    );
  }
}

/** Where `runcode serve` listens here. */
const SERVE_PORT = 19431;
/** As many as a tenant's share of `runcode serve`'s admission holds at once at {@link FLOOD_MEMORY} (16 MiB each). */
const FLOODERS = 16;
const FLOOD_MEMORY = 8 * MiB;
/** ~340,000 units of fuel: most of the slice (400,000), ending within it, on the caller's thread. */
const MOST_OF_THE_SLICE = "let s = 0; for (let i = 0; i < 12000; i++) s += i; export default s;";

/** `runcode serve` with the two keys and quotas a flood of short runs stays within (a run reserves its 2 s cap). */
function startServe(dir: string) {
  const root = fileURLToPath(new URL("../..", import.meta.url));
  const args = ["dist/node/cli.js", "serve", "--port", String(SERVE_PORT), "--db", `file:${join(dir, "a.db")}`];
  return spawn(process.execPath, args, {
    cwd: root,
    detached: true,
    stdio: "ignore",
    env: {
      ...process.env,
      RUNCODE_API_KEYS: `flood:${KEYS.flood},other:${KEYS.other}`,
      RUNCODE_TENANT_RUNS_PER_MINUTE: "1000000",
      RUNCODE_TENANT_CPU_MS_PER_MINUTE: "6000000",
      RUNCODE_TENANT_CPU_BURST_MS: "100000",
    },
  });
}

/** Runs `source` for `who`, with `memoryLimitBytes` when given; whether it succeeded. */
type RunFor = (who: keyof typeof KEYS, source: string, memoryLimitBytes?: number) => Promise<boolean>;

/** The other tenant's trivial run's latencies (ms) until `until`, one every 50 ms, and its failures. */
async function otherOf(run: RunFor, until: number) {
  const times: number[] = [];
  let failed = 0;
  while (Date.now() < until) {
    const start = performance.now();
    const ok = await run("other", "export default 1");
    times.push(performance.now() - start);
    if (!ok) failed++;
    await sleep(50);
  }
  return { times, failed };
}

/** The flooding tenant's {@link FLOODERS} runs in flight until `until`, each re-issued as it ends: how many ended. */
async function floodOf(run: RunFor, until: number) {
  let runs = 0;
  const loop = async () => {
    while (Date.now() < until) {
      if (await run("flood", MOST_OF_THE_SLICE, FLOOD_MEMORY)) runs++;
      else await sleep(1000);
    }
  };
  await Promise.all(Array.from({ length: FLOODERS }, loop));
  return runs;
}

/** The other tenant's latencies alone, then flooded, with `run`, printed as `label`. */
async function turnsCase(label: string, run: RunFor) {
  // Warm both tenants' paths.
  await Promise.all([otherOf(run, Date.now() + 2_000), floodOf(run, Date.now() + 2_000)]);
  const alone = await otherOf(run, Date.now() + CASE_MS);
  const until = Date.now() + CASE_MS;
  const [flooded, runs] = await Promise.all([otherOf(run, until), floodOf(run, until)]);
  console.log(`${label}: the flood ran ${runs}; the other's failures ${alone.failed + flooded.failed}`);
  for (const [when, { times }] of [
    ["alone", alone],
    ["flooded", flooded],
  ] as const) {
    console.log(
      `${when.padStart(10)} ${String(times.length).padStart(5)} ${at(times, 0.5).toFixed(1).padStart(8)} ${at(times, 0.99).toFixed(1).padStart(8)}`,
    );
  }
}

console.log(
  `\nThe caller's thread's turns: the other tenant's trivial run while one tenant keeps ${FLOODERS} runs in flight that each spend most of the slice there`,
);
console.log(`${"".padStart(10)} ${"runs".padStart(5)} ${"p50 ms".padStart(8)} ${"p99 ms".padStart(8)}`);
const defaultPath = createSandbox();
await turnsCase("runCode on the default path, in this process", async (who, source, memoryLimitBytes) => {
  const options = memoryLimitBytes === undefined ? {} : { memoryLimitBytes };
  const result = await defaultPath.runCode(source, { language: "javascript", tenant: who, ...options });
  return result.status === "success";
});
const dir = mkdtempSync(join(tmpdir(), "runcode-bench-admission-"));
const server = startServe(dir);
try {
  const base = `http://127.0.0.1:${SERVE_PORT}`;
  await ready(base, "runcode serve");
  await turnsCase("POST /run on runcode serve", async (who, source, memoryLimitBytes) => {
    const options = { language: "javascript", ...(memoryLimitBytes === undefined ? {} : { memoryLimitBytes }) };
    const answer = await fetch(`${base}/run`, {
      method: "POST",
      headers: { authorization: `Bearer ${KEYS[who]}`, "content-type": "application/json" },
      body: JSON.stringify({ source, options }),
    });
    const body = (await answer.json()) as { status?: string };
    return answer.ok && body.status === "success";
  });
} finally {
  if (server.pid !== undefined) process.kill(-server.pid, "SIGTERM");
  await new Promise((resolve) => server.once("exit", resolve));
  rmSync(dir, { recursive: true, force: true });
}
