/**
 * Each tenant's share of CPU through the HTTP app: `POST /run` and process runs reserve their fuel cap from the
 * tenant's bucket before they start and settle what they spent when they end; a tenant past its share is refused with
 * 429 and the exact `Retry-After` while another tenant's runs are admitted. A frozen clock: nothing refills.
 */
import { describe, expect, it } from "vitest";
import { createSandbox } from "../../../node/index.js";
import type { EnvironmentBindings, EnvironmentModule } from "../../../src/environment/index.js";
import { TenantCpuBudget } from "../../../src/host/admission/cpu-budget.js";
import { accessFrom } from "../../../src/host/http/auth.js";
import { createHost } from "../../../src/host/index.js";
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
