/**
 * A cell's source rewritten into the script the engine evaluates: its text, and its meaning in the engine itself
 * (quickjs-emscripten's release build, each cell a global script with top-level await, flag 128 =
 * JS_EVAL_TYPE_GLOBAL | JS_EVAL_FLAG_ASYNC), in a bare context holding only the cell helper and two modules.
 */
import variant from "@jitl/quickjs-wasmfile-release-sync";
import { newQuickJSWASMModuleFromVariant, type QuickJSContext, type QuickJSWASMModule } from "quickjs-emscripten-core";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { CELL_HELPER_KEY, CELL_HELPER_SOURCE } from "../../src/core/cell-helper.js";
import { CellSyntaxError, cellScript } from "../../src/core/cell-source.js";

const GLOBAL_ASYNC = 128;
const MODULES: Record<string, string> = {
  m: "export default 'the default'; export const a = 1; export const b = 2;",
  side: "globalThis.sideEffects = (globalThis.sideEffects ?? 0) + 1;",
};

type Outcome = { value: unknown } | { error: { name: string; message: string; stack: string } };

let engine: QuickJSWASMModule;
beforeAll(async () => {
  engine = await newQuickJSWASMModuleFromVariant(variant);
});

const contexts: QuickJSContext[] = [];
afterEach(() => {
  for (const ctx of contexts.splice(0)) {
    ctx.dispose();
    ctx.runtime.dispose();
  }
});

/** A context as a session's: the helper installed once, as the caller installs it (hidden, read-only, fixed). */
function newContext(): QuickJSContext {
  const runtime = engine.newRuntime();
  runtime.setModuleLoader((name) => MODULES[name] ?? { error: new Error(`no module ${name}`) });
  const ctx = runtime.newContext();
  contexts.push(ctx);
  const install = `Object.defineProperty(globalThis, ${JSON.stringify(CELL_HELPER_KEY)}, { value: ${CELL_HELPER_SOURCE} })`;
  ctx.unwrapResult(ctx.evalCode(install, "<helper>")).dispose();
  return ctx;
}

/** Evaluates `script` as the engine evaluates a cell: its completion value, or what it threw. */
function evaluate(ctx: QuickJSContext, script: string): Outcome {
  const result = ctx.evalCode(script, "cell", GLOBAL_ASYNC);
  if (result.error) return { error: result.error.consume((error) => ctx.dump(error)) };
  ctx.runtime.executePendingJobs();
  const state = result.value.consume((promise) => ctx.getPromiseState(promise));
  if (state.type === "pending") throw new Error("the cell did not settle");
  if (state.type === "fulfilled") return { value: state.value.consume((completion) => ctx.dump(completion).value) };
  return {
    error: state.error.consume((error) => ({
      ...ctx.dump(error),
      stack: ctx.getProp(error, "stack").consume((stack) => ctx.dump(stack)),
    })),
  };
}

/** A session: each call runs one cell, rewritten, in the same context. */
function newSession(): (cell: string) => Outcome {
  const ctx = newContext();
  return (cell) => evaluate(ctx, cellScript(cell).script);
}

const value = (outcome: Outcome) => {
  if ("error" in outcome) throw new Error(`the cell threw ${outcome.error.name}: ${outcome.error.message}`);
  return outcome.value;
};
const thrown = (outcome: Outcome) => ("error" in outcome ? outcome.error : undefined);

