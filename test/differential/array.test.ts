/**
 * Array.prototype, Array.from and Array.of: the sandbox (whose prelude wraps the Array methods that loop natively)
 * against the raw engine, following the specification's algorithms: `this` coercion (ToObject: TypeError for
 * null and undefined, primitives boxed), exactly one `length` read (ToLength(Get(O, "length"))), ToLength and
 * ToIntegerOrInfinity clamping, the 2^53 - 1 limits of push/unshift/splice/concat, ArraySpeciesCreate, and each
 * method's `name`, `length` and property descriptor.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { describeAgainstRaw, expr, type Program, runRaw } from "./engine.js";
import {
  argList,
  arrayReceiver,
  callback,
  callProgram,
  checkProperty,
  comparator,
  concatItem,
  element,
  index,
  reducer,
  separator,
  thisArg,
} from "./generators.js";

interface MethodSpec {
  /** Generated arguments, in order; a program passes a prefix of them (all of them, then `rest`). */
  args: fc.Arbitrary<string>[];
  rest?: fc.Arbitrary<string>;
  /** Valid arguments for the hand-written programs. */
  typical: string[];
  /** The method returns an iterator: programs read it. */
  drain?: boolean;
}

const iterating: MethodSpec = { args: [callback, thisArg], typical: ["(x) => x"] };

/** Every function-valued property of Array.prototype, keyed as written after `Array.prototype`. */
const ARRAY_METHODS: Record<string, MethodSpec> = {
  ".at": { args: [index], typical: ["-1"] },
  ".concat": { args: [], rest: concatItem, typical: ["[1]", "2"] },
  ".copyWithin": { args: [index, index, index], typical: ["0", "1"] },
  ".entries": { args: [], typical: [], drain: true },
  ".every": iterating,
  ".fill": { args: [element, index, index], typical: ["0", "1"] },
  ".filter": iterating,
  ".find": iterating,
  ".findIndex": iterating,
  ".findLast": iterating,
  ".findLastIndex": iterating,
  ".flat": { args: [index], typical: ["2"] },
  ".flatMap": iterating,
  ".forEach": iterating,
  ".includes": { args: [element, index], typical: ["'b'"] },
  ".indexOf": { args: [element, index], typical: ["'b'"] },
  ".join": { args: [separator], typical: ["'-'"] },
  ".keys": { args: [], typical: [], drain: true },
  ".lastIndexOf": { args: [element, index], typical: ["'b'"] },
  ".map": iterating,
  ".pop": { args: [], typical: [] },
  ".push": { args: [], rest: element, typical: ["1", "2"] },
  ".reduce": { args: [reducer, element], typical: ["(a, x) => a + x", "''"] },
  ".reduceRight": { args: [reducer, element], typical: ["(a, x) => a + x", "''"] },
  ".reverse": { args: [], typical: [] },
  ".shift": { args: [], typical: [] },
  ".slice": { args: [index, index], typical: ["1"] },
  ".some": iterating,
  ".sort": { args: [comparator], typical: [] },
  ".splice": { args: [index, index], rest: element, typical: ["1", "1", "'x'"] },
  ".toLocaleString": { args: [], typical: [] },
  ".toReversed": { args: [], typical: [] },
  ".toSorted": { args: [comparator], typical: [] },
  ".toSpliced": { args: [index, index], rest: element, typical: ["1", "1", "'x'"] },
  ".toString": { args: [], typical: [] },
  ".unshift": { args: [], rest: element, typical: ["0"] },
  ".values": { args: [], typical: [], drain: true },
  ".with": { args: [index, element], typical: ["0", "'x'"] },
  "[Symbol.iterator]": { args: [], typical: [], drain: true },
};

const P = "Array.prototype";
const method = (key: string) => `${P}${key}`;
const call = (key: string, receiver: string, args: string[] = ARRAY_METHODS[key]?.typical ?? []) =>
  callProgram("call", method(key), receiver, args, { drain: ARRAY_METHODS[key]?.drain });
const named = (name: string, p: Program): Program => ({ ...p, name });

