import fc from "fast-check";
import { describe, expect, it, vi } from "vitest";
import { BudgetError, WorkBudget } from "../../src/values/budget.js";
import {
  JsonTooLargeError,
  jsonWithin,
  quotedLength,
  type SizedJson,
  toJson,
  toJsonSized,
  utf8Length,
} from "../../src/values/json.js";

const utf8 = (text: string) => new TextEncoder().encode(text).length;
const sized = (value: unknown, maxBytes?: number): SizedJson =>
  toJsonSized(value, new WorkBudget(1e9, "the value"), maxBytes);

/** The documented conversion as a `JSON.stringify` replacer: what the text of the converted tree must be. */
const documented = (_key: string, value: unknown): unknown => {
  if (typeof value === "bigint") return value.toString();
  if (value instanceof Map) {
    const out: Record<string, unknown> = {};
    for (const [k, v] of value)
      Object.defineProperty(out, String(k), { value: v, writable: true, enumerable: true, configurable: true });
    return out;
  }
  if (value instanceof Set) return [...value];
  if (ArrayBuffer.isView(value) && !(value instanceof DataView)) return Array.from(value as unknown as number[]);
  return value;
};

const text = fc.oneof(
  fc.string({ unit: "binary", maxLength: 8 }),
  fc.string({ unit: "grapheme", maxLength: 8 }),
  fc.constantFrom("", '"\\', "\b\t\n\f\r\v\0\x1f\x7f", "\uD800", "x\uDC00y", "\uDBFF\uDFFF", "€", "__proto__"),
);
const leaf = fc.oneof(
  text,
  fc.double(),
  fc.integer(),
  fc.bigInt(),
  fc.boolean(),
  fc.constantFrom(null, undefined, -0),
  fc.date({ noInvalidDate: false }),
  fc.uint8Array({ maxLength: 4 }),
  fc.float64Array({ maxLength: 3 }),
);
const mapKey = fc.oneof(text, fc.integer({ min: -2, max: 2 }), fc.constantFrom(-0, null, true, [1, [2, null]], ["1"]));
const tree = fc.letrec((tie) => ({
  value: fc.oneof({ depthSize: "small" }, leaf, tie("array"), tie("object"), tie("map"), tie("set")),
  array: fc.array(tie("value"), { maxLength: 4 }),
  object: fc.dictionary(text, tie("value"), { maxKeys: 4 }),
  map: fc.array(fc.tuple(mapKey, tie("value")), { maxLength: 4 }).map((pairs) => new Map(pairs)),
  set: fc.array(tie("value"), { maxLength: 3 }).map((items) => new Set(items)),
}));

/** Deepest nesting of arrays and objects in JSON text. */
function depthOf(text: string): number {
  let depth = 0;
  let deepest = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (inString) {
      if (c === "\\") i++;
      else if (c === '"') inString = false;
    } else if (c === '"') inString = true;
    else if (c === "[" || c === "{") deepest = Math.max(deepest, ++depth);
    else if (c === "]" || c === "}") depth--;
  }
  return deepest;
}

describe("quotedLength", () => {
  it("is the length of JSON.stringify(text) in UTF-16 units and in UTF-8 bytes, for every code unit and pair", () => {
    const wrong: number[] = [];
    for (let unit = 0; unit <= 0xffff; unit++) {
      const one = `a${String.fromCharCode(unit)}`;
      const quoted = JSON.stringify(one);
      if (quotedLength(one, true) !== quoted.length || quotedLength(one) !== utf8(quoted)) wrong.push(unit);
    }
    expect(wrong).toEqual([]);
    for (const pair of ["\uD83D\uDE00", "\uDBFF\uDFFF", "\uDC00\uD800", "\uD800\uD800\uDC00"]) {
      expect([quotedLength(pair, true), quotedLength(pair)]).toEqual([
        JSON.stringify(pair).length,
        utf8(JSON.stringify(pair)),
      ]);
    }
    expect(utf8Length("\uD800")).toBe(3);
  });
});

