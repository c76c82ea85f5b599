/**
 * `npm run bench:session-threads`: what a session's realm on a worker thread (`threadedSessions`, `runcode serve`'s
 * engine) costs beside one on the caller's thread (the Node entry's `createSession`), in one process: a trivial cell,
 * and a trivial cell followed by its snapshot (what the host's service does for every cell), sequential calls in
 * interleaved rounds, p50 and p99 per call; then how long after a `terminate()` of a cell spinning in synchronous code
 * on a worker thread the session's next cell has answered.
 */

import { createSession } from "../node/index.js";
import { threadedSessions } from "../node/session-threads/engine.js";
import type { EngineSession } from "../src/host/sessions/engine.js";
import { printTable, ratio, type Summary, sample, summarize } from "./stats.js";

const js = { language: "javascript" } as const;
const ROUNDS = 10;
const CELLS = 50;

const inThread: EngineSession = await createSession({});
const engine = threadedSessions({}, { threads: 1 });
const threaded = await engine.create({ tenant: "bench" });

async function cell(session: EngineSession): Promise<void> {
  const result = await session.run("1 + 1", js);
  if (result.result !== 2) throw new Error(`bench cell failed: ${JSON.stringify(result.error)}`);
}

const cases = [
  { label: "trivial cell, in-thread", fn: () => cell(inThread) },
  { label: "trivial cell, worker thread", fn: () => cell(threaded) },
  { label: "cell + snapshot, in-thread", fn: () => cell(inThread).then(() => inThread.snapshot()) },
  { label: "cell + snapshot, worker thread", fn: () => cell(threaded).then(() => threaded.snapshot()) },
];
const times = cases.map(() => [] as number[]);
// A round of each first, to warm the engine's code on both threads.
for (const { fn } of cases) await sample(CELLS, fn);
for (let round = 0; round < ROUNDS; round++) {
  for (const [i, { fn }] of cases.entries()) times[i]?.push(...(await sample(CELLS, fn)));
}
const [cellIn, cellOn, snapIn, snapOn] = cases.map(({ label }, i) => summarize(label, times[i] ?? [])) as Summary[];
console.log(`per call, over ${ROUNDS} interleaved rounds of ${CELLS} sequential calls\n`);
printTable([cellIn, cellOn, snapIn, snapOn] as Summary[]);
console.log();
ratio("trivial cell: worker thread / in-thread", cellOn as Summary, cellIn as Summary);
ratio("cell + snapshot: worker thread / in-thread", snapOn as Summary, snapIn as Summary);

const STOPS = 20;
const spinner = await threadedSessions({ safetyCap: { fuel: 1e12, cpuTimeMs: 600_000 } }, { threads: 1 }).create({
  tenant: "bench",
});
const stops: number[] = [];
for (let i = 0; i < STOPS; i++) {
  const spinning = spinner.run("for (;;) {}", js);
  await new Promise((resolve) => setTimeout(resolve, 20));
  const stopped = performance.now();
  spinning.terminate();
  await cell(spinner);
  stops.push(performance.now() - stopped);
}
console.log();
printTable([summarize("terminate() of a spin -> next cell answered", stops)]);
inThread.close();
threaded.close();
spinner.close();
