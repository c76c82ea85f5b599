/**
 * The other built-ins the prelude wraps to charge their work (String.prototype methods, JSON.parse and
 * JSON.stringify, BigInt.prototype.toString, Function.prototype.toString): the sandbox against the raw engine.
 * RequireObjectCoercible and ToString of `this`, then the arguments' coercion in the specification's order (logged
 * through toString/valueOf and Symbol.match/replace/split accessors), and each method's shape.
 */
import fc from "fast-check";
import { describe, it } from "vitest";
import { describeAgainstRaw, expr, type Program } from "./engine.js";
import { argList, callProgram, checkProperty } from "./generators.js";

/** Receivers of String.prototype methods: strings, everything ToString accepts or refuses, logged coercions. */
const stringReceiver = fc.constantFrom(
  "'abcabc'",
  "''",
  "'a\\u0301b'",
  "'\\uD800x\\uDC00'",
  "'ßİı'",
  "'  pad  '",
  "undefined",
  "null",
  "1.5",
  "true",
  "Symbol('s')",
  "10n",
  "[1, [2, 3]]",
  "__.counted('bcb', 'T')",
  "({ toString() { __.trace('T.toString'); return {}; }, valueOf() { __.trace('T.valueOf'); return 'vo'; } })",
  "({ [Symbol.toPrimitive](hint) { __.trace('T.toPrimitive ' + hint); return 'prim'; } })",
  "new String('boxed')",
  "__.traced(new String('px'))",
);

const text = fc.constantFrom(
  "'a'",
  "''",
  "'bc'",
  "'ab'",
  "undefined",
  "null",
  "1",
  "__.counted('b', 'S')",
  "/a/",
  "__.getters({ [Symbol.match]: false, toString: () => 'a' }, 'M')",
  "Symbol('x')",
);
const position = fc.constantFrom(
  "0",
  "1",
  "-1",
  "2.7",
  "NaN",
  "Infinity",
  "-Infinity",
  "'2'",
  "2 ** 32",
  "2 ** 53",
  "undefined",
  "null",
  "__.counted(1, 'P')",
  "1n",
);
/** Counts and lengths that stay small once clamped (a repeat of 2^29 would be half a gigabyte in the raw engine). */
const count = fc.constantFrom(
  "0",
  "1",
  "3",
  "-1",
  "NaN",
  "Infinity",
  "'2'",
  "1.5",
  "undefined",
  "2 ** 30",
  "__.counted(2, 'C')",
);
const pattern = fc.oneof(
  text,
  fc.constantFrom(
    "/b/g",
    "/(b)(c)?/",
    "/x/y",
    "/(?<n>b)/g",
    "/(?:)/gu",
    "/(b)(c)/giy",
    "({ [Symbol.replace]: (s, r) => { __.trace('custom replace ' + s); return 'custom'; } })",
    "({ [Symbol.split]: (s, l) => { __.trace('custom split ' + l); return ['custom']; } })",
    "__.getters({ [Symbol.replace]: undefined, [Symbol.split]: undefined, flags: 'g', toString: () => 'b' }, 'R')",
  ),
);
const replacement = fc.constantFrom(
  "'x'",
  "'<$&|$1|$<n>|$$|$`|$\\''",
  "'$0$01$2$10$<x>$'",
  "(m, ...rest) => { __.trace('rep ' + m + ' ' + rest.length); return '[' + m + ']'; }",
  "undefined",
  "__.counted('r', 'R')",
);

interface MethodSpec {
  args: fc.Arbitrary<string>[];
  rest?: fc.Arbitrary<string>;
  typical: string[];
}

