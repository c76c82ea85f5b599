/**
 * Each tenant's share of CPU through the HTTP app: `POST /run` and process runs reserve their fuel cap from the
 * tenant's bucket before they start and settle what they spent when they end; a tenant past its share is refused with
 * 429 and the exact `Retry-After` while another tenant's runs are admitted; on Node's default path, a run handed to a
 * worker thread is charged its attempt on the caller's thread too. A frozen clock: nothing refills.
 */
import { describe, expect, it } from "vitest";
import { createSandbox, SLICE_FUEL } from "../../../node/index.js";
import { INSTANCE_BOOT_FUEL } from "../../../src/core/host-fuel.js";
import type { EnvironmentBindings, EnvironmentModule } from "../../../src/environment/index.js";
import { TenantCpuBudget } from "../../../src/host/admission/cpu-budget.js";
import type { Bucket } from "../../../src/host/admission/quotas.js";
import { accessFrom } from "../../../src/host/http/auth.js";
import { createHost } from "../../../src/host/index.js";
import type { CodeExecutionResult } from "../../../src/index.js";
import type { JsonValue } from "../../../src/values/json.js";
import { fromWire } from "../../../src/values/wire.js";
import { gateService } from "../gate.js";

const KEYS = { a: "a-key-0123456789abcdef0123", b: "b-key-0123456789abcdef0123" };
/** 1,000,000 units a second; a run's cap, and the burst, 10,000,000. */
const SHARE = { fuelPerMinute: 60_000_000, burstFuel: 10_000_000 };
const CAP = 10_000_000;

async function host() {
  const { gate, held } = gateService();
  const budget = new TenantCpuBudget(SHARE, { now: () => 0, maxWaitMs: 0 });
  const { runCode } = createSandbox({ threads: false });
  const { app } = await createHost({
    services: [gate],
    app: {
      access: await accessFrom({ apiKeys: `a:${KEYS.a},b:${KEYS.b}` }),
      run: { runCode, defaultMemoryLimitBytes: 16 * 1024 * 1024, cpu: { budget, fuelOf: () => CAP } },
    },
  });
  const post = (who: keyof typeof KEYS, source: string) =>
    app.fetch(
      new Request("http://host/run", {
        method: "POST",
        headers: { authorization: `Bearer ${KEYS[who]}`, "content-type": "application/json" },
        body: JSON.stringify({ source }),
      }),
    );
  const heldBy = async (count: number) => {
    while (held.length < count) await new Promise((resolve) => setTimeout(resolve, 5));
  };
  return { post, held, heldBy };
}

const refusal = async (response: Response) => ({
  status: response.status,
  retryAfter: response.headers.get("retry-after"),
  error: ((await response.json()) as { error: unknown }).error,
});

describe("POST /run: each tenant's share of CPU", () => {
  it("a tenant whose runs hold its share is refused with 429 and Retry-After; another tenant's run is admitted", async () => {
    const { post, held, heldBy } = await host();
    const holding = post("a", `import { hold } from "gate"; export default await hold({});`);
    await heldBy(1);
    // Its run in flight holds all of a's 10,000,000 units: 10 s at 1,000,000 a second until the next can start.
    expect(await refusal(await post("a", "export default 1"))).toEqual({
      status: 429,
      retryAfter: "10",
      error: {
        code: "rate_limited",
        message: "This tenant has spent its share of CPU (60 ms per minute, 10 ms at once): retry in 10 s",
      },
    });
    const other = await post("b", "export default 2");
    expect([other.status, fromWire((await other.json()) as JsonValue)]).toMatchObject([
      200,
      { status: "success", result: 2 },
    ]);
    (held[0] as () => void)();
    const ended = fromWire((await (await holding).json()) as JsonValue) as { result: unknown; fuelUsed: number };
    expect(ended.result).toBe(1);
    // Settled: the run's unspent fuel is back, and what it spent is missing until the bucket refills.
    const after = await refusal(await post("a", "export default 1"));
    expect(after.status).toBe(429);
    expect(after.retryAfter).toBe(String(Math.ceil(ended.fuelUsed / 1_000_000)));
  });

  it("a tenant whose run fills its memory is charged the boot of the instance in its place", async () => {
    const { post } = await host();
    const filled = await post("a", "const a = []; for (;;) a.push(new Uint8Array(1024 * 1024));");
    const ended = fromWire((await filled.json()) as JsonValue) as { status: string; fuelUsed: number };
    expect(ended.status).toBe("memory");
    // Its growth refused, its instance is dropped and booted again for the next run: that boot is the run's fuel.
    expect(ended.fuelUsed).toBeGreaterThan(INSTANCE_BOOT_FUEL);
    const after = await refusal(await post("a", "export default 1"));
    expect(after.status).toBe(429);
    expect(after.retryAfter).toBe(String(Math.ceil(ended.fuelUsed / 1_000_000)));
  });
});

