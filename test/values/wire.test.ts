import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { runCode } from "../../node/index.js";
import type { JsonValue } from "../../src/values/json.js";
import { fromWire, toWire } from "../../src/values/wire.js";
import { cloneDifferences } from "../conformance/structured-clone.js";

/** Encodes, goes through real JSON text, decodes. */
const roundTrip = (value: unknown): unknown => fromWire(JSON.parse(JSON.stringify(toWire(value))) as JsonValue);

/** ES2024 buffer members (the project's `lib` is ES2023). */
type Buffer2024 = ArrayBuffer & {
  readonly resizable: boolean;
  readonly maxByteLength: number;
  resize(n: number): void;
};
/** A resizable buffer of `length` bytes counting up from 1, up to `maxByteLength`. */
function resizable(length: number, maxByteLength: number): Buffer2024 {
  const Resizable = ArrayBuffer as unknown as new (n: number, options: { maxByteLength: number }) => Buffer2024;
  const buffer = new Resizable(length, { maxByteLength });
  new Uint8Array(buffer).forEach((_, i, bytes) => {
    bytes[i] = i + 1;
  });
  return buffer;
}

/** A user-like stack: an error made here has host frames, which no value from the sandbox ever carries. */
function userStack<E extends Error>(error: E): E {
  error.stack = `${error.name}: at main (main.js:1:1)`;
  return error;
}

/**
 * `fromWire(toWire(value))` through JSON text is the clone `structuredClone` makes (or `expected`): prototypes,
 * own keys and property descriptors, resizability and maxByteLength, and whether a view's length tracks its buffer
 * after a resize (see `cloneDifferences`).
 */
function expectStructuredClone(value: unknown, expected: unknown = structuredClone(value)): void {
  expect(cloneDifferences(roundTrip(value), expected)).toEqual([]);
}

const ERROR_NAMES = ["Error", "EvalError", "RangeError", "ReferenceError", "SyntaxError", "TypeError", "URIError"];
const errorType = (name: string) =>
  (globalThis as unknown as Record<string, ErrorConstructor>)[name] as ErrorConstructor;

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

  it("a Float16Array on the wire: its kind and bits, decoded where the platform has one (not Node 20)", () => {
    const json = {
      $t: "typedarray",
      kind: "Float16Array",
      buffer: { $t: "arraybuffer", v: "AD4AgA==" },
      byteOffset: 0,
      length: 2,
    } as JsonValue;
    const Float16 = (globalThis as { Float16Array?: new (values: number[]) => ArrayLike<number> }).Float16Array;
    if (Float16 === undefined) {
      const message = "fromWire: A Float16Array cannot be made on this host: its JavaScript has no Float16Array";
      expect(() => fromWire(json)).toThrow(new TypeError(message));
      return;
    }
    const back = fromWire(json) as ArrayLike<number>;
    expect([Object.getPrototypeOf(back), Array.from(back)]).toEqual([Float16.prototype, [1.5, -0]]);
    expect(toWire(new Float16([1.5, -0]))).toEqual(json);
  });

  it("DataView keeps its window", () => {
    const view = new DataView(new ArrayBuffer(8), 2, 4);
    view.setUint16(0, 0xbeef);
    const back = roundTrip(view) as DataView;
    expect(back).toBeInstanceOf(DataView);
    expect([back.byteOffset, back.byteLength, back.getUint16(0), back.buffer.byteLength]).toEqual([2, 4, 0xbeef, 8]);
  });
});

