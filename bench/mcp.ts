/**
 * `npm run bench:mcp`: the latency of a trivial `run_code` call through the official SDK's client over each
 * transport (stdio to the built CLI, Streamable HTTP to the HTTP app's `POST /mcp`), against a bare `runCode` of the
 * same code in this process. Cases are interleaved round by round in one run (these machines are noisy, so only
 * ratios are comparable between runs).
 */
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { nodeWasm } from "../node/index.js";
import { createHost } from "../src/host/index.js";
import { createSandbox } from "../src/index.js";
import { printTable, ratio, type Summary, sample, summarize } from "./stats.js";

const CODE = "export default 1 + 1;";
const { runCode } = createSandbox({ wasm: nodeWasm });
const { app } = await createHost({ app: { run: { runCode, defaultMemoryLimitBytes: 32 * 1024 * 1024 } } });

const stdio = new Client({ name: "bench", version: "1.0.0" });
await stdio.connect(
  new StdioClientTransport({
    command: process.execPath,
    args: [fileURLToPath(new URL("../node/cli.js", import.meta.url)), "mcp"],
  }),
);
const http = new Client({ name: "bench", version: "1.0.0" });
await http.connect(
  new StreamableHTTPClientTransport(new URL("http://host/mcp"), {
    fetch: (url, init) => Promise.resolve(app.fetch(new Request(url, init))),
  }),
);

const call = (client: Client) => async () => {
  const answer = await client.callTool({ name: "run_code", arguments: { code: CODE } });
  if (answer.isError) throw new Error(JSON.stringify(answer.content));
};
const cases: Record<string, () => Promise<unknown>> = {
  "bare runCode": async () => {
    const r = await runCode(CODE);
    if (r.status !== "success") throw new Error(r.error?.message);
  },
  "run_code over stdio (the CLI)": call(stdio),
  "run_code over Streamable HTTP (POST /mcp)": call(http),
};
for (const fn of Object.values(cases)) for (let i = 0; i < 30; i++) await fn();

const times = new Map<string, number[]>(Object.keys(cases).map((k) => [k, []]));
const rounds = 10;
const perRound = 20;
for (let round = 0; round < rounds; round++) {
  for (const [label, fn] of Object.entries(cases)) times.get(label)?.push(...(await sample(perRound, fn)));
}
const [bare, overStdio, overHttp] = [...times].map(([label, t]) => summarize(label, t)) as [Summary, Summary, Summary];
console.log(`MCP bench: ${rounds} rounds x ${perRound} calls per case, Node ${process.version}\n`);
printTable([bare, overStdio, overHttp]);
console.log();
ratio("run_code over stdio / bare runCode", overStdio, bare);
ratio("run_code over Streamable HTTP / bare runCode", overHttp, bare);
await stdio.close();
await http.close();
