/**
 * The wire encoding (`src/values/wire.ts`) against values a guest or a client controls (SECURITY.md, "The HTTP API"):
 * `POST /run` encodes whatever a run left and decodes whatever a client sent, so any length and any depth must
 * work without recursion, shared references must not multiply the text, and `maxLength` must hold exactly.
 */
import fc from "fast-check";
import { describe, expect, it, vi } from "vitest";
import { runCode } from "../../node/index.js";
import type { CodeExecutionResult } from "../../src/index.js";
import type { JsonValue } from "../../src/values/json.js";
import { MAX_RESERVED_BYTES } from "../../src/values/to-host.js";
import { fromWire, toWire, toWireText, WireLengthError } from "../../src/values/wire.js";

const roundTrip = (value: unknown): unknown => fromWire(JSON.parse(toWireText(value)) as JsonValue);

type Buffer2024 = ArrayBuffer & {
  readonly resizable: boolean;
  readonly maxByteLength: number;
  resize(n: number): void;
};
const Resizable = ArrayBuffer as unknown as new (length: number, options: { maxByteLength: number }) => Buffer2024;

/** How many times `step` leads on from `value` before `isLast`; iterative, so it reads any depth. */
function depthOf(value: unknown, step: (v: unknown) => unknown, isLast: (v: unknown) => boolean): number {
  let depth = 0;
  let at = value;
  while (!isLast(at)) {
    at = step(at);
    depth++;
  }
  return depth;
}

describe("wire: any length", () => {
  it("a 200,000-element result from the sandbox encodes and decodes exactly (a spread into push overflowed)", async () => {
    const result = await runCode("export default Array.from({ length: 200000 }, (_, i) => i * 2)");
    expect(result.status).toBe("success");
    const back = roundTrip(result) as CodeExecutionResult;
    expect(back.status).toBe("success");
    expect(back.result).toEqual(Array.from({ length: 200_000 }, (_, i) => i * 2));
  });

  it("200,000 log entries, and Sets, Maps and objects of 200,000 entries", () => {
    const logs = Array.from({ length: 200_000 }, (_, i) => ({
      level: "log" as const,
      args: [i, `line ${i}`],
      timestamp: 1_700_000_000_000 + i,
    }));
    const result: CodeExecutionResult = { status: "success", result: 1, reports: [], logs, durationMs: 3 };
    const back = roundTrip(result) as CodeExecutionResult;
    expect(back.logs.length).toBe(200_000);
    expect(back.logs[199_999]).toEqual({ level: "log", args: [199_999, "line 199999"], timestamp: 1_700_000_199_999 });
    expect(back).toEqual(result);

    const keys = Array.from({ length: 200_000 }, (_, i) => `k${i}`);
    const big = {
      set: new Set(keys),
      map: new Map(keys.map((k, i) => [k, i])),
      object: Object.fromEntries(keys.map((k, i) => [k, i])),
    };
    expect(roundTrip(big)).toEqual(big);
  });
});

