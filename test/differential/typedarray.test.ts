/**
 * %TypedArray%.prototype, %TypedArray%.from/of and the typed array constructors: the sandbox against the raw
 * engine, following the specification's algorithms: ValidateTypedArray (TypeError for anything that is not a typed
 * array, a detached or out-of-bounds one), argument coercion order (ToIntegerOrInfinity, ToNumber / ToBigInt, each
 * of which may detach or shrink the buffer), TypedArraySpeciesCreate, and each method's shape.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { describeAgainstRaw, expr, type Program, runRaw } from "./engine.js";
import {
  argList,
  callProgram,
  checkProperty,
  reducer,
  separator,
  setSource,
  thisArg,
  typedCallback,
  typedComparator,
  typedIndex,
  typedReceiver,
  typedValue,
} from "./generators.js";

interface MethodSpec {
  args: fc.Arbitrary<string>[];
  typical: string[];
  drain?: boolean;
  /** An accessor of the prototype: the program calls its getter. */
  getter?: boolean;
}

const iterating: MethodSpec = { args: [typedCallback, thisArg], typical: ["(x) => x"] };

/** Every function-valued or accessor property of %TypedArray%.prototype, keyed as written after it. */
const TYPED_METHODS: Record<string, MethodSpec> = {
  ".at": { args: [typedIndex], typical: ["-1"] },
  ".buffer": { args: [], typical: [], getter: true },
  ".byteLength": { args: [], typical: [], getter: true },
  ".byteOffset": { args: [], typical: [], getter: true },
  ".copyWithin": { args: [typedIndex, typedIndex, typedIndex], typical: ["0", "1"] },
  ".entries": { args: [], typical: [], drain: true },
  ".every": iterating,
  ".fill": { args: [typedValue, typedIndex, typedIndex], typical: ["0", "1"] },
  ".filter": iterating,
  ".find": iterating,
  ".findIndex": iterating,
  ".findLast": iterating,
  ".findLastIndex": iterating,
  ".forEach": iterating,
  ".includes": { args: [typedValue, typedIndex], typical: ["2"] },
  ".indexOf": { args: [typedValue, typedIndex], typical: ["2"] },
  ".join": { args: [separator], typical: ["'-'"] },
  ".keys": { args: [], typical: [], drain: true },
  ".lastIndexOf": { args: [typedValue, typedIndex], typical: ["2"] },
  ".length": { args: [], typical: [], getter: true },
  ".map": iterating,
  ".reduce": { args: [reducer, typedValue], typical: ["(a, x) => a + x", "''"] },
  ".reduceRight": { args: [reducer, typedValue], typical: ["(a, x) => a + x", "''"] },
  ".reverse": { args: [], typical: [] },
  ".set": { args: [setSource, typedIndex], typical: ["[7]", "1"] },
  ".slice": { args: [typedIndex, typedIndex], typical: ["1"] },
  ".some": iterating,
  ".sort": { args: [typedComparator], typical: [] },
  ".subarray": { args: [typedIndex, typedIndex], typical: ["1"] },
  ".toLocaleString": { args: [], typical: [] },
  ".toReversed": { args: [], typical: [] },
  ".toSorted": { args: [typedComparator], typical: [] },
  ".toString": { args: [], typical: [] },
  ".values": { args: [], typical: [], drain: true },
  ".with": { args: [typedIndex, typedValue], typical: ["0", "9"] },
  "[Symbol.iterator]": { args: [], typical: [], drain: true },
  "[Symbol.toStringTag]": { args: [], typical: [], getter: true },
};

const TAP = "Object.getPrototypeOf(Int8Array.prototype)";
const keyOf = (key: string) => (key.startsWith(".") ? JSON.stringify(key.slice(1)) : key.slice(1, -1));
const method = (key: string) =>
  TYPED_METHODS[key]?.getter ? `Object.getOwnPropertyDescriptor(${TAP}, ${keyOf(key)}).get` : `${TAP}${key}`;
const call = (key: string, receiver: string, args: string[] = TYPED_METHODS[key]?.typical ?? []) =>
  callProgram("call", method(key), receiver, args, { drain: TYPED_METHODS[key]?.drain });
const named = (name: string, p: Program): Program => ({ ...p, name });

