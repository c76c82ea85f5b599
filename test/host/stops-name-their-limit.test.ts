/**
 * Every stop says which limit fired and its value, at every door of a served host: `POST /run`, MCP's `run_code` and
 * a process, each with the settings `runcode serve` and the edge give them (`runWebOf`, `environmentOptionsOf`: the
 * caps named `RUN_CPU_MS` and `RUN_FUEL`). A clock that stands still, or moves one millisecond each time it is read,
 * and tiny caps make every stop exact and quick.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { describe, expect, it } from "vitest";
import { createSandbox, createSession, restoreSession } from "../../node/index.js";
import { instantiate } from "../../src/environment/index.js";
import { createHost, createRunOnce } from "../../src/host/index.js";
import { SETTING_DEFAULTS } from "../../src/host/limits.js";
import { createMcpServer } from "../../src/host/mcp/server.js";
import type { ProcessRecord } from "../../src/host/processes/storage.js";
import { SessionService } from "../../src/host/sessions/session-service.js";
import { MemorySessionStore } from "../../src/host/sessions/store.js";
import { environmentOptionsOf, hostSettingsOf, RUN_CAP_NAMES, runWebOf } from "../../src/host/settings.js";
import type { JsonValue } from "../../src/values/json.js";
import { fromWire } from "../../src/values/wire.js";
import { inThread, wasm } from "../environment/helpers.js";

const MEMORY = 16 * 1024 * 1024;
/** The host's settings with a CPU cap of 20 ms and a fuel cap of 50,000,000 units per run. */
const settings = await hostSettingsOf({ ...SETTING_DEFAULTS, RUN_CPU_MS: "20", RUN_FUEL: "50000000" });
const frozen = () => 0;
/** A clock that moves a millisecond each time it is read: the CPU cap fires after as many reads. */
const ticking = () => {
  let now = 0;
  return () => now++;
};

/** `/run` and `run_code` on a sandbox of the settings' caps and `clock`, in this thread. */
async function runDoors(clock: () => number) {
  const { runCode } = createSandbox({
    threads: false,
    clock,
    safetyCap: { cpuTimeMs: settings.runCpuMs, fuel: settings.runFuel },
  });
  const run = { runCode, defaultMemoryLimitBytes: MEMORY, ...runWebOf(settings) };
  const { app } = await createHost({ app: { run } });
  const server = createMcpServer({ run: createRunOnce(run).run });
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await server.connect(serverSide);
  const client = new Client({ name: "test", version: "1.0.0" });
  await client.connect(clientSide);
  /** The run's error as `POST /run` and as `run_code` answer it, which must be one. */
  return async (body: { source: string; timeoutMs?: number; options?: { memoryLimitBytes: number } }) => {
    const response = await app.fetch(
      new Request("http://host/run", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(body),
      }),
    );
    const viaRun = fromWire((await response.json()) as JsonValue) as { status: string; error: { message: string } };
    const called = (await client.callTool({
      name: "run_code",
      arguments: {
        code: body.source,
        ...body.options,
        ...(body.timeoutMs === undefined ? {} : { timeoutMs: body.timeoutMs }),
      },
    })) as CallToolResult;
    const viaTool = fromWire(called.structuredContent as JsonValue) as { status: string; error: { message: string } };
    await client.close();
    expect([viaTool.status, viaTool.error.message]).toEqual([viaRun.status, viaRun.error.message]);
    return [viaRun.status, viaRun.error.message];
  };
}

/** A process's exit and error on a host with the settings' environment and `clock`. */
async function processStop(clock: () => number, body: { code: string; timeoutMs: number }) {
  const module = instantiate({
    ...environmentOptionsOf(settings),
    wasm: await wasm(),
    createSandbox: inThread,
    clock,
    memoryLimitBytes: MEMORY,
  });
  const { app, service } = await createHost({ environment: { module } });
  const created = await app.fetch(
    new Request("http://host/processes", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
    }),
  );
  const { pid } = (await created.json()) as { pid: number };
  const record = (await service.wait(pid)) as ProcessRecord;
  return [record.exitState, record.error];
}

