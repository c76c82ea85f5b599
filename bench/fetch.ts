/**
 * `npm run bench:fetch`: what the guest's `fetch` adds to a request, against the host's own `fetch` to the same
 * loopback server, in one process and interleaved round by round (only the ratios compare between machines). A
 * sample is 20 sequential requests, each response read whole; the guest's 20 are one run, so a run's own cost (a
 * few tenths of a millisecond) is spread over them. The guest's own work is timed apart, with an injected `fetch`
 * that answers at once, and its fuel per request printed (the same on every machine). The small JSON is fetched again
 * from a server in another process, as deployments meet one: on the caller's own thread, the server's work shares
 * that thread with the host's fetch and in-thread runs, while a worker's requests wake it from another thread.
 */
import { createServer } from "node:http";
import { loadavg } from "node:os";
import { createSandbox, nodeWasm } from "../node/index.js";
import { FETCH_REQUEST_FUEL } from "../src/core/host-fuel.js";
import { serverApart } from "./server-apart.js";
import { printTable, ratio, type Summary, sample, summarize } from "./stats.js";

const REQUESTS = 20;
const ROUNDS = 15;
const SMALL = Buffer.from(JSON.stringify({ ok: true, items: [1, 2, 3], name: "small" }));
const LARGE = Buffer.alloc(1024 * 1024, "a");

const server = createServer((req, res) => {
  const body = req.url === "/large" ? LARGE : SMALL;
  res.writeHead(200, { "content-type": "application/json", "content-length": body.length });
  res.end(body);
});
await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
const origin = `http://127.0.0.1:${(server.address() as { port: number }).port}`;

/** The same small JSON from a server in a process of its own (its port on its first line of output). */
const SERVER_SOURCE = `import { createServer } from "node:http";
const body = Buffer.from(${JSON.stringify(SMALL.toString())});
const server = createServer((req, res) => {
  res.writeHead(200, { "content-type": "application/json", "content-length": body.length });
  res.end(body);
});
server.listen(0, "127.0.0.1", () => console.log(server.address().port));`;
const apart = await serverApart(SERVER_SOURCE);
const away = apart.origin;

const settings = { wasm: nodeWasm, webApis: true, fetch: { allow: [origin, away] } } as const;
const inThread = createSandbox({ ...settings, threads: false });
const threaded = createSandbox({ ...settings, threads: true });
/** Node's default path: a run that names `fetch` goes to a worker at once. */
const byDefault = createSandbox(settings);
/** The same response as the server's, made at once: what is left is the guest's and the bridge's work. */
const answerAtOnce = async () =>
  new Response(SMALL, { headers: { "content-type": "application/json", "content-length": String(SMALL.length) } });
const noNetwork = createSandbox({ ...settings, fetch: { allow: [origin], fetch: answerAtOnce }, threads: false });
/** Fuel of the last run of each sandbox. */
const fuel = new Map<typeof inThread, number>();

/** 20 requests by the host itself, each body read as `read`. */
const direct =
  (path: string, read: "text" | "arrayBuffer", from = origin) =>
  async () => {
    for (let i = 0; i < REQUESTS; i++) await (await fetch(from + path))[read]();
  };
/** One run making the same 20 requests. */
const guest =
  (sandbox: typeof inThread, path: string, read: "text" | "arrayBuffer", from = origin) =>
  async () => {
    const source = `for (let i = 0; i < ${REQUESTS}; i++) await (await fetch("${from}${path}")).${read}();\nexport default 0;`;
    const result = await sandbox.runCode(source, { language: "javascript" });
    if (result.status !== "success") throw new Error(`bench run failed: ${JSON.stringify(result.error)}`);
    fuel.set(sandbox, result.fuelUsed as number);
  };

const cases = [
  ["host fetch, small JSON, text()", direct("/small", "text")],
  ["guest fetch in-thread, small JSON, text()", guest(inThread, "/small", "text")],
  ["guest fetch on a thread, small JSON, text()", guest(threaded, "/small", "text")],
  ["host fetch, 1 MiB, arrayBuffer()", direct("/large", "arrayBuffer")],
  ["guest fetch in-thread, 1 MiB, arrayBuffer()", guest(inThread, "/large", "arrayBuffer")],
  ["guest fetch on a thread, 1 MiB, arrayBuffer()", guest(threaded, "/large", "arrayBuffer")],
  ["host fetch, 1 MiB, text()", direct("/large", "text")],
  ["guest fetch in-thread, 1 MiB, text() (UTF-8 in the guest)", guest(inThread, "/large", "text")],
  ["guest fetch in-thread, small JSON, text(), answered at once", guest(noNetwork, "/small", "text")],
  ["host fetch, small JSON, server in another process", direct("/small", "text", away)],
  ["guest fetch in-thread, small JSON, server in another process", guest(inThread, "/small", "text", away)],
  ["guest fetch on a thread, small JSON, server in another process", guest(threaded, "/small", "text", away)],
  ["guest fetch by default, small JSON, server in another process", guest(byDefault, "/small", "text", away)],
] as const;

// Warm-up: the pool's instances, the worker, the type stripper, the connections.
for (const [, run] of cases) await run();
const loadBefore = loadavg()[0] as number;
const times: number[][] = cases.map(() => []);
for (let round = 0; round < ROUNDS; round++) {
  for (const [index, [, run]] of cases.entries()) (times[index] as number[]).push(...(await sample(1, run)));
}
const rows = cases.map(([label], index) =>
  summarize(
    label,
    (times[index] as number[]).map((ms) => ms / REQUESTS),
  ),
);
console.log(
  `per request, p50 over ${ROUNDS} samples of ${REQUESTS} sequential requests to a loopback server (load average ${loadBefore.toFixed(1)} -> ${(loadavg()[0] as number).toFixed(1)})\n`,
);
printTable(rows);
console.log();
const [hostSmall, inSmall, threadSmall, hostLarge, inLarge, threadLarge, hostText, inText, atOnce, ...apartRows] = rows;
const [hostApart, inApart, threadApart, defaultApart] = apartRows;
ratio("small JSON: guest in-thread / host", inSmall as Summary, hostSmall as Summary, "<= 1.5x");
ratio("small JSON: guest on a thread / host", threadSmall as Summary, hostSmall as Summary);
ratio("1 MiB: guest in-thread / host", inLarge as Summary, hostLarge as Summary);
ratio("1 MiB: guest on a thread / host", threadLarge as Summary, hostLarge as Summary);
ratio("1 MiB text(): guest in-thread / host", inText as Summary, hostText as Summary);
ratio("server in another process: guest in-thread / host", inApart as Summary, hostApart as Summary, "<= 1.5x");
ratio("server in another process: guest on a thread / host", threadApart as Summary, hostApart as Summary);
ratio("server in another process: guest by default / host", defaultApart as Summary, hostApart as Summary, "<= 1.5x");
const perRequest = (units: number) => Math.round(units / REQUESTS).toLocaleString("en-US");
console.log(
  `\nsmall JSON, the guest's own work (answered at once): ${(atOnce as Summary).p50.toFixed(3)} ms and ${perRequest(fuel.get(noNetwork) as number)} units of fuel a request, ${FETCH_REQUEST_FUEL.toLocaleString("en-US")} of them the host's fee for a request (a run's own cost spread over its ${REQUESTS})`,
);
server.close();
apart.stop();
process.exit(0);
