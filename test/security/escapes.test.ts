/**
 * The escape catalogue: attack programs, each with its exact outcome. Every attack also asserts that the host's
 * intrinsics, its global object and the values the caller bridged in are unchanged, and that a normal run works
 * right after (see `attack` in helpers.ts).
 */
import { describe, expect, it } from "vitest";
import type { CodeExecutionOptions, RunCode } from "../../src/core/types.js";
import { SerializationError } from "../../src/index.js";
import { ATTEMPT, attack, capped, disabled, HOST_MARKERS, outcome, runCode, sandbox } from "./helpers.js";

const FN = disabled("Function");
const ASYNC_FN = disabled("AsyncFunction");
const GEN_FN = disabled("GeneratorFunction");
const ASYNC_GEN_FN = disabled("AsyncGeneratorFunction");

/** Bridges handed to most attacks: functions, their results, promises, errors and cloned built-ins. */
function bridges(): CodeExecutionOptions {
  return {
    globals: {
      fn: function hostFn(x: unknown) {
        return { got: x };
      },
      afn: async () => ({ value: 1 }),
      rej: async () => {
        throw new TypeError("async failure");
      },
      thrower: () => {
        throw new Error("sync failure");
      },
      pending: Promise.resolve({ ready: true }),
      map: new Map<unknown, unknown>([["k", { v: 1 }]]),
      set: new Set([1, "two"]),
      date: new Date(0),
      bytes: new Uint8Array([1, 2, 3]),
      buffer: new Uint8Array([9]).buffer,
      view: new DataView(new ArrayBuffer(4)),
      regex: /host/g,
      data: { nested: { list: [1, 2, 3] } },
    },
    imports: { tools: { tool: (n: number) => n + 1, config: { mode: "safe" } } },
  };
}

interface Case {
  name: string;
  source: string;
  expected: unknown;
  options?: CodeExecutionOptions;
  run?: RunCode;
}

/** Reaching a function constructor from every value the sandbox can receive. */
const constructorChains: Case[] = [
  ["fn.constructor('return process')()", "fn.constructor('return process')()", FN],
  ["fn.constructor.constructor", "fn.constructor.constructor('return this')()", FN],
  ["Object.getPrototypeOf(fn).constructor", "Object.getPrototypeOf(fn).constructor('return 1')()", FN],
  ["Function.prototype.constructor", "Function.prototype.constructor.call(null, 'return 1')", FN],
  ["a sync result's constructor chain", "fn(1).constructor.constructor('return this')()", FN],
  ["a cloned Map's constructor chain", "map.constructor.constructor('return this')()", FN],
  ["a cloned Map method's constructor", "map.get.constructor('return this')()", FN],
  ["a cloned Set's constructor chain", "set.constructor.constructor('return this')()", FN],
  ["a cloned Date's constructor chain", "date.getTime.constructor('return this')()", FN],
  [
    "a typed array's %TypedArray% constructor",
    "Object.getPrototypeOf(bytes.constructor).constructor('return 1')()",
    FN,
  ],
  ["a typed array's buffer", "bytes.buffer.constructor.constructor('return 1')()", FN],
  [
    "a cloned ArrayBuffer and DataView",
    "[buffer.slice.constructor, view.getInt8.constructor].map((c) => attempt(() => c('x')))",
    [FN, FN],
  ],
  ["a cloned RegExp", "regex.exec.constructor('return 1')()", FN],
  ["plain data's constructor chain", "data.nested.list.map.constructor('return 1')()", FN],
  ["the report bridge", "report.constructor('return 1')()", FN],
  ["the console bridge", "console.log.constructor.constructor('return 1')()", FN],
  ["an imported function", "imported.constructor('return 1')()", FN],
  ["an imported namespace object", "Object.getPrototypeOf(ns) === null && ns.tool.constructor('return 1')()", FN],
  [
    "import.meta (a null-prototype object)",
    "Object.getPrototypeOf(import.meta) === null && import.meta.url.constructor.constructor('return 1')()",
    FN,
  ],
  [
    "a thrown host error",
    "(() => { try { thrower(); } catch (e) { return e.constructor.constructor('return 1')(); } })()",
    FN,
  ],
  [
    "queueMicrotask and structuredClone",
    "[queueMicrotask, structuredClone].map((f) => attempt(() => f.constructor('x')))",
    [FN, FN],
  ],
].map(([name, expr, expected]) => ({
  name: name as string,
  source: `import * as ns from "tools";\nimport { tool as imported } from "tools";\n${ATTEMPT}export default attempt(() => ${expr});`,
  expected: { status: "success", result: expected },
  options: bridges(),
}));

const asyncChains: Case[] = [
  ["a promise returned by a bridge", "afn().constructor.constructor('return 1')()", FN],
  ["then of a bridged promise", "afn().then.constructor('return 1')()", FN],
  ["an async result's constructor chain", "(await afn()).constructor.constructor('return 1')()", FN],
  ["a rejected host error", "await rej().catch((e) => e.constructor.constructor('return 1')())", FN],
  ["a promise global", "pending.constructor.constructor('return 1')()", FN],
  ["a promise callback", "await afn().then(function cb() { return cb.constructor('return 1')(); })", FN],
  ["an async function's constructor", "(async () => {}).constructor('return 1')", ASYNC_FN],
  ["a generator's constructor via prototypes", "Object.getPrototypeOf(function* () {}).constructor('yield 1')", GEN_FN],
  [
    "an async generator's constructor via an instance",
    "(async function* () {})().constructor.constructor('yield 1')",
    ASYNC_GEN_FN,
  ],
  [
    "an async generator's constructor via prototypes",
    "Object.getPrototypeOf(async function* () {}).constructor('yield 1')",
    ASYNC_GEN_FN,
  ],
].map(([name, expr, expected]) => ({
  name: name as string,
  source: `${ATTEMPT}export default await attemptAsync(async () => ${expr});`,
  expected: { status: "success", result: expected },
  options: bridges(),
}));

