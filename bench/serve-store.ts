/**
 * `npm run bench:serve-store`: `runcode serve` over a database of {@link RECORDS} process records of about 2 MiB
 * each (stdout, stderr and output near their caps), written straight through the server's store before it starts.
 * Times one whole listing (`GET /processes`, page after page) and the server's memory (RSS before, peak after), then
 * another tenant's `GET /processes?limit=1` while {@link LISTINGS} whole listings run at once, and with
 * {@link STREAMS} event streams of one record open and unread. Bounded in count and
 * time; the server is started and stopped here by its process group.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { LibsqlProcessStore, openDatabase } from "../node/serve/libsql-stores.js";
import type { ProcessRecord } from "../src/host/processes/storage.js";
import { load, ready } from "./http-load.js";
import { printTable, summarize } from "./stats.js";

const RECORDS = 1_000;
const LISTINGS = 6;
const STREAMS = 200;
const PORT = 8793;
const root = fileURLToPath(new URL("../..", import.meta.url));
const keys = { big: "big-tenant-api-key-0001", other: "other-tenant-api-key-01" };
const text = (bytes: number, letter: string) => letter.repeat(bytes);

/** The server's resident memory now and its peak so far, in MiB (Linux `/proc`). */
function memoryOf(pid: number) {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const mib = (field: string) => Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(status)?.[1] ?? 0) / 1024;
  return { rss: mib("VmRSS"), peak: mib("VmHWM") };
}

/** Writes the records; the first one's pid. */
async function fill(url: string) {
  const db = await openDatabase(url);
  const store = new LibsqlProcessStore(db);
  const output = { data: text(262_000, "o") };
  const started = performance.now();
  let first = 0;
  for (let i = 0; i < RECORDS; i++) {
    const record: ProcessRecord = {
      pid: await store.nextPid("big"),
      tenant: "big",
      ref: "bench",
      state: "idle",
      exitState: "success",
      code: `console.log(${i})`,
      timeoutMs: 30_000,
      output,
      stdout: text(1_048_576, "s"),
      stderr: text(786_432, "e"),
      error: null,
      truncated: { stdout: false, stderr: false, output: false },
      runs: 1,
      createdAt: Date.now(),
      startedAt: Date.now(),
      finishedAt: Date.now(),
    };
    await store.create(record);
    first ||= record.pid;
  }
  db.close();
  return { first, seconds: (performance.now() - started) / 1000 };
}

/** Every page of the `big` tenant's listing; how many summaries it returned (throws when a page fails). */
async function listAll(base: string): Promise<number> {
  let after: string | null = "";
  let count = 0;
  while (after !== null) {
    const response = await fetch(`${base}/processes?limit=100${after === "" ? "" : `&after=${after}`}`, {
      headers: { authorization: `Bearer ${keys.big}` },
    });
    if (!response.ok) throw new Error(`GET /processes answered ${response.status}`);
    const page = (await response.json()) as { processes: unknown[]; next: string | null };
    count += page.processes.length;
    after = page.next;
  }
  return count;
}

const dir = mkdtempSync(join(tmpdir(), "runcode-bench-store-"));
const url = `file:${join(dir, "bench.db")}`;
try {
  const { first, seconds } = await fill(url);
  console.log(`${RECORDS} records of ~2 MiB written through the store in ${seconds.toFixed(1)} s`);
  const server = spawn(process.execPath, ["dist/node/cli.js", "serve", "--port", String(PORT), "--db", url], {
    cwd: root,
    detached: true,
    stdio: ["ignore", "ignore", "inherit"],
    env: {
      ...process.env,
      RUNCODE_API_KEYS: `big:${keys.big},other:${keys.other}`,
      RUNCODE_TENANT_RUNS_PER_MINUTE: "1000000",
    },
  });
  const pid = server.pid as number;
  try {
    const base = `http://127.0.0.1:${PORT}`;
    await ready(base, "runcode serve");
    const idle = await load(50, 1, async () => {
      const response = await fetch(`${base}/processes?limit=1`, { headers: { authorization: `Bearer ${keys.other}` } });
      await response.arrayBuffer();
      return response.ok;
    });
    const before = memoryOf(pid);
    const t = performance.now();
    const listed = await listAll(base);
    const listingMs = performance.now() - t;
    const after = memoryOf(pid);
    console.log(
      `one whole listing (${listed} summaries, pages of 100): ${listingMs.toFixed(0)} ms; RSS ${before.rss.toFixed(0)} MiB before, peak ${after.peak.toFixed(0)} MiB`,
    );
    let listing = true;
    const started = performance.now();
    const listings = Promise.allSettled(Array.from({ length: LISTINGS }, () => listAll(base))).finally(() => {
      listing = false;
    });
    const other: number[] = [];
    let otherFailed = 0;
    while (listing) {
      const s = performance.now();
      const answered = await fetch(`${base}/processes?limit=1`, { headers: { authorization: `Bearer ${keys.other}` } })
        .then(async (response) => {
          await response.arrayBuffer();
          return response.ok;
        })
        .catch(() => false);
      other.push(performance.now() - s);
      if (!answered) otherFailed++;
    }
    const failed = (await listings).filter((listed) => listed.status === "rejected").length;
    console.log(
      `${LISTINGS} whole listings at once: ${((performance.now() - started) / 1000).toFixed(1)} s, ${failed} failed; peak RSS ${memoryOf(pid).peak.toFixed(0)} MiB; the other tenant's slowest ${Math.max(...other).toFixed(0)} ms, ${otherFailed} failed`,
    );
    const opened = new AbortController();
    const t0 = performance.now();
    const streams = await Promise.allSettled(
      Array.from({ length: STREAMS }, () =>
        fetch(`${base}/processes/${first}/events`, {
          headers: { authorization: `Bearer ${keys.big}` },
          signal: opened.signal,
        }),
      ),
    );
    const openMs = performance.now() - t0;
    const beside = await load(50, 1, async () => {
      const response = await fetch(`${base}/processes?limit=1`, { headers: { authorization: `Bearer ${keys.other}` } });
      await response.arrayBuffer();
      return response.ok;
    });
    console.log(
      `${STREAMS} event streams of one record opened in ${openMs.toFixed(0)} ms (${streams.filter((s) => s.status === "fulfilled" && s.value.ok).length} answered 200), unread: RSS ${memoryOf(pid).rss.toFixed(0)} MiB`,
    );
    opened.abort();
    printTable([
      summarize("another tenant's GET /processes?limit=1, idle", idle.times),
      summarize(`the same during ${LISTINGS} whole listings`, other),
      summarize(`the same beside ${STREAMS} unread event streams`, beside.times),
    ]);
  } finally {
    if (server.exitCode === null) {
      process.kill(-pid, "SIGTERM");
      await new Promise((resolve) => server.once("exit", resolve));
    }
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