/** The hand-written programs. */
function programs(): Program[] {
  const out: Program[] = [];
  const keys = Object.keys(ARRAY_METHODS);

  // Shape: descriptor, name, length, native source text, not a constructor.
  for (const key of [...keys, ".constructor", "[Symbol.unscopables]", ".length"]) {
    const where = key.startsWith(".") ? JSON.stringify(key.slice(1)) : key.slice(1, -1);
    out.push(expr(`shape of ${method(key)}`, `__.descShape(${P}, ${where})`));
  }
  for (const key of keys) {
    out.push(expr(`${method(key)} is not a constructor`, `new ${method(key)}()`));
  }
  out.push(
    expr("Array.prototype's own keys in order", `Reflect.ownKeys(${P}).map(String).join()`),
    expr("Array.prototype[Symbol.iterator] is values", `${P}[Symbol.iterator] === ${P}.values`),
    expr("Array's own keys in order", "Reflect.ownKeys(Array).map(String).join()"),
    ...["length", "name", "prototype", "isArray", "from", "of", "Symbol.species"].map((k) =>
      expr(`shape of Array.${k}`, `__.descShape(Array, ${k.startsWith("Symbol.") ? k : JSON.stringify(k)})`),
    ),
    expr("shape of Array", "__.shape(Array)"),
    expr("Array.prototype[Symbol.unscopables]", `Object.entries(${P}[Symbol.unscopables]).join()`),
  );

  // `this` coercion: ToObject throws for null and undefined, boxes primitives.
  for (const key of keys) {
    for (const receiver of ["undefined", "null", "true", "1", "'ab'", "Symbol('s')", "1n"]) {
      out.push(named(`${method(key)} with this = ${receiver}`, call(key, receiver)));
    }
  }

  // Exactly one `length` read, through an accessor, a Proxy and a logging valueOf.
  for (const key of keys) {
    const like = "{ length: 2, 0: 'a', 1: 'b' }";
    out.push(named(`${method(key)} on accessors`, call(key, `__.getters(${like})`)));
    out.push(named(`${method(key)} on a proxied array-like`, call(key, `__.traced(${like})`)));
    out.push(named(`${method(key)} on a proxied array`, call(key, "__.traced(['a', 'b'])")));
    out.push(named(`${method(key)} with length.valueOf`, call(key, "{ length: __.counted(2, 'L'), 0: 'a', 1: 'b' }")));
  }

  // ToLength: lengths that clamp to 0 and lengths at or past 2^53 - 1, each where the algorithm stops early.
  for (const key of keys) {
    for (const length of ["-1", "NaN", "-Infinity", "'-5'", "0.9"]) {
      out.push(named(`${method(key)} with length ${length}`, call(key, `{ length: ${length}, 0: 'a' }`)));
    }
  }
  const huge = ["2 ** 53 - 1", "'Infinity'", "Infinity", "2 ** 53 + 2", "2 ** 64"];
  const stops: [string, string, string[]][] = [
    // [method, receiver fields besides length, arguments]
    [".at", "[2 ** 53 - 2]: 'last'", ["-1"]],
    [".at", "", ["2 ** 53"]],
    [".concat", "", ["1"]],
    [".copyWithin", "[2 ** 53 - 2]: 'x'", ["2 ** 53 - 3", "2 ** 53 - 2"]],
    [".copyWithin", "[2 ** 53 - 2]: 'x'", ["0", "-1", "Infinity"]],
    [".entries", "", []],
    [".every", "0: 1", ["() => false"]],
    [".fill", "", ["'v'", "2 ** 53 - 3"]],
    [".fill", "", ["'v'", "-2"]],
    [".fill", "get 0() { return 1; }", ["'v'"]],
    [".filter", "0: 1", ["() => { throw new Error('stop'); }"]],
    [".find", "", ["() => true"]],
    [".findIndex", "", ["() => true"]],
    [".findLast", "", ["() => true"]],
    [".findLastIndex", "", ["() => true"]],
    [".flat", "get 0() { throw new Error('stop'); }", []],
    [".flatMap", "0: 1", ["() => { throw new Error('stop'); }"]],
    [".forEach", "0: 1", ["() => { throw new Error('stop'); }"]],
    [".includes", "0: 'x'", ["'x'"]],
    [".includes", "[2 ** 53 - 2]: 'x'", ["'x'", "-1"]],
    [".indexOf", "1: 'x'", ["'x'"]],
    [".indexOf", "0: 'x'", ["'x'", "-1"]],
    [".join", "get 0() { throw new Error('stop'); }", ["','"]],
    [".keys", "", []],
    [".lastIndexOf", "[2 ** 53 - 2]: 'x'", ["'x'"]],
    [".lastIndexOf", "[2 ** 53 - 3]: 'x'", ["'x'", "2 ** 53 - 3"]],
    [".lastIndexOf", "[2 ** 53 - 3]: 'x'", ["'x'", "-2"]],
    [".lastIndexOf", "", ["'x'", "-(2 ** 53)"]],
    [".map", "", ["(x) => x"]],
    [".pop", "[2 ** 53 - 2]: 'z'", []],
    [".push", "", ["1"]],
    [".push", "", []],
    [".reduce", "0: 1", ["() => { throw new Error('stop'); }", "0"]],
    [".reduceRight", "[2 ** 53 - 2]: 1", ["() => { throw new Error('stop'); }", "0"]],
    [".reverse", "get 0() { throw new Error('stop'); }", []],
    [".shift", "get 0() { throw new Error('stop'); }", []],
    [".slice", "[2 ** 53 - 2]: 'z'", ["-2"]],
    [".slice", "", ["0"]],
    [".some", "0: 1", ["() => true"]],
    [".sort", "get 0() { throw new Error('stop'); }", []],
    [".splice", "[2 ** 53 - 2]: 'z'", ["-1"]],
    [".splice", "", ["0", "0", "1"]],
    [".splice", "", ["2 ** 53 - 3", "1", "'a'", "'b'"]],
    [".splice", "[2 ** 53 - 2]: 'z'", ["-1", "1", "'y'"]],
    [".toLocaleString", "get 0() { throw new Error('stop'); }", []],
    [".toReversed", "", []],
    [".toSorted", "", []],
    [".toSpliced", "", ["0", "0", "1"]],
    [".toSpliced", "", ["0", "1"]],
    [".toString", "get 0() { throw new Error('stop'); }", []],
    [".unshift", "", ["1"]],
    [".unshift", "", []],
    [".unshift", "get [2 ** 53 - 3]() { throw new Error('stop'); }", ["1"]],
    [".values", "", []],
    [".with", "", ["0", "1"]],
    [".with", "", ["2 ** 53", "1"]],
    ["[Symbol.iterator]", "", []],
  ];
  for (const [key, fields, args] of stops) {
    // unshift's getter program needs length 2^53 - 2: one more element is still within the limit.
    for (const length of fields.includes("2 ** 53 - 3]()") ? ["2 ** 53 - 2"] : huge) {
      const receiver = `{ length: ${length}${fields ? `, ${fields}` : ""} }`;
      out.push(
        named(`${method(key)}(${args.join(", ")}) with length ${length} {${fields}}`, call(key, receiver, args)),
      );
    }
    out.push(
      named(
        `${method(key)}(${args.join(", ")}) with length 2 ** 53 - 1 through an accessor {${fields}}`,
        call(
          key,
          `Object.defineProperties(__.getters({ length: 2 ** 53 - 1 }), Object.getOwnPropertyDescriptors({ ${fields} }))`,
          args,
        ),
      ),
    );
  }
  // A real sparse array of length 2^32 - 1 (the longest an Array can be), each call stopping early.
  const sparse = "(() => { const a = []; a[2 ** 32 - 2] = 'z'; return a; })()";
  for (const [key, args] of [
    [".at", ["-1"]],
    [".lastIndexOf", ["'z'"]],
    [".indexOf", ["'z'", "-1"]],
    [".includes", ["'z'", "-1"]],
    [".fill", ["1", "-2"]],
    [".copyWithin", ["2 ** 32 - 3", "2 ** 32 - 2"]],
    [".slice", ["-2"]],
    [".splice", ["-1"]],
    [".splice", ["-1", "0", "'a'"]],
    [".pop", []],
    [".push", ["1"]],
    [".push", ["1", "2"]],
  ] as [string, string[]][]) {
    out.push(
      named(`${method(key)}(${args.join(", ")}) on a sparse array of length 2 ** 32 - 1`, call(key, sparse, args)),
    );
  }

  // ArraySpeciesCreate: every branch, for each method that uses it.
  const speciesKinds: [string, string][] = [
    ["constructor undefined", "undefined"],
    ["constructor null", "null"],
    ["constructor a primitive", "1"],
    ["species null", "{ [Symbol.species]: null }"],
    ["species undefined", "{ [Symbol.species]: undefined }"],
    ["species a non-constructor", "{ [Symbol.species]: () => [] }"],
    ["species a subclass", "{ [Symbol.species]: class Mine extends Array {} }"],
    ["species a plain function", "{ [Symbol.species]: function Plain(n) { __.trace('species ' + n); } }"],
    [
      "species returning a frozen array",
      "{ [Symbol.species]: function Frozen(n) { __.trace('species ' + n); return Object.freeze([]); } }",
    ],
    ["species read through an accessor", "__.getters({ [Symbol.species]: Array }, 'C')"],
    ["constructor through an accessor", "undefined"],
  ];
  for (const key of [".concat", ".filter", ".map", ".slice", ".splice", ".flat", ".flatMap"]) {
    for (const [title, ctor] of speciesKinds) {
      const receiver =
        title === "constructor through an accessor"
          ? "Object.defineProperty([1, 2, 3], 'constructor', { get() { __.trace('get constructor'); return Array; } })"
          : `Object.assign([1, 2, 3], { constructor: ${ctor} })`;
      out.push(named(`${method(key)}: ${title}`, call(key, receiver)));
    }
    out.push(named(`${method(key)}: species of a proxied array`, call(key, "__.traced([1, 2, 3])")));
    out.push(
      named(
        `${method(key)}: no species for an array-like`,
        call(key, "__.getters({ length: 1, 0: 1, constructor: 1 })"),
      ),
    );
    out.push(
      named(
        `${method(key)}: a subclass instance`,
        call(key, "(() => { class Mine extends Array {} return Mine.of(1, 2, 3); })()"),
      ),
    );
  }
  for (const key of [".toReversed", ".toSorted", ".toSpliced", ".with"]) {
    out.push(
      named(
        `${method(key)} ignores species`,
        call(key, "Object.assign([1, 2], { constructor: 1 })", key === ".with" ? ["0", "9"] : []),
      ),
    );
  }

  // Array.from and Array.of.
  const fromCases: [string, string][] = [
    ["an array", "Array.from([1, , 3])"],
    ["a string", "Array.from('a𝒳b')"],
    ["a Set", "Array.from(new Set([1, 2]))"],
    ["an array-like through accessors", "Array.from(__.getters({ length: 2, 0: 'a', 1: 'b' }))"],
    ["a proxied array", "Array.from(__.traced([1, 2]))"],
    ["a proxied array-like", "Array.from(__.traced({ length: 2, 0: 'a' }))"],
    [
      "a mapping function",
      "Array.from([1, 2], function (x, i) { __.trace('map ' + i + ' ' + typeof this); return x * 2; }, { t: 1 })",
    ],
    ["a non-callable mapper", "Array.from([1], 1)"],
    ["null", "Array.from(null)"],
    ["undefined", "Array.from()"],
    ["a number", "Array.from(3)"],
    ["length 2 ** 53 - 1", "Array.from({ length: 2 ** 53 - 1 })"],
    ["length 'Infinity'", "Array.from({ length: 'Infinity' })"],
    ["length -1", "Array.from({ length: -1, 0: 1 })"],
    ["a custom constructor", "Array.from.call(function C(n) { __.trace('C ' + n); }, { length: 2, 0: 'x' })"],
    ["a custom constructor and an iterable", "Array.from.call(function C(n) { __.trace('C ' + n); }, [1, 2])"],
    ["a non-constructor this", "Array.from.call(() => {}, [1, 2])"],
    ["undefined this", "Array.from.call(undefined, [1, 2])"],
    ["a throwing iterator", "Array.from({ [Symbol.iterator]() { return { next() { throw new Error('next'); } }; } })"],
    [
      "an iterator closed on a mapper error",
      "Array.from({ [Symbol.iterator]() { return { next: () => ({ done: false, value: 1 }), return() { __.trace('return'); return {}; } }; } }, () => { throw new Error('map'); })",
    ],
    ["a non-writable target", "Array.from.call(function () { return Object.freeze({}); }, [1])"],
    ["Array.of", "Array.of(1, undefined, 3)"],
    ["Array.of with a custom constructor", "Array.of.call(function C(n) { __.trace('C ' + n); }, 'a', 'b')"],
    ["Array.of with a non-constructor", "Array.of.call({}, 1)"],
    ["Array.of with a frozen result", "Array.of.call(function () { return Object.freeze([]); }, 1)"],
    ["Array.isArray of a proxy", "[Array.isArray(__.traced([])), Array.isArray(__.traced({}))]"],
    [
      "Array.isArray of a revoked proxy",
      "(() => { const { proxy, revoke } = Proxy.revocable([], {}); revoke(); return Array.isArray(proxy); })()",
    ],
    ["Array(length)", "[Array(3), Array('3'), new Array(1, 2)]"],
    ["Array(-1)", "new Array(-1)"],
    ["Array(2 ** 32)", "Array(2 ** 32)"],
  ];
  for (const [title, source] of fromCases) out.push(expr(`Array.from/of: ${title}`, source));

  // Mutation of Array.prototype by the program itself: the wrapped methods still behave as the engine's.
  out.push({
    name: "a program that replaces Array.prototype.fill and restores it",
    isolated: true,
    body: `const fill = ${P}.fill; ${P}.fill = function () { return 'mine'; }; const r = [1].fill(0); ${P}.fill = fill; return [r, [1, 2].fill(0), ${P}.fill === fill];`,
  });
  out.push({
    name: "a program that reads and calls methods through a changed Symbol.species on Array",
    isolated: true,
    body: "Object.defineProperty(Array, Symbol.species, { get() { __.trace('species read'); return Object; } }); return [[1, 2].map((x) => x), [1].concat(2), [1, 2].slice(0)];",
  });
  out.push({
    name: "a program that deletes Array.prototype.join (toString falls back)",
    isolated: true,
    body: `delete ${P}.join; return [String([1, 2]), ${P}.toString.call({ join: undefined })];`,
  });
  return out;
}