/** Every route to eval and the Function family. */
const evalRoutes: Case[] = [
  ["eval is absent", "[typeof eval, typeof globalThis.eval, 'eval' in globalThis]", ["undefined", "undefined", false]],
  ["indirect eval by computed name", "(0, globalThis['ev' + 'al'])('1')", "TypeError: not a function"],
  ["new Function", "new Function('return 1')", FN],
  ["Reflect.construct(Function)", "Reflect.construct(Function, ['return 1'])", FN],
  ["Reflect.construct(Function) with another new.target", "Reflect.construct(Function, ['return 1'], Object)", FN],
  ["Reflect.apply(Function)", "Reflect.apply(Function, null, ['return 1'])", FN],
  ["Function.call / apply", "[Function.call(null, 'return 1'), 0]", FN],
  ["a bound Function", "Function.bind(null, 'return 1')()()", FN],
  ["a bound Function constructed", "new (Function.bind(null, 'return 1'))()", FN],
  ["a proxied Function", "new Proxy(Function, {})('return 1')()", FN],
  [
    "a proxied Function with an apply trap",
    "new Proxy(Function, { apply: (t, self, args) => Reflect.apply(t, self, args) })('return 1')",
    FN,
  ],
  ["a class extending Function", "new (class extends Function {})('return 1')", FN],
  [
    "a class extending Function calls super",
    "new (class extends Function { constructor() { super('return 1'); } })()",
    FN,
  ],
  [
    "a class extending AsyncFunction",
    "new (class extends Object.getPrototypeOf(async () => {}).constructor {})('return 1')",
    ASYNC_FN,
  ],
  [
    "a Function subclass through setPrototypeOf",
    "(() => { function F() {} Object.setPrototypeOf(F, Function); return F.constructor('x'); })()",
    FN,
  ],
  [
    "the constructors are one locked function",
    "(() => { const c = [(() => {}).constructor, function () {}.constructor, Function, Object.constructor]; return c.every((x) => x === Function) && Function.prototype.constructor === Function && (() => {}) instanceof Function; })()",
    true,
  ],
  [
    "the Function constructor's own properties",
    "[Function.name, Function.length, Object.isFrozen(Function.prototype), Function.prototype === Object.getPrototypeOf(() => {})]",
    ["Function", 1, false, true],
  ],
  ["setTimeout with a string", "setTimeout('globalThis.x = 1', 0)", "ReferenceError: 'setTimeout' is not defined"],
  [
    "RegExp.prototype.compile compiles a pattern, never code",
    "(() => { const r = /x/; r.compile('return process'); return [r.source, r.test('return process')]; })()",
    ["return process", true],
  ],
].map(([name, expr, expected]) => ({
  name: name as string,
  source: `${ATTEMPT}export default attempt(() => ${expr});`,
  expected: { status: "success", result: expected },
}));

const dynamicImports: Case[] = [
  [
    "data: URL",
    "data:text/javascript,export default globalThis",
    "LinkError: Cannot find module 'data:text/javascript,export default globalThis': only options.imports and options.modules resolve",
  ],
  [
    "https: URL",
    "https://evil.example/x.js",
    "LinkError: Cannot import 'https://evil.example/x.js': URL imports are not supported",
  ],
  ["file: URL", "file:///etc/passwd", "LinkError: Cannot import 'file:///etc/passwd': URL imports are not supported"],
  [
    "node: builtin",
    "node:child_process",
    "LinkError: Cannot find module 'node:child_process': only options.imports and options.modules resolve",
  ],
  [
    "the engine's std module",
    "std",
    "LinkError: Cannot find module 'std': only options.imports and options.modules resolve",
  ],
  [
    "an absolute path",
    "/etc/passwd",
    "LinkError: Cannot find module '/etc/passwd': only options.imports and options.modules resolve",
  ],
].map(([name, specifier, expected]) => ({
  name: `import() of ${name}`,
  source: `export default await import(${JSON.stringify(specifier)}).then(() => "loaded", (e) => e.name + ": " + e.message);`,
  expected: { status: "success", result: expected },
}));

/** The implementation's own modules, by every spelling a user could try. */
const INTERNAL_SPELLINGS = [
  "runcode:internals",
  "runcode:internals/core",
  "runcode:internals/globals",
  "runcode:internals/marshal",
  "runcode:import/tools",
  "runcode:unresolved/0",
  "runcode:stage",
  "runcode:internals\u0000",
  "runcode:internals\u0000/x",
  "RUNCODE:internals",
  "runcode:import/tools/../../runcode:internals",
];
const RELATIVE_SPELLINGS = ["./runcode:internals", "../runcode:internals", "./../runcode:import/tools"];
const notFound = (s: string) => `Cannot find module '${s}': only options.imports and options.modules resolve`;
const notInModules = (s: string, from = "<runCode>") =>
  `Cannot find module '${s}' imported from ${from}: it is not in options.modules`;

