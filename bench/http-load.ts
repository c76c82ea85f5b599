/**
 * Load on a served HTTP API (the edge under `wrangler dev`, `runcode serve`): bounded loops of requests over a few
 * connections, and the requests the host benchmarks time. Sends only to the loopback address it is given.
 */

/** Longest one load may take: it stops early rather than run on. */
const TIME_LIMIT_MS = 60_000;
const TRIVIAL = "export default 1 + 1";

/** Runs `total` calls of `fn` over `connections` concurrent loops, stopping early at the time limit. */
export async function load(total: number, connections: number, fn: () => Promise<boolean>) {
  const times: number[] = [];
  let failures = 0;
  let next = 0;
  const started = performance.now();
  const worker = async () => {
    while (next < total && performance.now() - started < TIME_LIMIT_MS) {
      next++;
      const t = performance.now();
      const ok = await fn().catch(() => false);
      times.push(performance.now() - t);
      if (!ok) failures++;
    }
  };
  await Promise.all(Array.from({ length: connections }, worker));
  const seconds = (performance.now() - started) / 1000;
  return { times, failures, perSecond: times.length / seconds };
}

/** Resolves once `base` answers `/openapi.json` (30 s at most). */
export async function ready(base: string, what: string): Promise<void> {
  const deadline = performance.now() + 30_000;
  while (performance.now() < deadline) {
    const answered = await fetch(`${base}/openapi.json`)
      .then((response) => response.ok)
      .catch(() => false);
    if (answered) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`${what} did not start`);
}

/** The requests of one host at `base`, with `headers` (an API key) on each. */
export function requests(base: string, headers: Record<string, string>) {
  return {
    /** `POST /run` of trivial JavaScript. */
    postRun: async () => {
      const response = await fetch(`${base}/run`, {
        method: "POST",
        headers: { "content-type": "application/json", ...headers },
        body: JSON.stringify({ source: TRIVIAL, options: { language: "javascript" } }),
      });
      const body = (await response.json()) as { status?: string };
      return response.ok && body.status === "success";
    },
    /** The floor of an API request: authenticated, one listing of one record, nothing run. */
    listOne: async () => {
      const response = await fetch(`${base}/processes?limit=1`, { headers });
      await response.arrayBuffer();
      return response.ok;
    },
    /** Create, wait for idle through the event stream, read stdout. */
    fullProcess: async () => {
      const created = await fetch(`${base}/processes`, {
        method: "POST",
        headers: { "content-type": "application/json", ...headers },
        body: JSON.stringify({ code: "console.log('done')", ref: "bench" }),
      });
      if (created.status !== 201) return false;
      const { pid } = (await created.json()) as { pid: number };
      const events = await (await fetch(`${base}/processes/${pid}/events`, { headers })).text();
      const stdout = await (await fetch(`${base}/processes/${pid}/stdout`, { headers })).text();
      return events.includes("success") && stdout === "done\n";
    },
    /** How many `bench` processes the host lists (at most 1,000). */
    listed: async () => {
      const page = await fetch(`${base}/processes?ref=bench&limit=1000`, { headers });
      return ((await page.json()) as { processes: unknown[] }).processes.length;
    },
  };
}
