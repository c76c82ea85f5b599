/**
 * The deployment's npm packages in workerd: the edge's sandboxes and sessions boot the bundles of
 * worker/packages.generated.js (which the build writes from the lock file; here a stand-in module of two packages),
 * and the guest imports them by name. The whole chain, lock file to `wrangler dev`, is e2e/edge.packages.ts.
 */
import { describe, expect, it, vi } from "vitest";
import type { JsonValue } from "../../src/values/json.js";
import { fromWire } from "../../src/values/wire.js";
import wasm from "../../wasm/quickjs-fuel.wasm";
import { edgeSandbox, edgeSessionEngine } from "../../worker/sandboxes.js";
import { api } from "./client.js";

vi.mock("../../worker/packages.generated.js", () => ({
  packages: [
    { specifier: "greet", version: "1.2.3" },
    { specifier: "greet/loud", version: "1.2.3" },
  ],
  bootModules: {
    greet: 'export const hello = (name) => "hello " + name;\nexport default "greet";',
    // As esbuild bundles them (node/packages.ts): each module whole, importing nothing.
    "greet/loud": 'export const shout = (name) => ("hello " + name).toUpperCase();',
  },
}));

const js = { language: "javascript" } as const;

describe("the edge's packages", () => {
  it("a run imports them by name, subpaths included, beside its own modules", async () => {
    const { runCode } = edgeSandbox({ wasm });
    const result = await runCode(
      'import greet, { hello } from "greet";\nimport { shout } from "greet/loud";\nimport { n } from "./n.js";\nexport default [greet, hello("ada"), shout("bo"), n];',
      { ...js, modules: { "./n.js": "export const n = 1;" } },
    );
    expect([result.status, result.result]).toEqual(["success", ["greet", "hello ada", "HELLO BO", 1]]);
  });

  it("a session's cells import them, and its snapshot restores with them", async () => {
    const engine = edgeSessionEngine({ wasm });
    const session = await engine.create({ tenant: "alpha" });
    expect((await session.run('import { hello } from "greet";\nvar said = hello("cy");', js)).status).toBe("success");
    const restored = await engine.restore(await session.snapshot(), { tenant: "alpha" });
    expect((await restored.run("said", js)).result).toBe("hello cy");
    session.close();
    restored.close();
  });

  it("POST /run imports them and run_code's description lists them with their versions", async () => {
    const run = await api("/run", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ source: 'import { hello } from "greet";\nexport default hello("di");' }),
    });
    expect(fromWire((await run.json()) as JsonValue)).toMatchObject({ status: "success", result: "hello di" });
    const list = await api("/mcp", {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
    });
    const text = await list.text();
    expect(text).toContain(
      'Installed npm packages, imported by name (`import { z } from \\"zod\\"`), and no others: `greet` 1.2.3, `greet/loud` 1.2.3.',
    );
  });

  it("a process imports them, as /run does", async () => {
    const created = await api("/processes", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ code: 'import { hello } from "greet";\ncyrnel.output({ said: hello("ed") });' }),
    });
    expect(created.status).toBe(201);
    const { pid } = (await created.json()) as { pid: number };
    let record: Record<string, unknown> = {};
    for (let i = 0; i < 400 && (record.exitState ?? null) === null; i++) {
      record = (await (await api(`/processes/${pid}`)).json()) as Record<string, unknown>;
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
    expect(record).toMatchObject({ error: null, exitState: "success", output: { said: "hello ed" } });
  });
});
