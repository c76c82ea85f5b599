/**
 * fast-check generators for the differential suite. They generate source text (receivers and arguments are built
 * inside the engines), and a property runs a batch of generated programs on both sides per run.
 *
 * Every generated call does bounded work in the raw engine: receivers are small (a length is at most 6, or the
 * value of a small `valueOf`), so a method loops a few times whatever its arguments say. Huge lengths are covered by
 * the hand-written programs, each chosen so that the specification's algorithm stops early.
 * @module
 */
import fc from "fast-check";
import { expect } from "vitest";
import { compare, explain, type Program } from "./engine.js";

/** Run counts: `DIFF_RUNS` multiplies them (default 1), `DIFF_SEED` replaces the fixed seeds. */
export const RUNS = Number(process.env.DIFF_RUNS ?? 1);
const SEED = process.env.DIFF_SEED === undefined ? undefined : Number(process.env.DIFF_SEED);

/** Elements of arrays and array-likes. */
export const element = fc.constantFrom(
  "1",
  "2",
  "0",
  "-0",
  "NaN",
  "'a'",
  "'b'",
  "''",
  "undefined",
  "null",
  "true",
  "10n",
  "[1, [2, [3]]]",
  "{ k: 1 }",
  "__.counted(3, 'E')",
);

/** Arguments that go through ToIntegerOrInfinity or ToLength (indices, counts, depths). */
export const index = fc.constantFrom(
  "0",
  "1",
  "2",
  "3",
  "7",
  "-1",
  "-2",
  "-7",
  "1.5",
  "-1.5",
  "-0",
  "NaN",
  "Infinity",
  "-Infinity",
  "'1'",
  "' 2 '",
  "'Infinity'",
  "'-Infinity'",
  "'abc'",
  "2 ** 53 - 1",
  "-(2 ** 53 - 1)",
  "2 ** 53",
  "2 ** 32",
  "2 ** 32 - 1",
  "2 ** 31",
  "undefined",
  "null",
  "true",
  "__.counted(1, 'I')",
  "{}",
  "[]",
  "[2]",
);

/** Lengths of array-likes: small once clamped (the raw engine really loops that many times). */
export const lengthValue = fc.constantFrom(
  "0",
  "1",
  "2",
  "3",
  "5",
  "'3'",
  "2.5",
  "-1",
  "-0",
  "NaN",
  "'abc'",
  "null",
  "true",
  "undefined",
  "[3]",
  "{}",
  "__.counted(2, 'L')",
  "-Infinity",
  "-(2 ** 53)",
);

/** Callbacks of the iterating methods: logging, predicates, a thrower, a mutator, and non-callables. */
export const callback = fc.constantFrom(
  "function (x, i, o) { __.trace('cb ' + i + ' ' + typeof this); return x; }",
  "(x, i) => { __.trace('cb ' + i); return i % 2; }",
  "(x, i) => { __.trace('cb ' + i); return true; }",
  "(x, i) => { __.trace('cb ' + i); return false; }",
  "(x, i) => { __.trace('cb ' + i); return i === 1; }",
  "(x, i) => { __.trace('cb ' + i); return [x, [i]]; }",
  "(x, i) => { __.trace('cb ' + i); if (i === 1) throw new RangeError('stop'); return x; }",
  "(x, i, o) => { __.trace('cb ' + i); if (i === 0) { o[1] = 'set'; delete o[2]; o[9] = 'late'; } return x; }",
  "(x, i, o) => { __.trace('cb ' + i); if (i === 0) o.length = 1; return x; }",
  "undefined",
  "1",
  "{}",
);

export const thisArg = fc.constantFrom("undefined", "null", "({ t: 1 })", "1");

export const reducer = fc.constantFrom(
  "(a, x, i) => { __.trace('r ' + i); return String(a) + '|' + String(x); }",
  "(a, x, i, o) => { __.trace('r ' + i); if (i === 0) o.length = 0; return a; }",
  "(a, x, i) => { __.trace('r ' + i); if (i === 1) throw new TypeError('stop'); return x; }",
  "undefined",
  "'x'",
);

