/**
 * `npm run bench:admission`: how long another tenant's `POST /run` takes while one tenant floods `/run` within its
 * rate with runs that hold their memory while they await a service (as runs awaiting kv do), through the HTTP app in
 * this process with the edge's figures (a 72 MiB admission budget, a 32 MiB default cap, 600 runs per minute).
 * Each case runs 10 s: the flooding tenant keeps 6 runs in flight (retrying a 503 after its `Retry-After`), the
 * other sends a trivial run every 250 ms.
 */
import { createSandbox } from "../node/index.js";
import { accessFrom } from "../src/host/http/auth.js";
import { createHost } from "../src/host/index.js";
import type { Service } from "../src/tools/registry.js";
import type { JsonValue } from "../src/values/json.js";
import { fromWire } from "../src/values/wire.js";

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
  const sorted = times.sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] as number;
  return { runs: times.length, refused, p50: at(0.5), p90: at(0.9), max: sorted.at(-1) as number };
}

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
