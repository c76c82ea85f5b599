/**
 * `POST /mcp`'s `run_code` `session` over Streamable HTTP: each request gets a fresh server, and a session's state
 * lives in the host's sessions (a `SessionService` over the memory store and the stand-in engine, whose cells are
 * expressions over `state`), per tenant.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { afterEach, describe, expect, it } from "vitest";
import { createSandbox } from "../../../node/index.js";
import { accessFrom } from "../../../src/host/http/auth.js";
import { createHost } from "../../../src/host/index.js";
import { SessionService } from "../../../src/host/sessions/session-service.js";
import { MemorySessionStore } from "../../../src/host/sessions/store.js";
import type { JsonValue } from "../../../src/values/json.js";
import { fromWire } from "../../../src/values/wire.js";
import { fakeEngine } from "../sessions/fake-engine.js";

const KEYS = { alpha: "alpha-key-0123456789abcdef", beta: "beta-key-0123456789abcdef" };
const { runCode } = createSandbox({ threads: false, safetyCap: { cpuTimeMs: 300 } });
const clients: Client[] = [];

afterEach(async () => {
  for (const client of clients.splice(0)) await client.close();
});

async function host() {
  const sessions = new SessionService({
    store: new MemorySessionStore(),
    engine: fakeEngine(),
    defaultMemoryLimitBytes: 1_000_000,
  });
  return createHost({
    app: {
      access: await accessFrom({ apiKeys: `alpha:${KEYS.alpha},beta:${KEYS.beta}` }),
      run: { runCode, defaultMemoryLimitBytes: 32 * 1024 * 1024 },
      sessions,
    },
  });
}

async function connect(h: Awaited<ReturnType<typeof host>>, tenant: keyof typeof KEYS): Promise<Client> {
  const transport = new StreamableHTTPClientTransport(new URL("http://host/mcp"), {
    requestInit: { headers: { authorization: `Bearer ${KEYS[tenant]}` } },
    fetch: (url, init) => Promise.resolve(h.app.fetch(new Request(url, init))),
  });
  const client = new Client({ name: "test", version: "1.0.0" });
  await client.connect(transport);
  clients.push(client);
  return client;
}

const call = async (client: Client, args: Record<string, unknown>) =>
  (await client.callTool({ name: "run_code", arguments: args })) as CallToolResult;
const resultOf = (answer: CallToolResult) =>
  (fromWire(answer.structuredContent as JsonValue) as { result?: unknown }).result;

describe("POST /mcp: run_code's session", () => {
  it("keeps a named session's state across requests, per tenant; without session nothing persists", async () => {
    const h = await host();
    const alpha = await connect(h, "alpha");
    const beta = await connect(h, "beta");
    expect(resultOf(await call(alpha, { code: "state.x = 41", session: "work" }))).toBe(41);
    // Another client of the same tenant, hence other requests and servers: the same session.
    const again = await connect(h, "alpha");
    expect(resultOf(await call(again, { code: "state.x + 1", session: "work" }))).toBe(42);
    expect(resultOf(await call(alpha, { code: "state.x", session: "other" }))).toBeUndefined();
    expect(resultOf(await call(beta, { code: "state.x", session: "work" }))).toBeUndefined();
    const module = await call(alpha, { code: "export default typeof state;" });
    expect([module.isError, resultOf(module)]).toEqual([false, "undefined"]);
  });

  it("the guide says what session does; without the host's sessions the tool has no session", async () => {
    const [tool] = (await (await connect(await host(), "alpha")).listTools()).tools;
    expect(Object.keys(tool?.inputSchema.properties ?? {})).toContain("session");
    expect(tool?.description).toContain("the state\nis kept between calls with the same name");
    expect(tool?.description).toContain("Sessions belong to your API key's tenant");
    const plain = await createHost({
      app: {
        access: await accessFrom({ apiKeys: `alpha:${KEYS.alpha}` }),
        run: { runCode, defaultMemoryLimitBytes: 32 * 1024 * 1024 },
      },
    });
    const [bare] = (await (await connect(plain, "alpha")).listTools()).tools;
    expect(Object.keys(bare?.inputSchema.properties ?? {})).not.toContain("session");
    expect(bare?.description).toContain("Nothing\npersists between calls");
  });
});
