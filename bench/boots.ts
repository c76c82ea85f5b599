/**
 * `npm run bench:boots`: what booting an instance costs the host, in-thread with a frozen clock: a restorable boot by
 * its memory's maximum (the figures behind `memoryClassBytes` in core/engine.ts), the run after one that left its
 * instance unfit for another (behind `INSTANCE_BOOT_FUEL` in core/host-fuel.ts), and trivial runs that each ask a
 * `memoryLimitBytes` of their own against runs of one limit. Cases are interleaved; CPU is the process's.
 */
import { cpuUsage } from "node:process";
import { nodeWasm } from "../node/index.js";
import { compiledModule } from "../src/core/engine.js";
import { BootedInstance } from "../src/core/instance.js";
import { InstancePool } from "../src/core/instance-pool.js";
import { createSandbox } from "../src/core/sandbox.js";

const MiB = 1024 * 1024;
const ROUNDS = 40;
const WARM_UP = 10;

const cpuMs = () => {
  const { user, system } = cpuUsage();
  return (user + system) / 1000;
};

/** Median of what came after the warm-up. */
function median(values: number[]): string {
  const sorted = values.slice(WARM_UP).sort((a, b) => a - b);
  return (sorted[sorted.length >> 1] as number).toFixed(2);
}

const wasm = await compiledModule(nodeWasm)();
const sandbox = createSandbox({ wasm: nodeWasm, pool: new InstancePool(), clock: () => 0 });
const js = { language: "javascript" } as const;

// A heap limit whose memory is each maximum (4 MiB of engine overhead added).
const maxima: Record<string, number> = { "16 MiB": 12, "128 MiB": 124, "256 MiB": 252, "1 GiB": 1020, "2 GiB": 2044 };
const runs: Record<string, { source: string; memoryLimitBytes: (round: number) => number }> = {
  trivial: { source: "export default 1", memoryLimitBytes: () => 8 * MiB },
  // Its memory's growth is refused: the instance is dropped, and the next run boots one.
  "out of memory": {
    source: "const a = []; for (;;) a.push(new Uint8Array(1024 * 1024));",
    memoryLimitBytes: () => 8 * MiB,
  },
  "after out of memory": { source: "export default 1", memoryLimitBytes: () => 8 * MiB },
  "a limit of its own": { source: "export default 1", memoryLimitBytes: (round) => (12 + round) * MiB + 4096 },
};
const cpu = new Map<string, number[]>();
const fuel: Record<string, string> = {};
const record = (name: string, ms: number) => cpu.set(name, [...(cpu.get(name) ?? []), ms]);
for (let round = 0; round < ROUNDS; round++) {
  for (const [name, mebibytes] of Object.entries(maxima)) {
    const start = cpuMs();
    await BootedInstance.boot(wasm, mebibytes * MiB, true);
    record(`boot, maximum ${name}`, cpuMs() - start);
  }
  for (const [name, { source, memoryLimitBytes }] of Object.entries(runs)) {
    const start = cpuMs();
    const { status, fuelUsed } = await sandbox.runCode(source, { ...js, memoryLimitBytes: memoryLimitBytes(round) });
    record(`run: ${name}`, cpuMs() - start);
    fuel[`run: ${name}`] = `${status}, ${fuelUsed} units`;
  }
}
for (const [name, values] of cpu) console.log(`${name}: ${median(values)} ms of CPU ${fuel[name] ?? ""}`);
