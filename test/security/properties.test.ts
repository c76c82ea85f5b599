/**
 * Property tests: structured-cloneable values round-trip host -> sandbox -> host exactly as `structuredClone` copies
 * them, and random programs built from hostile fragments always settle with one of the five statuses without
 * harming the host.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { STATUSES } from "../conformance/helpers.js";
import { expectHealthy, runCode, sandbox, snapshotHost } from "./helpers.js";

/** Deep equality that tells -0 from 0, holes from `undefined`, and checks prototypes, Maps, Sets and views. */
function same(a: unknown, b: unknown, seen = new Map<object, object>()): boolean {
  if (typeof a !== "object" || a === null || typeof b !== "object" || b === null) return Object.is(a, b);
  if (seen.get(a) === b) return true;
  seen.set(a, b);
  if (Object.getPrototypeOf(a) !== Object.getPrototypeOf(b)) return false;
  if (a instanceof Date) return Object.is(a.getTime(), (b as Date).getTime());
  if (ArrayBuffer.isView(a) || a instanceof ArrayBuffer) {
    const bytes = (v: object) =>
      ArrayBuffer.isView(v) ? new Uint8Array(v.buffer, v.byteOffset, v.byteLength) : new Uint8Array(v as ArrayBuffer);
    const [x, y] = [bytes(a), bytes(b)];
    return x.length === y.length && x.every((byte, i) => byte === y[i]);
  }
  if (a instanceof Map) {
    const [x, y] = [[...a], [...(b as Map<unknown, unknown>)]];
    return x.length === y.length && x.every(([k, v], i) => same(k, y[i]?.[0], seen) && same(v, y[i]?.[1], seen));
  }
  if (a instanceof Set) {
    const [x, y] = [[...a], [...(b as Set<unknown>)]];
    return x.length === y.length && x.every((v, i) => same(v, y[i], seen));
  }
  const [ka, kb] = [Reflect.ownKeys(a), Reflect.ownKeys(b)];
  if (ka.length !== kb.length || ka.some((k, i) => k !== kb[i])) return false;
  return ka.every((k) => {
    const [da, db] = [Object.getOwnPropertyDescriptor(a, k), Object.getOwnPropertyDescriptor(b, k)];
    return da?.enumerable === db?.enumerable && same(da?.value, db?.value, seen);
  });
}

/** A plain object from entries, defined (not assigned) so `__proto__` stays an own key. */
const objectOf = (entries: [string, unknown][]) => {
  const out: Record<string, unknown> = {};
  for (const [k, v] of entries)
    Object.defineProperty(out, k, { value: v, writable: true, enumerable: true, configurable: true });
  return out;
};

const text = fc.oneof(
  fc.string({ unit: "grapheme", maxLength: 8 }),
  fc.string({ unit: "binary", maxLength: 8 }),
  fc.constantFrom("", "\0", "a\0b", "\uD800", "x\uDC00y", "\uDBFF\uDFFF", "__proto__", "constructor", "</script>"),
);
const key = fc.oneof(text, fc.constantFrom("__proto__", "constructor", "prototype", "0", "length", "toJSON", "then"));
const primitive = fc.oneof(
  fc.constantFrom(
    undefined,
    null,
    true,
    false,
    -0,
    0,
    Number.NaN,
    Infinity,
    -Infinity,
    Number.MAX_VALUE,
    Number.MIN_VALUE,
  ),
  fc.double(),
  fc.integer(),
  fc.bigInt({ min: -(2n ** 130n), max: 2n ** 130n }),
  text,
);
const typed = fc.oneof(
  fc.uint8Array({ maxLength: 16 }),
  fc.int32Array({ maxLength: 8 }),
  fc.float64Array({ maxLength: 8 }),
  fc.bigInt64Array({ maxLength: 4 }),
  fc.uint8Array({ maxLength: 16 }).map((a) => new DataView(a.buffer)),
  fc.uint8Array({ maxLength: 16 }).map((a) => a.buffer),
  fc.uint8Array({ minLength: 4, maxLength: 16 }).map((a) => new Uint16Array(a.buffer, 2, 1)),
);

const { value } = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    primitive,
    typed,
    tie("array"),
    tie("object"),
    tie("map"),
    tie("set"),
    fc.date({ noInvalidDate: false }),
  ),
  array: fc.oneof(
    fc.array(tie("value"), { maxLength: 5 }),
    fc.sparseArray(tie("value"), { maxLength: 8, noTrailingHole: false }),
  ),
  object: fc.array(fc.tuple(key, tie("value")), { maxLength: 5 }).map(objectOf),
  map: fc.array(fc.tuple(tie("value"), tie("value")), { maxLength: 4 }).map((e) => new Map(e)),
  set: fc.array(tie("value"), { maxLength: 4 }).map((e) => new Set(e)),
}));