const internalImports: Case[] = [
  ...[...INTERNAL_SPELLINGS, ...RELATIVE_SPELLINGS].map((specifier) => ({
    name: `static import of ${JSON.stringify(specifier)}`,
    source: `import t from ${JSON.stringify(specifier)};\nexport default typeof t;`,
    expected: {
      status: "link_error",
      // QuickJS cuts a module name at NUL before the normalizer sees it.
      error: `LinkError: ${specifier.startsWith(".") ? notInModules(specifier) : notFound(specifier.split("\u0000")[0] as string)}`,
    },
    options: { imports: { tools: { tool: 1 } } },
  })),
  {
    name: "dynamic import of every internal spelling",
    source: `const specs = ${JSON.stringify(INTERNAL_SPELLINGS)};\nexport default await Promise.all(specs.map((s) => import(s).then((ns) => Object.keys(ns), (e) => e.name)));`,
    expected: { status: "success", result: INTERNAL_SPELLINGS.map(() => "LinkError") },
    options: { imports: { tools: { tool: 1 } } },
  },
  {
    name: "an options.modules module importing the internals",
    source: `import x from "./lib/a.js";\nexport default x;`,
    expected: { status: "link_error", error: `LinkError: ${notFound("runcode:internals")}` },
    options: {
      imports: { tools: { tool: 1 } },
      modules: { "./lib/a.js": `import t from "runcode:internals";\nexport default t;` },
    },
  },
  {
    name: "an options.modules module climbing out of the graph",
    source: `import x from "./lib/a.js";\nexport default x;`,
    expected: { status: "link_error", error: `LinkError: ${notInModules("../../../secret.js", "./lib/a.js")}` },
    options: { modules: { "./lib/a.js": `import t from "../../../secret.js";\nexport default t;` } },
  },
  {
    name: "the staging slot of the global object is gone",
    source: `export default [typeof globalThis["runcode:stage"], Object.getOwnPropertyNames(globalThis).filter((n) => /runcode|stage/i.test(n)), Reflect.ownKeys(globalThis).filter((k) => typeof k === "symbol").map(String)];`,
    expected: { status: "success", result: ["undefined", [], ["Symbol(Symbol.toStringTag)"]] },
    options: bridges(),
  },
];

/** Prototype pollution through marshaled keys, both directions. */
const pollution: Case[] = [
  {
    name: "__proto__, constructor and prototype keys in a result stay own data",
    source: `export default JSON.parse('{"__proto__": {"polluted": 1}, "constructor": {"prototype": {"polluted": 2}}, "prototype": {"polluted": 3}}');`,
    expected: {
      status: "success",
      result: JSON.parse(
        '{"__proto__": {"polluted": 1}, "constructor": {"prototype": {"polluted": 2}}, "prototype": {"polluted": 3}}',
      ),
    },
  },
  {
    name: "__proto__ keys nested in arrays, Map values and reports",
    source: `const evil = JSON.parse('{"__proto__": {"polluted": true}}');\nreport([evil]);\nexport default new Map([["k", [evil, { a: evil }]]]);`,
    expected: {
      status: "success",
      result: new Map([
        [
          "k",
          [JSON.parse('{"__proto__": {"polluted": true}}'), { a: JSON.parse('{"__proto__": {"polluted": true}}') }],
        ],
      ]),
    },
  },
  {
    name: "a guest that pollutes its own Object.prototype before returning",
    source: `Object.prototype.polluted = 1; Array.prototype.polluted = 2; Object.defineProperty(Object.prototype, "then", { get() { return 1; } });\nexport default { plain: {}, list: [] };`,
    expected: { status: "success", result: { plain: {}, list: [] } },
  },
  {
    name: "__proto__ keys from the host stay own data in the guest",
    source: `export default [Object.getPrototypeOf(input) === Object.prototype, Object.hasOwn(input, "__proto__"), ({}).polluted, input.__proto__.polluted];`,
    expected: { status: "success", result: [true, true, undefined, 1] },
    options: { globals: { input: JSON.parse('{"__proto__": {"polluted": 1}}') } },
  },
];

/** Guest intrinsics tampered with before values cross; the host still gets exactly the right values. */
const TAMPER = `
Object.defineProperty(Array.prototype, "0", { get() { return "evil"; }, set() { throw new Error("setter ran"); }, configurable: true });
Array.prototype[Symbol.iterator] = function* () { yield "evil"; };
JSON.stringify = () => '"evil"';
JSON.parse = () => "evil";
Object.defineProperty = () => { throw new Error("defineProperty ran"); };
Object.keys = () => ["evil"];
Object.getPrototypeOf = () => null;
Promise.prototype.then = function () { throw new Error("then ran"); };
Promise.resolve = () => { throw new Error("resolve ran"); };
Function.prototype.call = Function.prototype.apply = Function.prototype.bind = () => { throw new Error("call ran"); };
Reflect.apply = () => { throw new Error("apply ran"); };
Map.prototype.forEach = Set.prototype.forEach = () => {};
Map.prototype.get = Map.prototype.set = Map.prototype.has = () => { throw new Error("map ran"); };
Date.prototype.getTime = () => 0;
String.prototype.startsWith = () => true;
Symbol.prototype.toString = () => "evil";
BigInt.prototype.toString = () => "0";
Array.isArray = () => false;
String.prototype.concat = () => '["f",0,"",0]';
String.prototype.slice = () => "evil";
globalThis.String = () => "evil";
globalThis.Map = globalThis.Set = globalThis.Date = globalThis.Promise = globalThis.WeakMap = null;
`;
const tampering: Case[] = [
  {
    name: "tampered intrinsics do not change a result",
    source: `${TAMPER}export default { list: [1, [2, 3]], map: map, set: set, date: date, big: 12345678901234567890n, sym: "s" };`,
    expected: {
      status: "success",
      result: {
        list: [1, [2, 3]],
        map: new Map([["k", 1]]),
        set: new Set([1]),
        date: new Date(7),
        big: 12345678901234567890n,
        sym: "s",
      },
    },
    options: { globals: { map: new Map([["k", 1]]), set: new Set([1]), date: new Date(7) } },
  },
  {
    name: "tampered intrinsics do not change a bridge's arguments or results",
    source: `${TAMPER}const r = echo([1, 2], new Uint8Array([5, 6]), { k: [3] });\nexport default [r[0], r[1].length, r[2]];`,
    // The guest's own tampered iterator made its Uint8Array from ["evil"]: one element, before anything crossed.
    expected: { status: "success", result: [[1, 2], 1, { k: [3] }] },
    options: { globals: { echo: (...args: unknown[]) => args } },
  },
  {
    name: "tampered Promise machinery does not break async bridges",
    source: `export async function run() {\n${TAMPER}const both = [afn(), afn()];\nreturn [await afn(), await both[0], await both[1]];\n}`,
    expected: { status: "success", result: [{ value: 1 }, { value: 1 }, { value: 1 }] },
    options: { ...bridges(), execute: { fn: "run" } },
  },
  {
    name: "a tampered Promise.prototype.then breaks only the guest's own top-level await",
    source: `Promise.prototype.then = function () { throw new Error("then ran"); };\nawait 0;\nexport default 1;`,
    expected: { status: "error", error: "Error: then ran" },
  },
  {
    name: "tampered intrinsics do not change reports and logs",
    source: `const m = new Map([[1, 2]]);\n${TAMPER}report([1, 2, m]); console.log([3], m); export default 1;`,
    expected: { status: "success", result: 1 },
  },
  {
    name: "tampered intrinsics do not change a thrown error",
    source: `${TAMPER}throw new RangeError("boom");`,
    expected: { status: "error", error: "RangeError: boom" },
  },
  {
    name: "tampered structuredClone and queueMicrotask are the guest's own business",
    source: `${ATTEMPT}globalThis.structuredClone = () => "evil"; globalThis.queueMicrotask = null;\nexport default [structuredClone(1), fn([1]).got];`,
    expected: { status: "success", result: ["evil", [1]] },
    options: bridges(),
  },
];