describe("wire: any depth", () => {
  const DEPTH = 100_000;

  it.each([
    ["arrays", (inner: unknown) => [inner], (v: unknown) => (v as unknown[])[0]],
    ["objects with $-keys", (inner: unknown) => ({ $t: inner }), (v: unknown) => (v as { $t: unknown }).$t],
    ["Map values", (inner: unknown) => new Map([["k", inner]]), (v: unknown) => (v as Map<string, unknown>).get("k")],
    ["Map keys", (inner: unknown) => new Map([[inner, 1]]), (v: unknown) => [...(v as Map<unknown, number>).keys()][0]],
    ["Sets", (inner: unknown) => new Set([inner]), (v: unknown) => [...(v as Set<unknown>)][0]],
    [
      "sparse arrays",
      (inner: unknown) => Object.assign(new Array(3), { 1: inner }),
      (v: unknown) => (v as unknown[])[1],
    ],
  ])("%s nested 100,000 deep encode, go through JSON text and decode back", (_name, wrap, step) => {
    let value: unknown = "leaf";
    for (let i = 0; i < DEPTH; i++) value = wrap(value);
    const back = roundTrip(value);
    expect(depthOf(back, step, (v) => v === "leaf")).toBe(DEPTH);
  });

  it("error causes nested 20,000 deep (each Error costs V8 a stack trace) encode and decode back", () => {
    let value: unknown = "leaf";
    for (let i = 0; i < 20_000; i++) value = new Error("e", { cause: value });
    expect(
      depthOf(
        roundTrip(value),
        (v) => (v as Error).cause,
        (v) => v === "leaf",
      ),
    ).toBe(20_000);
  });

  it("shared objects nested 100,000 deep keep their identity (ids and refs at every level)", () => {
    // Every array is reached twice (from its parent and from `all`), so each is written with an id and then a ref.
    const all: unknown[][] = [];
    let value: unknown[] = ["leaf"];
    all.push(value);
    for (let i = 0; i < DEPTH; i++) {
      value = [value];
      all.push(value);
    }
    const back = roundTrip({ value, all }) as { value: unknown[]; all: unknown[][] };
    let at: unknown = back.value;
    let same = 0;
    for (let i = DEPTH; i >= 0; i--) {
      if (at === back.all[i]) same++;
      at = (at as unknown[])[0];
    }
    expect([same, at]).toEqual([DEPTH + 1, "leaf"]);
  });

  it.each([
    ["arrays", (n: number) => `${"[".repeat(n)}1${"]".repeat(n)}`, (v: unknown) => (v as unknown[])[0]],
    ["objects", (n: number) => `${'{"a":'.repeat(n)}1${"}".repeat(n)}`, (v: unknown) => (v as { a: unknown }).a],
    [
      "tagged Sets",
      (n: number) => `${'{"$t":"set","v":['.repeat(n)}1${"]}".repeat(n)}`,
      (v: unknown) => [...(v as Set<unknown>)][0],
    ],
    [
      "tagged Maps",
      (n: number) => `${'{"$t":"map","v":[[0,'.repeat(n)}1${"]]}".repeat(n)}`,
      (v: unknown) => (v as Map<number, unknown>).get(0),
    ],
  ])("client-sent %s nested 300,000 deep decode (fromWire recursed)", (_name, text, step) => {
    const back = fromWire(JSON.parse(text(300_000)) as JsonValue);
    expect(depthOf(back, step, (v) => v === 1)).toBe(300_000);
  });

  it("client-sent error causes nested as deep as 1 MiB allows decode", () => {
    const head = '{"$t":"error","name":"E","message":"","cause":';
    const depth = Math.floor((1024 * 1024) / (head.length + 1));
    const back = fromWire(JSON.parse(`${head.repeat(depth)}1${"}".repeat(depth)}`) as JsonValue);
    expect(
      depthOf(
        back,
        (v) => (v as Error).cause,
        (v) => v === 1,
      ),
    ).toBe(depth);
  });

  it("a client's tag nested 300,000 deep is refused as a malformed tag, not a stack overflow", () => {
    const json = JSON.parse(`{"$t":${"[".repeat(300_000)}${"]".repeat(300_000)}}`) as JsonValue;
    expect(() => fromWire(json)).toThrow(new TypeError("fromWire: malformed value (tag object)"));
  });
});

