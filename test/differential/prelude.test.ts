/**
 * What the prelude does to the global object, against the raw engine: the list of globals (rule `globals`), the
 * removed ones (rule `removed`), a census of every intrinsic's own properties (flags, names, lengths, native source
 * text), `Proxy`, `Math.random`, and the two globals the raw engine lacks (`structuredClone` and `queueMicrotask`,
 * rule `web`: their shape is the HTML standard's).
 */
import { expect, it } from "vitest";
import { compare, describeAgainstRaw, expr, type Program, REMOVED_GLOBALS, runRaw } from "./engine.js";

/** The raw engine's global property names (string keys), read from the engine itself. */
const RAW_GLOBALS = JSON.parse(
  await runRaw("export default JSON.stringify(Reflect.ownKeys(globalThis).filter((k) => typeof k === 'string'));"),
) as string[];

/** Intrinsics not reachable as globals, by an expression that reaches them. */
const HIDDEN: [string, string][] = [
  ["%TypedArray%", "Object.getPrototypeOf(Int8Array)"],
  ["%TypedArray%.prototype", "Object.getPrototypeOf(Int8Array.prototype)"],
  ["%IteratorPrototype%", "Object.getPrototypeOf(Object.getPrototypeOf([][Symbol.iterator]()))"],
  ["%ArrayIteratorPrototype%", "Object.getPrototypeOf([][Symbol.iterator]())"],
  ["%StringIteratorPrototype%", "Object.getPrototypeOf(''[Symbol.iterator]())"],
  ["%MapIteratorPrototype%", "Object.getPrototypeOf(new Map()[Symbol.iterator]())"],
  ["%SetIteratorPrototype%", "Object.getPrototypeOf(new Set()[Symbol.iterator]())"],
  ["%RegExpStringIteratorPrototype%", "Object.getPrototypeOf(/a/[Symbol.matchAll](''))"],
  ["%AsyncFunction.prototype%", "Object.getPrototypeOf(async function () {})"],
  ["%GeneratorFunction.prototype%", "Object.getPrototypeOf(function* () {})"],
  ["%GeneratorPrototype%", "Object.getPrototypeOf(function* () {}).prototype"],
  ["%AsyncGeneratorFunction.prototype%", "Object.getPrototypeOf(async function* () {})"],
  ["%AsyncGeneratorPrototype%", "Object.getPrototypeOf(async function* () {}).prototype"],
  ["%AsyncIteratorPrototype%", "Object.getPrototypeOf(Object.getPrototypeOf(async function* () {}).prototype)"],
  ["%IteratorHelperPrototype%", "Object.getPrototypeOf(Iterator.from([]).map((x) => x))"],
  ["%WrapForValidIteratorPrototype%", "Object.getPrototypeOf(Iterator.from({ next() {} }))"],
  ["%ThrowTypeError%", "Object.getOwnPropertyDescriptor(Function.prototype, 'caller').get"],
];

/** One line per own property of the value of `expression`: its key, flags and shape. */
const census = (expression: string) =>
  `(() => { const G = ${expression}; return Reflect.ownKeys(G).map((k) => String(k) + ': ' + __.descShape(G, k)).join('\\n'); })()`;

const web = (name: string, source: string, value: string, extra: Partial<Program> = {}): Program =>
  expr(name, source, { differs: "web", detail: JSON.stringify({ value: `s:${value}` }), ...extra });

/** The same for a program of statements that awaits. */
const webAsync = (name: string, body: string, value: string): Program => ({
  name,
  body,
  async: true,
  differs: "web",
  detail: JSON.stringify({ value: `s:${value}` }),
});