/** Guest getters, proxies, toJSON, valueOf and Symbol.toPrimitive handed to the host. */
const hostileValues: Case[] = [
  {
    name: "a toJSON method is never called; the function in it cannot cross",
    source: `export default { toJSON() { return "hacked"; }, a: 1 };`,
    expected: {
      status: "error",
      error: "SerializationError: [Function: toJSON] cannot be cloned: functions do not leave the sandbox",
    },
  },
  {
    name: "a Proxy whose traps throw ends the run as an error",
    source: `export default new Proxy({ a: 1 }, { get() { throw new Error("trap"); } });`,
    expected: { status: "error", error: "Error: trap" },
  },
  {
    name: "a Proxy whose getPrototypeOf trap throws",
    source: `export default new Proxy({}, { getPrototypeOf() { throw new RangeError("proto trap"); } });`,
    expected: { status: "error", error: "RangeError: proto trap" },
  },
  {
    name: "a revoked Proxy",
    source: `const { proxy, revoke } = Proxy.revocable({}, {}); revoke();\nexport default proxy;`,
    expected: { status: "error", error: "TypeError: revoked proxy" },
  },
  {
    name: "a Proxy array lying about its length cannot forge tape entries",
    source: `${ATTEMPT}const lie = (L) => new Proxy([1, 2], { get: (t, k) => (k === "length" ? L : t[k]) });\nexport default ['1,["0",["p",1,0]],0', '1,["0",["f",0,"x",0]],0', Infinity, -1, 1.5, "2"].map((L) => attempt(() => fn(lie(L))));`,
    expected: {
      status: "success",
      result: Array(6).fill("SerializationError: An array whose length is not an array length cannot be cloned"),
    },
    options: bridges(),
  },
  {
    name: "a Proxy array lying about its length in a report and a result",
    source: `${ATTEMPT}const lie = new Proxy([1], { get: (t, k) => (k === "length" ? '1,["0",["f",0,"x",0]],0' : t[k]) });\nconst r = attempt(() => report(lie));\nexport default lie;`,
    expected: {
      status: "error",
      error: "SerializationError: An array whose length is not an array length cannot be cloned",
    },
  },
  {
    name: "a class instance with a Symbol.toPrimitive cannot cross",
    source: `class Evil { [Symbol.toPrimitive]() { return 1; } }\nexport default new Evil();`,
    expected: {
      status: "error",
      error:
        "SerializationError: An instance of Evil cannot be cloned: only plain objects, arrays, Map, Set, Date, RegExp, Error, ArrayBuffer and typed arrays cross the sandbox boundary",
    },
  },
  {
    name: "a Date subclass with a lying getTime crosses as its real time",
    source: `class D extends Date { getTime() { return 0; } valueOf() { return 0; } }\nexport default Object.setPrototypeOf(new D(5), Date.prototype);`,
    expected: { status: "success", result: new Date(5) },
  },
  {
    name: "a Map with a lying forEach and entries crosses with its real entries",
    source: `const m = new Map([[1, 2]]); m.forEach = () => {}; m.entries = () => [][Symbol.iterator](); m[Symbol.iterator] = m.entries;\nexport default m;`,
    expected: { status: "success", result: new Map([[1, 2]]) },
  },
];