export const comparator = fc.constantFrom(
  "undefined",
  "(a, b) => { __.trace('cmp'); return (a > b) - (a < b); }",
  "(a, b) => { __.trace('cmp'); return 0; }",
  "(a, b) => { __.trace('cmp'); return -1; }",
  "(a, b) => { __.trace('cmp'); throw new SyntaxError('cmp'); }",
  "null",
  "1",
  "{}",
);

export const separator = fc.constantFrom("undefined", "','", "'-'", "''", "null", "1", "__.counted('+', 'S')");

/** Items handed to `concat`: plain values, arrays, spreadable array-likes, proxies. */
export const concatItem = fc.oneof(
  element,
  fc.constantFrom(
    "[4, , 6]",
    "({ length: 2, 0: 'x', [Symbol.isConcatSpreadable]: true })",
    "__.getters({ length: 2, 1: 'y', [Symbol.isConcatSpreadable]: true }, 'S')",
    "({ length: 2, 0: 'x', [Symbol.isConcatSpreadable]: false })",
    "__.traced([7, 8], 'Q')",
    "Object.assign([9], { [Symbol.isConcatSpreadable]: false })",
    "'str'",
  ),
);

/** An array literal of up to `max` elements, holes included. */
export const arrayLiteral = (max = 5) =>
  fc.array(fc.option(element, { nil: undefined, freq: 5 }), { maxLength: max }).map((items) => {
    const body = items.map((x) => x ?? "").join(", ");
    return `[${body}${items.length > 0 && items[items.length - 1] === undefined ? "," : ""}]`;
  });

/** `{ length: L, i: x, ... }` with a few indices (some past the length). */
export const arrayLikeLiteral = fc
  .tuple(lengthValue, fc.array(fc.tuple(fc.integer({ min: 0, max: 6 }), element), { maxLength: 4 }))
  .map(([length, entries]) => {
    const fields = [...new Map(entries)].map(([k, v]) => `${k}: ${v}`);
    return `{ ${[...(length === "undefined" ? [] : [`length: ${length}`]), ...fields].join(", ")} }`;
  });

/** `constructor` values of an array receiver: every branch of ArraySpeciesCreate. */
export const speciesConstructor = fc.constantFrom(
  "undefined",
  "null",
  "1",
  "Array",
  "Object",
  "({ [Symbol.species]: null })",
  "({ [Symbol.species]: undefined })",
  "({ [Symbol.species]: 1 })",
  "({ [Symbol.species]: () => [] })",
  "({ [Symbol.species]: class Mine extends Array {} })",
  "({ [Symbol.species]: function Plain(n) { __.trace('species ' + n); } })",
  "({ [Symbol.species]: function Frozen(n) { __.trace('species ' + n); return Object.freeze([]); } })",
  "__.getters({ [Symbol.species]: Array }, 'C')",
  "__.traced(Array, 'A')",
);

/** Receivers for Array.prototype methods. */
export const arrayReceiver: fc.Arbitrary<string> = fc.oneof(
  { weight: 4, arbitrary: arrayLiteral() },
  { weight: 3, arbitrary: arrayLikeLiteral },
  { weight: 2, arbitrary: arrayLikeLiteral.map((o) => `__.getters(${o})`) },
  { weight: 2, arbitrary: arrayLiteral().map((a) => `__.traced(${a})`) },
  { weight: 1, arbitrary: arrayLikeLiteral.map((o) => `__.traced(__.getters(${o}))`) },
  {
    weight: 2,
    arbitrary: fc
      .tuple(arrayLiteral(), speciesConstructor)
      .map(([a, c]) => `Object.assign(${a}, { constructor: ${c} })`),
  },
  { weight: 1, arbitrary: arrayLiteral().map((a) => `__.traced(Object.assign(${a}, { constructor: Array }))`) },
  { weight: 1, arbitrary: arrayLiteral().map((a) => `Object.freeze(${a})`) },
  {
    weight: 1,
    arbitrary: arrayLiteral().map((a) => `Object.defineProperty(${a}, 'length', { writable: false })`),
  },
  { weight: 1, arbitrary: arrayLiteral().map((a) => `Object.setPrototypeOf(${a}, null)`) },
  {
    weight: 2,
    arbitrary: fc.constantFrom("undefined", "null", "'abc'", "''", "1", "true", "Symbol('s')", "5n", "(() => {})"),
  },
);

