import { describe, expect, it } from "vitest";
import { BudgetError, MAX_WALK_DEPTH, stringifyWithin, WorkBudget } from "../../src/values/budget.js";

/** `x = [x, x]` `steps` times: `steps` arrays, 2^steps leaves when walked as a tree. */
function dag(steps: number): unknown {
  let x: unknown = 0;
  for (let i = 0; i < steps; i++) x = [x, x];
  return x;
}

describe("stringifyWithin", () => {
  it("writes what JSON.stringify writes, replacer, toJSON and holes included", () => {
    const replacer = (_key: string, v: unknown) => (typeof v === "bigint" ? `${v}n` : v);
    // biome-ignore lint/suspicious/noSparseArray: the hole is what this checks.
    const value = { a: [1, , "x", undefined, () => 1], d: new Date(0), b: 2n, s: Symbol("s"), n: null, o: { k: -0 } };
    expect(stringifyWithin(value, new WorkBudget(1000, "v"), replacer)).toBe(JSON.stringify(value, replacer));
    expect(stringifyWithin(undefined, new WorkBudget(10, "v"))).toBeUndefined();
    expect(stringifyWithin("abc", new WorkBudget(5, "v"))).toBe('"abc"');
  });

  it("charges every visit of a shared reference and stops when the budget is spent", () => {
    const budget = new WorkBudget(100_000, "the value");
    expect(() => stringifyWithin(dag(40), budget)).toThrow(
      new BudgetError(
        "the value needs more than 100000 units of work (shared references count each time they are reached)",
      ),
    );
    expect(budget.spent).toBeLessThan(100_100);
    const small = stringifyWithin(dag(4), new WorkBudget(1000, "v"));
    expect(small).toBe(JSON.stringify(dag(4)));
  });

  it("charges a sparse array's whole length before writing it", () => {
    const budget = new WorkBudget(1_000_000, "the value");
    expect(() => stringifyWithin(new Array(2 ** 32 - 1), budget)).toThrow(BudgetError);
    expect(budget.spent).toBe(2 + 2 ** 32 - 1);
  });

  it("throws JSON.stringify's TypeError on cycles and a BudgetError past the depth limit", () => {
    const cyclic: unknown[] = [];
    cyclic.push([cyclic]);
    expect(() => stringifyWithin(cyclic, new WorkBudget(1000, "v"))).toThrow(TypeError);
    let deep: unknown = 1;
    for (let i = 0; i < MAX_WALK_DEPTH + 1; i++) deep = [deep];
    expect(() => stringifyWithin(deep, new WorkBudget(1e9, "the value"))).toThrow(
      new BudgetError(`the value is nested deeper than ${MAX_WALK_DEPTH} levels`),
    );
  });
});