/** Resource floods and giant values (small caps keep them quick). */
const M16 = 16 * 1024 * 1024;
const floods: Case[] = [
  {
    name: "a giant string by doubling (QuickJS's rope strings reach the length limit first)",
    source: `let s = "x"; for (;;) s += s;`,
    expected: { status: "error", error: "InternalError: string too long" },
    options: { memoryLimitBytes: M16 },
  },
  {
    name: "a giant array by pushing",
    source: `const a = []; for (;;) a.push([a.length]);`,
    expected: { status: "memory", error: `MemoryError: The sandbox ran out of memory (memoryLimitBytes: ${M16})` },
    options: { memoryLimitBytes: M16 },
  },
  {
    name: "a 2 GiB ArrayBuffer",
    source: `${ATTEMPT}export default attempt(() => new ArrayBuffer(2 ** 31).byteLength);`,
    expected: { status: "success", result: "RangeError: invalid array buffer length" },
    options: { memoryLimitBytes: M16 },
  },
  {
    name: "live 1 MB buffers past the cap",
    source: `const keep = []; for (;;) keep.push(new Uint8Array(1 << 20));`,
    expected: { status: "memory", error: `MemoryError: The sandbox ran out of memory (memoryLimitBytes: ${M16})` },
    options: { memoryLimitBytes: M16 },
  },
  {
    name: "new Array(2 ** 32)",
    source: `${ATTEMPT}export default attempt(() => new Array(2 ** 32));`,
    expected: { status: "success", result: "RangeError: invalid array length" },
  },
  {
    name: "the guard leaves ordinary arrays alone",
    source: `export default [[1, 2].join("-"), [1, 2, 3].indexOf(3), String([1, [2]]), [3, 1].reverse(), [1].concat([2]), Array.prototype.join.length];`,
    expected: { status: "success", result: ["1-2", 2, "1,2", [1, 3], [1, 2], 1] },
  },
  {
    name: "a flood of 1 MB reports is capped by memoryLimitBytes",
    source: `const s = "x".repeat(1 << 20); for (;;) report(s);`,
    expected: {
      status: "memory",
      error: `MemoryError: The run's logs, reports and failed imports exceeded memoryLimitBytes (${M16}): the host keeps them for the run`,
    },
    options: { memoryLimitBytes: M16 },
  },
  {
    name: "a flood of 1 MB console lines is capped by memoryLimitBytes, also when caught",
    source: `const s = "x".repeat(1 << 20); for (;;) { try { console.log(s, new Uint8Array(1 << 16)); } catch {} }`,
    expected: {
      status: "memory",
      error: `MemoryError: The run's logs, reports and failed imports exceeded memoryLimitBytes (${M16}): the host keeps them for the run`,
    },
    options: { memoryLimitBytes: M16 },
  },
  {
    name: "100,000 small reports all arrive",
    source: `for (let i = 0; i < 100000; i++) report(i);\nexport default "done";`,
    expected: { status: "success", result: "done" },
  },
  {
    name: "a flood of never-settling host promises stops at 10,000 in flight",
    source: `const keep = []; for (;;) keep.push(tool());`,
    expected: { status: "error", error: "RangeError: 10000 host calls are in flight: await some before making more" },
    options: { memoryLimitBytes: M16, globals: { tool: () => new Promise(() => {}) } },
  },
  {
    name: "10,000 concurrent async host calls all settle",
    source: `const all = await Promise.all(Array.from({ length: 10000 }, (_, i) => tool(i)));\nexport default all.reduce((a, b) => a + b, 0);`,
    expected: { status: "success", result: 50005000 },
    options: { globals: { tool: async (i: number) => i + 1 } },
  },
  {
    name: "a large heap, then thousands of awaited host calls (memory growth while making host promises)",
    source: `const a = []; for (let i = 0; i < 300000; i++) a.push({ i });\nlet s = 0; for (let i = 0; i < 3000; i++) s += await tool();\nexport default [a.length, s];`,
    expected: { status: "success", result: [300000, 3000] },
    options: { globals: { tool: async () => 1 } },
  },
  {
    name: "console.log of one promise twice (a logged placeholder referenced again)",
    source: `const p = Promise.resolve(); console.log(p, [p], { p }); export default 1;`,
    expected: { status: "success", result: 1 },
  },
];

/**
 * Recursion through a host call at every level meets two limits, QuickJS's own and the host's stack; on the caller's
 * thread the host's runs out first (the instance dropped), on a worker thread either may (docs/limits.md, "Worker threads in
 * Node"), so these cases pin the in-thread outcome.
 */
const inThread = sandbox({});

/** Deep recursion and deep nesting in source, JSON and data. */
const depth: Case[] = [
  {
    name: "deep recursion calling a host function at every level",
    source: `const r = (n) => { tool(n); return r(n + 1) + 1; };\nexport default r(0);`,
    expected: {
      status: "error",
      error: "RangeError: Maximum call stack size exceeded (the code nests or recurses too deeply)",
    },
    options: { globals: { tool: (n: number) => n } },
    run: inThread,
  },
  {
    name: "deep recursion the guest tries to catch (the host stack runs out first: the instance is dropped)",
    source: `let depth = 0;\nconst r = (n) => { depth = n; return r(n + 1); };\ntry { r(0); } catch {}\nexport default [depth > 100, tool(2)];`,
    expected: {
      status: "error",
      error: "RangeError: Maximum call stack size exceeded (the code nests or recurses too deeply)",
    },
    options: { globals: { tool: (n: number) => n + 1 } },
    run: inThread,
  },
  {
    name: "JSON.parse of 100,000 nested arrays",
    source: `${ATTEMPT}export default attempt(() => JSON.parse("[".repeat(100000) + "]".repeat(100000)).length);`,
    expected: {
      status: "error",
      error: "RangeError: Maximum call stack size exceeded (the code nests or recurses too deeply)",
    },
  },
  {
    name: "a 100,000 deep result",
    source: `let v = 1; for (let i = 0; i < 100000; i++) v = [v];\nexport default v;`,
    expected: { status: "error", error: "InternalError: stack overflow" },
  },
  {
    name: "a 100,000 deep Map chain as a bridge argument",
    source: `${ATTEMPT}let v = 1; for (let i = 0; i < 100000; i++) v = new Map([[i, v]]);\nexport default attempt(() => echo(v));`,
    expected: {
      status: "error",
      error: "RangeError: Maximum call stack size exceeded (the code nests or recurses too deeply)",
    },
    options: { globals: { echo: () => "reached the host" } },
  },
  {
    name: "5,000 nested arrays in source",
    source: `export default ${"[".repeat(5000)}${"]".repeat(5000)}.length;`,
    expected: {
      status: "error",
      error: "RangeError: Maximum call stack size exceeded (the code nests or recurses too deeply)",
    },
  },
  {
    name: "3,000 nested arrow functions in source",
    source: `export default ${"(() => ".repeat(3000)}1${")".repeat(3000)};`,
    expected: {
      status: "error",
      error: "RangeError: Maximum call stack size exceeded (the code nests or recurses too deeply)",
    },
  },
  {
    name: "3,000 nested template literals in source",
    source: `export default \`${"${`".repeat(3000)}1${"`}".repeat(3000)}\`;`,
    expected: {
      status: "error",
      error: "RangeError: Maximum call stack size exceeded (the code nests or recurses too deeply)",
    },
  },
  {
    name: "host data exactly at the depth limit arrives whole",
    source: `let d = 0, v = deep; while (Array.isArray(v)) { v = v[0]; d++; }\nexport default d;`,
    // The globals object and the staging pair are two of the 1,000 levels.
    expected: { status: "success", result: 998 },
    options: { globals: { deep: nest(998) } },
  },
  {
    name: "a host function returning data past the depth limit throws a catchable SerializationError",
    source: `${ATTEMPT}export default attempt(() => tool());`,
    expected: { status: "success", result: "SerializationError: Value is nested deeper than 1000 levels" },
    options: { globals: { tool: () => nest(5000) } },
  },
];