/** Element types of typed arrays, with values that fit them. */
const typedKinds = [
  ["Int8Array", "[1, -2, 3, 0]"],
  ["Uint8Array", "[1, 2, 3]"],
  ["Uint8ClampedArray", "[300, -1, 7]"],
  ["Int16Array", "[-1, 2]"],
  ["Uint16Array", "[]"],
  ["Int32Array", "[5, 4, 3, 2, 1]"],
  ["Uint32Array", "[1, 1]"],
  ["Float16Array", "[1.5, NaN]"],
  ["Float32Array", "[0.5, -0, NaN]"],
  ["Float64Array", "[1.5, NaN, -0, Infinity]"],
  ["BigInt64Array", "[1n, -2n, 3n]"],
  ["BigUint64Array", "[2n, 1n]"],
] as const;

/** Receivers for %TypedArray%.prototype methods: typed arrays of every kind and shape, and what is not one. */
export const typedReceiver: fc.Arbitrary<string> = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom(...typedKinds).map(([c, v]) => `new ${c}(${v})`) },
  {
    weight: 2,
    arbitrary: fc
      .tuple(fc.constantFrom(...typedKinds), speciesConstructor, fc.constantFrom("", "Uint8Array", "BigInt64Array"))
      .map(
        ([[c, v], s, species]) =>
          `Object.assign(new ${c}(${v}), { constructor: ${species ? `{ [Symbol.species]: ${species} }` : s} })`,
      ),
  },
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      "new Uint8Array(new ArrayBuffer(8), 2, 3)",
      "new Int16Array(new ArrayBuffer(8), 2)",
      "new Uint8Array(new ArrayBuffer(4, { maxByteLength: 8 }))",
      "new Uint8Array(new ArrayBuffer(4, { maxByteLength: 8 }), 1)",
      "new Float64Array(new ArrayBuffer(16, { maxByteLength: 32 }), 8)",
      "(() => { const b = new ArrayBuffer(4); const t = new Uint8Array(b); b.transfer(); return t; })()",
      "(() => { const b = new ArrayBuffer(4, { maxByteLength: 8 }); const t = new Uint8Array(b, 2, 2); b.resize(3); return t; })()",
      "Object.defineProperty(new Uint8Array([3, 1, 2]), 'length', { get() { __.trace('own length'); return 1; } })",
      "Object.freeze(new Uint8Array(0))",
    ),
  },
  {
    weight: 2,
    arbitrary: fc.constantFrom(
      "[1, 2]",
      "{ length: 2, 0: 1 }",
      "__.traced(new Uint8Array([1, 2]))",
      "new DataView(new ArrayBuffer(2))",
      "new ArrayBuffer(2)",
      "Object.create(Uint8Array.prototype)",
      "undefined",
      "null",
      "1",
      "'ab'",
    ),
  },
);

/** Values written into typed arrays, including ones that detach or shrink the receiver's buffer while coerced. */
export const typedValue = fc.constantFrom(
  "1",
  "-1",
  "256",
  "1.5",
  "NaN",
  "-0",
  "'2'",
  "'x'",
  "undefined",
  "null",
  "true",
  "3n",
  "-1n",
  "2n ** 64n",
  "__.counted(4, 'V')",
  "__.counted(5n, 'V')",
  "({ valueOf() { __.trace('V.detach'); detach(); return 1; } })",
  "({ valueOf() { __.trace('V.shrink'); shrink(); return 1; } })",
);

/** Indices for typed arrays: the shared set plus ones that detach or shrink the buffer while coerced. */
export const typedIndex = fc.oneof(
  { weight: 8, arbitrary: index },
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      "({ valueOf() { __.trace('I.detach'); detach(); return 0; } })",
      "({ valueOf() { __.trace('I.shrink'); shrink(); return 1; } })",
    ),
  },
);

