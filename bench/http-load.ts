/**
 * Load on a served HTTP API (the edge under `wrangler dev`, `runcode serve`): bounded loops of requests over a few
 * connections, and the requests the host benchmarks time. Sends only to the loopback address it is given.
 */
import { Agent, request as httpRequest } from "node:http";

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

/** An answer's status and its body as text. */
interface Answer {
  status: number;
  text: string;
}

/**
 * The requests of one host at `base`, with `headers` (an API key) on each, made by `node:http` over kept-alive
 * connections. Not `fetch`: the load shares the cores with the host it measures, and `fetch` streamed a request's body
 * through web streams, which made a small `POST /run` cost the load 0.1-0.2 ms of CPU more than a `GET` (about 0.36
 * against 0.22 ms) and sent it as two writes; here a request of either kind costs the load the same (about 0.08 ms),
 * its head and body in one write.
 */
export function requests(base: string, headers: Record<string, string>) {
  const { hostname, port } = new URL(base);
  const agent = new Agent({ keepAlive: true });
  const send = (method: string, path: string, body?: string) =>
    new Promise<Answer>((resolve, reject) => {
      const sent =
        body === undefined
          ? headers
          : { ...headers, "content-type": "application/json", "content-length": String(Buffer.byteLength(body)) };
      const request = httpRequest({ hostname, port, method, path, headers: sent, agent }, (response) => {
        const chunks: Buffer[] = [];
        response.on("data", (chunk: Buffer) => chunks.push(chunk));
        response.on("end", () =>
          resolve({ status: response.statusCode ?? 0, text: Buffer.concat(chunks).toString("utf8") }),
        );
        response.on("error", reject);
      });
      request.on("error", reject);
      request.end(body);
    });
  const runBody = JSON.stringify({ source: TRIVIAL, options: { language: "javascript" } });
  return {
    /** `POST /run` of trivial JavaScript. */
    postRun: async () => {
      const { status, text } = await send("POST", "/run", runBody);
      return status === 200 && (JSON.parse(text) as { status?: string }).status === "success";
    },
    /** The floor of an API request: authenticated, one listing of one record, nothing run. */
    listOne: async () => {
      const { status, text } = await send("GET", "/processes?limit=1");
      return status === 200 && Array.isArray((JSON.parse(text) as { processes?: unknown }).processes);
    },
    /** Create, wait for idle through the event stream, read stdout. */
    fullProcess: async () => {
      const created = await send("POST", "/processes", JSON.stringify({ code: "console.log('done')", ref: "bench" }));
      if (created.status !== 201) return false;
      const { pid } = JSON.parse(created.text) as { pid: number };
      const events = await send("GET", `/processes/${pid}/events`);
      const stdout = await send("GET", `/processes/${pid}/stdout`);
      return events.text.includes("success") && stdout.text === "done\n";
    },
    /** How many `bench` processes the host lists (at most 1,000). */
    listed: async () => {
      const page = await send("GET", "/processes?ref=bench&limit=1000");
      return (JSON.parse(page.text) as { processes: unknown[] }).processes.length;
    },
  };
}
