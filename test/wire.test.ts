import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { runCode } from "../node/index.js";
import { fromWire, type JsonValue, toWire } from "../src/wire.js";

/** Encodes, goes through real JSON text, decodes. */
const roundTrip = (value: unknown): unknown => fromWire(JSON.parse(JSON.stringify(toWire(value))) as JsonValue);

describe("wire: primitives", () => {
  it.each([
    ["a string", "héllo \u0000 \u{1f600}"],
    ["an integer", 42],
    ["a float", 0.1 + 0.2],
    ["the largest double", Number.MAX_VALUE],
    ["the smallest double", Number.MIN_VALUE],
    ["true", true],
    ["false", false],
    ["null", null],
  ])("%s is itself on the wire", (_name, value) => {
    expect(toWire(value)).toBe(value);
    expect(roundTrip(value)).toBe(value);
  });

  it("undefined, NaN, the infinities and -0 are tagged and come back exactly", () => {
    expect(toWire(undefined)).toEqual({ $t: "undefined" });
    expect(toWire(Number.NaN)).toEqual({ $t: "number", v: "NaN" });
    expect(toWire(Number.POSITIVE_INFINITY)).toEqual({ $t: "number", v: "Infinity" });
    expect(toWire(Number.NEGATIVE_INFINITY)).toEqual({ $t: "number", v: "-Infinity" });
    expect(toWire(-0)).toEqual({ $t: "number", v: "-0" });
    expect(roundTrip(undefined)).toBe(undefined);
    expect(Number.isNaN(roundTrip(Number.NaN))).toBe(true);
    expect(roundTrip(Number.POSITIVE_INFINITY)).toBe(Number.POSITIVE_INFINITY);
    expect(roundTrip(Number.NEGATIVE_INFINITY)).toBe(Number.NEGATIVE_INFINITY);
    expect(Object.is(roundTrip(-0), -0)).toBe(true);
    expect(Object.is(roundTrip(0), 0)).toBe(true);
  });

  it("bigints keep every digit and their sign", () => {
    const big = -(2n ** 200n) + 7n;
    expect(toWire(big)).toEqual({ $t: "bigint", v: big.toString() });
    expect(roundTrip(big)).toBe(big);
    expect(roundTrip(0n)).toBe(0n);
  });

  it("boxed primitives come back boxed", () => {
    for (const value of [Object(1), Object("ab"), Object(false), Object(5n)] as object[]) {
      const back = roundTrip(value) as object;
      expect(typeof back).toBe("object");
      expect(back.valueOf()).toBe(value.valueOf());
      expect(Object.prototype.toString.call(back)).toBe(Object.prototype.toString.call(value));
    }
  });

  it("functions and symbols are not result values", () => {
    expect(() => toWire(() => 1)).toThrow(new TypeError("toWire: a function is not a result value"));
    expect(() => toWire({ a: [Symbol("s")] })).toThrow(new TypeError("toWire: a symbol is not a result value"));
  });
});