/** Sort comparators and Proxy traps that throw or recurse. */
const traps: Case[] = [
  {
    name: "a sort comparator that throws",
    source: `${ATTEMPT}export default attempt(() => [3, 1, 2].sort(() => { throw new Error("cmp"); }));`,
    expected: { status: "success", result: "Error: cmp" },
  },
  {
    name: "a sort comparator that recurses into sort",
    source: `${ATTEMPT}const cmp = (a, b) => [b, a].sort(cmp).length;\nexport default attempt(() => [3, 1, 2].sort(cmp));`,
    expected: { status: "success", result: "InternalError: stack overflow" },
  },
  {
    name: "a sort comparator that mutates the array",
    source: `const a = [5, 4, 3, 2, 1];\nexport default a.sort((x, y) => { a.length = 0; a.push(9); return x - y; }).length;`,
    expected: { status: "success", result: 5 },
  },
  {
    name: "a Proxy ownKeys trap that recurses, handed to the host",
    source: `const p = new Proxy({}, { ownKeys: () => Reflect.ownKeys(p) });\nexport default p;`,
    // Through the guarded Reflect.ownKeys the guest's own stack limit fires first (a catchable error).
    expected: { status: "error", error: "InternalError: stack overflow" },
  },
  {
    name: "a Proxy get trap that calls the host on every read",
    source: `const p = new Proxy({ a: 1, b: 2 }, { get: (t, k) => tool(t[k]) });\nexport default echo(p);`,
    expected: { status: "success", result: { a: 10, b: 20 } },
    options: { globals: { tool: (v: number) => v * 10, echo: (v: unknown) => v } },
  },
  {
    name: "a catastrophic regular expression ends by the safety cap",
    source: `export default /^(a+)+$/.test("a".repeat(40) + "b");`,
    expected: {
      status: "terminated",
      error: "TerminatedError: Execution stopped by the safety cap after 300 ms of CPU time",
    },
    run: capped,
  },
  {
    name: "a catastrophic regular expression inside a sort comparator inside a Proxy trap",
    source: `const p = new Proxy({}, { get: () => [2, 1].sort(() => /^(a|a)+$/.test("a".repeat(30) + "b") ? 1 : -1) });\nexport default p.x;`,
    expected: {
      status: "terminated",
      error: "TerminatedError: Execution stopped by the safety cap after 300 ms of CPU time",
    },
    run: capped,
  },
];

function nest(n: number): unknown {
  let v: unknown = 1;
  for (let i = 0; i < n; i++) v = [v];
  return v;
}

const catalogue: [string, Case[]][] = [
  ["constructor chains from bridged values", constructorChains],
  ["constructor chains through promises and async values", asyncChains],
  ["routes to eval and the Function family", evalRoutes],
  ["dynamic import of URLs and host modules", dynamicImports],
  ["the implementation's internal modules", internalImports],
  ["prototype pollution through marshaled keys", pollution],
  ["tampered guest intrinsics", tampering],
  ["hostile guest values handed to the host", hostileValues],
  ["giant values and floods", floods],
  ["deep recursion and nesting", depth],
  ["comparators, traps and regular expressions", traps],
];

describe("escape catalogue", () => {
  for (const [title, cases] of catalogue) {
    describe(title, () => {
      for (const c of cases) {
        it(c.name, async () => {
          const result = await attack(c.run ?? runCode, c.source, c.options);
          expect(outcome(result)).toEqual(c.expected);
        });
      }
    });
  }
});

describe("escape catalogue: 2 ** 32 - 1 long arrays", () => {
  // Compared by keys and length: a deep equality would walk four billion holes.
  const view = (value: unknown) => {
    const a = value as unknown[];
    return [Array.isArray(a), a.length, Object.keys(a), Object.getPrototypeOf(a) === Array.prototype];
  };

  it("new Array(2 ** 32 - 1) returned as the result", async () => {
    const result = await attack(runCode, "export default new Array(2 ** 32 - 1);");
    expect(result.status).toBe("success");
    expect(view(result.result)).toEqual([true, 2 ** 32 - 1, [], true]);
  });

  it("a 2 ** 32 - 1 long array with its last index set, to a bridge and back", async () => {
    let received: unknown;
    const echo = (a: unknown) => {
      received = a;
      return a;
    };
    const source = `const a = new Array(2 ** 32 - 1); a[2 ** 32 - 2] = "last"; a.extra = 1;\nconst back = echo(a);\nexport default [back.length, back[2 ** 32 - 2], Object.keys(back)];`;
    const result = await attack(runCode, source, { globals: { echo } });
    expect(outcome(result)).toEqual({
      status: "success",
      result: [2 ** 32 - 1, "last", [String(2 ** 32 - 2), "extra"]],
    });
    expect(view(received)).toEqual([true, 2 ** 32 - 1, [String(2 ** 32 - 2), "extra"], true]);
  });
});

