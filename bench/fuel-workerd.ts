/**
 * `npm run bench:fuel:workerd`: the catalogue of `npm run bench:fuel` (bench/fuel-catalogue.ts) in workerd, under
 * `wrangler dev` on loopback (started and stopped here), where clocks stand still during synchronous work. Each
 * runaway runs alone in one request; its CPU is workerd's own (user + system, /proc: 10 ms ticks, so at 10^8 units
 * a few percent), less that of a request that runs nothing, per 10^6 units of the fuel it reports. Arguments filter
 * the catalogue by name.
 */
import { spawn } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { RUNAWAYS } from "./fuel-catalogue.js";

const PORT = 8796;
const BASE = `http://127.0.0.1:${PORT}`;
const TICK_MS = 1000 / 100;

const server = spawn(
  "npx",
  ["wrangler", "dev", "-c", "bench/fuel-wrangler.toml", "--ip", "127.0.0.1", "--port", String(PORT)],
  {
    cwd: fileURLToPath(new URL("../..", import.meta.url)),
    detached: true,
    stdio: "ignore",
    env: { ...process.env, CLOUDFLARE_CF_FETCH_ENABLED: "false", WRANGLER_SEND_METRICS: "false" },
  },
);

/** The pids below `pid`, depth first (a child is listed under the thread that started it). */
function descendants(pid: number): number[] {
  const children: number[] = [];
  try {
    for (const task of readdirSync(`/proc/${pid}/task`))
      children.push(
        ...readFileSync(`/proc/${pid}/task/${task}/children`, "utf8").split(" ").filter(Boolean).map(Number),
      );
  } catch {}
  return children.flatMap((child) => [child, ...descendants(child)]);
}

/** CPU milliseconds (user + system) of the workerd processes under the server. */
function workerdCpuMs(): number {
  let ticks = 0;
  for (const pid of descendants(server.pid as number)) {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const [command, fields] = [
      stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")")),
      stat.slice(stat.lastIndexOf(")") + 2).split(" "),
    ];
    if (command === "workerd") ticks += Number(fields[11]) + Number(fields[12]);
  }
  return ticks * TICK_MS;
}

async function get(name: string): Promise<{ fuel: number; status: string; fuelUsed: number }> {
  const response = await fetch(`${BASE}/?name=${encodeURIComponent(name)}`);
  return response.json() as never;
}

try {
  const deadline = performance.now() + 60_000;
  let info: Awaited<ReturnType<typeof get>> | undefined;
  while (info === undefined && performance.now() < deadline) {
    info = await get("").catch(() => undefined);
    if (info === undefined) await new Promise((resolve) => setTimeout(resolve, 250));
  }
  if (info === undefined) throw new Error("wrangler dev did not start");
  let base = workerdCpuMs();
  for (let i = 0; i < 5; i++) await get("(idle)");
  const idleMs = (workerdCpuMs() - base) / 5;
  console.log(`fuel bench in workerd (wrangler dev): runaways stopped at ${info.fuel} units, frozen clock\n`);
  console.log(
    `${"program".padEnd(34)} ${"status".padEnd(11)} ${"fuel".padStart(12)} ${"CPU ms".padStart(8)} ${"ms/10^6".padStart(8)}`,
  );
  const rates: [string, number][] = [];
  const only = process.argv.slice(2);
  for (const [name, { wait }] of Object.entries(RUNAWAYS)) {
    if (only.length > 0 && !only.some((part) => name.includes(part))) continue;
    base = workerdCpuMs();
    const result = await get(name);
    const cpuMs = Math.max(0, workerdCpuMs() - base - idleMs);
    const rate = cpuMs / (result.fuelUsed / 1e6);
    if (!wait) rates.push([name, rate]);
    console.log(
      `${name.padEnd(34)} ${result.status.padEnd(11)} ${String(result.fuelUsed).padStart(12)} ${cpuMs.toFixed(0).padStart(8)} ${rate.toFixed(2).padStart(8)}`,
    );
  }
  rates.sort((a, b) => a[1] - b[1]);
  const [fastest, slowest] = [rates[0] as [string, number], rates[rates.length - 1] as [string, number]];
  console.log(
    `\nCPU per 10^6 fuel in workerd over ${rates.length} runaways (timer waits apart: time, not CPU): ${fastest[1].toFixed(2)} ms (${fastest[0]}) - ${slowest[1].toFixed(2)} ms (${slowest[0]}), spread ${(slowest[1] / fastest[1]).toFixed(1)}x`,
  );
} finally {
  process.kill(-(server.pid as number));
}
