/**
 * Plain data read from the engine's objects in linear memory (src/core/plain-data.ts): exactly the values
 * `JSON.stringify` writes as structured clone copies them are read as plain, at their exact depth, on the engine as
 * shipped and metered; a value crosses the same whichever way it takes, and the guest cannot make the host's reading
 * change what crosses.
 */
import type { QuickJSContext } from "quickjs-emscripten-core";
import { beforeAll, describe, expect, it } from "vitest";
import { newInstance } from "../../src/core/engine.js";
import { HOST_CALL_FUEL, LOG_ENTRY_FUEL, tapeFuel } from "../../src/core/host-fuel.js";
import { MAX_PLAIN_LEVELS, PlainData, plainFactsOf } from "../../src/core/plain-data.js";
import { createSandbox } from "../../src/index.js";
import { wasm } from "../environment/helpers.js";

/** An object given a private field by a class constructor that returns it. */
const privateField = (value: string) =>
  `(() => { class B { constructor(o) { return o; } } class C extends B { #x = ${value}; constructor(o) { super(o); } } const o = { a: 1 }; new C(o); return o; })()`;

/** Source of a value -> the levels it is read at (0: not plain). */
const READINGS: [string, number][] = [
  ["Object.freeze({ a: 1, b: [true] })", 2],
  ["({ [Symbol('s')]: 1, a: 2 })", 1],
  ["({ a: '\\uD800', b: 'a\\u0000b' })", 1],
  ["({ a: 'x'.repeat(1000) + 'y'.repeat(1000) })", 1],
  ["({ 1: 'a', 0: 'b', z: 2 ** 53, w: -1e-300 })", 1],
  ["Array.from({ length: 100_000 }, (_, i) => i / 3)", 1],
  [
    "(() => { const o = {}; for (let i = 0; i < 100; i++) o['k' + i] = i; for (let i = 0; i < 90; i++) delete o['k' + i]; return o; })()",
    1,
  ],
  ["(() => { const a = [1, 2, 3]; a.length = 1; return a; })()", 1],
  ["[1, 2].concat([3, [4]])", 2],
  ["['s', 's', 's']", 1],
  ["Object.defineProperty({ a: 1 }, 'hidden', { get() { throw new Error('read'); }, enumerable: false })", 1],
  // The engine keeps a private field as a property: it is read like one, so only a cautious answer differs.
  [privateField("1"), 1],
  [privateField("undefined"), 0],
  ["Object.setPrototypeOf({}, {})", 0],
  ["Object.setPrototypeOf({}, Array.prototype)", 0],
  ["Object.setPrototypeOf([], null)", 0],
  ["new (class extends Array {})()", 0],
  ["({ set a(v) {} })", 0],
  ["(() => { const o = {}; return [o, [o]]; })()", 0],
  ["({ a: { b: [1, -0] } })", 0],
  ["[{ a: [{ b: NaN }] }]", 0],
  ["[globalThis]", 0],
  ["[function () {}.bind(null)]", 0],
  ["[Promise.resolve(1)]", 0],
  ["[new WeakMap()]", 0],
  ["(() => { const a = [1, 2, 3]; delete a[1]; return a; })()", 0],
  ["[new ArrayBuffer(1)]", 0],
];

/** `n` arrays, each inside the next. */
const nested = (n: number) => `${"[".repeat(n)}${"]".repeat(n)}`;