describe("escape catalogue: host spies and sentinels", () => {
  it("getters, valueOf and Symbol.toPrimitive run in the guest only; the host gets inert data", async () => {
    let received: Record<string, unknown> = {};
    const spy = (value: Record<string, unknown>) => {
      received = value;
      // Host-side coercions of what arrived: if any guest code were attached, these would run it.
      return [String(value), JSON.stringify(value), `${value.n}`, Number(value.n), Object.keys(value)];
    };
    const source = `${ATTEMPT}let calls = 0;
const evil = {
  get n() { calls++; return 7; },
  valueOf() { calls += 100; return 1; },
  [Symbol.toPrimitive]() { calls += 1000; return 2; },
};
Object.defineProperty(evil, "hidden", { get() { calls += 10000; return 0; }, enumerable: false });
const back = attempt(() => spy(evil));
export default [back, calls];`;
    const result = await attack(runCode, source, { globals: { spy } });
    expect(outcome(result)).toEqual({
      status: "success",
      result: ["SerializationError: [Function: valueOf] cannot be cloned: functions do not leave the sandbox", 1],
    });
    expect(received).toEqual({});

    const plain = `let calls = 0;\nconst v = { get n() { calls++; return 7; } };\nconst back = spy(v);\nexport default [back, calls];`;
    const second = await attack(runCode, plain, { globals: { spy } });
    expect(outcome(second)).toEqual({
      status: "success",
      result: [["[object Object]", '{"n":7}', "7", 7, ["n"]], 1],
    });
    expect(Object.getOwnPropertyDescriptor(received, "n")).toEqual({
      value: 7,
      writable: true,
      enumerable: true,
      configurable: true,
    });
    expect(Object.getPrototypeOf(received)).toBe(Object.prototype);
  });

  it("a Proxy handed to the host arrives as a plain object; its traps ran in the guest", async () => {
    let received: unknown;
    const spy = (value: unknown) => {
      received = value;
      return [typeof value, Object.keys(value as object), util.types.isProxy(value)];
    };
    const util = await import("node:util");
    const source = `const log = [];\nconst p = new Proxy({ a: 1 }, { get: (t, k) => (log.push(String(k)), t[k]), ownKeys: (t) => (log.push("ownKeys"), Reflect.ownKeys(t)) });\nexport default [spy(p), log];`;
    const result = await attack(runCode, source, { globals: { spy } });
    expect(outcome(result)).toEqual({
      status: "success",
      result: [
        ["object", ["a"], false],
        ["ownKeys", "a"],
      ],
    });
    expect(received).toEqual({ a: 1 });
  });

  it("a host sentinel object is cloned: guest writes never reach it", async () => {
    const sentinel = { secret: "kept", list: [1, 2], nested: { deep: true } };
    const frozen = JSON.stringify(sentinel);
    const source = `sentinel.secret = "stolen"; sentinel.list.push(3); delete sentinel.nested; sentinel.__proto__.polluted = 1;\nexport default sentinel;`;
    const result = await attack(runCode, source, { globals: { sentinel } });
    expect(outcome(result)).toEqual({ status: "success", result: { secret: "stolen", list: [1, 2, 3] } });
    expect(JSON.stringify(sentinel)).toBe(frozen);
  });

  it("host function source, closures and this never reach the guest", async () => {
    const secret = "HOST_SECRET closure";
    const tool = function tool(this: unknown, a: number) {
      // HOST_SECRET source text
      return [this === undefined, secret.length + a];
    };
    const source = `export default [String(tool), Function.prototype.toString.call(tool).includes("HOST_SECRET"), tool.name, tool.length, Object.getOwnPropertyNames(tool).sort(), tool.call({ x: 1 }, 1), Reflect.apply(tool, globalThis, [2])];`;
    const result = await attack(runCode, source, { globals: { tool } });
    expect(result.status).toBe("success");
    const [text, includes, name, length, names, call, apply] = result.result as unknown[];
    for (const marker of HOST_MARKERS) expect(text).not.toContain(marker);
    expect([includes, name, length, names, call, apply]).toEqual([
      false,
      "tool",
      1,
      ["length", "name"],
      [true, 20],
      [true, 21],
    ]);
  });

  it("host errors arrive as name and message only: no host stack, path or extra fields", async () => {
    const source = `${ATTEMPT}const seen = [];
for (const f of [thrower, () => rej()]) {
  try { await f(); } catch (e) { seen.push([e.name, e.message, Object.keys(e), /\\/work|node_modules|file:|HOST_SECRET/.test(String(e.stack))]); }
}
export default seen;`;
    const result = await attack(runCode, source, bridges());
    expect(outcome(result)).toEqual({
      status: "success",
      result: [
        ["Error", "sync failure", [], false],
        ["TypeError", "async failure", [], false],
      ],
    });
  });

  it("an uncaught host error's stack in the result names no host frame", async () => {
    const result = await attack(runCode, "thrower();", bridges());
    expect(outcome(result)).toEqual({ status: "error", error: "Error: sync failure" });
    expect(result.error?.stack ?? "").not.toMatch(/node_modules|file:|node:internal|runcode:/);
  });

  it("guest stacks and import.meta name only sandbox names", async () => {
    const source = `function f() { return new Error("x").stack; }\nexport default [f(), import.meta, Object.keys(import.meta)];`;
    const result = await attack(runCode, source, { filename: "agent.js" });
    expect(outcome(result)).toEqual({
      status: "success",
      // Inside the guest, line 1 columns still count the runtime's 57-character prefix (phase import, import.meta).
      result: ["    at f (agent.js:1:89)\n    at <anonymous> (agent.js:2:18)\n", { url: "sandbox:agent.js" }, ["url"]],
    });
  });

  it("SharedArrayBuffer, Atomics and WebAssembly are unreachable by any path", async () => {
    const source = `export default [typeof SharedArrayBuffer, typeof Atomics, typeof WebAssembly,
  Object.getOwnPropertyNames(globalThis).filter((n) => /Shared|Atomics|WebAssembly|InternalError/.test(n)),
  (() => { try { return new ArrayBuffer(8, { maxByteLength: 16 }).constructor === ArrayBuffer; } catch (e) { return e.name; } })()];`;
    const result = await attack(runCode, source);
    expect(outcome(result)).toEqual({ status: "success", result: ["undefined", "undefined", "undefined", [], true] });
  });
});