const STRING_METHODS: Record<string, MethodSpec> = {
  indexOf: { args: [text, position], typical: ["'b'"] },
  lastIndexOf: { args: [text, position], typical: ["'b'"] },
  includes: { args: [text, position], typical: ["'b'"] },
  startsWith: { args: [text, position], typical: ["'a'"] },
  endsWith: { args: [text, position], typical: ["'c'"] },
  split: { args: [pattern, position], typical: ["'b'"] },
  replace: { args: [pattern, replacement], typical: ["'b'", "'x'"] },
  replaceAll: { args: [pattern, replacement], typical: ["'b'", "'x'"] },
  repeat: { args: [count], typical: ["2"] },
  padStart: { args: [count, text], typical: ["8", "'-'"] },
  padEnd: { args: [count, text], typical: ["8", "'-'"] },
  normalize: { args: [fc.constantFrom("'NFC'", "'NFD'", "'NFKC'", "'NFKD'", "'bad'", "undefined", "1")], typical: [] },
  toUpperCase: { args: [], typical: [] },
  toLowerCase: { args: [], typical: [] },
  toLocaleUpperCase: { args: [fc.constantFrom("undefined", "'en'", "'tr'", "[]")], typical: [] },
  toLocaleLowerCase: { args: [fc.constantFrom("undefined", "'en'", "'tr'", "[]")], typical: [] },
  trim: { args: [], typical: [] },
  trimStart: { args: [], typical: [] },
  trimEnd: { args: [], typical: [] },
  localeCompare: { args: [text], typical: ["'b'"] },
  slice: { args: [position, position], typical: ["1"] },
  substring: { args: [position, position], typical: ["1"] },
  substr: { args: [position, position], typical: ["1"] },
  concat: { args: [], rest: text, typical: ["'x'", "1"] },
  isWellFormed: { args: [], typical: [] },
  toWellFormed: { args: [], typical: [] },
};

const S = "String.prototype";

