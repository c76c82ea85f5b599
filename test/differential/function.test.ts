/**
 * The Function family (Function, AsyncFunction, GeneratorFunction, AsyncGeneratorFunction): the sandbox replaces
 * the four constructors with locked stand-ins. Everything but compiling code must match the raw engine: `name`,
 * `length`, `prototype` and the prototypes' `constructor` with their attributes, the constructors' own prototype
 * chain, `instanceof`, source text, `class X extends Function {}`. Calling or constructing any of them, by any
 * route, must throw the sandbox's TypeError instead (rule `compile`, contract.md §6.2); so must `eval` (rule `eval`).
 */
import fc from "fast-check";
import { describe, it } from "vitest";
import { describeAgainstRaw, expr, type Program } from "./engine.js";
import { checkProperty } from "./generators.js";

/** [label, an expression for the constructor, an expression for one of its functions]. */
const KINDS: [string, string, string][] = [
  ["Function", "Function", "(function f(a, b) {})"],
  ["AsyncFunction", "(Object.getPrototypeOf(async function () {}).constructor)", "(async function f(a) {})"],
  ["GeneratorFunction", "(Object.getPrototypeOf(function* () {}).constructor)", "(function* f() {})"],
  ["AsyncGeneratorFunction", "(Object.getPrototypeOf(async function* () {}).constructor)", "(async function* f() {})"],
];

/** Ways to reach a constructor's [[Call]] or [[Construct]], as functions of `F` and an argument list. */
const INVOCATIONS: [string, (F: string, args: string) => string][] = [
  ["a call", (F, a) => `${F}(${a})`],
  ["new", (F, a) => `new ${F}(${a})`],
  ["Reflect.construct", (F, a) => `Reflect.construct(${F}, [${a}])`],
  ["Reflect.construct with another new.target", (F, a) => `Reflect.construct(${F}, [${a}], Object)`],
  ["Reflect.apply", (F, a) => `Reflect.apply(${F}, null, [${a}])`],
  ["call", (F, a) => `${F}.call(null${a ? `, ${a}` : ""})`],
  ["apply", (F, a) => `${F}.apply(null, [${a}])`],
  ["Function.prototype.call.call", (F, a) => `Function.prototype.call.call(${F}, null${a ? `, ${a}` : ""})`],
  ["a bound call", (F, a) => `${F}.bind(null${a ? `, ${a}` : ""})()`],
  ["a bound construction", (F, a) => `new (${F}.bind(null${a ? `, ${a}` : ""}))()`],
  ["a proxy call", (F, a) => `new Proxy(${F}, {})(${a})`],
  ["a proxy construction", (F, a) => `new (new Proxy(${F}, {}))(${a})`],
  ["a subclass", (F, a) => `new (class extends ${F} {})(${a})`],
  [
    "a subclass's super call",
    (F, a) => `new (class extends ${F} { constructor() { __.trace('before super'); super(${a}); } })()`,
  ],
  ["a subclass of a subclass", (F, a) => `new (class extends (class extends ${F} {}) {})(${a})`],
  ["the prototype's constructor", (F, a) => `${F}.prototype.constructor(${a})`],
];

const ARGS = ["", "'return 1'", "'a', 'return a'", "'{'", "'yield 1'", "'await 1'", "1, 2", "undefined"];