describe("wire: objects and arrays", () => {
  it("plain data is plain JSON", () => {
    const value = { a: 1, b: [1, "x", null, { c: true }], d: {} };
    expect(toWire(value)).toEqual(value);
    expect(roundTrip(value)).toEqual(value);
  });

  it("nested undefined keeps its key", () => {
    const back = roundTrip({ a: undefined, b: [undefined] }) as { a?: unknown; b: unknown[] };
    expect("a" in back).toBe(true);
    expect(back.a).toBe(undefined);
    expect(back.b).toEqual([undefined]);
    expect(0 in back.b).toBe(true);
  });

  it("keys that look like tags round-trip", () => {
    const value = {
      $t: "map",
      $$t: "ref",
      $: 1,
      id: 3,
      v: [[1, 2]],
      nested: { $t: "undefined" },
      list: [{ $t: "bigint", v: "1" }],
    };
    const wire = toWire(value) as Record<string, JsonValue>;
    expect(wire.$$t).toBe("map");
    expect(wire.$$$t).toBe("ref");
    expect(wire.$$).toBe(1);
    expect(roundTrip(value)).toEqual(value);
    expect(roundTrip({ $t: "x" })).toEqual({ $t: "x" });
  });

  it("__proto__ stays an own key and never changes a prototype", () => {
    const value = JSON.parse('{"__proto__": {"polluted": true}, "a": 1}') as object;
    const back = roundTrip(value) as Record<string, unknown>;
    expect(Object.getPrototypeOf(back)).toBe(Object.prototype);
    expect(Object.keys(back)).toEqual(["__proto__", "a"]);
    expect(Object.getOwnPropertyDescriptor(back, "__proto__")?.value).toEqual({ polluted: true });
    expect(({} as Record<string, unknown>).polluted).toBe(undefined);
  });

  it("sparse arrays keep holes, length and extra keys", () => {
    // biome-ignore lint/suspicious/noSparseArray: the hole is the point of this test
    const sparse: unknown[] = [1, , 3];
    sparse.length = 6;
    Object.assign(sparse, { name: "n", $t: "x" });
    const back = roundTrip(sparse) as unknown[] & { name?: string; $t?: string };
    expect(back.length).toBe(6);
    expect(1 in back).toBe(false);
    expect(5 in back).toBe(false);
    expect([back[0], back[2], back.name, back.$t]).toEqual([1, 3, "n", "x"]);
    expect(Array.isArray(back)).toBe(true);
  });
});

describe("wire: built-in types", () => {
  it("Map and Set keep order, object keys and nested values", () => {
    const key = { k: 1 };
    const map = new Map<unknown, unknown>([
      [key, new Set([1n, "a"])],
      [Number.NaN, -0],
      ["x", undefined],
    ]);
    const back = roundTrip(map) as Map<unknown, unknown>;
    expect(back).toBeInstanceOf(Map);
    const entries = [...back];
    expect(entries.length).toBe(3);
    expect(entries[0]?.[0]).toEqual({ k: 1 });
    expect(entries[0]?.[1]).toEqual(new Set([1n, "a"]));
    expect(Number.isNaN(entries[1]?.[0])).toBe(true);
    expect(Object.is(entries[1]?.[1], -0)).toBe(true);
    expect(entries[2]).toEqual(["x", undefined]);
  });

  it("Dates, including invalid ones", () => {
    const back = roundTrip([new Date(1_700_000_000_123), new Date(Number.NaN), new Date(-1)]) as Date[];
    expect(back.map((d) => d instanceof Date)).toEqual([true, true, true]);
    expect(back[0]?.getTime()).toBe(1_700_000_000_123);
    expect(Number.isNaN(back[1]?.getTime())).toBe(true);
    expect(back[2]?.getTime()).toBe(-1);
    expect(toWire(new Date(5))).toEqual({ $t: "date", v: 5 });
  });

  it("RegExps keep source and flags", () => {
    const back = roundTrip(/a\/b+$/gimsuy) as RegExp;
    expect(back).toBeInstanceOf(RegExp);
    expect([back.source, back.flags]).toEqual(["a\\/b+$", "gimsuy"]);
  });

  it("Errors keep class, name, message, stack and cause", () => {
    const cause = new RangeError("inner");
    const error = new TypeError("outer", { cause });
    error.stack = "TypeError: outer\n    at main (/main.js:3:7)";
    const back = roundTrip(error) as TypeError & { cause: RangeError };
    expect(back).toBeInstanceOf(TypeError);
    expect([back.name, back.message, back.stack]).toEqual(["TypeError", "outer", error.stack]);
    expect(back.cause).toBeInstanceOf(RangeError);
    expect(back.cause.message).toBe("inner");
    expect(Object.keys(back)).toEqual([]);

    const custom = new Error("x");
    custom.name = "ValidationError";
    const customBack = roundTrip(custom) as Error;
    expect([customBack.name, customBack.message, customBack instanceof Error]).toEqual(["ValidationError", "x", true]);

    const noStack = new Error("bare");
    delete noStack.stack;
    expect("stack" in (roundTrip(noStack) as Error)).toBe(false);
  });

  it("ArrayBuffers of every length mod 3", () => {
    for (let n = 0; n < 7; n++) {
      const bytes = Uint8Array.from({ length: n }, (_, i) => (i * 97 + 255) & 255);
      const back = roundTrip(bytes.buffer) as ArrayBuffer;
      expect(back).toBeInstanceOf(ArrayBuffer);
      expect([...new Uint8Array(back)]).toEqual([...bytes]);
    }
    expect(toWire(new Uint8Array([0, 1, 2, 253, 254, 255]).buffer)).toEqual({ $t: "arraybuffer", v: "AAEC/f7/" });
  });

  it("every typed array kind, with offsets", () => {
    const buffer = new ArrayBuffer(64);
    new Uint8Array(buffer).forEach((_, i, a) => {
      a[i] = (i * 37) & 255;
    });
    const kinds = [
      new Int8Array(buffer, 1, 3),
      new Uint8Array(buffer, 2, 5),
      new Uint8ClampedArray(buffer, 0, 4),
      new Int16Array(buffer, 2, 3),
      new Uint16Array(buffer, 4, 2),
      new Int32Array(buffer, 8, 2),
      new Uint32Array(buffer, 4, 3),
      new Float32Array(buffer, 8, 2),
      new Float64Array(buffer, 16, 2),
      new BigInt64Array(buffer, 8, 3),
      new BigUint64Array(buffer, 0, 2),
    ];
    for (const view of kinds) {
      const back = roundTrip(view) as typeof view;
      expect(back.constructor).toBe(view.constructor);
      expect([back.byteOffset, back.length]).toEqual([view.byteOffset, view.length]);
      expect([...back]).toEqual([...view]);
    }
  });

  it("DataView keeps its window", () => {
    const view = new DataView(new ArrayBuffer(8), 2, 4);
    view.setUint16(0, 0xbeef);
    const back = roundTrip(view) as DataView;
    expect(back).toBeInstanceOf(DataView);
    expect([back.byteOffset, back.byteLength, back.getUint16(0), back.buffer.byteLength]).toEqual([2, 4, 0xbeef, 8]);
  });
});

