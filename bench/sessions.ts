/**
 * `npm run bench:sessions`: what a session costs beside a run, in one process (only the ratios compare between
 * machines): a trivial cell in a warm session against a trivial `runCode` on the caller's thread (rounds interleaved),
 * then, for sessions holding 1, 10 and 64 MiB of live data (random bytes, zeros, and JS objects), the snapshot's size
 * and time, `restoreSession` of it, `fork()`, and the first cell after each against a warm one. Steps come 300 ms
 * apart, as an agent's calls do (seconds apart): the pause in which a session's pool boots its spare instance.
 */
import { createSandbox, createSession, restoreSession, type Session } from "../node/index.js";
import { printTable, ratio, type Summary, sample, summarize } from "./stats.js";

const js = { language: "javascript" } as const;
const ROUNDS = 20;
const CELLS = 50;
const MiB = 1024 * 1024;

async function ok(session: Session, cell: string): Promise<unknown> {
  const result = await session.run(cell, js);
  if (result.status !== "success") throw new Error(`bench cell failed: ${JSON.stringify(result.error)}`);
  return result.result;
}

// A trivial cell against a trivial run, both on the caller's thread.
const sandbox = createSandbox({ threads: false });
const warm = await createSession();
const trivialRun = async () => {
  for (let i = 0; i < CELLS; i++) await sandbox.runCode("export default 1 + 1", js);
};
const trivialCell = async () => {
  for (let i = 0; i < CELLS; i++) await ok(warm, "1 + 1");
};
await trivialRun();
await trivialCell();
const runTimes: number[] = [];
const cellTimes: number[] = [];
for (let round = 0; round < ROUNDS; round++) {
  runTimes.push(...(await sample(1, trivialRun)));
  cellTimes.push(...(await sample(1, trivialCell)));
}
const perCall = (times: number[]) => times.map((ms) => ms / CELLS);
const run = summarize("trivial runCode, in-thread", perCall(runTimes));
const cell = summarize("trivial cell, warm session", perCall(cellTimes));
console.log(`per call, p50 over ${ROUNDS} samples of ${CELLS} sequential calls\n`);
printTable([run, cell]);
console.log();
ratio("trivial cell / trivial runCode in-thread", cell as Summary, run as Summary, "<= 1.5x");
console.log();

/** Cells that fill a session with `mib` MiB of live data of each kind. */
const fills: Record<string, (mib: number) => string> = {
  random: (mib) =>
    `var data = new Uint8Array(${mib * MiB}); for (let i = 0; i < data.length; i += 65536) crypto.getRandomValues(data.subarray(i, i + 65536)); data.length`,
  zeros: (mib) => `var data = new Uint8Array(${mib * MiB}); data.length`,
  objects: (mib) =>
    `var data = []; for (let i = 0; i < ${mib * 5_000}; i++) data.push({ id: i, name: "row " + i, tags: ["a", "b"] }); data.length`,
};

/** Times `fn` after a pause between calls. */
const timed = async <T>(fn: () => Promise<T>): Promise<[T, number]> => {
  await new Promise((resolve) => setTimeout(resolve, 300));
  const started = performance.now();
  const value = await fn();
  return [value, performance.now() - started];
};

const rows: string[][] = [];
let tenMiB: { fork: number; restore: number; warm: number; first: number } | undefined;
for (const mib of [1, 10, 64]) {
  for (const [kind, fill] of Object.entries(fills)) {
    const options = { webApis: true, memoryLimitBytes: 160 * MiB };
    const session = await createSession(options);
    await ok(session, fill(mib));
    // Warm: the engine's code and the pool's spare instance.
    (await session.fork()).close();
    const [, warmCell] = await timed(() => ok(session, "data.length"));
    const [bytes, snapshotMs] = await timed(() => session.snapshot());
    const [restored, restoreMs] = await timed(() => restoreSession(bytes, options));
    const [, firstAfterRestore] = await timed(() => ok(restored, "data.length"));
    const [forked, forkMs] = await timed(() => session.fork());
    const [, firstAfterFork] = await timed(() => ok(forked, "data.length"));
    const live = session.memoryBytes;
    rows.push([
      `${mib} MiB ${kind}`,
      `${(live / MiB).toFixed(1)}`,
      `${(bytes.length / MiB).toFixed(2)}`,
      `${(bytes.length / (mib * MiB)).toFixed(2)}x`,
      snapshotMs.toFixed(1),
      restoreMs.toFixed(1),
      forkMs.toFixed(1),
      warmCell.toFixed(2),
      firstAfterRestore.toFixed(2),
      firstAfterFork.toFixed(2),
    ]);
    if (mib === 10 && kind === "random") {
      tenMiB = { fork: forkMs, restore: restoreMs, warm: warmCell, first: firstAfterRestore };
    }
    for (const s of [session, restored, forked]) s.close();
  }
}

const header = [
  "session",
  "memory MiB",
  "snapshot MiB",
  "/ live data",
  "snapshot ms",
  "restore ms",
  "fork ms",
  "warm cell ms",
  "1st cell after restore ms",
  "1st cell after fork ms",
];
const widths = header.map((title, i) => Math.max(title.length, ...rows.map((row) => (row[i] as string).length)));
const line = (cells: string[]) => cells.map((text, i) => text.padStart(widths[i] as number)).join("  ");
console.log(line(header));
for (const row of rows) console.log(line(row));
if (tenMiB !== undefined) {
  console.log();
  console.log(`10 MiB of random data: fork ${tenMiB.fork.toFixed(1)} ms (target <= 5 ms)`);
  console.log(`10 MiB of random data: restoreSession ${tenMiB.restore.toFixed(1)} ms (target <= 20 ms)`);
}
warm.close();
process.exit(0);