describe("wire: the facts structured clone keeps", () => {
  it('an Error with no own message decodes to one with none (it came back with message "")', () => {
    const bare = [
      ...ERROR_NAMES.map((name) => userStack(new (errorType(name))())),
      // Structured clone reads only an own data property: a getter is no message.
      userStack(Object.defineProperty(new Error(), "message", { get: () => "got", configurable: true })),
    ];
    for (const error of bare) {
      expect(Object.keys(toWire(error) as object)).not.toContain("message");
      expectStructuredClone(error);
      expect(Object.hasOwn(roundTrip(error) as Error, "message")).toBe(false);
    }
    // An empty or non-string own message stays an own (string) message.
    for (const error of [
      userStack(new Error("")),
      userStack(Object.defineProperty(new Error(), "message", { value: 5 })),
    ])
      expectStructuredClone(error);
  });

  it("a non-standard name is an own non-enumerable name (it came back enumerable)", () => {
    for (const error of [
      userStack(Object.assign(new Error("m"), { name: "ValidationError" })),
      userStack(Object.assign(new RangeError(), { name: "SerializationError" })),
    ]) {
      const expected = structuredClone(error);
      Object.defineProperty(expected, "name", { value: error.name, writable: true, configurable: true });
      expectStructuredClone(error, expected);
      expect(Object.keys(roundTrip(error) as Error)).toEqual([]);
    }
    // A standard name picks the class, as in structured clone.
    expectStructuredClone(userStack(Object.assign(new Error("m"), { name: "URIError" })));
  });

  it("cause is kept when it is an own data property, whatever its value, and only then (a getter was read)", () => {
    const causes = [undefined, null, 0, "s", 1n, [1], new Map([[1, 2]]), new Date(0), userStack(new RangeError())];
    expectStructuredClone(causes.map((cause) => userStack(new TypeError("x", { cause }))));
    expectStructuredClone(
      userStack(new Error("a", { cause: userStack(new TypeError("b", { cause: userStack(new RangeError()) })) })),
    );
    const got = userStack(Object.defineProperty(new Error("x"), "cause", { get: () => 1, configurable: true }));
    expectStructuredClone(got);
    expect(Object.keys(toWire(got) as object)).not.toContain("cause");
  });

  it("a resizable ArrayBuffer keeps maxByteLength, its length and bytes (it came back fixed)", () => {
    const shrunk = resizable(8, 16);
    shrunk.resize(3);
    const grown = resizable(2, 16);
    grown.resize(9);
    for (const buffer of [resizable(4, 16), resizable(8, 8), resizable(0, 0), resizable(0, 5), shrunk, grown]) {
      expectStructuredClone(buffer);
      const back = roundTrip(buffer) as Buffer2024;
      back.resize(back.maxByteLength);
      expect(back.byteLength).toBe(buffer.maxByteLength);
    }
    expect(toWire(resizable(2, 16))).toEqual({ $t: "arraybuffer", v: "AQI=", maxByteLength: 16 });
    expect(toWire(new ArrayBuffer(2))).toEqual({ $t: "arraybuffer", v: "AAA=" });
  });

  /** Views of resizable buffers, tracking and fixed, as the core's conformance suite makes them. */
  const VIEWS: [string, () => ArrayBufferView | unknown[]][] = [
    ["a length-tracking view", () => new Uint16Array(resizable(8, 16))],
    [
      "a length-tracking view at an offset with a partial element",
      () => {
        const buffer = resizable(8, 16);
        const view = new Uint16Array(buffer, 2);
        buffer.resize(7);
        return view;
      },
    ],
    [
      "a length-tracking view with a partial element, its buffer at its maximum",
      () => {
        const buffer = resizable(8, 9);
        const view = new Uint32Array(buffer);
        buffer.resize(9);
        return view;
      },
    ],
    ["a length-tracking view of a buffer at its maximum", () => new BigInt64Array(resizable(16, 16), 8)],
    ["an empty length-tracking view at the end", () => new Float64Array(resizable(8, 16), 8)],
    ["a fixed-length view reaching the end", () => new Uint8Array(resizable(8, 16), 4, 4)],
    ["a fixed-length view of a buffer at its maximum", () => new Int32Array(resizable(8, 8), 0, 2)],
    ["a fixed-length view inside", () => new Int16Array(resizable(8, 16), 2, 1)],
    ["a length-tracking DataView", () => new DataView(resizable(8, 16), 3)],
    ["a length-tracking DataView of a buffer at its maximum", () => new DataView(resizable(8, 8), 2)],
    ["a fixed-length DataView reaching the end", () => new DataView(resizable(8, 16), 2, 6)],
    ["a fixed-length DataView of a buffer at its maximum", () => new DataView(resizable(8, 8), 2, 6)],
    [
      "tracking and fixed views of one buffer, and the buffer",
      () => {
        const buffer = resizable(8, 16);
        return [
          new Uint8Array(buffer),
          new Uint8Array(buffer, 0, 8),
          new DataView(buffer, 2),
          new DataView(buffer, 2, 6),
          new Uint16Array(buffer, 6),
          buffer,
        ];
      },
    ],
  ];

  it.each(VIEWS)("%s keeps whether its length tracks (the buffer came back fixed)", (_name, make) => {
    const value = make();
    const views = (Array.isArray(value) ? value : [value]).filter((item) => ArrayBuffer.isView(item));
    const buffer = (views[0] as ArrayBufferView).buffer as Buffer2024;
    const [length, bytes] = [buffer.byteLength, [...new Uint8Array(buffer)]];
    expectStructuredClone(value);
    // Tracking is found on a private copy: the caller's buffer is never resized, nor its bytes touched.
    expect([buffer.byteLength, [...new Uint8Array(buffer)]]).toEqual([length, bytes]);
  });

  it("a length-tracking view follows its buffer after a resize, a fixed one does not", () => {
    const buffer = resizable(8, 16);
    const back = roundTrip([new Uint16Array(buffer, 2), new DataView(buffer, 1), new Uint8Array(buffer, 0, 4)]) as [
      Uint16Array,
      DataView,
      Uint8Array,
    ];
    const wire = JSON.stringify(toWire([new Uint16Array(buffer, 2), new DataView(buffer, 1)]));
    expect(wire).toContain('"length":"auto"');
    expect(wire).toContain('"byteLength":"auto"');
    (back[0].buffer as Buffer2024).resize(14);
    expect([back[0].length, back[1].byteLength, back[2].length]).toEqual([6, 13, 4]);
    (back[0].buffer as Buffer2024).resize(5);
    expect([back[0].length, back[1].byteLength, back[2].length]).toEqual([1, 4, 4]);
  });

  it("old nodes still decode: an error with an empty message, fixed buffers, numeric view lengths", () => {
    const json: JsonValue = {
      error: { $t: "error", name: "ValidationError", message: "", stack: "ValidationError: at main (main.js:1:1)" },
      words: {
        $t: "typedarray",
        kind: "Uint16Array",
        buffer: { $t: "arraybuffer", id: 0, v: "AAECAw==" },
        byteOffset: 0,
        length: 2,
      },
      data: { $t: "dataview", buffer: { $t: "ref", id: 0 }, byteOffset: 1, byteLength: 2 },
    };
    const buffer = new Uint8Array([0, 1, 2, 3]).buffer;
    const error = userStack(new Error(""));
    Object.defineProperty(error, "name", { value: "ValidationError", writable: true, configurable: true });
    const expected = { error, words: new Uint16Array(buffer, 0, 2), data: new DataView(buffer, 1, 2) };
    expect(cloneDifferences(fromWire(json), expected)).toEqual([]);
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
    [{ $t: "arraybuffer", v: "AAAA", maxByteLength: 2 }, "maxByteLength"],
    [{ $t: "arraybuffer", v: "", maxByteLength: -1 }, "maxByteLength"],
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

  /** Buffers, resizable or not, with views over them, tracking or fixed, and errors with or without message and cause. */
  const binary = fc
    .record({
      bytes: fc.uint8Array({ maxLength: 12 }),
      room: fc.option(fc.nat({ max: 9 })),
      views: fc.array(
        fc.record({
          kind: fc.constantFrom("Uint8Array", "Int16Array", "Float32Array", "BigUint64Array", "DataView"),
          at: fc.nat({ max: 12 }),
          size: fc.option(fc.nat({ max: 12 })),
        }),
        { maxLength: 4 },
      ),
      shrink: fc.nat({ max: 12 }),
    })
    .map(({ bytes, room, views, shrink }) => {
      const buffer: ArrayBuffer =
        room === null ? new Uint8Array(bytes).buffer : resizable(bytes.length, bytes.length + room);
      const made: unknown[] = [buffer];
      for (const { kind, at, size } of views) {
        const Ctor = (globalThis as unknown as Record<string, new (b: ArrayBuffer, o: number, n?: number) => object>)[
          kind
        ] as new (
          b: ArrayBuffer,
          o: number,
          n?: number,
        ) => object;
        try {
          made.push(size === null ? new Ctor(buffer, at) : new Ctor(buffer, at, size));
        } catch {
          // Not a view this buffer can have (misaligned, too long).
        }
      }
      // Shrinking may leave a view out of bounds, which structured clone refuses: those are left out.
      if (room !== null) (buffer as Buffer2024).resize(Math.min(shrink, buffer.byteLength));
      return made.filter((item) => {
        try {
          structuredClone(item);
          return true;
        } catch {
          return false;
        }
      });
    });
  const error = fc
    .record({ name: fc.constantFrom(...ERROR_NAMES), message: fc.option(fc.string()), cause: fc.option(binary) })
    .map(({ name, message, cause }) => {
      const Ctor = errorType(name);
      const made = message === null ? new Ctor() : new Ctor(message);
      if (cause !== null) Object.defineProperty(made, "cause", { value: cause, writable: true, configurable: true });
      return userStack(made);
    });

  it("generated buffers, views and errors come back as structuredClone makes them", () => {
    fc.assert(
      fc.property(fc.array(fc.oneof(binary, error), { maxLength: 4 }), (value) => {
        expectStructuredClone(value);
      }),
      { numRuns: 300 },
    );
  });
});