function programs(): Program[] {
  const out: Program[] = [];
  const keys = Object.keys(TYPED_METHODS);

  // Shapes.
  for (const key of [...keys, ".constructor"])
    out.push(expr(`shape of %TypedArray%.prototype${key}`, `__.descShape(${TAP}, ${keyOf(key)})`));
  out.push(
    expr("%TypedArray%.prototype's own keys in order", `Reflect.ownKeys(${TAP}).map(String).join()`),
    expr("%TypedArray%'s own keys in order", "Reflect.ownKeys(Object.getPrototypeOf(Int8Array)).map(String).join()"),
    expr("shape of %TypedArray%", "__.shape(Object.getPrototypeOf(Int8Array))"),
    ...["from", "of", "Symbol.species", "prototype", "length", "name"].map((k) =>
      expr(
        `shape of %TypedArray%.${k}`,
        `__.descShape(Object.getPrototypeOf(Int8Array), ${k.startsWith("Symbol.") ? k : JSON.stringify(k)})`,
      ),
    ),
    expr("%TypedArray%.prototype[Symbol.iterator] is values", `${TAP}[Symbol.iterator] === ${TAP}.values`),
    expr("%TypedArray%.prototype.toString is Array.prototype.toString", `${TAP}.toString === Array.prototype.toString`),
  );
  for (const c of [
    "Int8Array",
    "Uint8Array",
    "Uint8ClampedArray",
    "Int16Array",
    "Uint16Array",
    "Int32Array",
    "Uint32Array",
    "Float16Array",
    "Float32Array",
    "Float64Array",
    "BigInt64Array",
    "BigUint64Array",
  ]) {
    out.push(
      expr(`shape of ${c}`, `__.shape(${c})`),
      expr(
        `${c}'s own keys and prototype`,
        `[Reflect.ownKeys(${c}).map(String).join(), Reflect.ownKeys(${c}.prototype).map(String).join(), Object.getPrototypeOf(${c}) === Object.getPrototypeOf(Int8Array), ${c}.BYTES_PER_ELEMENT]`,
      ),
    );
  }

  // ValidateTypedArray: what is not a typed array, detached and out-of-bounds ones.
  const receivers = [
    "undefined",
    "null",
    "1",
    "'ab'",
    "[1, 2]",
    "{ length: 1, 0: 1 }",
    "__.traced(new Uint8Array(2))",
    "new DataView(new ArrayBuffer(2))",
    "Object.create(Uint8Array.prototype)",
    "(() => { const b = new ArrayBuffer(4); const t = new Uint8Array(b); b.transfer(); return t; })()",
    "(() => { const b = new ArrayBuffer(4, { maxByteLength: 8 }); const t = new Uint8Array(b, 2, 2); b.resize(3); return t; })()",
    "(() => { const b = new ArrayBuffer(4, { maxByteLength: 8 }); const t = new Uint8Array(b, 2); b.resize(1); return t; })()",
  ];
  for (const key of keys) {
    for (const receiver of receivers) out.push(named(`${TAP}${key} with this = ${receiver}`, call(key, receiver)));
  }

  // Each method on typed arrays of every kind, with typical arguments; and on a length-tracking view.
  for (const key of keys) {
    for (const receiver of [
      "new Float64Array([3, NaN, -0, 1])",
      "new BigInt64Array([3n, -1n])",
      "new Uint8ClampedArray([1, 2, 3])",
      "new Uint8Array(new ArrayBuffer(4, { maxByteLength: 8 }), 1)",
      "Object.defineProperty(new Uint8Array([3, 1, 2]), 'length', { get() { __.trace('own length'); return 1; } })",
    ]) {
      out.push(named(`${TAP}${key} on ${receiver}`, call(key, receiver)));
    }
  }

  // Coercion that detaches or shrinks the buffer halfway.
  const detachAt = "({ valueOf() { __.trace('detach'); detach(); return 1; } })";
  const shrinkAt = "({ valueOf() { __.trace('shrink'); shrink(); return 1; } })";
  const halfway: [string, string[]][] = [
    [".at", [detachAt]],
    [".with", ["0", detachAt]],
    [".with", [detachAt, "1"]],
    [".fill", [detachAt]],
    [".fill", ["1", detachAt]],
    [".fill", ["1", "0", shrinkAt]],
    [".includes", ["0", detachAt]],
    [".includes", ["undefined", detachAt]],
    [".indexOf", ["0", detachAt]],
    [".lastIndexOf", ["0", detachAt]],
    [".lastIndexOf", ["0", shrinkAt]],
    [".join", [`({ toString() { __.trace('sep'); detach(); return ','; } })`]],
    [".join", [`({ toString() { __.trace('sep'); shrink(); return ','; } })`]],
    [".copyWithin", ["0", detachAt]],
    [".copyWithin", ["0", "1", shrinkAt]],
    [".slice", [detachAt]],
    [".slice", ["0", shrinkAt]],
    [".subarray", [detachAt]],
    [".set", [`[1, { valueOf() { __.trace('elem'); detach(); return 2; } }, 3]`]],
    [".set", ["[1, 2]", detachAt]],
    [".sort", ["(a, b) => { __.trace('cmp'); detach(); return a - b; }"]],
    [".sort", ["(a, b) => { __.trace('cmp'); shrink(); return a - b; }"]],
    [".toSorted", ["(a, b) => { __.trace('cmp'); detach(); return a - b; }"]],
    [".map", ["(x, i) => { __.trace('cb ' + i); if (i === 0) detach(); return x; }"]],
    [".filter", ["(x, i) => { __.trace('cb ' + i); if (i === 0) detach(); return true; }"]],
    [".forEach", ["(x, i) => { __.trace('cb ' + i + ' ' + x); if (i === 0) shrink(); }"]],
    [".reduce", ["(a, x, i) => { __.trace('r ' + i + ' ' + x); if (i === 1) detach(); return a + x; }"]],
    [".find", ["(x, i) => { __.trace('cb ' + i + ' ' + x); if (i === 0) detach(); return false; }"]],
    [".findLast", ["(x, i) => { __.trace('cb ' + i + ' ' + x); if (i === 2) shrink(); return false; }"]],
  ];
  for (const [key, args] of halfway) {
    for (const receiver of [
      "new Uint8Array([1, 2, 3, 4])",
      "new Uint8Array(new ArrayBuffer(4, { maxByteLength: 8 }))",
      "new Uint16Array(new ArrayBuffer(8, { maxByteLength: 16 }), 2)",
    ]) {
      out.push(named(`${TAP}${key}(${args.join(", ")}) on ${receiver}`, call(key, receiver, args)));
    }
  }

  // TypedArraySpeciesCreate.
  const species: [string, string][] = [
    ["constructor undefined", "undefined"],
    ["constructor a primitive", "1"],
    ["species null", "{ [Symbol.species]: null }"],
    ["species another kind", "{ [Symbol.species]: Uint16Array }"],
    ["species a different content type", "{ [Symbol.species]: BigInt64Array }"],
    ["species a non-constructor", "{ [Symbol.species]: () => new Uint8Array(9) }"],
    ["species returning a plain array", "{ [Symbol.species]: function () { __.trace('species'); return [1, 2, 3]; } }"],
    [
      "species returning a shorter typed array",
      "{ [Symbol.species]: function (n) { __.trace('species ' + n); return new Uint8Array(0); } }",
    ],
    [
      "species returning a longer typed array",
      "{ [Symbol.species]: function (n) { __.trace('species ' + n); return new Uint8Array(9); } }",
    ],
    [
      "species returning the receiver's buffer",
      "{ [Symbol.species]: function (b, o, n) { __.trace('species ' + typeof b); return new Uint8Array(4); } }",
    ],
    ["species read through an accessor", "__.getters({ [Symbol.species]: Int8Array }, 'C')"],
  ];
  for (const key of [".slice", ".map", ".filter", ".subarray"]) {
    for (const [title, ctor] of species) {
      out.push(
        named(
          `${TAP}${key}: ${title}`,
          call(
            key,
            `Object.assign(new Uint8Array([1, 2, 3]), { constructor: ${ctor} })`,
            key === ".map" || key === ".filter" ? ["(x) => x"] : ["0"],
          ),
        ),
      );
    }
  }
  for (const key of [".toReversed", ".toSorted", ".with"]) {
    out.push(
      named(
        `${TAP}${key} ignores species`,
        call(key, "Object.assign(new Uint8Array([1, 2]), { constructor: 1 })", key === ".with" ? ["0", "9"] : []),
      ),
    );
  }

  // Constructors, %TypedArray%.from and .of.
  const ctorCases: [string, string][] = [
    ["%TypedArray% called", "Object.getPrototypeOf(Int8Array)()"],
    ["%TypedArray% constructed", "new (Object.getPrototypeOf(Int8Array))()"],
    ["Uint8Array without new", "Uint8Array(2)"],
    ["a length", "new Uint8Array(3)"],
    ["a negative length", "new Uint8Array(-1)"],
    ["length 'Infinity'", "new Uint8Array('Infinity')"],
    ["length 2 ** 53", "new Uint8Array(2 ** 53)"],
    ["a length through valueOf", "new Uint8Array(__.counted(2, 'N'))"],
    ["an array", "new Int16Array([1, '2', , 4])"],
    ["an array-like through accessors", "new Int8Array(__.getters({ length: 2, 0: 5, 1: 6 }))"],
    ["a proxied array", "new Int8Array(__.traced([1, 2]))"],
    ["an iterable", "new Int8Array(new Set([1, 2]))"],
    ["another typed array", "new Int8Array(new Float64Array([1.5, -1.5, 300]))"],
    ["a BigInt array from a Number array", "new BigInt64Array(new Int8Array(1))"],
    ["a buffer and offset", "new Int16Array(new ArrayBuffer(8), 2, 2)"],
    ["a misaligned offset", "new Int16Array(new ArrayBuffer(8), 1)"],
    ["an offset past the end", "new Uint8Array(new ArrayBuffer(8), 9)"],
    ["a length past the end", "new Uint8Array(new ArrayBuffer(8), 4, 5)"],
    ["a buffer with a ragged length", "new Int32Array(new ArrayBuffer(7))"],
    ["a detached buffer", "(() => { const b = new ArrayBuffer(4); b.transfer(); return new Uint8Array(b); })()"],
    ["offset coercion order", "new Uint8Array(new ArrayBuffer(8), __.counted(1, 'O'), __.counted(2, 'L'))"],
    [
      "a length-tracking view",
      "(() => { const b = new ArrayBuffer(2, { maxByteLength: 8 }); const t = new Uint8Array(b); b.resize(5); return [t.length, b.byteLength]; })()",
    ],
    ["from an array", "Uint8Array.from([1, 2, 3])"],
    ["from an array-like through accessors", "Uint8Array.from(__.getters({ length: 2, 0: 1, 1: 2 }))"],
    [
      "from with a mapper",
      "Uint8Array.from([1, 2], function (x, i) { __.trace('map ' + i + ' ' + typeof this); return x * 3; }, { t: 1 })",
    ],
    ["from with a non-callable mapper", "Uint8Array.from([1], 1)"],
    ["from with a non-constructor this", "Object.getPrototypeOf(Int8Array).from.call({}, [1])"],
    ["from %TypedArray% itself", "Object.getPrototypeOf(Int8Array).from([1])"],
    [
      "from a custom constructor returning a plain object",
      "Uint8Array.from.call(function (n) { __.trace('C ' + n); return {}; }, [1])",
    ],
    [
      "from a custom constructor returning a shorter array",
      "Uint8Array.from.call(function (n) { __.trace('C ' + n); return new Uint8Array(0); }, [1, 2])",
    ],
    ["of", "Int8Array.of(1, '2', 300)"],
    ["of with a non-constructor this", "Int8Array.of.call(1, 1)"],
    ["of with a shorter result", "Int8Array.of.call(function () { return new Int8Array(0); }, 1)"],
    ["BigInt64Array.of with Numbers", "BigInt64Array.of(1)"],
    [
      "subclassing",
      "(() => { class Mine extends Uint8Array {} const m = new Mine(3); return [m.length, m.slice(1) instanceof Mine, m.map((x) => x) instanceof Mine, Mine.from([1]) instanceof Mine]; })()",
    ],
  ];
  for (const [title, source] of ctorCases) out.push(expr(`typed array constructors: ${title}`, source));
  return out;
}

