/**
 * The caller's thread's turns between attempts (node/threads/attempt-turns.ts): one at a time, each after a turn of
 * the event loop (faked here, so nothing depends on a clock), round robin by tenant, with a bounded line per tenant.
 * The default path's runs taking these turns are in default-path.test.ts.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { AttemptTurns, MAX_WAITING_ATTEMPTS } from "../../node/threads/attempt-turns.js";

interface Named {
  name: string;
  attempt(): void;
}

beforeEach(() => {
  vi.useFakeTimers({ toFake: ["setImmediate"] });
});

afterEach(() => {
  vi.useRealTimers();
});

/** Turns whose attempts note their names as they take the thread and hold it until {@link end}. */
function turnsNoted() {
  const turns = new AttemptTurns<Named>();
  const taken: string[] = [];
  const take = (tenant: string | undefined, name: string): Named => {
    const attempt = { name, attempt: () => void taken.push(name) };
    turns.take(tenant, attempt);
    return attempt;
  };
  /** Ends the attempt holding the thread; the next takes it after a turn of the event loop. */
  const end = () => {
    turns.next();
    vi.runOnlyPendingTimers();
  };
  /** Ends attempts until none holds the thread. */
  const drain = () => {
    for (let at = taken.length; ; at = taken.length) {
      end();
      if (taken.length === at) return;
    }
  };
  return { turns, taken, take, end, drain };
}

describe("the caller's thread's turns between attempts", () => {
  it("gives the thread at once when nobody holds it, and the next attempt only after the holder ends and a turn", () => {
    const { taken, take, end } = turnsNoted();
    take("a", "a1");
    take("a", "a2");
    expect(taken).toEqual(["a1"]);
    vi.runOnlyPendingTimers();
    expect(taken).toEqual(["a1"]);
    // The holder ended: the next waits for a turn of the event loop.
    end();
    expect(taken).toEqual(["a1", "a2"]);
  });

  it("serves one tenant's attempts first come, first served", () => {
    const { taken, take, drain } = turnsNoted();
    for (const name of ["a1", "a2", "a3", "a4"]) take("a", name);
    drain();
    expect(taken).toEqual(["a1", "a2", "a3", "a4"]);
  });

  it("gives another tenant's attempt the second turn behind one tenant's many, not the last", () => {
    const { taken, take, drain } = turnsNoted();
    for (let i = 1; i <= 6; i++) take("a", `a${i}`);
    take("b", "b1");
    drain();
    expect(taken).toEqual(["a1", "b1", "a2", "a3", "a4", "a5", "a6"]);
  });

  it("serves the tenants round robin, the library's caller (no tenant) one of them, the first come among ties", () => {
    const { taken, take, drain } = turnsNoted();
    take("x", "x1");
    for (const tenant of ["a", undefined, "c"]) {
      for (let i = 1; i <= 3; i++) take(tenant, `${tenant ?? "caller"}${i}`);
    }
    drain();
    expect(taken).toEqual(["x1", "a1", "caller1", "c1", "a2", "caller2", "c2", "a3", "caller3", "c3"]);
  });

  it("places an attempt of a tenant with none waiting at the turn being served: ahead of a backlog, behind its peers", () => {
    const { taken, take, end, drain } = turnsNoted();
    for (let i = 1; i <= 4; i++) take("a", `a${i}`);
    take("b", "b1");
    end();
    end();
    expect(taken).toEqual(["a1", "b1", "a2"]);
    // a2's turn is being served; b (one turn so far) and c (none) come before a's third, in the order they came.
    take("b", "b2");
    take("c", "c1");
    drain();
    expect(taken).toEqual(["a1", "b1", "a2", "b2", "c1", "a3", "a4"]);
  });

  it("takes a waiting attempt out for good, but not the holder; a turn left to nobody frees the thread", () => {
    const { turns, taken, take, end } = turnsNoted();
    const a1 = take("a", "a1");
    const a2 = take("a", "a2");
    expect(turns.leave(a1)).toBe(false);
    expect(turns.leave(a2)).toBe(true);
    expect(turns.leave(a2)).toBe(false);
    const b1 = take("b", "b1");
    turns.next();
    // Stopped as its turn comes: the turn goes to nobody, and the thread is free for the next attempt at once.
    expect(turns.leave(b1)).toBe(true);
    vi.runOnlyPendingTimers();
    take("c", "c1");
    expect(taken).toEqual(["a1", "c1"]);
    end();
    expect(taken).toEqual(["a1", "c1"]);
  });

  it(`keeps at most ${MAX_WAITING_ATTEMPTS} attempts of a tenant waiting, each tenant its own`, () => {
    const { turns, take } = turnsNoted();
    take("a", "holder");
    for (let i = 0; i < MAX_WAITING_ATTEMPTS; i++) {
      expect(turns.hasRoom("a")).toBe(true);
      take("a", `a${i}`);
    }
    expect(turns.hasRoom("a")).toBe(false);
    expect(turns.hasRoom("b")).toBe(true);
    expect(turns.hasRoom(undefined)).toBe(true);
  });
});