const PROGRAMS = programs();

describeAgainstRaw("Array: hand-written programs against the raw engine", PROGRAMS, {
  more: () => {
    it("the method table covers every function on the raw engine's Array.prototype", async () => {
      const source = `export default JSON.stringify(Reflect.ownKeys(${P}).filter((k) => k !== "constructor" && typeof ${P}[k] === "function").map((k) => typeof k === "symbol" ? "[" + k.description + "]" : "." + k));`;
      const listed = JSON.parse(await runRaw(source)) as string[];
      expect(listed.sort()).toEqual(Object.keys(ARRAY_METHODS).sort());
    });
  },
});

/** A stable seed per method, so a failure reproduces. */
const seedOf = (text: string) => [...text].reduce((h, ch) => (h * 31 + (ch.codePointAt(0) ?? 0)) | 0, 7);

describe("Array.prototype methods on generated receivers and arguments", () => {
  for (const [key, spec] of Object.entries(ARRAY_METHODS)) {
    it(`${method(key)}`, async () => {
      const cases = fc
        .tuple(arrayReceiver, argList(spec.args, spec.rest))
        .map(([receiver, args]) => callProgram("generated", method(key), receiver, args, { drain: spec.drain }));
      await checkProperty(cases, { numRuns: 8, batch: 24, seed: seedOf(key) });
    }, 180_000);
  }
});
