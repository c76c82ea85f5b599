import { describe, expect, test } from "vitest";
import { FORMAT_BUDGET, MAX_STRING, makeInspect, truncationMarker } from "../../src/environment/index.js";
import { WorkBudget } from "../../src/values/budget.js";

const { inspect, format } = makeInspect();

describe("inspect (the sandbox console's formatter)", () => {
  test.each([
    ["a string nested is quoted", ["x"], "[ 'x' ]"],
    ["quotes pick the kind that needs no escape", ["it's", 'say "hi"'], `[ "it's", 'say "hi"' ]`],
    ["numbers, -0, bigint, NaN", [1, -0, 10n, Number.NaN], "[ 1, -0, 10n, NaN ]"],
    [
      "null, undefined, booleans, symbols",
      [null, undefined, true, Symbol("s")],
      "[ null, undefined, true, Symbol(s) ]",
    ],
  ])("%s", (_label, value, expected) => {
    expect(inspect(value)).toBe(expected);
  });

  test("objects, nesting beyond depth 2, keys that need quotes", () => {
    expect(inspect({ a: 1, "b-c": "x", n: { m: { k: { deep: 1 } } } })).toBe(
      "{ a: 1, 'b-c': 'x', n: { m: { k: [Object] } } }",
    );
    expect(inspect({})).toBe("{}");
    expect(inspect([])).toBe("[]");
  });

  test("Map, Set, Date, RegExp, Error, typed arrays, ArrayBuffer", () => {
    expect(inspect(new Map([["k", 1]]))).toBe("Map(1) { 'k' => 1 }");
    expect(inspect(new Set([1, 2]))).toBe("Set(2) { 1, 2 }");
    expect(inspect(new Date(0))).toBe("1970-01-01T00:00:00.000Z");
    expect(inspect(new Date(Number.NaN))).toBe("Invalid Date");
    expect(inspect(/a+/g)).toBe("/a+/g");
    expect(inspect(new TypeError("bad"))).toBe("TypeError: bad");
    expect(inspect({ e: new RangeError("r") })).toBe("{ e: [RangeError: r] }");
    expect(inspect(new Uint8Array([1, 2]))).toBe("Uint8Array(2) [ 1, 2 ]");
    expect(inspect(new ArrayBuffer(8))).toBe("ArrayBuffer { byteLength: 8 }");
  });

  const Float16 = (globalThis as { Float16Array?: new (values: number[]) => ArrayBufferView }).Float16Array;
  test.skipIf(Float16 === undefined)("a Float16Array, where the platform has one (Node 20 has none)", () => {
    const Made = Float16 as NonNullable<typeof Float16>;
    expect(inspect(new Made([1.5, -0, Number.NaN, 65504]))).toBe("Float16Array(4) [ 1.5, -0, NaN, 65504 ]");
    expect(inspect({ a: { b: { c: new Made([1]) } } })).toBe("{ a: { b: { c: [Float16Array] } } }");
  });

  test("functions, classes, instances, null prototypes, getters", () => {
    function named() {}
    class Point {
      x = 1;
    }
    expect(inspect(named)).toBe("[Function: named]");
    expect(inspect(async () => {})).toBe("[AsyncFunction (anonymous)]");
    expect(inspect(Point)).toBe("[class Point]");
    expect(inspect(new Point())).toBe("Point { x: 1 }");
    expect(inspect(Object.assign(Object.create(null), { a: 1 }))).toBe("[Object: null prototype] { a: 1 }");
    expect(
      inspect({
        get g() {
          return 1;
        },
      }),
    ).toBe("{ g: [Getter] }");
  });

  test("cycles, holes, long arrays and line breaking", () => {
    const cyclic: Record<string, unknown> = { a: 1 };
    cyclic.self = cyclic;
    expect(inspect(cyclic)).toBe("{ a: 1, self: [Circular] }");
    // biome-ignore lint/suspicious/noSparseArray: the hole is the point.
    expect(inspect([1, , 3])).toBe("[ 1, <1 empty item>, 3 ]");
    expect(inspect(Array.from({ length: 102 }, () => 0)).endsWith("... 2 more items\n]")).toBe(true);
    // One left out is one "item", as util.inspect says it, for every kind that lists items.
    for (const long of [
      [...Array(101).keys()],
      new Uint8Array(101),
      new Set(Array(101).keys()),
      new Map([...Array(101).entries()]),
    ]) {
      expect(inspect(long).endsWith("... 1 more item\n]") || inspect(long).endsWith("... 1 more item\n}")).toBe(true);
    }
    expect(inspect({ alpha: "a".repeat(30), beta: "b".repeat(30) })).toBe(
      `{\n  alpha: '${"a".repeat(30)}',\n  beta: '${"b".repeat(30)}'\n}`,
    );
  });

  test("format: strings raw, the rest inspected, printf-style directives", () => {
    expect(format(["a", 1, { b: "c" }])).toBe("a 1 { b: 'c' }");
    expect(format(["%s has %d items (%i%%) %j", "list", 3, 4.7, { a: 1 }])).toBe('list has 3 items (4%) {"a":1}');
    expect(format(["%o and %c%s", [1], "color: red", "x", "extra"])).toBe("[ 1 ] and x extra");
    expect(format([])).toBe("");
    expect(format([{ a: 1 }, "s"])).toBe("{ a: 1 } s");
  });
});

