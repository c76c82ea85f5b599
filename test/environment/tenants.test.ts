/**
 * The environment and tenants: executions waiting for a slot start in turns by tenant, not first come, first served;
 * each run carries its tenant to the core; and each tells the host the fuel it spent before `execute` resolves.
 */
import { describe, expect, test } from "vitest";
import { instantiate, type ServiceInfo } from "../../src/environment/index.js";
import { deferred, inThread, recorder, wasm } from "./helpers.js";

const KV: ServiceInfo[] = [
  {
    id: "kv",
    name: "Key-value store",
    description: "d",
    tools: [{ id: "get", name: "get", description: "Reads", inputSchema: {}, outputSchema: {} }],
  },
];

describe("tenants", () => {
  test("waiting executions start in turns by tenant: one tenant's backlog does not hold another's behind it", async () => {
    const gate = deferred<unknown>();
    const bindings = recorder(() => gate.promise, KV);
    const env = instantiate({ wasm: await wasm(), createSandbox: inThread, concurrency: 1 });
    await env.setup({ config: {}, secrets: {}, bindings });
    const holding = env.execute({
      eid: 1,
      code: `await cyrnel.services.kv.tools.get.invoke({ key: "k" });`,
      tenant: "a",
    });
    while (!bindings.states(1).includes("running")) await new Promise((resolve) => setTimeout(resolve, 5));
    const queued = [
      env.execute({ eid: 2, code: "1", tenant: "a" }),
      env.execute({ eid: 3, code: "1", tenant: "a" }),
      env.execute({ eid: 4, code: "1", tenant: "a" }),
      env.execute({ eid: 5, code: "1", tenant: "b" }),
      env.execute({ eid: 6, code: "1", tenant: "c" }),
    ];
    gate.resolve({ value: 1 });
    expect(await Promise.all([holding, ...queued])).toEqual(Array(6).fill("success"));
    const started = bindings.calls.flatMap((call) =>
      call.kind === "state" && call.state === "running" ? [call.eid] : [],
    );
    // First come, first served would be 1, 2, 3, 4, 5, 6.
    expect(started).toEqual([1, 2, 5, 6, 3, 4]);
  });

  test("each execution tells the fuel its run spent, before execute resolves; a bad tenant is refused", async () => {
    const fuel: [number, number][] = [];
    const bindings = { ...recorder(), setFuelUsed: (eid: number, used: number) => void fuel.push([eid, used]) };
    const env = instantiate({ wasm: await wasm(), createSandbox: inThread });
    await env.setup({ config: {}, secrets: {}, bindings });
    expect(await env.execute({ eid: 1, code: "let n = 0; for (let i = 0; i < 1000; i++) n += i;", tenant: "a" })).toBe(
      "success",
    );
    expect(fuel).toEqual([[1, expect.any(Number)]]);
    const [[, spent]] = fuel as [[number, number]];
    expect(spent).toBeGreaterThan(1000);
    await expect(env.execute({ eid: 2, code: "1", tenant: 7 as unknown as string })).rejects.toThrow(
      "execute: tenant must be a string",
    );
  });
});