describe("wire: identity", () => {
  it("shared references stay shared", () => {
    const shared = { n: 1 };
    const list = [shared, shared];
    const back = roundTrip({ a: shared, b: list, c: list }) as { a: object; b: object[]; c: object[] };
    expect(back.a).toBe(back.b[0]);
    expect(back.b[1]).toBe(back.a);
    expect(back.b).toBe(back.c);
    expect(back.a).toEqual({ n: 1 });
  });

  it("cycles through objects, arrays, Maps, Sets and Error causes", () => {
    const root: Record<string, unknown> = { name: "root" };
    const array: unknown[] = [root];
    array.push(array);
    const map = new Map<unknown, unknown>();
    map.set(map, root);
    const set = new Set<unknown>();
    set.add(set);
    const error = new Error("loop");
    Object.defineProperty(error, "cause", { value: error, configurable: true, writable: true });
    Object.assign(root, { self: root, array, map, set, error });
    const back = roundTrip(root) as {
      self: unknown;
      array: unknown[];
      map: Map<unknown, unknown>;
      set: Set<unknown>;
      error: Error;
    };
    expect(back.self).toBe(back);
    expect(back.array[0]).toBe(back);
    expect(back.array[1]).toBe(back.array);
    expect(back.map.get(back.map)).toBe(back);
    expect(back.set.has(back.set)).toBe(true);
    expect(back.error.cause).toBe(back.error);
  });

  it("views over one buffer share it after decoding", () => {
    const buffer = new ArrayBuffer(8);
    const bytes = new Uint8Array(buffer);
    const words = new Uint32Array(buffer, 4, 1);
    const back = roundTrip({ bytes, words, buffer }) as { bytes: Uint8Array; words: Uint32Array; buffer: ArrayBuffer };
    expect(back.bytes.buffer).toBe(back.words.buffer);
    expect(back.buffer).toBe(back.bytes.buffer);
    back.words[0] = 0xffffffff;
    expect([...back.bytes.slice(4)]).toEqual([255, 255, 255, 255]);
  });

  it("ids appear only on objects seen twice", () => {
    const shared = [1];
    expect(toWire({ a: shared, b: shared })).toEqual({
      a: { $t: "array", id: 0, length: 1, v: { "0": 1 } },
      b: { $t: "ref", id: 0 },
    });
  });
});

