/**
 * `RunAdmission`: runs hold the linear memory their caps make them take (never the cap alone), wait for room in a
 * bounded line in order, and are refused with 503 `overloaded` when the line is full or their wait runs out; each
 * tenant holds at most its share of the budget and of the line, and whatever ends a request releases its runs.
 */
import { describe, expect, it } from "vitest";
import { linearMemoryBytes } from "../../../src/core/engine.js";
import { RunAdmission } from "../../../src/host/admission/run-admission.js";
import { HostError } from "../../../src/host/errors.js";

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

/** The signal of a request that has not ended. */
const open = () => new AbortController().signal;

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
    const admission = new RunAdmission({
      memoryBudgetBytes: 64 * MiB,
      maxWaiting: 8,
      maxWaitMs: 10_000,
      tenantShare: 1,
    });
    const releases = await Promise.all([1, 2, 3, 4].map(() => admission.admit(1024, "a", open())));
    const fifth = watch(admission.admit(1024, "a", open()));
    await tick();
    expect(fifth).toEqual({});
    (releases[0] as () => void)();
    // A second release of the same run frees nothing more.
    (releases[0] as () => void)();
    await tick();
    expect(typeof fifth.value).toBe("function");
    const sixth = watch(admission.admit(1024, "a", open()));
    await tick();
    expect(sixth).toEqual({});
  });

  it("waiters are admitted in order: a large one at the head keeps smaller ones of other tenants behind it waiting", async () => {
    const admission = new RunAdmission({ memoryBudgetBytes: 72 * MiB, maxWaiting: 8, maxWaitMs: 10_000 });
    const first = await admission.admit(32 * MiB, "a", open()); // 36 MiB
    const second = await admission.admit(12 * MiB, "b", open()); // 16 MiB: 52 held
    const large = watch(admission.admit(32 * MiB, "c", open())); // 36 MiB: does not fit
    const small = watch(admission.admit(1, "d", open())); // 16 MiB would fit, but waits behind the large one
    await tick();
    expect([large, small]).toEqual([{}, {}]);
    second();
    await tick();
    expect([typeof large.value, small]).toEqual(["function", {}]);
    first();
    await tick();
    expect(typeof small.value).toBe("function");
  });

  it("503 overloaded with Retry-After 1 when the line is full and when the wait runs out; 400 for a run that never fits", async () => {
    const admission = new RunAdmission({ memoryBudgetBytes: 40 * MiB, maxWaiting: 1, maxWaitMs: 50, tenantShare: 1 });
    const held = await admission.admit(32 * MiB, "a", open());
    const waiting = admission.admit(1, "a", open());
    await expect(admission.admit(1, "b", open())).rejects.toThrow(
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
    await expect(admission.admit(64 * MiB, "a", open())).rejects.toMatchObject({
      code: "invalid_request",
      status: 400,
      message: `This run needs ${68 * MiB} bytes of linear memory, more than one tenant's runs may hold here (${40 * MiB}): ask for a smaller memoryLimitBytes`,
    });
    held();
    // The line is empty again and the budget free: a run is admitted at once.
    const next = watch(admission.admit(1, "b", open()));
    await tick();
    expect(typeof next.value).toBe("function");
  });

  it("a waiter that timed out at the head lets those behind it in when they fit", async () => {
    const admission = new RunAdmission({ memoryBudgetBytes: 52 * MiB, maxWaiting: 4, maxWaitMs: 50, tenantShare: 1 });
    await admission.admit(32 * MiB, "a", open()); // 36 MiB held, 16 MiB free
    const large = watch(admission.admit(32 * MiB, "a", open())); // needs 36 MiB: times out at the head
    await tick();
    const small = watch(admission.admit(1, "a", open())); // needs 16 MiB: fits, but waits behind the large one
    await new Promise((resolve) => setTimeout(resolve, 60));
    expect(large.error).toBeInstanceOf(HostError);
    expect([typeof small.value, small.error]).toEqual(["function", undefined]);
  });

  it("a request that ends releases its runs: a waiting one leaves the line, an admitted one frees its memory", async () => {
    const admission = new RunAdmission({
      memoryBudgetBytes: 36 * MiB,
      maxWaiting: 1,
      maxWaitMs: 10_000,
      tenantShare: 1,
    });
    const first = new AbortController();
    await admission.admit(32 * MiB, "a", first.signal); // the whole budget, never released by hand
    const second = new AbortController();
    const waiting = watch(admission.admit(32 * MiB, "a", second.signal));
    await tick();
    second.abort(new Error("gone"));
    await tick();
    expect((waiting.error as Error).message).toBe("gone");
    // Its place in the line is free again, and the first request's end frees the budget.
    const third = watch(admission.admit(32 * MiB, "b", open()));
    await tick();
    expect(third).toEqual({});
    first.abort();
    await tick();
    expect(typeof third.value).toBe("function");
  });

  it("a run that nothing releases gives its room back after maxHoldMs (a Worker request the client left is cancelled)", async () => {
    const admission = new RunAdmission({
      memoryBudgetBytes: 36 * MiB,
      maxWaiting: 1,
      maxWaitMs: 10_000,
      tenantShare: 1,
      maxHoldMs: 50,
    });
    await admission.admit(32 * MiB, "a", open()); // the whole budget: its release never comes, nor its signal
    const next = watch(admission.admit(32 * MiB, "a", open()));
    await tick();
    expect(next).toEqual({});
    await new Promise((resolve) => setTimeout(resolve, 60));
    expect(typeof next.value).toBe("function");
  });

  it("the wait is timed by a timer, not by turns of the event loop: a blocked loop does not stretch it", async () => {
    const admission = new RunAdmission({ memoryBudgetBytes: 36 * MiB, maxWaiting: 1, maxWaitMs: 100, tenantShare: 1 });
    await admission.admit(32 * MiB, "a", open());
    const waiting = watch(admission.admit(32 * MiB, "a", open()));
    // The thread stands still for 150 ms (a loaded host): past the wait's end, with almost no turn of the loop.
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 150);
    await tick();
    expect((waiting.error as HostError).message).toMatch(/: no room within 100 ms; retry shortly$/);
  });

  it("the line is served in turns by tenant, not first come, first served", async () => {
    const admission = new RunAdmission({
      memoryBudgetBytes: 36 * MiB,
      maxWaiting: 8,
      maxWaitMs: 10_000,
      tenantShare: 1,
    });
    let release = await admission.admit(32 * MiB, "x", open()); // the whole budget
    const order: string[] = [];
    const waiting = new Map(
      ["a1", "a2", "a3", "b1", "c1", "b2"].map((name) => [
        name,
        admission.admit(32 * MiB, name.slice(0, 1), open()).then((next) => {
          order.push(name);
          return next;
        }),
      ]),
    );
    for (let i = 0; i < waiting.size; i++) {
      release();
      await tick();
      release = await (waiting.get(order.at(-1) as string) as Promise<() => void>);
    }
    // First come, first served would be a1, a2, a3, b1, c1, b2.
    expect(order).toEqual(["a1", "b1", "c1", "a2", "b2", "a3"]);
  });

  it("one tenant's flood holds at most its share of the budget and of the line: another tenant's run goes at once", async () => {
    const admission = new RunAdmission({ memoryBudgetBytes: 72 * MiB, maxWaiting: 8, maxWaitMs: 10_000 });
    expect([admission.tenantQuotaBytes, admission.tenantMaxWaiting]).toEqual([36 * MiB, 4]);
    await admission.admit(32 * MiB, "flood", open()); // its whole share
    const flood = [1, 2, 3, 4].map(() => watch(admission.admit(32 * MiB, "flood", open())));
    await expect(admission.admit(1, "flood", open())).rejects.toThrow(": 4 runs of this tenant wait already; retry");
    // Another tenant's run at the same cap is admitted at once, past the flood's waiting runs.
    const other = watch(admission.admit(32 * MiB, "other", open()));
    await Promise.resolve();
    expect(typeof other.value).toBe("function");
    await tick();
    expect(flood).toEqual([{}, {}, {}, {}]);
    // A run larger than a tenant's share is never admitted, so it never waits.
    await expect(admission.admit(48 * MiB, "other", open())).rejects.toThrow(
      `more than one tenant's runs may hold here (${36 * MiB}): ask for a smaller memoryLimitBytes`,
    );
  });
});
