/**
 * `npm run bench:mcp`: the latency of a trivial `run_code` call through the official SDK's client over each
 * transport (stdio to the built CLI, Streamable HTTP to the HTTP app's `POST /mcp`), against a bare `runCode` of the
 * same code in this process, and the cost of an upstream MCP server over Streamable HTTP (connected for every request
 * that calls tools, as `POST /mcp` keeps no state). Cases are interleaved round by round in one run (these machines
 * are noisy, so only ratios are comparable between runs).
 */
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { createSandbox } from "../node/index.js";
import { createHost } from "../src/host/index.js";
import { printTable, ratio, type Summary, sample, summarize } from "./stats.js";

const CODE = "export default 1 + 1;";
const { runCode } = createSandbox({ threads: false });
const { app } = await createHost({ app: { run: { runCode, defaultMemoryLimitBytes: 32 * 1024 * 1024 } } });
const TOKEN = "bench-token-0123456789";
// The tests' upstream server, loaded from the source tree (the bench runs from dist/, which does not hold it).
const { serveCalcOverHttp } = (await import(
  new URL("../../test/mcp/fixtures/calc-server.mjs", import.meta.url).href
)) as typeof import("../test/host/mcp/fixtures/calc-server.mjs");
const calc = await serveCalcOverHttp(0, TOKEN);
const { app: bridged } = await createHost({
  app: {
    run: { runCode, defaultMemoryLimitBytes: 32 * 1024 * 1024 },
    mcpServers: { calc: { url: calc.url, headers: { authorization: `Bearer ${TOKEN}` } } },
  },
});

const stdio = new Client({ name: "bench", version: "1.0.0" });
await stdio.connect(
  new StdioClientTransport({
    command: process.execPath,
    args: [fileURLToPath(new URL("../node/cli.js", import.meta.url)), "mcp"],
  }),
);
/** An SDK client of an app's `POST /mcp`, every request going to the app's fetch. */
async function clientOf(target: typeof app): Promise<Client> {
  const client = new Client({ name: "bench", version: "1.0.0" });
  await client.connect(
    new StreamableHTTPClientTransport(new URL("http://host/mcp"), {
      fetch: (url, init) => Promise.resolve(target.fetch(new Request(url, init))),
    }),
  );
  return client;
}
const http = await clientOf(app);
const withUpstream = await clientOf(bridged);

const call =
  (client: Client, code = CODE) =>
  async () => {
    const answer = await client.callTool({ name: "run_code", arguments: { code } });
    if (answer.isError) throw new Error(JSON.stringify(answer.content));
  };
const cases: Record<string, () => Promise<unknown>> = {
  "bare runCode": async () => {
    const r = await runCode(CODE);
    if (r.status !== "success") throw new Error(r.error?.message);
  },
  "run_code over stdio (the CLI)": call(stdio),
  "run_code over Streamable HTTP (POST /mcp)": call(http),
  "the same with an upstream server bridged in": call(withUpstream),
  "the same, calling the upstream's add": call(
    withUpstream,
    `import { add } from "calc"; export default await add({ a: 1, b: 1 });`,
  ),
};
for (const fn of Object.values(cases)) for (let i = 0; i < 30; i++) await fn();

const times = new Map<string, number[]>(Object.keys(cases).map((k) => [k, []]));
const rounds = 10;
const perRound = 20;
for (let round = 0; round < rounds; round++) {
  for (const [label, fn] of Object.entries(cases)) times.get(label)?.push(...(await sample(perRound, fn)));
}
const [bare, overStdio, overHttp, bridgedIn, upstreamCall] = [...times].map(([label, t]) => summarize(label, t)) as [
  Summary,
  Summary,
  Summary,
  Summary,
  Summary,
];
console.log(`MCP bench: ${rounds} rounds x ${perRound} calls per case, Node ${process.version}\n`);
printTable([bare, overStdio, overHttp, bridgedIn, upstreamCall]);
console.log();
ratio("run_code over stdio / bare runCode", overStdio, bare);
ratio("run_code over Streamable HTTP / bare runCode", overHttp, bare);
ratio("with an upstream bridged in / without", bridgedIn, overHttp);
ratio("calling the upstream / without an upstream", upstreamCall, overHttp);
for (const client of [stdio, http, withUpstream]) await client.close();
await calc.close();