describe("inspect within a budget", () => {
  /** `x = [x, x]` `steps` times. */
  const dag = (steps: number, leaf: unknown): unknown => {
    let x = leaf;
    for (let i = 0; i < steps; i++) x = [x, x];
    return x;
  };

  test("every visit of a shared value is paid for; the text is cut at the budget and marked", () => {
    // 1 for the array, 3 for its items, 6 for each string, 4 for its keys, 16 for brackets and separators.
    const budget = new WorkBudget(42, "formatting");
    expect(inspect(["aaaa", "bbbb", "cccc"], budget)).toBe(`[ 'aaaa', 'bbbb', 'cccc' ]`);
    expect([budget.spent, budget.exhausted]).toEqual([42, false]);
    const small = new WorkBudget(14, "formatting");
    expect(inspect(["aaaa", "bbbb", "cccc"], small)).toBe(`[ 'aaaa', 'bbb ${truncationMarker(14)}`);
    expect(small.exhausted).toBe(true);
    const shared = new WorkBudget(FORMAT_BUDGET, "formatting");
    const o = { s: "x".repeat(MAX_STRING) };
    const text = inspect(Array(100).fill(Array(100).fill(o)), shared);
    expect(text.endsWith(` ${truncationMarker(FORMAT_BUDGET)}`)).toBe(true);
    expect(text.length).toBe(FORMAT_BUDGET + 1 + truncationMarker(FORMAT_BUDGET).length);
  });

  test("without a budget, a fresh one of FORMAT_BUDGET units per call", () => {
    const row = Array.from({ length: 100 }, () => "y".repeat(MAX_STRING));
    const text = format([Array(100).fill(row)]);
    expect(text.endsWith(` ${truncationMarker(FORMAT_BUDGET)}`)).toBe(true);
    expect(text.length).toBeLessThanOrEqual(FORMAT_BUDGET + 1 + truncationMarker(FORMAT_BUDGET).length);
    expect(format(["fits", 1])).toBe("fits 1");
  });

  test("options: the depth shown and the text that ends a cut", () => {
    const deep = makeInspect({ depth: 4, truncated: (spent) => `[cut at ${spent.limit}]` });
    const value = { n: { m: { k: { l: { o: { deep: 1 } } } } }, e: new Error("x") };
    expect(deep.inspect(value)).toBe("{ n: { m: { k: { l: { o: [Object] } } } }, e: [Error: x] }");
    expect(deep.inspect(["aaaa", "bbbb"], new WorkBudget(14, "formatting"))).toBe("[ 'aaaa', 'bbb [cut at 14]");
  });

  test("a long key is quoted and cut without a regex over all of it; %j is budgeted", () => {
    expect(inspect({ [`k${"e".repeat(MAX_STRING + 5)}`]: 1 })).toBe(
      `{\n  'k${"e".repeat(MAX_STRING - 1)}... 6 more characters': 1\n}`,
    );
    const budget = new WorkBudget(30, "formatting");
    expect(format(["%j", dag(40, 1)], budget)).toBe(truncationMarker(30));
  });
});
