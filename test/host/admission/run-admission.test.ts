/**
 * `RunAdmission`: runs hold the linear memory their caps make them take (never the cap alone), wait for room in a
 * bounded line in order, and are refused with 503 `overloaded` when the line is full or their wait runs out; each
 * tenant holds at most its share of the budget and of the line, and whatever ends a request releases its runs. A
 * waiting run is admitted by whatever frees its room, with no time passing (fake timers, a frozen clock), where runs
 * wake each other (Node); where they may not (Workers, the default), each waiting run takes room on its own timer.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
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

/** Longer than a waiting run's timers (real ones) take to fire in the tests that need them. */
const tick = () => new Promise((resolve) => setTimeout(resolve, 25));

/** Lets the promises settled so far run their reactions, with no time passing. */
async function flush() {
  for (let i = 0; i < 10; i++) await Promise.resolve();
}

/** Fake timers (no timer fires unless the test moves time) and a frozen admission clock. */
function frozen() {
  vi.useFakeTimers();
  return () => 0;
}

afterEach(() => {
  vi.useRealTimers();
});

/** Runs that wake each other, as on Node. */
const WAKE = { wakeAcrossRequests: true };

describe("RunAdmission", () => {
  it("counts the linear memory a cap makes a run take: 16 MiB at least, the cap plus 4 MiB above it", () => {
    expect([linearMemoryBytes(1), linearMemoryBytes(12 * MiB), linearMemoryBytes(32 * MiB)]).toEqual([
      16 * MiB,
      16 * MiB,
      36 * MiB,
    ]);
    expect(linearMemoryBytes(64 * MiB + 1)).toBe(68 * MiB + 65_536);
  });

  it("a run with a tiny cap holds 16 MiB: four fill 64 MiB and the fifth is admitted when one ends, no time passing", async () => {
    const admission = new RunAdmission(
      { memoryBudgetBytes: 64 * MiB, maxWaiting: 8, maxWaitMs: 10_000, tenantShare: 1, ...WAKE },
      frozen(),
    );
    const releases = await Promise.all([1, 2, 3, 4].map(() => admission.admit(1024, "a", open())));
    const fifth = watch(admission.admit(1024, "a", open()));
    await flush();
    expect(fifth).toEqual({});
    // While it waits, its one timer is its deadline: nothing polls.
    expect(vi.getTimerCount()).toBe(1);
    (releases[0] as () => void)();
    // A second release of the same run frees nothing more.
    (releases[0] as () => void)();
    await flush();
    expect(typeof fifth.value).toBe("function");
    expect(vi.getTimerCount()).toBe(0);
    const sixth = watch(admission.admit(1024, "a", open()));
    await flush();
    expect(sixth).toEqual({});
  });

  it("waiters are admitted in order: a large one at the head keeps smaller ones of other tenants behind it waiting", async () => {
    const admission = new RunAdmission(
      { memoryBudgetBytes: 72 * MiB, maxWaiting: 8, maxWaitMs: 10_000, ...WAKE },
      frozen(),
    );
    const first = await admission.admit(32 * MiB, "a", open()); // 36 MiB
    const second = await admission.admit(12 * MiB, "b", open()); // 16 MiB: 52 held
    const large = watch(admission.admit(32 * MiB, "c", open())); // 36 MiB: does not fit
    const small = watch(admission.admit(1, "d", open())); // 16 MiB would fit, but waits behind the large one
    await flush();
    expect([large, small]).toEqual([{}, {}]);
    second();
    await flush();
    expect([typeof large.value, small]).toEqual(["function", {}]);
    first();
    await flush();
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

  it("a waiter that timed out at the head lets those behind it in at that moment", async () => {
    const admission = new RunAdmission(
      { memoryBudgetBytes: 52 * MiB, maxWaiting: 4, maxWaitMs: 50, tenantShare: 1, ...WAKE },
      frozen(),
    );
    await admission.admit(32 * MiB, "a", open()); // 36 MiB held, 16 MiB free
    const large = watch(admission.admit(32 * MiB, "a", open())); // needs 36 MiB: times out at the head
    await vi.advanceTimersByTimeAsync(20);
    const small = watch(admission.admit(1, "a", open())); // needs 16 MiB: fits, but waits behind the large one
    await flush();
    expect(small).toEqual({});
    // The large one's deadline, not the small one's (20 ms later): the small one goes in as the large one leaves.
    await vi.advanceTimersByTimeAsync(30);
    expect(large.error).toBeInstanceOf(HostError);
    expect([typeof small.value, small.error]).toEqual(["function", undefined]);
  });

  it("a waiter whose request ends at the head lets those behind it in at once", async () => {
    const admission = new RunAdmission(
      { memoryBudgetBytes: 52 * MiB, maxWaiting: 4, maxWaitMs: 10_000, tenantShare: 1, ...WAKE },
      frozen(),
    );
    await admission.admit(32 * MiB, "a", open()); // 36 MiB held, 16 MiB free
    const request = new AbortController();
    const large = watch(admission.admit(32 * MiB, "b", request.signal)); // needs 36 MiB
    const small = watch(admission.admit(1, "c", open())); // fits, but waits behind the large one
    await flush();
    expect(small).toEqual({});
    request.abort(new Error("gone"));
    await flush();
    expect([(large.error as Error).message, typeof small.value]).toEqual(["gone", "function"]);
  });

  it("a request that ends releases its runs: a waiting one leaves the line, an admitted one frees its memory", async () => {
    const admission = new RunAdmission(
      { memoryBudgetBytes: 36 * MiB, maxWaiting: 1, maxWaitMs: 10_000, tenantShare: 1, ...WAKE },
      frozen(),
    );
    const first = new AbortController();
    await admission.admit(32 * MiB, "a", first.signal); // the whole budget, never released by hand
    const second = new AbortController();
    const waiting = watch(admission.admit(32 * MiB, "a", second.signal));
    await flush();
    second.abort(new Error("gone"));
    await flush();
    expect((waiting.error as Error).message).toBe("gone");
    // Its place in the line is free again, and the first request's end frees the budget.
    const third = watch(admission.admit(32 * MiB, "b", open()));
    await flush();
    expect(third).toEqual({});
    first.abort();
    await flush();
    expect(typeof third.value).toBe("function");
    expect(vi.getTimerCount()).toBe(0);
  });

  it("a run admitted after a wait is released when its request ends, as one admitted at once is", async () => {
    const admission = new RunAdmission(
      { memoryBudgetBytes: 36 * MiB, maxWaiting: 2, maxWaitMs: 10_000, tenantShare: 1, ...WAKE },
      frozen(),
    );
    const release = await admission.admit(32 * MiB, "a", open());
    const request = new AbortController();
    const waited = watch(admission.admit(32 * MiB, "b", request.signal));
    const last = watch(admission.admit(32 * MiB, "c", open()));
    release();
    await flush();
    expect([typeof waited.value, last]).toEqual(["function", {}]);
    request.abort();
    await flush();
    expect(typeof last.value).toBe("function");
  });

  it("a run that nothing releases gives its room back after maxHoldMs (a Worker request the client left is cancelled)", async () => {
    vi.useFakeTimers();
    const admission = new RunAdmission(
      { memoryBudgetBytes: 36 * MiB, maxWaiting: 1, maxWaitMs: 10_000, tenantShare: 1, maxHoldMs: 50, ...WAKE },
      Date.now, // faked: it moves with the timers
    );
    await admission.admit(32 * MiB, "a", open()); // the whole budget: its release never comes, nor its signal
    const next = watch(admission.admit(32 * MiB, "a", open()));
    await vi.advanceTimersByTimeAsync(49);
    expect(next).toEqual({});
    // The waiting run's own timer for the hold's due time: no other timer than that and its deadline.
    expect(vi.getTimerCount()).toBe(2);
    await vi.advanceTimersByTimeAsync(1);
    expect(typeof next.value).toBe("function");
  });

  it("room that fell due goes to the run already waiting for it when a new run arrives, not to the new one", async () => {
    vi.useFakeTimers();
    let now = 0;
    const admission = new RunAdmission(
      { memoryBudgetBytes: 36 * MiB, maxWaiting: 2, maxWaitMs: 10_000, tenantShare: 1, maxHoldMs: 50, ...WAKE },
      () => now,
    );
    await admission.admit(32 * MiB, "a", open()); // never released
    const waiting = watch(admission.admit(32 * MiB, "b", open()));
    // The clock passes the hold's due time before any timer fires: the next arrival finds it.
    now = 50;
    const arriving = watch(admission.admit(32 * MiB, "c", open()));
    await flush();
    expect([typeof waiting.value, arriving]).toEqual(["function", {}]);
  });

  it("with a frozen clock room is never taken back by time, and the wait still ends at its deadline", async () => {
    const admission = new RunAdmission(
      { memoryBudgetBytes: 36 * MiB, maxWaiting: 1, maxWaitMs: 1_000, tenantShare: 1, maxHoldMs: 50, ...WAKE },
      frozen(),
    );
    await admission.admit(32 * MiB, "a", open());
    const next = watch(admission.admit(32 * MiB, "a", open()));
    await vi.advanceTimersByTimeAsync(999);
    expect(next).toEqual({});
    await vi.advanceTimersByTimeAsync(1);
    expect((next.error as HostError).message).toMatch(/: no room within 1000 ms; retry shortly$/);
    expect(vi.getTimerCount()).toBe(0);
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

  it("the line is served in turns by tenant, not first come, first served: each release admits the next at once", async () => {
    const admission = new RunAdmission(
      { memoryBudgetBytes: 36 * MiB, maxWaiting: 8, maxWaitMs: 10_000, tenantShare: 1, ...WAKE },
      frozen(),
    );
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
      await flush();
      expect(order.length).toBe(i + 1);
      release = await (waiting.get(order.at(-1) as string) as Promise<() => void>);
    }
    // First come, first served would be a1, a2, a3, b1, c1, b2.
    expect(order).toEqual(["a1", "b1", "c1", "a2", "b2", "a3"]);
  });

  it("a tenant flooding within its share never starves another: the other's run goes in at the next room", async () => {
    // Room for two runs; each tenant may hold both and take six places in the line.
    const admission = new RunAdmission(
      { memoryBudgetBytes: 72 * MiB, maxWaiting: 6, maxWaitMs: 10_000, tenantShare: 1, ...WAKE },
      frozen(),
    );
    const held = [await admission.admit(32 * MiB, "flood", open()), await admission.admit(32 * MiB, "flood", open())];
    const order: string[] = [];
    const admitted = (name: string, tenant: string) =>
      admission.admit(32 * MiB, tenant, open()).then((release) => {
        order.push(name);
        held.push(release);
      });
    const flood = ["f1", "f2", "f3", "f4"].map((name) => admitted(name, "flood"));
    const other = admitted("o1", "other");
    // The flood's runs end one after the other, each letting the next waiting run in.
    for (let i = 0; i < 5; i++) {
      (held.shift() as () => void)();
      await flush();
    }
    await Promise.all([...flood, other]);
    // Arrival order would put o1 last; in turns it goes second.
    expect(order).toEqual(["f1", "o1", "f2", "f3", "f4"]);
  });

  it("one tenant's flood holds at most its share of the budget and of the line: another tenant's run goes at once", async () => {
    // Fake timers: the flood's waits (each on its own timer here, the default) end with the test.
    const admission = new RunAdmission({ memoryBudgetBytes: 72 * MiB, maxWaiting: 8, maxWaitMs: 10_000 }, frozen());
    expect([admission.tenantQuotaBytes, admission.tenantMaxWaiting]).toEqual([36 * MiB, 4]);
    await admission.admit(32 * MiB, "flood", open()); // its whole share
    const flood = [1, 2, 3, 4].map(() => watch(admission.admit(32 * MiB, "flood", open())));
    await expect(admission.admit(1, "flood", open())).rejects.toThrow(": 4 runs of this tenant wait already; retry");
    // Another tenant's run at the same cap is admitted at once, past the flood's waiting runs.
    const other = watch(admission.admit(32 * MiB, "other", open()));
    await Promise.resolve();
    expect(typeof other.value).toBe("function");
    await vi.advanceTimersByTimeAsync(25);
    expect(flood).toEqual([{}, {}, {}, {}]);
    // A run larger than a tenant's share is never admitted, so it never waits.
    await expect(admission.admit(48 * MiB, "other", open())).rejects.toThrow(
      `more than one tenant's runs may hold here (${36 * MiB}): ask for a smaller memoryLimitBytes`,
    );
  });

  it("where runs may not wake each other (Workers), a waiting run takes the room freed on its own next look", async () => {
    vi.useFakeTimers();
    const admission = new RunAdmission({ memoryBudgetBytes: 36 * MiB, maxWaiting: 1, tenantShare: 1 }, () => 0);
    const release = await admission.admit(32 * MiB, "a", open());
    const next = watch(admission.admit(32 * MiB, "b", open()));
    release();
    await flush();
    // The release resolved nothing of the other request's: its own timer does.
    expect(next).toEqual({});
    await vi.advanceTimersByTimeAsync(5);
    expect(typeof next.value).toBe("function");
    expect(vi.getTimerCount()).toBe(0);
  });

  it("where runs may not wake each other, a waiting run's own look takes back room held past maxHoldMs", async () => {
    vi.useFakeTimers();
    const admission = new RunAdmission(
      { memoryBudgetBytes: 36 * MiB, maxWaiting: 1, tenantShare: 1, maxHoldMs: 50 },
      Date.now, // faked: it moves with the timers
    );
    await admission.admit(32 * MiB, "a", open()); // never released
    const next = watch(admission.admit(32 * MiB, "b", open()));
    await vi.advanceTimersByTimeAsync(45);
    expect(next).toEqual({});
    await vi.advanceTimersByTimeAsync(5);
    expect(typeof next.value).toBe("function");
  });
});
