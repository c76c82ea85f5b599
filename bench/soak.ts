/**
 * `npm run bench:soak`: 100,000 runs in one process, mixing every status (success, error, memory, terminated by
 * the safety cap and by `terminate()`, link_error). Prints the host's RSS and heap at intervals and their growth;
 * fails (exit code 1) when a run settles with an unexpected status. Run with `--expose-gc` for stable figures.
 */
import { readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { createSandbox } from "../node/index.js";
import { startMixed } from "./soak-mix.js";

const TOTAL = Number(process.argv[2] ?? 100_000);
const CONCURRENCY = 4;
const REPORT_EVERY = 10_000;

const wasm = new WebAssembly.Module(await readFile(createRequire(import.meta.url).resolve("runcode/wasm")));
const { runCode } = createSandbox({ threads: false, wasm, safetyCap: { fuel: 1_000_000 } });
const gc = (globalThis as { gc?: () => void }).gc;
const mb = (bytes: number) => `${(bytes / 1048576).toFixed(1)} MB`;
const memory = () => {
  gc?.();
  gc?.();
  const { rss, heapUsed } = process.memoryUsage();
  return { rss, heapUsed };
};

for (let i = 0; i < 200; i++) await startMixed(runCode, i)[0];
const first = memory();
const started = performance.now();
const counts: Record<string, number> = {};
let unexpected = 0;
let stillRunning = 0;
console.log(
  `soak: ${TOTAL} runs, ${CONCURRENCY} at a time, Node ${process.version}${gc ? "" : " (no --expose-gc: noisy)"}`,
);
console.log(`${"runs".padStart(8)} ${"seconds".padStart(8)} ${"RSS".padStart(10)} ${"heapUsed".padStart(10)}`);
console.log(`${"0".padStart(8)} ${"0.0".padStart(8)} ${mb(first.rss).padStart(10)} ${mb(first.heapUsed).padStart(10)}`);
for (let i = 0; i < TOTAL; i += CONCURRENCY) {
  const batch = Array.from({ length: Math.min(CONCURRENCY, TOTAL - i) }, (_, k) => startMixed(runCode, i + k));
  const results = await Promise.all(batch.map(([handle]) => handle));
  results.forEach((result, k) => {
    const [handle, expected] = batch[k] as ReturnType<typeof startMixed>;
    if (handle.running) stillRunning++;
    counts[result.status] = (counts[result.status] ?? 0) + 1;
    if (result.status !== expected) {
      unexpected++;
      if (unexpected <= 5) console.log(`run ${i + k}: expected ${expected}, got ${result.status}`, result.error);
    }
  });
  const done = i + batch.length;
  if (done % REPORT_EVERY === 0 || done === TOTAL) {
    const now = memory();
    const seconds = ((performance.now() - started) / 1000).toFixed(1);
    console.log(
      `${String(done).padStart(8)} ${seconds.padStart(8)} ${mb(now.rss).padStart(10)} ${mb(now.heapUsed).padStart(10)}`,
    );
  }
}
const last = memory();
const seconds = (performance.now() - started) / 1000;
console.log(`statuses: ${JSON.stringify(counts)}; unexpected: ${unexpected}; still running: ${stillRunning}`);
console.log(`duration: ${seconds.toFixed(1)} s (${((seconds * 1000) / TOTAL).toFixed(2)} ms per run)`);
console.log(`RSS ${mb(first.rss)} -> ${mb(last.rss)} (growth ${mb(last.rss - first.rss)})`);
console.log(`heapUsed ${mb(first.heapUsed)} -> ${mb(last.heapUsed)} (growth ${mb(last.heapUsed - first.heapUsed)})`);
if (unexpected > 0 || stillRunning > 0) process.exitCode = 1;