function programs(): Program[] {
  const out: Program[] = [];
  for (const [label, F, instance] of KINDS) {
    const p = (name: string, source: string, extra: Partial<Program> = {}) =>
      out.push(expr(`${label}: ${name}`, source, extra));
    p("shape", `__.shape(${F})`);
    for (const k of ["length", "name", "prototype"]) p(`${k} descriptor`, `__.descShape(${F}, ${JSON.stringify(k)})`);
    p("own keys", `Reflect.ownKeys(${F}).map(String).join()`);
    p("prototype.constructor descriptor", `__.descShape(${F}.prototype, "constructor")`);
    p("prototype's own keys", `Reflect.ownKeys(${F}.prototype).map(String).join()`);
    p(
      "prototype chain",
      `[Object.getPrototypeOf(${F}) === Function, Object.getPrototypeOf(${F}) === Function.prototype, Object.getPrototypeOf(${F}.prototype) === Function.prototype, ${F}.prototype.constructor === ${F}]`,
    );
    p(
      "instances",
      `[Object.getPrototypeOf(${instance}) === ${F}.prototype, ${instance}.constructor === ${F}, ${instance} instanceof ${F}, ${instance} instanceof Function, ${F} instanceof Function, (() => {}) instanceof ${F}, ({}) instanceof ${F}]`,
    );
    p(
      "Symbol.hasInstance",
      `[${F}[Symbol.hasInstance] === Function.prototype[Symbol.hasInstance], ${F}[Symbol.hasInstance](${instance})]`,
    );
    p("source text", `[String(${F}), Function.prototype.toString.call(${F}), typeof ${F}]`);
    p("extensible, frozen, sealed", `[Object.isExtensible(${F}), Object.isFrozen(${F}), Object.isSealed(${F})]`);
    p("a property set on it", `(() => { ${F}.extra = 1; return [${F}.extra, delete ${F}.extra, ${F}.extra]; })()`);
    p("assigning its name throws", `(() => { ${F}.name = 'x'; })()`);
    p("its prototype is not writable", `(() => { ${F}.prototype = {}; })()`);
    p(
      "its prototype's constructor assigned",
      `(() => { const c = ${F}.prototype.constructor; ${F}.prototype.constructor = 1; const r = ${F}.prototype.constructor; return r; })()`,
      { isolated: true },
    );
    p(
      "a class extending it defines",
      `(() => { class X extends ${F} { static m() { return 'm'; } } return [typeof X, Object.getPrototypeOf(X) === ${F}, Object.getPrototypeOf(X.prototype) === ${F}.prototype, X.name, X.length, X.m(), X.prototype instanceof Function]; })()`,
    );
    p("a class extending it: shape", `__.shape(class X extends ${F} {})`);
    p("as new.target", `Reflect.construct(function () { return { made: new.target === ${F} }; }, [], ${F})`);
    p("as new.target for Object", `Object.getPrototypeOf(Reflect.construct(Object, [], ${F})) === ${F}.prototype`);
    p("bound: shape", `__.shape(${F}.bind(null))`);
    p("proxied: shape", `[typeof new Proxy(${F}, {}), new Proxy(${F}, {}).name, new Proxy(${F}, {}).length]`);
    p(
      "setPrototypeOf a function to it",
      `(() => { const f = function () {}; Object.setPrototypeOf(f, ${F}); return [f instanceof Function, f.constructor === Function, f.name, f.length]; })()`,
    );
    for (const [how, make] of INVOCATIONS) {
      for (const args of ["", "'return 1'"]) {
        p(`${how}(${args})`, make(F, args), { differs: "compile", detail: label });
      }
    }
    p("reached from an instance", `${instance}.constructor('return 1')`, { differs: "compile", detail: label });
    p("reached from the prototype", `Object.getPrototypeOf(${instance}).constructor()`, {
      differs: "compile",
      detail: label,
    });
  }
  const p = (name: string, source: string, extra: Partial<Program> = {}) =>
    out.push(expr(`Function family: ${name}`, source, extra));
  p("the global Function's descriptor", `__.descShape(globalThis, "Function")`);
  p("Function.prototype's own keys", "Reflect.ownKeys(Function.prototype).map(String).join()");
  for (const k of ["length", "name", "constructor", "call", "apply", "bind", "toString", "caller", "arguments"]) {
    p(`Function.prototype.${k}`, `__.descShape(Function.prototype, ${JSON.stringify(k)})`);
  }
  p("Function.prototype[Symbol.hasInstance]", "__.descShape(Function.prototype, Symbol.hasInstance)");
  p(
    "Function.prototype is callable",
    "[typeof Function.prototype, Function.prototype(), __.shape(Function.prototype)]",
  );
  p(
    "every function's constructor",
    "[(() => {}).constructor === Function, function () {}.constructor === Function, Object.constructor === Function, Function.constructor === Function, class {}.constructor === Function, Math.max.constructor === Function]",
  );
  p(
    "the four constructors are distinct",
    "new Set([Function, Object.getPrototypeOf(async () => {}).constructor, Object.getPrototypeOf(function* () {}).constructor, Object.getPrototypeOf(async function* () {}).constructor]).size",
  );
  p(
    "the generator prototypes' chain",
    "[Object.getPrototypeOf(function* () {}).prototype === Object.getPrototypeOf((function* () {})()).__proto__, __.descShape(Object.getPrototypeOf(function* () {}), 'prototype'), __.descShape(Object.getPrototypeOf(async function* () {}), 'prototype')]",
  );
  p(
    "Symbol.toStringTag of the prototypes",
    "[async () => {}, function* () {}, async function* () {}].map((f) => Object.prototype.toString.call(f) + ' ' + __.descShape(Object.getPrototypeOf(f), Symbol.toStringTag))",
  );
  p("Function.prototype.toString of a user function", "Function.prototype.toString.call(function f(a) { return a; })");
  p(
    "a class that extends null",
    "(() => { class X extends null {} return [typeof X, Object.getPrototypeOf(X) === Function.prototype]; })()",
  );
  p(
    "Function subclass' static inheritance",
    "(() => { class X extends Function {} return [X.length, X.name, 'prototype' in X, X.call === Function.call]; })()",
  );
  p("typeof eval", "typeof eval", { differs: "eval", detail: "typeof" });
  p("eval('1')", "eval('1')", { differs: "eval" });
  p("indirect eval", "(0, eval)('1')", { differs: "eval" });
  p("eval through globalThis", "[typeof globalThis.eval, 'eval' in globalThis].join()", { differs: "removed" });
  return out;
}

const PROGRAMS = programs();

describeAgainstRaw("Function family: hand-written programs against the raw engine", PROGRAMS, { timeoutMs: 120_000 });

describe("Function family: generated invocations", () => {
  it("every route to a Function-family constructor throws the sandbox's TypeError", async () => {
    const cases = fc
      .tuple(
        fc.constantFrom(...KINDS),
        fc.constantFrom(...INVOCATIONS),
        fc.array(fc.constantFrom(...ARGS), { maxLength: 2 }),
        fc.constantFrom("", "new Proxy(F, {})", "F.bind(undefined)"),
      )
      .map(([[label, F], [how, make], args, wrap]): Program => {
        // A bound function has no `prototype`: routes through `prototype` or `extends` start from the constructor.
        const target = wrap === "" || /prototype|subclass/.test(how) ? "F" : wrap;
        return {
          name: `${label} through ${how} of ${target} with (${args.join(", ")})`,
          body: `const F = ${F};\nreturn ${make(target === "F" ? "F" : `(${target})`, args.filter(Boolean).join(", "))};`,
          differs: "compile",
          detail: label,
        };
      });
    await checkProperty(cases, { numRuns: 10, batch: 30, seed: 19 });
  }, 120_000);
});