describe("wire: bounded size", () => {
  it("shared references are written once: 40 doublings stay a few kilobytes and keep their identity", () => {
    let bomb: unknown[] = [];
    for (let i = 0; i < 40; i++) bomb = [bomb, bomb];
    const text = toWireText(bomb);
    // Expanded, this is 2^40 arrays; written once each with one ref per second sighting, it is 40 of each.
    expect(text.length).toBeLessThan(40 * 80);
    const back = fromWire(JSON.parse(text) as JsonValue) as unknown[];
    let at = back;
    for (let i = 0; i < 40; i++) {
      expect(at[0]).toBe(at[1]);
      at = at[0] as unknown[];
    }
    expect(at).toEqual([]);
  });

  const leaf = fc.oneof(
    fc.string(),
    fc.double(),
    fc.bigInt(),
    fc.boolean(),
    fc.constant(null),
    fc.constant(undefined),
    fc.date({ noInvalidDate: false }),
    fc.uint8Array({ maxLength: 10 }).map((bytes) => bytes.buffer),
    fc.uint8Array({ maxLength: 10 }).map((bytes) => new DataView(bytes.buffer)),
    fc.string().map((message) => new RangeError(message)),
    fc.constant(null).map(() => new TypeError()),
    fc
      .tuple(fc.nat({ max: 10 }), fc.nat({ max: 2 ** 20 }))
      .map(([length, room]) => new Resizable(length, { maxByteLength: length + room })),
    fc
      .tuple(fc.nat({ max: 10 }), fc.nat({ max: 10 }))
      .map(([length, room]) => new Uint8Array(new Resizable(length, { maxByteLength: length + room }))),
    fc.nat({ max: 10 }).map((length) => new DataView(new Resizable(length, { maxByteLength: 10 }), 0)),
  );
  const tree = fc.letrec((tie) => ({
    value: fc.oneof({ depthSize: "small" }, leaf, tie("array"), tie("object"), tie("map"), tie("set")),
    array: fc.array(tie("value"), { maxLength: 4 }),
    object: fc.dictionary(fc.oneof(fc.string(), fc.constantFrom("$t", "$$t", "__proto__")), tie("value"), {
      maxKeys: 4,
    }),
    map: fc.array(fc.tuple(tie("value"), tie("value")), { maxLength: 3 }).map((pairs) => new Map(pairs)),
    set: fc.array(tie("value"), { maxLength: 3 }).map((items) => new Set(items)),
  }));
  /** A value, sometimes holding itself twice (a shared reference). */
  const withShared = fc.tuple(tree.value, fc.boolean()).map(([value, share]) => (share ? [value, value] : value));

  it("maxLength holds exactly: the text's own length passes, one less throws WireLengthError", () => {
    fc.assert(
      fc.property(withShared, (value) => {
        const text = toWireText(value);
        expect(text).toBe(JSON.stringify(toWire(value)));
        expect(toWireText(value, { maxLength: text.length })).toBe(text);
        expect(() => toWireText(value, { maxLength: text.length - 1 })).toThrow(WireLengthError);
      }),
      { numRuns: 300 },
    );
  });

  it("deep values are written by the loop exactly as JSON.stringify writes their encoding, within maxLength", () => {
    // 150 arrays around a value: past the depth up to which toWireText hands the encoding to JSON.stringify.
    const deep = (value: unknown) => {
      let out: unknown = value;
      for (let i = 0; i < 150; i++) out = [out];
      return out;
    };
    fc.assert(
      fc.property(withShared, (value) => {
        const text = toWireText(deep(value));
        expect(text).toBe(JSON.stringify(toWire(deep(value))));
        expect(toWireText(deep(value), { maxLength: text.length })).toBe(text);
        expect(() => toWireText(deep(value), { maxLength: text.length - 1 })).toThrow(WireLengthError);
      }),
      { numRuns: 100 },
    );
  });

  it("toWire builds the encoding as data: no JSON text is written or parsed", () => {
    const stringify = vi.spyOn(JSON, "stringify");
    const parse = vi.spyOn(JSON, "parse");
    const json = toWire({ a: [1, "é", new Map([["$k", 2n]])], d: new Date(0), u: undefined });
    const calls = [stringify.mock.calls.length, parse.mock.calls.length];
    stringify.mockRestore();
    parse.mockRestore();
    expect(calls).toEqual([0, 0]);
    expect(json).toEqual({
      a: [1, "é", { $t: "map", v: [["$k", { $t: "bigint", v: "2" }]] }],
      d: { $t: "date", v: 0 },
      u: { $t: "undefined" },
    });
  });

  it("a buffer over maxLength is refused before its base64 is made", () => {
    const buffer = new ArrayBuffer(48 * 1024 * 1024);
    let error: unknown;
    try {
      toWireText({ buffer }, { maxLength: 1024 * 1024 });
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(WireLengthError);
    expect((error as WireLengthError).message).toBe("toWire: the encoding is longer than 1048576 characters");
    expect((error as WireLengthError).maxLength).toBe(1024 * 1024);
  });

  it("20,000 length-tracking views of one 1 MiB buffer copy it once to find that they track, not once per view", () => {
    const buffer = new Resizable(1024 * 1024, { maxByteLength: 2 * 1024 * 1024 });
    const views = Array.from({ length: 20_000 }, (_, i) =>
      i % 2 === 0 ? new Uint8Array(buffer) : new DataView(buffer),
    );
    const clone = vi.spyOn(globalThis, "structuredClone");
    let text: string;
    let clones: number;
    try {
      text = toWireText(views);
      clones = clone.mock.calls.length;
    } finally {
      clone.mockRestore();
    }
    expect(clones).toBe(1);
    expect(text.split('"auto"').length - 1).toBe(20_000);
    const back = fromWire(JSON.parse(text) as JsonValue) as (Uint8Array | DataView)[];
    const shared = (back[0] as Uint8Array).buffer as Buffer2024;
    shared.resize(16);
    expect(back.every((view) => view.buffer === shared && view.byteLength === 16)).toBe(true);
  });

  it("a view out of its buffer's bounds is refused, as structured clone refuses it (it was written as a view at 0)", () => {
    const buffer = new Resizable(8, { maxByteLength: 16 });
    const words = new Uint16Array(buffer, 4);
    const data = new DataView(buffer, 4, 2);
    buffer.resize(2);
    const refused = new TypeError("toWire: a view out of its buffer's bounds is not a result value");
    expect(() => toWire(words)).toThrow(refused);
    expect(() => toWire({ data })).toThrow(refused);
  });
});

describe("wire: resizable buffers a client sends", () => {
  const reserving = (maxByteLength: number): JsonValue => ({ $t: "arraybuffer", v: "", maxByteLength });
  const refusal = new RangeError(
    `fromWire: resizable ArrayBuffers may reserve at most ${MAX_RESERVED_BYTES} bytes (their maxByteLength) in one value`,
  );

  it("reserve at most MAX_RESERVED_BYTES in one decoded value, as the core allows (each maxByteLength was reserved)", () => {
    expect(MAX_RESERVED_BYTES).toBe(2 ** 32);
    const half = MAX_RESERVED_BYTES / 2;
    const two = fromWire([reserving(half), reserving(half)]) as Buffer2024[];
    expect(two.map((buffer) => [buffer.resizable, buffer.maxByteLength])).toEqual([
      [true, half],
      [true, half],
    ]);
    expect(() => fromWire([reserving(half), reserving(half), reserving(1)])).toThrow(refusal);
    expect(() => fromWire(reserving(MAX_RESERVED_BYTES + 1))).toThrow(refusal);
    // A body's worth of 2 GiB reservations (65,508 of them exhausted a Node process) stops at the third.
    const body = JSON.stringify(Array.from({ length: 18_000 }, () => reserving(2 ** 31)));
    expect(body.length).toBeLessThan(1024 * 1024);
    expect(() => fromWire(JSON.parse(body) as JsonValue)).toThrow(refusal);
    // One buffer seen twice is reserved once.
    const shared = { $t: "arraybuffer", id: 0, v: "", maxByteLength: MAX_RESERVED_BYTES };
    const [first, again] = fromWire([shared, { $t: "ref", id: 0 }, { $t: "ref", id: 0 }]) as Buffer2024[];
    expect(first).toBe(again);
  });

  it("decode each call on its own budget", () => {
    for (let i = 0; i < 3; i++) expect((fromWire(reserving(2 ** 31)) as Buffer2024).maxByteLength).toBe(2 ** 31);
  });
});

describe("wire: base64", () => {
  it("matches the platform's base64 at every length mod 3 and for a 3 MiB + 1 buffer", () => {
    const lengths = [...Array.from({ length: 70 }, (_, i) => i), 3 * 1024 * 1024 + 1];
    for (const length of lengths) {
      const bytes = Uint8Array.from({ length }, (_, i) => (i * 131 + (i >> 8) * 7 + 255) & 255);
      const wire = toWire(bytes.buffer) as { v: string };
      expect(wire.v).toBe(Buffer.from(bytes).toString("base64"));
      const back = roundTrip(bytes.buffer) as ArrayBuffer;
      expect(Buffer.from(back).equals(Buffer.from(bytes))).toBe(true);
    }
  });
});

describe("wire: the format is unchanged", () => {
  it("writes this exact text for a value using every node type (key order included)", () => {
    const shared = { n: 1 };
    const buffer = new Uint8Array([0, 1, 2, 253, 254, 255, 7]).buffer;
    const cause = new RangeError("inner");
    cause.stack = "RangeError: inner";
    const error = new TypeError("outer", { cause });
    error.stack = "TypeError: outer\n    at x";
    // biome-ignore lint/suspicious/noSparseArray: the hole is the point
    const sparse: unknown[] = Object.assign([1, , 3], { $t: "x" });
    const cycle: unknown[] = [shared];
    cycle.push(cycle);
    const value = {
      $t: "user",
      plain: [1, "two", null, true, { deep: [] }],
      u: undefined,
      nums: [Number.NaN, -0, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, 0.1, -5e-324],
      big: -(2n ** 70n),
      date: new Date(1700000000123),
      bad: new Date(Number.NaN),
      re: /a\/b+$/gu,
      err: error,
      map: new Map<unknown, unknown>([
        [shared, new Set([shared, "s"])],
        ["k", undefined],
      ]),
      set: new Set(),
      sparse,
      cyc: cycle,
      view: new DataView(buffer, 1, 4),
      u16: new Uint16Array(buffer, 2, 2),
      buffer,
      boxed: [Object(1), Object("s"), Object(false), Object(5n), Object(-0)],
      str: '\u0000"\\\n😀\ud800',
    };
    const expected = String.raw`{"$$t":"user","plain":[1,"two",null,true,{"deep":[]}],"u":{"$t":"undefined"},"nums":[{"$t":"number","v":"NaN"},{"$t":"number","v":"-0"},{"$t":"number","v":"Infinity"},{"$t":"number","v":"-Infinity"},0.1,-5e-324],"big":{"$t":"bigint","v":"-1180591620717411303424"},"date":{"$t":"date","v":1700000000123},"bad":{"$t":"date","v":{"$t":"number","v":"NaN"}},"re":{"$t":"regexp","source":"a\\/b+$","flags":"gu"},"err":{"$t":"error","name":"TypeError","message":"outer","stack":"TypeError: outer\n    at x","cause":{"$t":"error","name":"RangeError","message":"inner","stack":"RangeError: inner"}},"map":{"$t":"map","v":[[{"$t":"object","id":0,"v":{"n":1}},{"$t":"set","v":[{"$t":"ref","id":0},"s"]}],["k",{"$t":"undefined"}]]},"set":{"$t":"set","v":[]},"sparse":{"$t":"array","length":3,"v":{"0":1,"2":3,"$$t":"x"}},"cyc":{"$t":"array","id":1,"length":2,"v":{"0":{"$t":"ref","id":0},"1":{"$t":"ref","id":1}}},"view":{"$t":"dataview","buffer":{"$t":"arraybuffer","id":2,"v":"AAEC/f7/Bw=="},"byteOffset":1,"byteLength":4},"u16":{"$t":"typedarray","kind":"Uint16Array","buffer":{"$t":"ref","id":2},"byteOffset":2,"length":2},"buffer":{"$t":"ref","id":2},"boxed":[{"$t":"boxed","v":1},{"$t":"boxed","v":"s"},{"$t":"boxed","v":false},{"$t":"boxed","v":{"$t":"bigint","v":"5"}},{"$t":"boxed","v":{"$t":"number","v":"-0"}}],"str":"\u0000\"\\\n😀\ud800"}`;
    expect(JSON.stringify(toWire(value))).toBe(expected);
    expect(toWireText(value)).toBe(expected);
  });

  it("writes this exact text for what structured clone adds: no message, maxByteLength, tracking lengths", () => {
    const bare = new RangeError();
    bare.stack = "RangeError";
    const buffer = new Resizable(4, { maxByteLength: 8 });
    new Uint8Array(buffer).set([1, 2, 3, 4]);
    const value = {
      bare,
      buffer,
      fixed: new Uint8Array(buffer, 0, 2),
      tracking: new Uint16Array(buffer, 2),
      data: new DataView(buffer, 1),
    };
    const expected = `{"bare":{"$t":"error","name":"RangeError","stack":"RangeError"},"buffer":{"$t":"arraybuffer","id":0,"v":"AQIDBA==","maxByteLength":8},"fixed":{"$t":"typedarray","kind":"Uint8Array","buffer":{"$t":"ref","id":0},"byteOffset":0,"length":2},"tracking":{"$t":"typedarray","kind":"Uint16Array","buffer":{"$t":"ref","id":0},"byteOffset":2,"length":"auto"},"data":{"$t":"dataview","buffer":{"$t":"ref","id":0},"byteOffset":1,"byteLength":"auto"}}`;
    expect(toWireText(value)).toBe(expected);
    expect(JSON.stringify(toWire(value))).toBe(expected);
  });
});