describe("wire: malformed input", () => {
  it.each([
    [{ $t: "nope" }, 'tag "nope"'],
    [{ $t: "ref", id: 0 }, "ref 0 before its object"],
    [{ $t: "number", v: "12" }, "number"],
    [{ $t: "bigint", v: 1 }, "bigint"],
    [{ $t: "arraybuffer", v: "abc" }, "base64"],
    [
      { $t: "typedarray", kind: "Array", buffer: { $t: "arraybuffer", v: "" }, byteOffset: 0, length: 0 },
      "typed array kind Array",
    ],
    [{ $t: "typedarray", kind: "Uint8Array", buffer: 1, byteOffset: 0, length: 0 }, "typed array buffer"],
    [{ $t: "map", v: [[1]] }, "map entry"],
    [{ $t: "array", length: -1, v: {} }, "array length"],
    [{ $t: "boxed", v: { $t: "undefined" } }, "boxed"],
  ] as [JsonValue, string][])("%j is refused", (json, what) => {
    expect(() => fromWire(json)).toThrow(new TypeError(`fromWire: malformed value (${what})`));
  });
});

describe("wire: whole results", () => {
  it("a CodeExecutionResult from the sandbox round-trips through JSON text", async () => {
    const result = await runCode(
      `
      const shared = { s: 1 };
      const m = new Map<unknown, unknown>([["k", new Set([1n])], [shared, shared]]);
      report(new Date(0));
      report({ $t: "user" });
      console.warn("w", -0);
      export default { m, u: undefined, n: NaN, t: new Float64Array([1.5, -0]), e: new RangeError("r"), re: /x/g };
      `,
    );
    const back = roundTrip(result) as typeof result;
    expect(back.status).toBe("success");
    expect(back.reports).toEqual([new Date(0), { $t: "user" }]);
    expect(back.logs[0]?.level).toBe("warn");
    expect(Object.is(back.logs[0]?.args[1], -0)).toBe(true);
    expect(back.durationMs).toBe(result.durationMs);
    expect(back.memoryUsedBytes).toBe(result.memoryUsedBytes);
    const value = back.result as { m: Map<unknown, unknown>; u: undefined; n: number; t: Float64Array; e: Error };
    expect("u" in value).toBe(true);
    expect(Number.isNaN(value.n)).toBe(true);
    expect(value.t).toBeInstanceOf(Float64Array);
    expect(Object.is(value.t[1], -0)).toBe(true);
    expect(value.e).toBeInstanceOf(RangeError);
    const [first, second] = [...value.m];
    expect(first).toEqual(["k", new Set([1n])]);
    expect(second?.[0]).toBe(second?.[1]);
    expect(back).toEqual(result);
  });

  it("an error result keeps its position fields", async () => {
    const result = await runCode("const x = 1;\nnull.f;", { language: "javascript" });
    const back = roundTrip(result) as typeof result;
    expect(back.status).toBe("error");
    expect(back.error).toEqual(result.error);
    expect("result" in back).toBe(false);
  });
});

describe("wire: property", () => {
  const leaf = fc.oneof(
    fc.string(),
    fc.double(),
    fc.bigInt(),
    fc.boolean(),
    fc.constant(null),
    fc.constant(undefined),
    fc.date({ noInvalidDate: false }),
  );
  const tree = fc.letrec((tie) => ({
    value: fc.oneof({ depthSize: "small" }, leaf, tie("array"), tie("object"), tie("map"), tie("set")),
    array: fc.array(tie("value"), { maxLength: 4 }),
    object: fc.dictionary(fc.oneof(fc.string(), fc.constantFrom("$t", "$$t", "$", "id", "v")), tie("value"), {
      maxKeys: 4,
    }),
    map: fc.array(fc.tuple(tie("value"), tie("value")), { maxLength: 3 }).map((pairs) => new Map(pairs)),
    set: fc.array(tie("value"), { maxLength: 3 }).map((items) => new Set(items)),
  }));

  it("fromWire(JSON(toWire(x))) equals x for generated values", () => {
    fc.assert(
      fc.property(tree.value, (value) => {
        expect(roundTrip(value)).toEqual(value);
      }),
      { numRuns: 300 },
    );
  });
});
