import { describe, expect, it } from "vitest";
import { createSandbox } from "../../src/index.js";
import { encodeForGuest, FunctionTable } from "../../src/values/to-guest.js";

const tapeOf = (value: unknown) => encodeForGuest(value, new FunctionTable()).tape;

describe("encodeForGuest: plain JSON as JSON text", () => {
  it("sends plain objects and dense arrays of JSON values as one JSON node", () => {
    const value = { a: [1, "x", true, null, { b: 2.5 }], c: {} };
    expect(tapeOf(value)).toBe(`["j",${JSON.stringify(value)}]`);
    expect(tapeOf([])).toBe('["j",[]]');
  });

  it("keeps the plain parts of a value that is not JSON as JSON nodes", () => {
    const fn = () => 1;
    expect(tapeOf({ f: fn, data: { x: [1] } })).toBe('["o",0,["f",["f",0,"fn",0],"data",["j",{"x":[1]}]]]');
  });

  it("takes the tape for everything JSON cannot carry exactly", () => {
    const shared = { s: 1 };
    // biome-ignore lint/suspicious/noSparseArray: the hole is what this checks.
    const sparse = [1, , 3];
    const extra = Object.assign([1], { k: 2 });
    const getter = {
      get g() {
        return 1;
      },
    };
    const cases: unknown[] = [
      { n: -0 },
      { n: Number.NaN },
      { n: Number.POSITIVE_INFINITY },
      { u: undefined },
      { b: 1n },
      [shared, shared],
      sparse,
      extra,
      getter,
      new Date(0),
      new Map([[1, 2]]),
    ];
    for (const value of cases) expect(tapeOf({ v: value })).not.toContain('["j",');
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    expect(tapeOf(cyclic)).toBe('["o",0,["self",["r",0]]]');
  });

  it("never calls a getter or toJSON of the host's values to send them", () => {
    let reads = 0;
    const value = {
      get g() {
        reads++;
        return 1;
      },
      toJSON: () => {
        throw new Error("toJSON was called");
      },
    };
    expect(tapeOf({ data: [value] })).not.toContain('["j",');
    expect(reads).toBe(1);
  });

  it("sends nothing as JSON while a prototype has a toJSON for JSON.stringify to call", () => {
    const proto = Object.prototype as { toJSON?: unknown };
    proto.toJSON = () => "replaced";
    try {
      expect(tapeOf({ a: 1 })).toBe('["o",0,["a",1]]');
    } finally {
      delete proto.toJSON;
    }
  });
});

describe("plain JSON reaches the guest exactly", () => {
  const { runCode } = createSandbox();

  it("keeps __proto__ keys as own data, null prototypes and string escapes", async () => {
    const data = JSON.parse('{"__proto__":{"polluted":1},"s":"a\\u0000b\\ud800c","n":[1e300,-5,0.1]}');
    const nullProto = Object.assign(Object.create(null), { k: 1 });
    expect(tapeOf({ data, nullProto })).toContain('["j",');
    const result = await runCode(
      `export default {
        own: Object.hasOwn(data, "__proto__"),
        proto: Object.getPrototypeOf(data) === Object.prototype,
        polluted: ({}).polluted,
        inner: data.__proto__.polluted,
        s: data.s === "a\\u0000b\\ud800c",
        n: data.n,
        nullProto: Object.getPrototypeOf(nullProto) === Object.prototype && nullProto.k,
      };`,
      { language: "javascript", globals: { data, nullProto } },
    );
    expect(result.result).toEqual({
      own: true,
      proto: true,
      polluted: undefined,
      inner: 1,
      s: true,
      n: [1e300, -5, 0.1],
      nullProto: 1,
    });
  });

  it("keeps shared references shared and -0 negative beside plain data", async () => {
    const shared = { s: 1 };
    // biome-ignore lint/suspicious/noSparseArray: the hole is what this checks.
    const sparse = [1, , 3];
    const result = await runCode(
      "export default [data.a === data.b, Object.is(data.z, -0), data.plain.x[1], 1 in data.sparse];",
      {
        language: "javascript",
        globals: { data: { a: shared, b: shared, z: -0, plain: { x: [1, 2] }, sparse } },
      },
    );
    expect(result.result).toEqual([true, true, 2, false]);
  });

  it("keeps one object one object when a Map, a Set, an Error's cause or a getter also holds it", async () => {
    const shared = { s: [1] };
    const holders = {
      map: new Map([[shared, 1]]),
      set: new Set([shared]),
      error: new Error("e", { cause: shared }),
      get getter() {
        return shared;
      },
    };
    for (const [name, holder] of Object.entries(Object.getOwnPropertyDescriptors(holders))) {
      const held =
        name === "map"
          ? "[...data.holder.keys()][0]"
          : name === "set"
            ? "[...data.holder][0]"
            : name === "error"
              ? "data.holder.cause"
              : "data.holder";
      const result = await runCode(`export default ${held} === data.plain;`, {
        language: "javascript",
        globals: {
          data:
            name === "getter"
              ? {
                  get holder() {
                    return shared;
                  },
                  plain: shared,
                }
              : { holder: holder.value, plain: shared },
        },
      });
      expect([name, result.result]).toEqual([name, true]);
    }
  });
});

describe("host call arguments", () => {
  const { runCode } = createSandbox();

  it("arrive exact whether or not they are all plain primitives", async () => {
    const calls: unknown[][] = [];
    const record = (...args: unknown[]) => {
      calls.push(args);
      return args.length;
    };
    const result = await runCode(
      'export default [f(1, "a\\u0000", true, null, 2.5), f(-0), f(NaN, Infinity), f(undefined), f(1n), f(), f([1], { a: 1 })];',
      { language: "javascript", globals: { f: record } },
    );
    expect(result.result).toEqual([5, 1, 2, 1, 1, 0, 2]);
    expect(calls).toEqual([
      [1, "a\u0000", true, null, 2.5],
      [-0],
      [Number.NaN, Number.POSITIVE_INFINITY],
      [undefined],
      [1n],
      [],
      [[1], { a: 1 }],
    ]);
    expect(Object.is(calls[1]?.[0], -0)).toBe(true);
  });
});