describe("property: structured-cloneable values round-trip", () => {
  it("host -> sandbox -> host equals structuredClone(value)", async () => {
    await fc.assert(
      fc.asyncProperty(value, async (v) => {
        const expected = structuredClone(v);
        const result = await runCode("export default v;", { language: "javascript", globals: { v } });
        expect(result.status).toBe("success");
        expect(same(result.result, expected)).toBe(true);
        // The same value through a host function argument and its return.
        const echoed = await runCode("export default echo(v);", {
          language: "javascript",
          globals: { v, echo: (x: unknown) => x },
        });
        expect(same(echoed.result, expected)).toBe(true);
      }),
      { numRuns: 150, seed: 20240601 },
    );
  }, 60_000);

  it("the deep equality itself tells -0, holes and __proto__ keys apart", () => {
    expect(same(-0, 0)).toBe(false);
    const holey: unknown[] = [];
    holey[1] = 1;
    expect(same(holey, [undefined, 1])).toBe(false);
    expect(same(objectOf([["__proto__", 1]]), {})).toBe(false);
    expect(same(new Uint8Array([1]), new Int8Array([1]))).toBe(false);
    expect(same(new Map([[1, 2]]), new Map([[1, 2]]))).toBe(true);
  });
});

/** Hostile fragments; any sequence of them is a program the sandbox must survive. */
const FRAGMENTS = [
  "for (;;) {}",
  "while (true) keep.push(new Uint8Array(1 << 20));",
  "let s = 'x'; for (;;) s += s;",
  "const r = (n) => r(n + 1) + 1; r(0);",
  "JSON.parse('['.repeat(50000) + ']'.repeat(50000));",
  "throw null;",
  "throw { code: 1, toString() { return 'x'; } };",
  "throw new Proxy({}, { get() { throw 1; } });",
  "await new Promise(() => {});",
  "await tool();",
  "await never();",
  "report(new Proxy([1], { get: (t, k) => (k === 'length' ? 'x' : t[k]) }));",
  "report({ get x() { throw new Error('getter'); } });",
  "for (let i = 0; i < 1000; i++) report('r' + i);",
  "console.log(Symbol('s'), () => 1, new WeakMap(), Promise.resolve());",
  "await import('runcode:internals');",
  "await import('data:text/javascript,export default 1');",
  "new Function('return this')();",
  "eval('1');",
  "Object.getPrototypeOf(async () => {}).constructor('x');",
  "Object.prototype.polluted = 1; Array.prototype[0] = 1;",
  "Promise.prototype.then = () => { throw 1; };",
  "JSON.stringify = () => '}';",
  "[3, 2, 1].sort(() => { throw new Error('cmp'); });",
  "/^(a+)+$/.test('a'.repeat(32) + 'b');",
  "keep.push(tool(keep));",
  "fn(() => 1);",
  "fn(Symbol());",
  "fn(new Array(2 ** 32 - 1));",
  "}{",
  "import x from 'missing';",
  "export const y = await fn(1);",
  "queueMicrotask(() => { for (;;) {} });",
  "structuredClone(new Proxy({}, {}));",
  "throw new (class extends Error {})('custom');",
];

describe("property: hostile programs always settle", () => {
  const run = sandbox({ safetyCap: { cpuTimeMs: 150 } });

  it("any sequence of hostile fragments settles with one of the five statuses and harms nothing", async () => {
    const globals = {
      fn: (x: unknown) => x,
      tool: async () => 1,
      never: () => new Promise(() => {}),
    };
    const before = snapshotHost(globals);
    await fc.assert(
      fc.asyncProperty(fc.array(fc.constantFrom(...FRAGMENTS), { minLength: 1, maxLength: 4 }), async (parts) => {
        const source = `const keep = [];\n${parts.join("\n")}\nexport default keep.length;`;
        const handle = run(source, { language: "javascript", memoryLimitBytes: 8 * 1024 * 1024, globals });
        const deadline = setTimeout(() => handle.terminate("property deadline"), 2_000);
        const started = Date.now();
        const result = await handle;
        clearTimeout(deadline);
        expect(STATUSES).toContain(result.status);
        expect(handle.running).toBe(false);
        expect(Date.now() - started).toBeLessThan(10_000);
        expect("result" in result).toBe(result.status === "success");
        expect(result.error === undefined).toBe(result.status === "success");
      }),
      { numRuns: 60, seed: 7 },
    );
    expect(snapshotHost(globals)).toEqual(before);
    await expectHealthy(run);
  }, 90_000);
});