describe("POST /run and run_code name the limit that stopped a run, and its value", () => {
  it("the host's CPU cap per run", async () => {
    expect(await (await runDoors(ticking()))({ source: "while (true) {}" })).toEqual([
      "terminated",
      "Execution stopped by the host's CPU cap per run (RUN_CPU_MS = 20 ms)",
    ]);
  });

  it("the host's fuel cap per run, where the clock stands still", async () => {
    expect(await (await runDoors(frozen))({ source: "while (true) {}" })).toEqual([
      "terminated",
      "Execution stopped by the host's fuel cap per run (RUN_FUEL = 50000000 units)",
    ]);
  });

  it("its timeoutMs, by the CPU cap it lowers", async () => {
    expect(await (await runDoors(ticking()))({ source: "while (true) {}", timeoutMs: 10 })).toEqual([
      "terminated",
      "Execution stopped by its timeoutMs (10 ms)",
    ]);
  });

  it("its timeoutMs, by the fuel cap it lowers where the clock stands still", async () => {
    expect(await (await runDoors(frozen))({ source: "while (true) {}", timeoutMs: 3 })).toEqual([
      "terminated",
      "Execution stopped by its fuel cap (3000000 units: its timeoutMs of 3 ms at 1000000 units per ms)",
    ]);
  });

  it("its memoryLimitBytes", async () => {
    const source = "const a = []; for (;;) a.push(new Uint8Array(1e6));";
    expect(await (await runDoors(frozen))({ source, options: { memoryLimitBytes: MEMORY } })).toEqual([
      "memory",
      `The sandbox ran out of memory (memoryLimitBytes: ${MEMORY})`,
    ]);
  });
});

/** A session cell's status and error on the sessions of a host with the settings' caps (as serve and the edge name them). */
async function cellStop(clock: () => number, source: string) {
  const settings_ = { clock, safetyCap: { cpuTimeMs: settings.runCpuMs, fuel: settings.runFuel } };
  const service = new SessionService({
    store: new MemorySessionStore(),
    engine: {
      create: (options) => createSession({ ...options, ...settings_ }),
      restore: (bytes, options) => restoreSession(bytes, { ...options, ...settings_ }),
    },
    defaultMemoryLimitBytes: MEMORY,
    capNames: RUN_CAP_NAMES,
  });
  const { id } = await service.create("t", {});
  const { result } = await (await service.run("t", id, { source })).answer;
  return [result.status, result.error?.message];
}

describe("a session's cell names the limit that stopped it, and its value", () => {
  it("the host's CPU cap per run", async () => {
    expect(await cellStop(ticking(), "while (true) {}")).toEqual([
      "terminated",
      "Execution stopped by the host's CPU cap per run (RUN_CPU_MS = 20 ms)",
    ]);
  });

  it("the host's fuel cap per run, where the clock stands still", async () => {
    expect(await cellStop(frozen, "while (true) {}")).toEqual([
      "terminated",
      "Execution stopped by the host's fuel cap per run (RUN_FUEL = 50000000 units)",
    ]);
  });
});

describe("a process names the limit that stopped it, and its value", () => {
  it("with timeoutMs: 60000, the host's CPU cap per run", async () => {
    expect(await processStop(ticking(), { code: "while (true) {}", timeoutMs: 60_000 })).toEqual([
      "timeout",
      "Timeout: the process was stopped by the host's CPU cap per run (RUN_CPU_MS = 20 ms) before its timeoutMs (60000 ms)",
    ]);
  });

  it("its fuel cap, its timeoutMs's where the clock stands still", async () => {
    expect(await processStop(frozen, { code: "while (true) {}", timeoutMs: 3 })).toEqual([
      "timeout",
      "Timeout: the process was stopped by its fuel cap (3000000 units: its timeoutMs of 3 ms at 1000000 units per ms)",
    ]);
  });

  it("its memoryLimitBytes", async () => {
    const code = "const a = []; for (;;) a.push(new Uint8Array(1e6));";
    expect(await processStop(frozen, { code, timeoutMs: 60_000 })).toEqual([
      "failed",
      `MemoryError: The sandbox ran out of memory (memoryLimitBytes: ${MEMORY})`,
    ]);
  });
});