function programs(): Program[] {
  const out: Program[] = [];
  for (const [name, spec] of Object.entries(STRING_METHODS)) {
    out.push(expr(`shape of ${S}.${name}`, `__.descShape(${S}, '${name}')`));
    for (const receiver of [
      "undefined",
      "null",
      "Symbol('s')",
      "1.5",
      "10n",
      "'abcabc'",
      "__.counted('bcb', 'T')",
      "({ toString() { __.trace('T.toString'); return {}; }, valueOf() { __.trace('T.valueOf'); return 'vo'; } })",
    ]) {
      out.push({
        ...callProgram("call", `${S}.${name}`, receiver, spec.typical),
        name: `${S}.${name} with this = ${receiver}`,
      });
    }
    const logged = spec.typical.map((a, i) => `__.counted(${a}, 'A${i}')`);
    out.push({
      ...callProgram("call", `${S}.${name}`, "__.counted('abcabc', 'T')", logged),
      name: `${S}.${name}: coercion order of this and the arguments`,
    });
  }

  const json: [string, string][] = [
    ["parse: values", 'JSON.parse(\'[1, -0, 1e400, "a\\\\u0000", {"__proto__": 1, "a": [true, null]}]\')'],
    ["parse: a syntax error", "JSON.parse('{\"a\": 1,}')"],
    ["parse: an empty text", "JSON.parse('')"],
    ["parse: a non-string", "JSON.parse(__.counted('[1]', 'J'))"],
    ["parse: a symbol", "JSON.parse(Symbol('j'))"],
    [
      "parse: a reviver",
      "JSON.parse('{\"a\": [1, {\"b\": 2}], \"c\": 3}', function (k, v) { __.trace('rev ' + k + ' ' + typeof this); return k === 'c' ? undefined : v; })",
    ],
    [
      "parse: a reviver that changes the holder",
      "JSON.parse('[1, 2, 3]', function (k, v) { __.trace('rev ' + k); if (k === '0') { delete this[1]; this[2] = 'late'; } return v; })",
    ],
    ["parse: a non-callable reviver", "JSON.parse('[1]', 1)"],
    ["parse: duplicate keys", 'JSON.parse(\'{"a": 1, "a": 2}\')'],
    ["parse: this is ignored", "JSON.parse.call(null, '1')"],
    [
      "stringify: values",
      "JSON.stringify([1, -0, NaN, Infinity, 'a\\u2028\\uD800', null, undefined, () => {}, Symbol('s'), new Date(0), /r/g, new Map([[1, 2]]), new Boolean(false), new String('s'), new Number(3)])",
    ],
    ["stringify: undefined", "[JSON.stringify(undefined), JSON.stringify(() => {}), JSON.stringify(Symbol())]"],
    ["stringify: a BigInt", "JSON.stringify({ a: 1n })"],
    ["stringify: a cycle", "(() => { const a = [1]; a.push({ a }); return JSON.stringify(a); })()"],
    [
      "stringify: toJSON",
      "JSON.stringify({ a: { toJSON(k) { __.trace('toJSON ' + k); return 'j'; } }, b: [{ toJSON: 1 }] })",
    ],
    ["stringify: accessors", "JSON.stringify(__.getters({ a: 1, b: [2], c: undefined }, 'G'))"],
    ["stringify: a proxied object", "JSON.stringify(__.traced({ a: 1, b: [2] }))"],
    ["stringify: a proxied array", "JSON.stringify(__.traced([1, , 3]))"],
    [
      "stringify: a replacer function",
      "JSON.stringify({ a: 1, b: { c: 2 } }, function (k, v) { __.trace('rep ' + k + ' ' + typeof this); return typeof v === 'number' ? v * 10 : v; })",
    ],
    [
      "stringify: a replacer list",
      "JSON.stringify({ a: 1, b: 2, 3: 3, c: { a: 4 } }, ['a', 3, new String('c'), __.counted('b', 'K'), {}, 'a'])",
    ],
    ["stringify: a proxied replacer list", "JSON.stringify({ a: 1, b: 2 }, __.traced(['b']))"],
    [
      "stringify: space",
      "[JSON.stringify([1, { a: 2 }], null, 2), JSON.stringify([1], null, '--'), JSON.stringify([1], null, 20), JSON.stringify([1], null, 'abcdefghijkl'), JSON.stringify([1], null, new Number(3)), JSON.stringify([1], null, __.counted(1, 'W'))]",
    ],
    ["stringify: keys in order", "JSON.stringify({ b: 1, 2: 2, a: 3, 1: 4, [Symbol('s')]: 5 })"],
    [
      "stringify: deep nesting",
      "(() => { let v = []; for (let i = 0; i < 2000; i++) v = [v]; return JSON.stringify(v).length; })()",
    ],
    ["stringify: this is ignored", "JSON.stringify.call(null, [1])"],
    ["shape of JSON.parse", "__.descShape(JSON, 'parse')"],
    ["shape of JSON.stringify", "__.descShape(JSON, 'stringify')"],
    ["JSON's own keys", "Reflect.ownKeys(JSON).map(String).join()"],
  ];
  for (const [name, source] of json) out.push(expr(`JSON.${name}`, source));

  const bigint: [string, string][] = [
    ["shape", "__.descShape(BigInt.prototype, 'toString')"],
    [
      "radixes",
      "[(255n).toString(), (255n).toString(16), (-255n).toString(2), (2n ** 100n).toString(36), (0n).toString(7)]",
    ],
    ["radix coercion", "(255n).toString(__.counted(16, 'R'))"],
    ["radix undefined", "(255n).toString(undefined)"],
    ["radix 1", "(1n).toString(1)"],
    ["radix 37", "(1n).toString(37)"],
    ["radix NaN", "(1n).toString(NaN)"],
    ["a boxed BigInt", "BigInt.prototype.toString.call(Object(12n), 3)"],
    ["a Number", "BigInt.prototype.toString.call(12)"],
    ["undefined", "BigInt.prototype.toString.call(undefined)"],
    ["a logged object", "BigInt.prototype.toString.call(__.counted(1n, 'B'))"],
    ["String(bigint)", "[String(-7n), '' + 7n, 7n + '', [7n].join()]"],
  ];
  for (const [name, source] of bigint) out.push(expr(`BigInt.prototype.toString: ${name}`, source));

  const source: [string, string][] = [
    [
      "of every wrapped String method",
      `Object.getOwnPropertyNames(${S}).filter((k) => typeof ${S}[k] === 'function').map((k) => Function.prototype.toString.call(${S}[k])).join('|')`,
    ],
    [
      "of every Array method",
      "Object.getOwnPropertyNames(Array.prototype).filter((k) => typeof Array.prototype[k] === 'function').map((k) => String(Array.prototype[k])).join('|')",
    ],
    [
      "of every %TypedArray% method",
      "(() => { const P = Object.getPrototypeOf(Int8Array.prototype); return Reflect.ownKeys(P).map((k) => { const d = Object.getOwnPropertyDescriptor(P, k); return String(d.value ?? d.get); }).join('|'); })()",
    ],
    [
      "of JSON, Math and BigInt methods",
      "[JSON.parse, JSON.stringify, Math.random, BigInt.prototype.toString, Array.from, Int8Array.from, Object.getPrototypeOf(Int8Array).from, Proxy, Proxy.revocable].map(String).join('|')",
    ],
    [
      "of Function.prototype.toString itself",
      "[String(Function.prototype.toString), Function.prototype.toString.call(Function.prototype.toString)]",
    ],
    [
      "of user functions",
      "[function f(a, b) { return a + b; }, (x) => x * 2, async function* g() {}, class A { m() {} }, { m() {} }.m, { get x() { return 1; } }].map((f) => typeof f === 'function' ? String(f) : String(Object.getOwnPropertyDescriptor(f, 'x').get)).join('|')",
    ],
    ["of a bound function", "[String(function f() {}.bind(null)), String(Array.prototype.join.bind([]))]"],
    [
      "of a proxied function",
      "[String(new Proxy(function f() {}, {})), String(new Proxy(Array.prototype.join, {})), String(new Proxy(class {}, {}))]",
    ],
    ["of a non-function", "Function.prototype.toString.call({})"],
    ["of a callable proxy of an object", "Function.prototype.toString.call(new Proxy({}, {}))"],
    ["of undefined", "Function.prototype.toString.call(undefined)"],
    [
      "of a getter",
      "String(Object.getOwnPropertyDescriptor(Object.getPrototypeOf(Int8Array.prototype), 'length').get)",
    ],
    ["of Symbol.hasInstance", "String(Function.prototype[Symbol.hasInstance])"],
    [
      "of a function with a changed name",
      "(() => { const f = Array.prototype.join; Object.defineProperty(f, 'name', { value: 'other' }); return [String(f), f.name]; })()",
    ],
    ["shape", "__.descShape(Function.prototype, 'toString')"],
    [
      "after replacing it",
      "(() => { const t = Function.prototype.toString; Function.prototype.toString = function () { return 'mine'; }; const r = [String(Math.max), '' + [].join]; Function.prototype.toString = t; return r; })()",
    ],
  ];
  for (const [name, s] of source) {
    out.push(
      expr(
        `Function.prototype.toString ${name}`,
        s,
        name === "after replacing it" || name === "of a function with a changed name" ? { isolated: true } : {},
      ),
    );
  }
  return out;
}

const PROGRAMS = programs();

describeAgainstRaw(
  "String, JSON, BigInt and Function.prototype.toString: hand-written programs against the raw engine",
  PROGRAMS,
  { timeoutMs: 120_000 },
);

const seedOf = (text: string) => [...text].reduce((h, ch) => (h * 31 + (ch.codePointAt(0) ?? 0)) | 0, 13);

describe("String.prototype methods on generated receivers and arguments", () => {
  for (const [name, spec] of Object.entries(STRING_METHODS)) {
    it(`${S}.${name}`, async () => {
      const cases = fc
        .tuple(stringReceiver, argList(spec.args, spec.rest))
        .map(([receiver, args]) => callProgram("generated", `${S}.${name}`, receiver, args));
      await checkProperty(cases, { numRuns: 6, batch: 24, seed: seedOf(name) });
    }, 120_000);
  }
});