describe("the reading of plain data", () => {
  for (const [engine, module] of [
    ["the engine as shipped", async () => undefined],
    ["the metered engine", wasm],
  ] as const) {
    describe(engine, () => {
      let ctx: QuickJSContext;
      let reader: PlainData;
      beforeAll(async () => {
        const { quickjs, memory } = await newInstance(await module(), 64 * 1024 * 1024);
        const facts = plainFactsOf(quickjs, memory);
        if (facts === undefined) throw new Error("the engine was not read as expected");
        ctx = quickjs.newRuntime().newContext();
        reader = PlainData.forRealm(facts, ctx, memory);
      });
      const levelsOf = (source: string) => {
        const handle = ctx.unwrapResult(ctx.evalCode(source));
        try {
          return reader.read(handle).levels;
        } finally {
          handle.dispose();
        }
      };

      for (const [source, levels] of READINGS) {
        it(`reads ${source.length > 70 ? `${source.slice(0, 70)}...` : source} at ${levels} levels`, () => {
          expect(levelsOf(source)).toBe(levels);
        });
      }

      it(`reads up to ${MAX_PLAIN_LEVELS} levels, and leaves deeper values to the guest`, () => {
        expect(levelsOf(nested(MAX_PLAIN_LEVELS))).toBe(MAX_PLAIN_LEVELS);
        expect(levelsOf(nested(MAX_PLAIN_LEVELS + 1))).toBe(0);
      });

      it("counts every value it read, stops past the visits it may make, and reads a primitive as not plain", () => {
        const handle = ctx.unwrapResult(ctx.evalCode("[1, 'a', { b: null, c: [true] }]"));
        expect(reader.read(handle)).toEqual({ levels: 3, visits: 6 });
        handle.dispose();
        const ten = ctx.unwrapResult(ctx.evalCode("[1, 2, 3, 4, 5, 6, 7, 8, 9, 10]"));
        expect(reader.read(ten, 10)).toEqual({ levels: 1, visits: 10 });
        expect(reader.read(ten, 5)).toEqual({ levels: 0, visits: 6 });
        ten.dispose();
        const number = ctx.newNumber(1);
        expect(reader.read(number)).toEqual({ levels: 0, visits: 1 });
        number.dispose();
      });
    });
  }
});

describe("a value read as plain crosses as the guest's encoder sends it", () => {
  const js = { language: "javascript" } as const;
  let runCode: ReturnType<typeof createSandbox>["runCode"];
  beforeAll(async () => {
    runCode = createSandbox({ wasm: await wasm() }).runCode;
  });
  const result = async (source: string) => {
    const r = await runCode(source, js);
    if (r.status !== "success") throw new Error(`${r.status}: ${r.error?.name}: ${r.error?.message}`);
    return r.result;
  };

  it("ignores a toJSON and index properties the guest put on the standard prototypes", async () => {
    const value = "{ a: { b: [1, { c: 'd' }] } }";
    expect(await result(`Object.prototype.toJSON = () => 'forged'; export default ${value}`)).toEqual({
      a: { b: [1, { c: "d" }] },
    });
    expect(await result(`Array.prototype.toJSON = () => 'forged'; export default ${value}`)).toEqual({
      a: { b: [1, { c: "d" }] },
    });
    const setter = "Object.defineProperty(Object.prototype, 2, { set() { throw new Error('ran'); } });";
    expect(await result(`${setter} export default ${value}`)).toEqual({ a: { b: [1, { c: "d" }] } });
  });

  it("keeps __proto__ an own key, and a string's lone surrogates", async () => {
    const r = (await result('export default JSON.parse(\'{"__proto__": {"x": "\\\\uD800"}}\')')) as object;
    expect(Object.getPrototypeOf(r)).toBe(Object.prototype);
    expect(Object.getOwnPropertyDescriptor(r, "__proto__")?.value).toEqual({ x: "\uD800" });
  });

  it("costs the run about what the engine's JSON.stringify costs and the host's reading of it, out as a result, a report or a log", async () => {
    const data = Array.from({ length: 2000 }, (_, i) => ({ id: i, name: `n${i}`, tags: ["a", "b"], ok: i % 2 === 0 }));
    const fuel = async (source: string) => {
      const r = await runCode(source, { ...js, globals: { data } });
      if (r.status !== "success") throw new Error(`${r.status}: ${r.error?.message}`);
      return r.fuelUsed as number;
    };
    // Every run parses the data in; what each spends past that is what its way out costs.
    const parsed = await fuel("export default data.length");
    const stringified = (await fuel("export default JSON.stringify(data).length")) - parsed;
    for (const out of [
      "export default data",
      "report(data); export default 0",
      "console.log(data); export default 0",
    ]) {
      // The guest's own walk cost 5.3x JSON.stringify's fuel. The host's reading of the tape is charged too
      // (host-fuel.ts), as are a log entry's and the report's call.
      const host = tapeFuel(JSON.stringify(data)) + LOG_ENTRY_FUEL + HOST_CALL_FUEL;
      expect((await fuel(out)) - parsed).toBeLessThan(1.5 * stringified + host);
    }
  });
});