describe("cellScript's text", () => {
  it("leaves a cell that declares nothing as written", () => {
    expect(cellScript("1 + 1")).toEqual({ script: "1 + 1", specifiers: [] });
    const source = "function f() { let x = 1; var y; class Z {} }\n{ let a; class B {} }\nf()";
    expect(cellScript(source)).toEqual({ script: source, specifiers: [] });
  });

  it("opens the names before the first declaration and rewrites each declaration in place", () => {
    const helper = `this[${JSON.stringify(CELL_HELPER_KEY)}]`;
    expect(cellScript("f();\nconst {a, b: [c]} = o, d = 1; let e\nclass K {}\nvar v").script).toBe(
      `f();var {} = (${helper}.open(["a","c","d","e","K"], ["v"]), 0);\n` +
        `var {} = ( {a, b: [c]} = o, d = 1, ${helper}.seal(["a","c","d"]), 0); var {} = ( e = void 0, 0);\n` +
        "var {} = (K = class K {}, 0);\nvar v",
    );
  });

  it("rewrites imports into reads of import() on their first line, keeping their line breaks", () => {
    const helper = `this[${JSON.stringify(CELL_HELPER_KEY)}]`;
    const { script, specifiers } = cellScript(
      'import d, {\n  a as b,\n} from "m";\nimport * as ns from "n"\nimport "m"',
    );
    expect(script).toBe(
      `var {} = (${helper}.open(["d","b","ns"], []), 0);` +
        `var {} = ({"default": d, "a": b} = ${helper}.imports(await import("m"), "m", ["default","a"]), ${helper}.seal(["d","b"]), 0);\n\n\n` +
        `var {} = (ns = await import("n"), ${helper}.seal(["ns"]), 0);\n` +
        'var {} = (await import("m"), 0);',
    );
    expect(specifiers).toEqual(["m", "n"]);
    expect(cellScript('import j from "m" with { type: "json" }').script).toContain(
      'await import("m", { with: { "type": "json" } })',
    );
  });

  it("keeps a hashbang line a comment of the same length", () => {
    expect(cellScript("#!/usr/bin/env runcode\nlet x = 1").script).toBe(
      `var {} = (this[${JSON.stringify(CELL_HELPER_KEY)}].open(["x"], []), 0);//` +
        "/usr/bin/env runcode\nvar {} = ( x = 1, 0);",
    );
  });

  it("reaches the helper through top-level this and its key, adding no name of its own", () => {
    const { script } = cellScript('import * as n from "m"; const {a} = o; let b; class C {}; var d');
    const words = new Set(script.replaceAll(/"[^"]*"/g, "").match(/[A-Za-z_$][\w$]*/g));
    expect([...words].sort()).toEqual([
      "C",
      "a",
      "await",
      "b",
      "class",
      "d",
      "import",
      "n",
      "o",
      "open",
      "seal",
      "this",
      "var",
      "void",
    ]);
  });
});

describe("a cell's refusals", () => {
  const refusal = (source: string) => {
    try {
      cellScript(source);
    } catch (error) {
      expect(error).toBeInstanceOf(CellSyntaxError);
      const { name, message, line, column } = error as CellSyntaxError;
      return { name, message, line, column };
    }
    throw new Error("accepted");
  };

  it("gives the parser's message without its position, and a 1-based line and column", () => {
    expect(refusal("let x = 1;\nlet y = ;")).toEqual({
      name: "SyntaxError",
      message: "Unexpected token",
      line: 2,
      column: 9,
    });
    expect(refusal("let x = 1; let x = 2")).toEqual({
      name: "SyntaxError",
      message: "Identifier 'x' has already been declared",
      line: 1,
      column: 16,
    });
    expect(refusal("return 1")).toEqual({
      name: "SyntaxError",
      message: "'return' outside of function",
      line: 1,
      column: 1,
    });
  });

  it("refuses exports, imports below the top level and import.meta", () => {
    expect(refusal("const a = 1;\n  export { a }")).toEqual({
      name: "SyntaxError",
      message: "A cell cannot export: it is a script",
      line: 2,
      column: 3,
    });
    expect(refusal("export default function () {}").message).toBe("A cell cannot export: it is a script");
    expect(refusal('if (x) {\n import a from "m" }')).toEqual({
      name: "SyntaxError",
      message: "'import' and 'export' may only appear at the top level",
      line: 2,
      column: 2,
    });
    expect(refusal("f(() => import.meta)")).toEqual({
      name: "SyntaxError",
      message: "Cannot use 'import.meta' outside a module",
      line: 1,
      column: 9,
    });
  });

  it("refuses a source nested deeper than the host's stack lets the parser go", () => {
    // Where the parser stops depends on the host's stack.
    expect(refusal("[".repeat(100_000))).toEqual({
      name: "SyntaxError",
      message: "Not enough stack space to parse input",
      line: 1,
      column: expect.any(Number),
    });
  });
});

describe("a cell's declarations in the engine", () => {
  it("stay for later cells: let, const, class, var, function and destructuring", () => {
    const run = newSession();
    expect(
      value(run("let a = 1; const b = 2; class C { m() { return a + b } }; var v = 3; function f() { return v }")),
    ).toBe(undefined);
    expect(value(run("[new C().m(), f(), a, b]"))).toEqual([3, 3, 1, 2]);
    expect(value(run("const {x, y: [z = 4], ...rest} = {x: 1, y: [], p: 2, q: 3}; let u, [w = 5] = []"))).toBe(
      undefined,
    );
    expect(value(run("[x, z, rest, u === undefined, w, 'u' in globalThis]"))).toEqual([
      1,
      4,
      { p: 2, q: 3 },
      true,
      5,
      true,
    ]);
  });

  it("may be declared again by a later cell, with any kind", () => {
    const run = newSession();
    run("let x = 1; const y = 2; class Z {}");
    expect(value(run("const x = 'x2'; let y = 'y2'; let Z = 'Z2'; [x, y, Z]"))).toEqual(["x2", "y2", "Z2"]);
    run("const k = 1");
    expect(value(run("class k {}; typeof k"))).toBe("function");
    run("const c = 1");
    expect(value(run("var c = 2; c"))).toBe(2);
    run("const i = 0");
    expect(value(run("for (var i = 0; i < 3; i++); i"))).toBe(3);
    run("const g = 1");
    expect(value(run("function g() { return 'g' } g()"))).toBe("g");
  });

  it("may use names the global object inherits, without reaching what it inherits", () => {
    const run = newSession();
    expect(value(run("let __proto__ = { a: 1 }; const toString = 2; [__proto__.a, toString]"))).toEqual([1, 2]);
    expect(
      value(run("[Object.getPrototypeOf(globalThis) === Object.prototype, typeof Object.prototype.toString]")),
    ).toEqual([true, "function"]);
  });

  it("let a later cell's block-level function (a var of the script) replace a const", () => {
    const run = newSession();
    run("const g = 1");
    expect(value(run("{ function g() { return 2 } }\ng()"))).toBe(2);
  });

  it("share one binding with the cell's closures", () => {
    const run = newSession();
    run("let n = 0; const next = () => ++n; function read() { return n }");
    expect(value(run("next(); next(); [n, read()]"))).toEqual([2, 2]);
    run("n = 10");
    expect(value(run("next()"))).toBe(11);
  });

  it("make const and import names read-only: a sloppy assignment does nothing, a strict one throws", () => {
    const run = newSession();
    run("const k = 1; import { a } from 'm'");
    expect(value(run("k = 2; a = 3; [k, a]"))).toEqual([1, 1]);
    expect(thrown(run("(() => { 'use strict'; k = 2 })()"))).toMatchObject({ name: "TypeError" });
  });

  it("name their functions and classes as declarations do", () => {
    const run = newSession();
    expect(value(run("let f = () => 1, {g = function () {}} = {}; class K {}; [f.name, g.name, K.name]"))).toEqual([
      "f",
      "g",
      "K",
    ]);
  });

  it("are uninitialized from the cell's first declaration until their own runs", () => {
    const run = newSession();
    run("let t = 1");
    expect(thrown(run("let u = 0;\nt; let t = 2"))).toMatchObject({
      name: "ReferenceError",
      message: "t is not initialized",
    });
    expect(thrown(run("t"))).toMatchObject({ name: "ReferenceError", message: "t is not initialized" });
    expect(value(run("var t; t"))).toBe(undefined);
    expect(value(run("let t = 3; t"))).toBe(3);
  });

  it("refuse a lexical name held by a var, a function or a built-in, before changing anything, as the engine does", () => {
    const run = newSession();
    run("var v = 1; function f() {}");
    expect(thrown(run("let w = 1; let v = 2"))).toMatchObject({ name: "SyntaxError", message: "redeclaration of 'v'" });
    expect(value(run("[v, typeof w]"))).toEqual([1, "undefined"]);
    expect(thrown(run("class f {}"))).toMatchObject({ name: "SyntaxError", message: "redeclaration of 'f'" });
    expect(thrown(run("const NaN = 1"))).toMatchObject({ name: "SyntaxError", message: "redeclaration of 'NaN'" });
  });

  it("work in a strict cell", () => {
    const run = newSession();
    expect(value(run("'use strict'; let s = 1; const {t} = {t: 2}; class U {}; [s, t, typeof U]"))).toEqual([
      1,
      2,
      "function",
    ]);
  });

  it("keep working when user code replaces what the helper uses", () => {
    const run = newSession();
    run("Object.defineProperty = Object.getOwnPropertyDescriptor = Object.hasOwn = null; globalThis = 0;");
    run("Object.prototype.get = () => 1; Object.prototype.value = 2; ReferenceError = SyntaxError = null;");
    expect(value(run("const k = 1; let x = 2; k = 5; [k, x]"))).toEqual([1, 2]);
    expect(thrown(run("let y = y"))).toMatchObject({ name: "ReferenceError", message: "y is not initialized" });
  });

  it("add no global but the cell's names", () => {
    const ctx = newContext();
    const before = value(evaluate(ctx, "Object.getOwnPropertyNames(globalThis)")) as string[];
    evaluate(ctx, cellScript("import * as ns from 'm'; let a = 1; const b = 2; class C {}; var d").script);
    const after = value(evaluate(ctx, "Object.getOwnPropertyNames(globalThis)")) as string[];
    expect(after.filter((name) => !before.includes(name))).toEqual(["d", "ns", "a", "b", "C"]);
  });
});

describe("a cell's imports in the engine", () => {
  it("bind the default, named exports and the namespace like const", () => {
    const run = newSession();
    expect(value(run("import d, { a as x, b } from 'm'; import * as ns from 'm'; [d, x, b, ns.a]"))).toEqual([
      "the default",
      1,
      2,
      1,
    ]);
    expect(value(run("import d, * as all from 'm'; [d, all.b]"))).toEqual(["the default", 2]);
  });

  it("evaluate a module for its effects once", () => {
    const run = newSession();
    expect(value(run("import 'side'; import 'side'; sideEffects"))).toBe(1);
  });

  it("refuse a name the module does not export, as the engine's link does", () => {
    const run = newSession();
    expect(thrown(run("import { nope } from 'm'"))).toMatchObject({
      name: "SyntaxError",
      message: "Could not find export 'nope' in module 'm'",
    });
  });
});

describe("a cell's completion value", () => {
  it("is the last expression statement's value; declarations give none, as in the engine", () => {
    const run = newSession();
    expect(value(run("1 + 1"))).toBe(2);
    expect(value(run("let x = 4;\nx"))).toBe(4);
    expect(value(run("await Promise.resolve(7)"))).toBe(7);
    expect(value(run("if (1) { 5 }"))).toBe(5);
    expect(value(run("let y = 1"))).toBe(undefined);
    expect(value(run("const z = 1"))).toBe(undefined);
    expect(value(run("class A {}"))).toBe(undefined);
    expect(value(run("function f() {}"))).toBe(undefined);
    expect(value(run("import * as ns from 'm'"))).toBe(undefined);
    // A declaration leaves the value before it, for every kind: the engine's own rule for var and function.
    expect(value(run("1; let w = 2"))).toBe(1);
    expect(value(run("2; var v = 3"))).toBe(2);
    expect(value(run("3; class B {}"))).toBe(3);
  });

  it("is not changed by a line that starts with ( or [ after a declaration without a semicolon", () => {
    const run = newSession();
    expect(value(run("let a\n(1)"))).toBe(1);
    expect(value(run("class K {}\n[1, 2].length"))).toBe(2);
    expect(value(run("const c = 3\n;[c]"))).toEqual([3]);
  });
});

describe("a cell's positions", () => {
  /** The stack's first position of what `source` throws, run as written in a fresh context. */
  const position = (outcome: Outcome) => /cell:(\d+:\d+)/.exec(thrown(outcome)?.stack ?? "")?.[1];

  // The engine places a failed property read at its `.`: `  null.x` fails at column 7.
  it.each([
    ["let a = 1;\n  null.x", "2:7"],
    ["const a = 1,\n  b = null.x", "2:11"],
    ["import * as ns from 'm'\nlet a = 1\n\n  null.x", "4:7"],
    ["import {\n  a,\n  b,\n} from 'm'\n    null.x", "5:9"],
    ["class A {\n  m() {}\n  static x = null.y\n}", "3:18"],
    ["x = 1\nlet y = 2\n  null.x", "3:7"],
    ["let /*\n*/ a = 1,\n  b\nnull.x", "4:5"],
  ])("keep line and column of %j where nothing was put before them on their line", (source, where) => {
    expect(position(newSession()(source))).toBe(where);
    // The same source with its declarations as var (which the rewrite leaves alone) throws at the same place.
    const plain = source.replace(/^(let|const)\b/gm, (keyword) => (keyword === "let" ? "var" : "var  "));
    if (!plain.includes("import")) expect(position(evaluate(newContext(), plain))).toBe(where);
  });

  it("keep the line of an error on the line of a rewritten declaration", () => {
    expect(position(newSession()("let a = 1; null.x"))?.split(":")[0]).toBe("1");
    expect(position(newSession()("0;\nconst b = null.x"))?.split(":")[0]).toBe("2");
  });
});