describe("toJsonSized", () => {
  it("makes the documented tree and sizes its text exactly: bytes, depth and the root's entries", () => {
    fc.assert(
      fc.property(tree.value, (value) => {
        const { json, bytes, depth, entries } = sized(value);
        const written = JSON.stringify(json);
        expect(written).toBe(JSON.stringify(value, documented));
        expect(bytes).toBe(written === undefined ? 0 : utf8(written));
        expect(depth).toBe(written === undefined ? 0 : depthOf(written));
        const expected = new Map<string, number>();
        if (typeof json === "object" && json !== null && !Array.isArray(json)) {
          for (const [k, v] of Object.entries(json)) expected.set(k, utf8(`${JSON.stringify(k)}:${JSON.stringify(v)}`));
        }
        expect(entries).toEqual(expected);
      }),
      { numRuns: 500 },
    );
  });

  it("Map keys that read the same: the later value takes the earlier key's place, or leaves it out", () => {
    const pairs: [unknown, unknown][] = [
      [1, "a"],
      ["b", 2],
      ["1", "c"],
    ];
    const { json, entries } = sized(new Map(pairs));
    expect(JSON.stringify(json)).toBe('{"1":"c","b":2}');
    expect([...entries]).toEqual([
      ["1", 7],
      ["b", 5],
    ]);
    expect(sized(new Map([...pairs, [[1], undefined]])).json).toEqual({ b: 2 });
  });

  it("never calls the value's toJSON; getters are read as properties", () => {
    const toJSON = vi.fn(() => "called");
    expect(sized({ a: 1, toJSON }).json).toEqual({ a: 1 });
    expect(toJSON).not.toHaveBeenCalled();
  });

  it("past maxBytes the walk reports the whole size, within its budget", () => {
    const big = Array.from({ length: 1_000 }, (_, i) => ({ i }));
    const bytes = utf8(JSON.stringify(big));
    expect(sized(big, bytes).bytes).toBe(bytes);
    const budget = new WorkBudget(1e9, "the value");
    expect(() => toJsonSized(big, budget, 100)).toThrow(new JsonTooLargeError("the value", 100, bytes));
    // Counting on costs what copying would: 2 + 1,000 units for the list, 15 for each `{ i }`.
    expect(budget.spent).toBe(16_002);
  });

  it("refuses cycles and nesting past 1,000 levels, naming the budget's walk", () => {
    const cyclic: Record<string, unknown> = {};
    cyclic.self = { cyclic };
    expect(() => sized(cyclic)).toThrow(new TypeError("the value is circular: only trees of data cross to the host"));
    let deep: unknown = 1;
    for (let i = 0; i < 1_001; i++) deep = [deep];
    expect(() => sized(deep)).toThrow(new BudgetError("the value is nested deeper than 1000 levels"));
  });
});

describe("jsonWithin", () => {
  it("converts without JSON.stringify or JSON.parse", () => {
    const stringify = vi.spyOn(JSON, "stringify");
    const parse = vi.spyOn(JSON, "parse");
    const result = jsonWithin({ a: [1, "é", new Map([["k", 2n]])] }, 1_000, "the value");
    const calls = [stringify.mock.calls.length, parse.mock.calls.length];
    stringify.mockRestore();
    parse.mockRestore();
    expect(calls).toEqual([0, 0]);
    expect(result).toEqual({
      json: { a: [1, "é", { k: "2" }] },
      bytes: 24,
      depth: 3,
      entries: new Map([["a", 22]]),
    });
  });
});

describe("toJson", () => {
  it("the documented conversion of cloned values", () => {
    expect(
      toJson({
        d: new Date(0),
        b: 12n,
        m: new Map([["k", 1]]),
        s: new Set([1]),
        u: undefined,
        t: new Uint8Array([1, 2]),
      }),
    ).toEqual({ d: "1970-01-01T00:00:00.000Z", b: "12", m: { k: 1 }, s: [1], t: [1, 2] });
  });
});
