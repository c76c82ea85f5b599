/**
 * The cells' parser (core/cell-parser.ts) decides as acorn does, in time linear in the cell: a fast-check differential
 * over programs of nested scopes and declarations against acorn's own `parse`, and the attacks whose parse took
 * seconds to minutes of host CPU in acorn (charged 80 units a character), each bounded only against a hang.
 */
import { parse } from "acorn";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { parseCellSource } from "../../src/core/cell-parser.js";
import { cellScript, CELL_PARSE_OPTIONS as OPTIONS } from "../../src/core/cell-source.js";

/** What a parse gives: its tree as JSON, or its error's message (with acorn's position). */
function outcome(parser: (source: string) => unknown, source: string): string {
  try {
    return JSON.stringify(parser(source));
  } catch (error) {
    return `${(error as Error).name}: ${(error as Error).message}`;
  }
}

/** Programs of declarations of two names in nested blocks, functions, catch clauses, class static blocks... */
const program = fc.letrec((tie) => {
  const name = fc.constantFrom("a", "b");
  const body = fc.array(tie("statement") as fc.Arbitrary<string>, { maxLength: 4 }).map((s) => s.join("\n"));
  return {
    statement: fc.oneof(
      { depthSize: "small", withCrossShrink: true },
      name.map((n) => `let ${n};`),
      name.map((n) => `const ${n} = 0;`),
      name.map((n) => `var ${n};`),
      name.map((n) => `function ${n}() {}`),
      name.map((n) => `class ${n} {}`),
      name.map((n) => `${n};`),
      fc.constantFrom("await 0;", "new.target;", "yield;", "this;", "super.x;", "return;", "arguments;"),
      body.map((b) => `{ ${b} }`),
      body.map((b) => `(function () { ${b} })();`),
      body.map((b) => `(async function () { ${b} })();`),
      body.map((b) => `(function* () { ${b} })();`),
      body.map((b) => `(() => { ${b} })();`),
      body.map((b) => `(async () => { ${b} })();`),
      fc.tuple(name, body).map(([n, b]) => `try {} catch (${n}) { ${b} }`),
      fc.tuple(name, body).map(([n, b]) => `try {} catch ({ ${n} }) { ${b} }`),
      body.map((b) => `class C { static { ${b} } x = (() => { ${b} })(); m() { ${b} } }`),
      fc.tuple(name, body).map(([n, b]) => `for (let ${n} of []) { ${b} }`),
      fc.tuple(name, body).map(([n, b]) => `for (var ${n} in {}) { ${b} }`),
      body.map((b) => `switch (0) { case 0: ${b} }`),
      fc.tuple(name, body).map(([n, b]) => `function f(${n}) { ${b} }`),
      body.map((b) => `"use strict"; ${b}`),
      body.map((b) => `label: { ${b} }`),
    ),
  };
}).statement;

describe("the cells' parser", () => {
  it("decides every program as acorn does: the same tree, or the same error at the same place", () => {
    fc.assert(
      fc.property(fc.array(program, { maxLength: 6 }), (statements) => {
        const source = statements.join("\n");
        expect(outcome((s) => parseCellSource(s, OPTIONS), source)).toBe(outcome((s) => parse(s, OPTIONS), source));
      }),
      { numRuns: 10_000 },
    );
  });

  it("leaves regular expressions to the engine, which compiles them metered", () => {
    // acorn refuses a duplicate group name; the engine does too, when the cell runs.
    expect(cellScript("/(?<a>x)(?<a>y)/").script).toBe("/(?<a>x)(?<a>y)/");
  });

  // Each took seconds to minutes of host CPU in acorn, charged as milliseconds: bounded only against a hang.
  const HANG_MS = 20_000;
  const names = (count: number) => Array.from({ length: count }, (_, i) => `a${i}`).join(",");
  it.each([
    // 17 s for 137 KB in acorn: every `var` was recorded in every block it is hoisted through.
    ["var names deep in blocks", `${"{".repeat(2_000)}var ${names(40_000)}${"}".repeat(2_000)}`],
    // 2 s for 270 KB, 20 s for 1.1 MB: each `let` searched the scope's names so far.
    ["let names in one scope", `let ${names(250_000)}`],
    // 400 ms for 82 KB: every identifier walked the scopes out to its function.
    ["identifiers deep in blocks", `${"{".repeat(2_500)}${"a;".repeat(800_000)}${"}".repeat(2_500)}`],
    // 7.5 s for 280 KB: each group name compared with every alternative before it.
    ["a regular expression's alternatives", `/${"(?<a>)|".repeat(100_000)}(?<a>)/`],
  ])(
    "parses %s in linear time",
    (_, source) => {
      const started = performance.now();
      expect(() => cellScript(source)).not.toThrow();
      expect(performance.now() - started).toBeLessThan(HANG_MS);
    },
    120_000,
  );
});
