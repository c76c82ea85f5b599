/**
 * `npm run bench:fair-threads`: how long a trivial run waits for a worker thread behind other runs' work, against
 * the same run on an idle pool in the same process (median of rounds): another tenant's run behind one tenant's 16
 * CPU-bound runs, and a caller's nested run behind another caller's spinning nested run.
 */
import { createSandbox } from "../node/index.js";

const JS = { language: "javascript" } as const;
const ROUNDS = 5;
const { runCode } = createSandbox({ threads: true });
const median = (values: number[]) => [...values].sort((a, b) => a - b)[values.length >> 1] ?? Number.NaN;
const timed = async (run: () => PromiseLike<unknown>): Promise<number> => {
  const start = performance.now();
  await run();
  return performance.now() - start;
};

/** A loop of `n` steps, with the step count that takes `ms` alone on a worker. */
const LOOP = "let s = 0;\nfor (let i = 0; i < n; i++) s += i;\nexport default s;";
async function loopFor(ms: number): Promise<number> {
  const n = 1_000_000;
  await runCode(LOOP, { ...JS, globals: { n } });
  const took = await timed(() => runCode(LOOP, { ...JS, globals: { n } }));
  return Math.round((n * ms) / took);
}
const busy = await loopFor(250);

const trivial = (tenant: string) => runCode("export default 1", { ...JS, tenant });
const tenants = { idle: [] as number[], behind: [] as number[] };
for (let round = 0; round < ROUNDS; round++) {
  tenants.idle.push(await timed(() => trivial("b")));
  const backlog = Array.from({ length: 16 }, () => runCode(LOOP, { ...JS, tenant: "a", globals: { n: busy } }));
  tenants.behind.push(await timed(() => trivial("b")));
  await Promise.all(backlog);
}

/** A root run whose host function runs `source` nested and awaits it. */
const nesting = (source: string, n = 0) =>
  runCode("export default await nest();", {
    ...JS,
    globals: { nest: async () => (await runCode(source, { ...JS, globals: { n } })).status },
  });
const callers = { idle: [] as number[], behind: [] as number[] };
const spinning = await loopFor(2_000);
for (let round = 0; round < ROUNDS; round++) {
  callers.idle.push(await timed(() => nesting("export default 1")));
  const other = nesting(LOOP, spinning);
  // The other caller's nested run is under way.
  await new Promise((resolve) => setTimeout(resolve, 100));
  callers.behind.push(await timed(() => nesting("export default 1")));
  await other;
}

const row = (label: string, { idle, behind }: { idle: number[]; behind: number[] }) =>
  console.log(
    `${label.padEnd(72)} ${median(idle).toFixed(1).padStart(8)} ${median(behind).toFixed(1).padStart(10)} ${(median(behind) / median(idle)).toFixed(1).padStart(8)}x`,
  );
console.log(
  `${"trivial run's latency, ms (median of 5 rounds)".padEnd(72)} ${"idle".padStart(8)} ${"behind".padStart(10)}`,
);
row("another tenant's run behind one tenant's 16 CPU-bound runs (250 ms each alone)", tenants);
row("a caller's nested run behind another caller's spinning nested run (2 s alone)", callers);
