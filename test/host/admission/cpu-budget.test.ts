/**
 * Each tenant's share of CPU (cpu-budget.ts): a token bucket of fuel refilled at its rate up to its burst; a run
 * reserves its fuel cap (at most the burst) and settles what it spent; a tenant whose bucket cannot pay is refused
 * with a 429 whose `Retry-After` is the time until it can, while other tenants' buckets are their own.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import {
  type CpuShare,
  cpuShareOf,
  MAX_CPU_WAIT_MS,
  reserveFuel,
  settleFuel,
  TenantCpuBudget,
} from "../../../src/host/admission/cpu-budget.js";
import { HostError } from "../../../src/host/errors.js";

/** 60,000,000 units a minute (1,000,000 a second), 10,000,000 at once. */
const share: CpuShare = { fuelPerMinute: 60_000_000, burstFuel: 10_000_000 };

describe("the fuel bucket", () => {
  it("is given in milliseconds and counted in fuel, 1,000,000 units a millisecond", () => {
    expect(cpuShareOf(6_000, 2_500)).toEqual({ fuelPerMinute: 6_000_000_000, burstFuel: 2_500_000_000 });
  });

  it("starts full, reserves a run's cap, and refuses what it cannot pay with the seconds until it can", () => {
    const first = reserveFuel(undefined, share, 4_000_000, 0);
    expect(first).toEqual({ bucket: { tokens: 6_000_000, at: 0 }, reserved: 4_000_000, retryAfterSeconds: null });
    const second = reserveFuel(first.bucket, share, 4_000_000, 0);
    expect(second).toEqual({ bucket: { tokens: 2_000_000, at: 0 }, reserved: 4_000_000, retryAfterSeconds: null });
    // 2,000,000 left of the 4,000,000 needed: two seconds at 1,000,000 a second.
    expect(reserveFuel(second.bucket, share, 4_000_000, 0)).toEqual({
      bucket: { tokens: 2_000_000, at: 0 },
      reserved: 0,
      retryAfterSeconds: 2,
    });
  });

  it("refills at its rate, never past the burst", () => {
    const empty = { tokens: 0, at: 1_000 };
    expect(reserveFuel(empty, share, 4_000_000, 2_500).retryAfterSeconds).toBe(2.5);
    expect(reserveFuel(empty, share, 4_000_000, 5_000)).toEqual({
      bucket: { tokens: 0, at: 5_000 },
      reserved: 4_000_000,
      retryAfterSeconds: null,
    });
    expect(reserveFuel(empty, share, 1, 3_600_000).bucket.tokens).toBe(9_999_999);
  });

  it("reserves at most the burst for a run whose cap is larger", () => {
    expect(reserveFuel(undefined, share, 1e12, 0)).toEqual({
      bucket: { tokens: 0, at: 0 },
      reserved: 10_000_000,
      retryAfterSeconds: null,
    });
    expect(reserveFuel({ tokens: 9_000_000, at: 0 }, share, 1e12, 0).retryAfterSeconds).toBe(1);
  });

  it("settles: what a run did not spend goes back within the burst, what it spent past its reservation is owed", () => {
    expect(settleFuel({ tokens: 2_000_000, at: 0 }, share, 4_000_000, 500_000, 0)).toEqual({
      tokens: 5_500_000,
      at: 0,
    });
    expect(settleFuel({ tokens: 9_000_000, at: 0 }, share, 4_000_000, 0, 0)).toEqual({ tokens: 10_000_000, at: 0 });
    const owing = settleFuel({ tokens: 0, at: 0 }, share, 10_000_000, 25_000_000, 0);
    expect(owing).toEqual({ tokens: -15_000_000, at: 0 });
    // 15,000,000 owed and 1,000,000 needed: 16 s.
    expect(reserveFuel(owing, share, 1_000_000, 0).retryAfterSeconds).toBe(16);
  });
});

/** A settled-or-not probe of a promise. */
function watch<T>(promise: Promise<T>) {
  const state: { value?: T; error?: unknown } = {};
  promise.then(
    (value) => (state.value = value),
    (error: unknown) => (state.error = error),
  );
  return state;
}

const flush = () => new Promise((resolve) => setImmediate(resolve));

describe("TenantCpuBudget", () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it("refuses a tenant past its share with 429 and the exact Retry-After; another tenant's run is reserved", async () => {
    const budget = new TenantCpuBudget(share, { now: () => 0 });
    expect(await budget.reserve("a", 10_000_000)).toBe(10_000_000);
    await budget.settle("a", 10_000_000, 7_300_000);
    // Nothing in flight to give fuel back, and the refill takes longer than a wait: refused at once.
    const refused = await budget.reserve("a", 10_000_000).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(HostError);
    expect(refused).toMatchObject({
      code: "rate_limited",
      status: 429,
      headers: { "retry-after": "8" },
      message: "This tenant has spent its share of CPU (60 ms per minute, 10 ms at once): retry in 8 s",
    });
    expect(await budget.reserve("b", 10_000_000)).toBe(10_000_000);
  });

  it("a run waits while its tenant's runs in flight may give fuel back, in order, woken by their settlement", async () => {
    const budget = new TenantCpuBudget(share, { now: () => 0 });
    await budget.reserve("a", 4_000_000);
    await budget.reserve("a", 4_000_000); // 2,000,000 left
    const third = watch(budget.reserve("a", 4_000_000));
    const fourth = watch(budget.reserve("a", 1_000_000)); // would fit, but waits behind the third
    expect(await budget.reserve("b", 10_000_000)).toBe(10_000_000);
    await flush();
    expect([third, fourth]).toEqual([{}, {}]);
    await budget.settle("a", 4_000_000, 1_000_000); // 5,000,000: the third, then the fourth
    await flush();
    expect([third, fourth]).toEqual([{ value: 4_000_000 }, { value: 1_000_000 }]);
  });

  it(`a wait ends after ${MAX_CPU_WAIT_MS} ms with the 429 and the seconds its bucket still needs`, async () => {
    vi.useFakeTimers();
    const budget = new TenantCpuBudget(share, { now: () => 0 });
    await budget.reserve("a", 8_000_000);
    const waiting = watch(budget.reserve("a", 4_000_000));
    await vi.advanceTimersByTimeAsync(MAX_CPU_WAIT_MS - 1);
    expect(waiting).toEqual({});
    await vi.advanceTimersByTimeAsync(1);
    expect(waiting.error).toMatchObject({ code: "rate_limited", headers: { "retry-after": "2" } });
  });

  it("a wait is woken when the refill pays, by a timer set for then", async () => {
    vi.useFakeTimers();
    let now = 0;
    const budget = new TenantCpuBudget(share, { now: () => now });
    await budget.reserve("a", 10_000_000);
    await budget.settle("a", 10_000_000, 10_000_000); // empty, nothing in flight: 3 s until 3,000,000
    const waiting = watch(budget.reserve("a", 3_000_000));
    now = 2_999;
    await vi.advanceTimersByTimeAsync(2_999);
    expect(waiting).toEqual({});
    now = 3_000;
    await vi.advanceTimersByTimeAsync(1);
    expect(waiting).toEqual({ value: 3_000_000 });
  });
});