/** Callbacks for typed arrays: the shared ones plus one that detaches the buffer on its first call. */
export const typedCallback = fc.oneof(
  { weight: 6, arbitrary: callback },
  { weight: 1, arbitrary: fc.constant("(x, i) => { __.trace('cb ' + i); if (i === 0) detach(); return x; }") },
);

export const typedComparator = fc.oneof(
  { weight: 6, arbitrary: comparator },
  { weight: 1, arbitrary: fc.constant("(a, b) => { __.trace('cmp'); detach(); return a < b ? -1 : 1; }") },
);

/** Sources handed to %TypedArray%.prototype.set. */
export const setSource = fc.constantFrom(
  "[1, 2]",
  "[]",
  "[1n]",
  "new Uint8Array([9, 8])",
  "new Float64Array([0.5])",
  "new BigInt64Array([4n])",
  "{ length: 1, 0: 7 }",
  "__.getters({ length: 2, 0: 1, 1: 2 }, 'S')",
  "__.traced([5], 'Q')",
  "'12'",
  "1",
  "null",
  "undefined",
);

/** An argument list: the first `count` of `args`, `count` drawn from 0 to all of them, plus extra variadic ones. */
export function argList(args: fc.Arbitrary<string>[], rest?: fc.Arbitrary<string>): fc.Arbitrary<string[]> {
  return fc
    .tuple(
      fc.integer({ min: 0, max: args.length }),
      fc.tuple(...args),
      rest === undefined ? fc.constant([] as string[]) : fc.array(rest, { maxLength: 3 }),
    )
    .map(([count, all, more]) => [...all.slice(0, count), ...(count === args.length ? more : [])]);
}

/**
 * A program calling `method` (an expression such as `Array.prototype.fill`) on a receiver with arguments; it
 * returns the result and the receiver afterwards. `drain` reads up to 4 results of a returned iterator instead.
 */
export function callProgram(
  title: string,
  method: string,
  receiver: string,
  args: string[],
  options: { drain?: boolean | undefined } = {},
): Program {
  const call = `${method}.call(o${args.map((a) => `, ${a}`).join("")})`;
  return {
    name: `${title}: ${method}.call(${receiver}${args.map((a) => `, ${a}`).join("")})`,
    body: [
      `const o = ${receiver};`,
      "const buffer = ArrayBuffer.isView(o) ? o.buffer : undefined;",
      "const detach = () => { if (buffer !== undefined && buffer.detached === false) buffer.transfer(); };",
      "const shrink = () => { if (buffer !== undefined && buffer.resizable) buffer.resize(1); };",
      options.drain ? `return __.drain(${call}, 4);` : `const r = ${call};\nreturn [r, o];`,
    ].join("\n"),
  };
}

/**
 * Runs `numRuns` batches of `batch` generated programs on both sides; each batch must end the same way (or as a
 * rule says). On a difference fast-check shrinks the batch to one minimal program and reports it.
 */
export async function checkProperty(
  programs: fc.Arbitrary<Program>,
  settings: { numRuns: number; batch: number; seed: number },
): Promise<void> {
  let shown = "";
  let cases = 0;
  let runs = 0;
  await fc
    .assert(
      fc.asyncProperty(
        fc.array(programs, { minLength: Math.ceil(settings.batch / 2), maxLength: settings.batch, size: "max" }),
        async (batch) => {
          cases += batch.length;
          runs += 1;
          const compared = await compare(batch, settings.batch);
          const differing = compared.filter((c) => c.differs);
          if (differing.length > 0) shown = differing.map(explain).join("\n");
          return differing.length === 0;
        },
      ),
      { numRuns: Math.max(1, Math.round(settings.numRuns * RUNS)), seed: SEED ?? settings.seed },
    )
    .catch((error: unknown) => {
      // The last failing run is the shrunk one: put its reproduction first.
      expect.fail(`${shown}\n\n${error instanceof Error ? error.message : String(error)}`);
    })
    .finally(() => {
      // DIFF_STATS=1 prints how many generated programs each property ran (shrinking included).
      if (process.env.DIFF_STATS) console.log(`generated: ${cases} programs in ${runs} batches`);
    });
}