describe("processes: each tenant's share of CPU", () => {
  /** An environment whose runs wait for the test, then tell the fuel it gives them. */
  function environment() {
    let bindings!: EnvironmentBindings;
    const ends: ((fuel: number) => void)[] = [];
    const module: EnvironmentModule = {
      setup: async (context) => {
        bindings = context.bindings;
      },
      teardown: async () => {},
      execute: ({ eid }) => {
        bindings.setState(eid, "running");
        return new Promise((resolve) =>
          ends.push((fuel) => {
            bindings.setFuelUsed?.(eid, fuel);
            resolve("success");
          }),
        );
      },
      kill: async () => {},
      generateDocs: async () => "",
      generateToolDocs: async () => "",
    };
    return { module, ends };
  }

  it("a process run reserves its cap and is charged the fuel its environment tells; another tenant's is admitted", async () => {
    const { module, ends } = environment();
    const budget = new TenantCpuBudget(SHARE, { now: () => 0, maxWaitMs: 0 });
    const { service } = await createHost({ environment: { module }, cpu: { budget, fuelOf: () => CAP } });
    const first = await service.create({ code: "x", tenant: "a" });
    await expect(service.create({ code: "x", tenant: "a" })).rejects.toMatchObject({
      code: "rate_limited",
      headers: { "retry-after": "10" },
    });
    expect((await service.create({ code: "x", tenant: "b" })).pid).toBeGreaterThan(0);
    (ends[0] as (fuel: number) => void)(7_300_000);
    await service.wait(first.pid);
    // 2,700,000 left, 10,000,000 needed: 7.3 s.
    await expect(service.run(first.pid)).rejects.toMatchObject({
      code: "rate_limited",
      headers: { "retry-after": "8" },
    });
  });
});

describe("POST /run on Node's default path: a tenant is charged all the engine spent, attempts included", () => {
  it("a run handed to a worker is charged its attempt and its run there; a run that ends within its attempt, once", async () => {
    const buckets = new Map<string, Bucket>();
    // Room for both runs' reservations.
    const share = { ...SHARE, burstFuel: 2 * CAP };
    const budget = new TenantCpuBudget(share, {
      now: () => 0,
      maxWaitMs: 0,
      buckets: { get: (tenant) => buckets.get(tenant), set: (tenant, bucket) => void buckets.set(tenant, bucket) },
    });
    const echo = {
      id: "echo",
      description: "Answers what it is given",
      tools: [
        { id: "echo", description: "Echoes", inputSchema: { type: "object" }, run: async (input: unknown) => input },
      ],
    };
    const { app } = await createHost({
      services: [echo],
      app: {
        access: await accessFrom({ apiKeys: `a:${KEYS.a}` }),
        run: {
          runCode: createSandbox().runCode,
          defaultMemoryLimitBytes: 16 * 1024 * 1024,
          cpu: { budget, fuelOf: () => CAP },
        },
      },
    });
    const run = async (source: string) => {
      const response = await app.fetch(
        new Request("http://host/run", {
          method: "POST",
          headers: { authorization: `Bearer ${KEYS.a}`, "content-type": "application/json" },
          body: JSON.stringify({ source, options: { language: "javascript" } }),
        }),
      );
      return fromWire((await response.json()) as JsonValue) as CodeExecutionResult;
    };
    const charged = () => share.burstFuel - (buckets.get("a")?.tokens ?? share.burstFuel);
    // Most of the slice (~340,000 units), then a call of the host: the attempt ends at the call, the worker runs it all.
    const handed = await run(
      `import { echo } from "echo"; let s = 0; for (let i = 0; i < 12000; i++) s += i; export default await echo({ s });`,
    );
    expect(handed).toMatchObject({ status: "success", result: { s: 71_994_000 } });
    const { fuelUsed = 0, fuelRedone = 0 } = handed;
    expect(fuelRedone).toBeGreaterThan(0.75 * SLICE_FUEL);
    expect(fuelRedone).toBeLessThan(SLICE_FUEL);
    expect(fuelUsed).toBeGreaterThan(fuelRedone);
    expect(charged()).toBe(fuelUsed + fuelRedone);
    const trivial = await run("export default 1;");
    expect(trivial).toMatchObject({ status: "success", result: 1 });
    expect(trivial.fuelRedone).toBeUndefined();
    expect(charged()).toBe(fuelUsed + fuelRedone + (trivial.fuelUsed ?? Number.NaN));
  });
});
