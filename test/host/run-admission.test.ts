/**
 * `RunAdmission`: runs hold the linear memory their caps make them take (never the cap alone), wait for room in a
 * bounded line in order, and are refused with 503 `overloaded` when the line is full or their wait runs out.
 */
import { describe, expect, it } from "vitest";
import { HostError, linearMemoryBytes, RunAdmission } from "../../src/host/index.js";

const MiB = 1024 * 1024;

/** A settled-or-not probe of a promise, to see which waiters were admitted. */
function watch<T>(promise: Promise<T>) {
  const state: { value?: T; error?: unknown } = {};
  promise.then(
    (value) => (state.value = value),
    (error: unknown) => (state.error = error),
  );
  return state;
}

/** Longer than a waiting run takes to look for room again. */
const tick = () => new Promise((resolve) => setTimeout(resolve, 25));

describe("RunAdmission", () => {
  it("counts the linear memory a cap makes a run take: 16 MiB at least, the cap plus 4 MiB above it", () => {
    expect([linearMemoryBytes(1), linearMemoryBytes(12 * MiB), linearMemoryBytes(32 * MiB)]).toEqual([
      16 * MiB,
      16 * MiB,
      36 * MiB,
    ]);
    expect(linearMemoryBytes(64 * MiB + 1)).toBe(68 * MiB + 65_536);
  });

  it("a run with a tiny cap holds 16 MiB: four fill 64 MiB and the fifth waits until one ends", async () => {
    const admission = new RunAdmission({ memoryBudgetBytes: 64 * MiB, maxWaiting: 8, maxWaitMs: 10_000 });
    const releases = await Promise.all([1, 2, 3, 4].map(() => admission.admit(1024)));
    const fifth = watch(admission.admit(1024));
    await tick();
    expect(fifth).toEqual({});
    (releases[0] as () => void)();
    // A second release of the same run frees nothing more.
    (releases[0] as () => void)();
    await tick();
    expect(typeof fifth.value).toBe("function");
    const sixth = watch(admission.admit(1024));
    await tick();
    expect(sixth).toEqual({});
  });

  it("waiters are admitted in order: a large one at the head keeps smaller ones behind it waiting", async () => {
    const admission = new RunAdmission({ memoryBudgetBytes: 72 * MiB, maxWaiting: 8, maxWaitMs: 10_000 });
    const first = await admission.admit(32 * MiB); // 36 MiB
    const second = await admission.admit(12 * MiB); // 16 MiB: 52 held
    const large = watch(admission.admit(32 * MiB)); // 36 MiB: does not fit
    const small = watch(admission.admit(1)); // 16 MiB would fit, but waits behind the large one
    await tick();
    expect([large, small]).toEqual([{}, {}]);
    second();
    await tick();
    expect([typeof large.value, small]).toEqual(["function", {}]);
    first();
    await tick();
    expect(typeof small.value).toBe("function");
  });

  it("503 overloaded with Retry-After 1 when the line is full, when the wait runs out, and for a run that never fits", async () => {
    const admission = new RunAdmission({ memoryBudgetBytes: 40 * MiB, maxWaiting: 1, maxWaitMs: 50 });
    const held = await admission.admit(32 * MiB);
    const waiting = admission.admit(1);
    await expect(admission.admit(1)).rejects.toThrow(
      `Runs in flight here hold ${36 * MiB} of ${40 * MiB} bytes of linear memory, and this one needs ${16 * MiB}: 1 runs wait already; retry shortly`,
    );
    const refused = await waiting.then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(refused).toBeInstanceOf(HostError);
    expect([(refused as HostError).code, (refused as HostError).status, (refused as HostError).headers]).toEqual([
      "overloaded",
      503,
      { "retry-after": "1" },
    ]);
    expect((refused as HostError).message).toBe(
      `Runs in flight here hold ${36 * MiB} of ${40 * MiB} bytes of linear memory, and this one needs ${16 * MiB}: no room within 50 ms; retry shortly`,
    );
    await expect(admission.admit(64 * MiB)).rejects.toThrow(
      `and this one needs ${68 * MiB}: more than this host ever gives one run; retry shortly`,
    );
    held();
    // The line is empty again and the budget free: a run is admitted at once.
    const next = watch(admission.admit(1));
    await tick();
    expect(typeof next.value).toBe("function");
  });

  it("a waiter that timed out at the head lets those behind it in when they fit", async () => {
    const admission = new RunAdmission({ memoryBudgetBytes: 52 * MiB, maxWaiting: 4, maxWaitMs: 30 });
    await admission.admit(32 * MiB); // 36 MiB held, 16 MiB free
    const large = watch(admission.admit(32 * MiB)); // needs 36 MiB: times out at the head
    const small = watch(admission.admit(1)); // needs 16 MiB: fits, but waits behind the large one
    await new Promise((resolve) => setTimeout(resolve, 60));
    expect(large.error).toBeInstanceOf(HostError);
    expect([typeof small.value, small.error]).toEqual(["function", undefined]);
  });
});