describe("escape catalogue: re-entrancy, termination and concurrency", () => {
  it("a guest function handed to a host function is a SerializationError, in any position", async () => {
    const source = `${ATTEMPT}const cb = () => 1;\nexport default [attempt(() => fn(cb)), attempt(() => fn({ deep: [cb] })), attempt(() => fn(new Map([[cb, 1]])))];`;
    const result = await attack(runCode, source, bridges());
    const message = "SerializationError: [Function: cb] cannot be cloned: functions do not leave the sandbox";
    expect(outcome(result)).toEqual({ status: "success", result: [message, message, message] });
  });

  it("a host function that itself calls runCode, including a hostile program", async () => {
    const nested = async (code: string) => {
      const inner = await capped(code, { language: "javascript" });
      return [inner.status, inner.result ?? inner.error?.message];
    };
    const source = `export default [await nested("export default 6 * 7"), await nested("for (;;) {}"), await nested("export default fn")];`;
    const result = await attack(runCode, source, { globals: { nested } });
    expect(outcome(result)).toEqual({
      status: "success",
      result: [
        ["success", 42],
        ["terminated", "Execution stopped by the safety cap after 300 ms of CPU time"],
        ["error", "'fn' is not defined"],
      ],
    });
  });

  it("terminate() called from inside a synchronous host function", async () => {
    let run: ReturnType<RunCode> | undefined;
    let calls = 0;
    const stop = () => {
      calls++;
      run?.terminate("stopped from the bridge");
      return 1;
    };
    const before = JSON.stringify(Object.getOwnPropertyNames(Object.prototype));
    run = runCode("stop(); let i = 0; for (;;) { i++; if (i % 1000 === 0) stop(); }", {
      language: "javascript",
      globals: { stop },
    });
    const result = await run;
    expect(outcome(result)).toEqual({ status: "terminated", error: "TerminatedError: stopped from the bridge" });
    expect(run.running).toBe(false);
    expect(JSON.stringify(Object.getOwnPropertyNames(Object.prototype))).toBe(before);
    const settledCalls = calls;
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(calls).toBe(settledCalls);
  });

  it("terminate() called from inside an async host function", async () => {
    let run: ReturnType<RunCode> | undefined;
    const stop = async () => {
      run?.terminate("async stop");
      return 1;
    };
    run = runCode("export default await stop() + (await stop())", { language: "javascript", globals: { stop } });
    expect(outcome(await run)).toEqual({ status: "terminated", error: "TerminatedError: async stop" });
  });

  it("a tool call that never settles, then terminate()", async () => {
    let resolveLate: (v: unknown) => void = () => {};
    const tool = () =>
      new Promise((resolve) => {
        resolveLate = resolve;
      });
    const run = runCode("report('before'); export default await tool();", {
      language: "javascript",
      globals: { tool },
    });
    await new Promise((resolve) => setTimeout(resolve, 30));
    expect(run.running).toBe(true);
    run.terminate("tool budget");
    const result = await run;
    expect(outcome(result)).toEqual({ status: "terminated", error: "TerminatedError: tool budget" });
    expect(result.reports).toEqual(["before"]);
    resolveLate({ late: true });
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(outcome(await run)).toEqual({ status: "terminated", error: "TerminatedError: tool budget" });
  });

  it("a busy guest and a never-settling tool are both stopped by terminate() while hundreds of calls are pending", async () => {
    const tool = () => new Promise(() => {});
    const run = runCode(
      "const all = []; for (let i = 0; i < 500; i++) all.push(tool());\nexport default await Promise.all(all);",
      {
        language: "javascript",
        globals: { tool },
      },
    );
    setTimeout(() => run.terminate(), 20);
    expect(outcome(await run)).toEqual({
      status: "terminated",
      error: "TerminatedError: Execution terminated by the caller",
    });
  });

  it("concurrent runs never see each other's data", async () => {
    const runs = Array.from({ length: 20 }, (_, i) =>
      runCode(
        `globalThis.shared = (globalThis.shared ?? "") + secret;\nawait tick();\nexport default [secret, globalThis.shared, typeof other];`,
        { language: "javascript", globals: { secret: `secret-${i}`, tick: async () => i } },
      ),
    );
    const results = await Promise.all(runs);
    expect(results.map(outcome)).toEqual(
      results.map((_, i) => ({ status: "success", result: [`secret-${i}`, `secret-${i}`, "undefined"] })),
    );
  });

  it("a hostile run beside a normal one leaves the normal one exact", async () => {
    const hog = sandbox({ safetyCap: { cpuTimeMs: 200 } });
    const [bad, good] = await Promise.all([
      hog("await 0; for (;;) {}", { language: "javascript" }),
      runCode("await 0; export default input.map((x) => x + 1)", {
        language: "javascript",
        globals: { input: [1, 2] },
      }),
    ]);
    expect(outcome(bad)).toEqual({
      status: "terminated",
      error: "TerminatedError: Execution stopped by the safety cap after 200 ms of CPU time",
    });
    expect(outcome(good)).toEqual({ status: "success", result: [2, 3] });
  });

  it("values that cannot cross into the sandbox throw before anything runs", () => {
    expect(() => runCode("export default 1", { globals: { deep: nest(1001) } })).toThrow(SerializationError);
    expect(() => runCode("export default 1", { globals: { weak: new WeakMap() } })).toThrow(SerializationError);
    expect(() => runCode("export default 1", { filename: "runcode:internals" })).toThrow(TypeError);
  });
});