function programs(): Program[] {
  const out: Program[] = [];
  out.push(
    expr("the global object's own keys", "Reflect.ownKeys(globalThis).map(String).join()", { differs: "globals" }),
  );
  out.push(expr("the global object's Symbol.toStringTag", "__.descShape(globalThis, Symbol.toStringTag)"));
  out.push(
    expr(
      "the global object's prototype chain",
      "[Object.getPrototypeOf(globalThis) === Object.prototype, Object.isExtensible(globalThis), Object.keys(globalThis).join()]",
    ),
  );
  for (const name of RAW_GLOBALS) {
    if (name in REMOVED_GLOBALS) {
      out.push(
        expr(`${name} is removed`, `[typeof globalThis.${name}, '${name}' in globalThis].join()`, {
          differs: "removed",
        }),
      );
      continue;
    }
    out.push(expr(`global ${name}`, `__.descShape(globalThis, ${JSON.stringify(name)})`));
    // The global object's own census is the list of globals (rule `globals`) and the programs above.
    if (name === "globalThis") continue;
    out.push(
      expr(
        `census of ${name}`,
        `(typeof globalThis.${name} === 'object' || typeof globalThis.${name} === 'function') && globalThis.${name} !== null ? ${census(`globalThis.${name}`)} : 'primitive'`,
      ),
    );
    out.push(
      expr(
        `census of ${name}.prototype`,
        `typeof globalThis.${name} === 'function' && (typeof globalThis.${name}.prototype === 'object' || typeof globalThis.${name}.prototype === 'function') && globalThis.${name}.prototype !== null ? ${census(`globalThis.${name}.prototype`)} : 'none'`,
      ),
    );
  }
  for (const [name, expression] of HIDDEN) {
    out.push(expr(`census of ${name}`, census(expression)));
    out.push(
      expr(
        `prototype of ${name}`,
        `__.describe(Object.getPrototypeOf(${expression}), 0).proto ?? String(Object.getPrototypeOf(${expression}))`,
      ),
    );
  }

  // Proxy.
  const proxy: [string, string][] = [
    ["shape", "__.shape(Proxy)"],
    ["own keys", "Reflect.ownKeys(Proxy).map(String).join()"],
    ["revocable", "__.descShape(Proxy, 'revocable')"],
    ["no prototype", "['prototype' in Proxy, Proxy.prototype]"],
    ["called without new", "Proxy({}, {})"],
    ["Reflect.apply", "Reflect.apply(Proxy, undefined, [{}, {}])"],
    ["a primitive target", "new Proxy(1, {})"],
    ["a primitive handler", "new Proxy({}, 1)"],
    ["a null handler", "new Proxy({}, null)"],
    ["no arguments", "new Proxy()"],
    [
      "Reflect.construct with another new.target",
      "Object.getPrototypeOf(Reflect.construct(Proxy, [[], {}], Object)) === Array.prototype",
    ],
    ["a class extending Proxy", "(() => { class X extends Proxy {} return X; })()"],
    ["setting a prototype on Proxy", "(() => { Proxy.prototype = {}; return typeof Proxy.prototype; })()"],
    ["typeof", "[typeof new Proxy({}, {}), typeof new Proxy(function () {}, {}), typeof new Proxy(class {}, {})]"],
    [
      "arrays stay arrays",
      "[Array.isArray(new Proxy([], {})), Object.prototype.toString.call(new Proxy([], {})), new Proxy([], {}) instanceof Array, JSON.stringify(new Proxy([1, 2], {}))]",
    ],
    ["constructor", "new Proxy({}, {}).constructor === Object"],
    ["a proxied arrow is not a constructor", "new (new Proxy(() => {}, {}))()"],
    ["a proxied class is", "typeof new (new Proxy(class A {}, {}))()"],
    ["source text of a proxied function", "Function.prototype.toString.call(new Proxy(function f() {}, {}))"],
    [
      "the handler is read when a trap runs",
      "(() => { const p = new Proxy({}, __.traced({}, 'H')); __.trace('made'); return [p.x, 'y' in p, Object.keys(p)]; })()",
    ],
    ["a non-callable trap", "new Proxy({}, { get: 1 }).x"],
    ["an invariant", "Object.keys(new Proxy({}, { ownKeys: () => ['a', 'a'] }))"],
    ["an invariant of a frozen target", "new Proxy(Object.freeze({ a: 1 }), { get: () => 2 }).a"],
    [
      "a proxy of a proxy",
      "(() => { const p = new Proxy(__.traced({ a: 1 }, 'T'), {}); return [p.a, Object.keys(p)]; })()",
    ],
    [
      "a handler changed later",
      "(() => { const h = {}; const p = new Proxy({ a: 1 }, h); h.get = () => 'late'; return p.a; })()",
    ],
    [
      "Proxy.revocable",
      "(() => { const r = Proxy.revocable({ a: 1 }, {}); const keys = Object.keys(r).join(); const before = r.proxy.a; r.revoke(); r.revoke(); return [keys, before, __.shape(r.revoke)]; })()",
    ],
    ["a revoked proxy", "(() => { const r = Proxy.revocable({}, {}); r.revoke(); return r.proxy.a; })()"],
    [
      "a revoked proxy's typeof",
      "(() => { const r = Proxy.revocable(function () {}, {}); r.revoke(); return typeof r.proxy; })()",
    ],
    ["Proxy.revocable without new", "new Proxy.revocable({}, {})"],
    ["Proxy.revocable with a primitive", "Proxy.revocable(1, {})"],
    ["instanceof Proxy", "({}) instanceof Proxy"],
    [
      "a proxied proxy",
      "(() => { const p = new Proxy(new Proxy({ a: 1 }, __.traced({}, 'H1')), __.traced({}, 'H2')); return [p.a, 'a' in p]; })()",
    ],
    [
      "a proxy as a prototype",
      "(() => { const o = Object.create(__.traced({ a: 1 }, 'T')); return [o.a, 'b' in o, o.hasOwnProperty('a')]; })()",
    ],
    [
      "a proxy's apply and construct traps",
      "(() => { const F = __.traced(function F(x) { this.x = x; return undefined; }, 'F'); return [F(1), new F(2).x, Reflect.apply(F, null, [3])]; })()",
    ],
  ];
  for (const [name, source] of proxy) out.push(expr(`Proxy: ${name}`, source));

  // Math.random.
  const random: [string, string][] = [
    ["shape", "__.descShape(Math, 'random')"],
    [
      "values",
      "(() => { const xs = Array.from({ length: 20 }, () => Math.random()); return [xs.every((x) => typeof x === 'number' && x >= 0 && x < 1), new Set(xs).size > 15]; })()",
    ],
    ["not a constructor", "new Math.random()"],
    [
      "ignores this and arguments",
      "(() => { const x = Math.random.call(null, 5); return typeof x === 'number' && x < 1; })()",
    ],
    ["Math's own keys", "Reflect.ownKeys(Math).map(String).join()"],
  ];
  for (const [name, source] of random) out.push(expr(`Math.random: ${name}`, source));

  // structuredClone and queueMicrotask (rule `web`).
  const fn = (name: string) => `w-c function "${name}"/1 native proto=Function.prototype own[length --c, name --c]`;
  const thrown = (source: string) => `(() => { try { ${source}; return 'no error'; } catch (e) { return e.name; } })()`;
  out.push(
    web("structuredClone: shape", "__.descShape(globalThis, 'structuredClone')", fn("structuredClone")),
    web("structuredClone: not a constructor", thrown("new structuredClone({})"), "TypeError"),
    web(
      "structuredClone: a deep copy",
      "(() => { const a = { x: [1, { y: 2 }] }; const b = structuredClone(a); return [b !== a, b.x !== a.x, JSON.stringify(b)].join(); })()",
      'true,true,{"x":[1,{"y":2}]}',
    ),
    web(
      "structuredClone: built-in types",
      "(() => { const c = structuredClone([new Map([[1, 2]]), new Set([3]), new Date(0), /a/g, new Uint8Array([1])]); return [c[0] instanceof Map, c[1].has(3), c[2].getTime(), String(c[3]), c[4][0]].join(); })()",
      "true,true,0,/a/g,1",
    ),
    web("queueMicrotask: shape", "__.descShape(globalThis, 'queueMicrotask')", fn("queueMicrotask")),
    web("queueMicrotask: not a constructor", thrown("new queueMicrotask(() => {})"), "TypeError"),
    web("queueMicrotask: a non-callable callback", thrown("queueMicrotask(1)"), "TypeError"),
    web("queueMicrotask: returns undefined", "typeof queueMicrotask(() => {})", "undefined"),
    webAsync(
      "queueMicrotask: order",
      "const seen = []; queueMicrotask(() => seen.push('a')); Promise.resolve().then(() => seen.push('b')); queueMicrotask(() => seen.push('c')); seen.push('sync'); await new Promise((resolve) => queueMicrotask(resolve)); return seen.join();",
      "sync,a,b,c",
    ),
    webAsync(
      "queueMicrotask: this and arguments of the callback",
      "let seen; queueMicrotask(function () { seen = [typeof this, arguments.length]; }); await null; await null; return String(seen);",
      "undefined,0",
    ),
  );
  return out;
}

const PROGRAMS = programs();

describeAgainstRaw("prelude: the global object against the raw engine", PROGRAMS, {
  timeoutMs: 120_000,
  more: () => {
    it("the harness tells outcomes apart (a value, a thrown error, a log entry)", async () => {
      const differing = await compare([
        expr("a value only the sandbox has", "typeof queueMicrotask"),
        expr("an error only the raw engine throws", "structuredClone(1)"),
        expr("a log entry only the sandbox makes", "typeof structuredClone === 'function' ? (__.trace('x'), 1) : 1"),
      ]);
      expect(differing.map((c) => c.differs)).toEqual([true, true, true]);
    });
  },
});
