/**
 * The playground's figures in Chromium, from one run: navigation to ready, first and repeated runs of a trivial
 * program (inside the worker and page round trip), Stop latency on `while(true){}`, and the page's transfer size
 * (gzip). Builds the page, serves `dist/web` with `vite preview`, drives Debian's Chromium. Prints; never fails on time.
 * Run: `npm run bench:web`.
 * @module
 */
import { type ChildProcess, execSync, spawn } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { chromium } from "@playwright/test";
import { chromiumLaunch } from "../e2e/playwright.config.js";

const ROOT = process.cwd();
const PORT = 4199;
const BASE = `http://127.0.0.1:${PORT}/`;
const LAUNCH = chromiumLaunch;

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? Number.NaN;
const p95 = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length * 0.95)] ?? Number.NaN;
const kb = (bytes: number) => `${(bytes / 1024).toFixed(1)} KiB`;
const ms = (x: number) => `${x.toFixed(2)} ms`;

async function serve(): Promise<ChildProcess> {
  const server = spawn("npx", ["vite", "preview", "--port", String(PORT), "--strictPort", "--host", "127.0.0.1"], {
    cwd: ROOT,
    stdio: "ignore",
    detached: true,
  });
  for (let i = 0; i < 100; i++) {
    try {
      if ((await fetch(BASE)).ok) return server;
    } catch {
      // not up yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error("vite preview did not start");
}

/** gzip sizes of the built files, split into what the page loads at start and SWC's wasm (the first TypeScript run's). */
function transfer(): { initial: number; lazy: number; files: string[] } {
  const dir = join(ROOT, "dist/web");
  const files = ["index.html", ...readdirSync(join(dir, "assets")).map((f) => `assets/${f}`)];
  let initial = 0;
  let lazy = 0;
  for (const file of files) {
    const size = gzipSync(readFileSync(join(dir, file)), { level: 9 }).length;
    if (/\/swc-[^/]*\.wasm$/.test(file)) lazy += size;
    else initial += size;
  }
  return { initial, lazy, files };
}

async function main(): Promise<void> {
  execSync("npx vite build", { cwd: ROOT, stdio: "ignore" });
  const server = await serve();
  const browser = await chromium.launch(LAUNCH);
  try {
    const page = await (await browser.newContext()).newPage();
    // Bytes as they crossed the network at start (vite preview does not compress, so gzip is computed below).
    const loaded: string[] = [];
    page.on("requestfinished", (request) => loaded.push(new URL(request.url()).pathname));
    const t0 = Date.now();
    await page.goto(BASE);
    await page.waitForSelector("body[data-ready=true]", { state: "attached" });
    const readyMs = Date.now() - t0;
    const warmup = await page.textContent("#engine");
    const nav = await page.evaluate(() => {
      const [entry] = performance.getEntriesByType("navigation") as PerformanceNavigationTiming[];
      return { domContentLoaded: entry?.domContentLoadedEventEnd ?? 0, readyAt: performance.now() };
    });

    // Runs through the page's runner (the Run button's path): time inside the worker and page round trip.
    type Timing = { status: string; worker: number; roundTrip: number };
    type Hook = { runcode: { runRaw(s: string, l: string): Promise<Timing>; stopRaw(): Promise<number> } };
    const timed = (source: string, language: string) =>
      page.evaluate(
        ([s, l]) => (window as unknown as Hook).runcode.runRaw(s as string, l as string),
        [source, language],
      );
    const first = await timed("export default 1 + 1", "javascript");
    const repeated: Timing[] = [];
    for (let i = 0; i < 200; i++) repeated.push(await timed("export default 1 + 1", "javascript"));
    const firstTs = await timed("export default (1 as number) + 1", "typescript");
    const repeatedTs: number[] = [];
    for (let i = 0; i < 50; i++)
      repeatedTs.push((await timed("export default (1 as number) + 1", "typescript")).worker);

    // Stop latency on while(true){}: from Stop until the run has settled as terminated; then the next run's time.
    const stops: { stop: number; nextRun: number; status: string }[] = [];
    for (let i = 0; i < 5; i++) {
      await page.evaluate(() => void (window as unknown as Hook).runcode.runRaw("while (true) {}", "javascript"));
      await page.waitForTimeout(300);
      stops.push(
        await page.evaluate(async () => {
          const hook = (window as unknown as Hook).runcode;
          const stop = await hook.stopRaw();
          const t = performance.now();
          const next = await hook.runRaw("export default 1", "javascript");
          return { stop, nextRun: performance.now() - t, status: next.status };
        }),
      );
    }

    // A second navigation: HTTP cache and Chromium's code caches warm, as on a returning visit.
    const t1 = Date.now();
    await page.reload();
    await page.waitForSelector("body[data-ready=true]", { state: "attached" });
    const warmReadyMs = Date.now() - t1;

    const t = transfer();
    console.log("runcode playground bench (Chromium, vite preview, one run)");
    console.log(
      `  navigation to ready            ${ms(readyMs)}  (DOMContentLoaded ${ms(nav.domContentLoaded)}; ${warmup})`,
    );
    console.log(`  navigation to ready, reload     ${ms(warmReadyMs)}`);
    console.log(`  first run, trivial JS          worker ${ms(first.worker)}  round trip ${ms(first.roundTrip)}`);
    console.log(
      `  repeated trivial JS (200)      worker median ${ms(median(repeated.map((r) => r.worker)))} p95 ${ms(p95(repeated.map((r) => r.worker)))}` +
        `  round trip median ${ms(median(repeated.map((r) => r.roundTrip)))} p95 ${ms(p95(repeated.map((r) => r.roundTrip)))}`,
    );
    console.log(
      `  first run, trivial TS (compiler preloaded in the background) worker ${ms(firstTs.worker)}  round trip ${ms(firstTs.roundTrip)}`,
    );
    console.log(`  repeated trivial TS (50)       worker median ${ms(median(repeatedTs))}`);
    console.log(
      `  Stop on while(true){} (5)      median ${ms(median(stops.map((s) => s.stop)))} max ${ms(Math.max(...stops.map((s) => s.stop)))}` +
        `  next run after Stop median ${ms(median(stops.map((s) => s.nextRun)))}`,
    );
    console.log(
      `  transfer at start (gzip -9)    ${kb(t.initial)}  (${loaded.filter((p) => p !== "/").length} requests)`,
    );
    console.log(`  lazy SWC wasm (gzip)           ${kb(t.lazy)}`);
  } finally {
    await browser.close();
    // The server's process group may be gone already (vite exits when its parent does).
    if (server.pid !== undefined) {
      try {
        process.kill(-server.pid);
      } catch {}
    }
  }
}

await main();