const PROGRAMS = programs();

describeAgainstRaw("TypedArray: hand-written programs against the raw engine", PROGRAMS, {
  more: () => {
    it("the method table covers every function and accessor on the raw engine's %TypedArray%.prototype", async () => {
      const source = `const P = ${TAP}; export default JSON.stringify(Reflect.ownKeys(P).filter((k) => k !== "constructor").map((k) => typeof k === "symbol" ? "[" + k.description + "]" : "." + k));`;
      const listed = JSON.parse(await runRaw(source)) as string[];
      expect(listed.sort()).toEqual(Object.keys(TYPED_METHODS).sort());
    });
  },
});

const seedOf = (text: string) => [...text].reduce((h, ch) => (h * 31 + (ch.codePointAt(0) ?? 0)) | 0, 11);

describe("%TypedArray%.prototype methods on generated receivers and arguments", () => {
  for (const [key, spec] of Object.entries(TYPED_METHODS)) {
    it(`%TypedArray%.prototype${key}`, async () => {
      const cases = fc
        .tuple(typedReceiver, argList(spec.args))
        .map(([receiver, args]) => callProgram("generated", method(key), receiver, args, { drain: spec.drain }));
      await checkProperty(cases, { numRuns: 8, batch: 24, seed: seedOf(key) });
    }, 180_000);
  }
});
