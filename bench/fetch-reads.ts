/**
 * `npm run bench:fetch-reads`: the host's CPU for each read of a response body (`FETCH_READ_FUEL`). A server in a
 * process of its own sends a body a byte at a time, each byte its own TCP segment (a slow drip), so that every read
 * the host makes of the body holds one byte; the same body sent at once takes a handful of reads. This process's CPU
 * (the server's is its own) per read of the drip, less that of the body sent at once, is what a read costs the host
 * beyond its bytes: waking for the segment, the host's client (Node's: node/http-exchange.ts) handing it on, and the
 * host's read loop. The guest's fetch of the same drip is run too, and its fuel printed beside this process's CPU.
 */
import { loadavg } from "node:os";
import { httpExchange } from "../node/http-exchange.js";
import { createSandbox, nodeWasm } from "../node/index.js";
import { FETCH_READ_FUEL } from "../src/core/host-fuel.js";
import { Abort } from "../src/fetch/exchange.js";
import { serverApart } from "./server-apart.js";

const BYTES = 2_000;
const ROUNDS = 5;

const SERVER_SOURCE = `import { createServer } from "node:net";
const server = createServer((socket) => {
  socket.setNoDelay(true);
  socket.on("error", () => {});
  socket.once("data", (request) => {
    const head = "HTTP/1.1 200 OK\\r\\ncontent-length: ${BYTES}\\r\\nconnection: close\\r\\n\\r\\n";
    if (!request.toString().startsWith("GET /drip")) return void socket.end(head + "x".repeat(${BYTES}));
    socket.write(head);
    let left = ${BYTES};
    const next = () => (left-- > 0 ? socket.write("x", () => setTimeout(next, 0)) : socket.end());
    next();
  });
});
server.listen(0, "127.0.0.1", () => console.log(server.address().port));`;
const server = await serverApart(SERVER_SOURCE);
const origin = server.origin;

/** The body of `path` read as the host's fetch session reads it: this process's CPU in ms, and the reads. */
async function read(path: string): Promise<{ cpuMs: number; reads: number }> {
  const before = process.cpuUsage();
  const request = { url: new URL(origin + path), method: "GET", headers: [], body: null, abort: new Abort() };
  const exchange = await httpExchange(request);
  let reads = 0;
  while ((await exchange.read()) !== undefined) reads++;
  const { user, system } = process.cpuUsage(before);
  return { cpuMs: (user + system) / 1000, reads };
}

const { runCode } = createSandbox({ wasm: nodeWasm, webApis: true, threads: false, fetch: { allow: [origin] } });
const loadBefore = loadavg()[0] as number;
await read("/at-once");
const perRead: number[] = [];
for (let round = 0; round < ROUNDS; round++) {
  const atOnce = await read("/at-once");
  const drip = await read("/drip");
  const us = ((drip.cpuMs - atOnce.cpuMs) * 1000) / (drip.reads - atOnce.reads);
  perRead.push(us);
  console.log(
    `drip: ${drip.reads} reads in ${drip.cpuMs.toFixed(1)} ms; at once: ${atOnce.reads} reads in ${atOnce.cpuMs.toFixed(1)} ms; ${us.toFixed(1)} us a read`,
  );
}
perRead.sort((a, b) => a - b);
const before = process.cpuUsage();
const result = await runCode(`export default (await (await fetch("${origin}/drip")).arrayBuffer()).byteLength`, {
  language: "javascript",
});
const { user, system } = process.cpuUsage(before);
console.log(
  `\nCPU a read beyond its bytes: median ${(perRead[ROUNDS >> 1] as number).toFixed(1)} us (${(perRead[0] as number).toFixed(1)}-${(perRead[ROUNDS - 1] as number).toFixed(1)}); FETCH_READ_FUEL ${FETCH_READ_FUEL.toLocaleString("en-US")} units, ~${((FETCH_READ_FUEL * 4) / 1000).toFixed(0)} us at ~4 ns a unit`,
);
console.log(
  `the guest's fetch of the drip: ${result.status}, ${result.fuelUsed?.toLocaleString("en-US")} units of fuel, ${((user + system) / 1000).toFixed(1)} ms of this process's CPU (load average ${loadBefore.toFixed(1)} -> ${(loadavg()[0] as number).toFixed(1)})`,
);
server.stop();
process.exit(0);
