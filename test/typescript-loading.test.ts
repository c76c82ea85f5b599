/**
 * TypeScript in Node: erasable code is stripped by SWC's strip-only mode without loading the TypeScript compiler;
 * the compiler is loaded for what stripping refuses (an enum here), with the same positions as everywhere else.
 * Each case runs in a fresh Node process, as the first TypeScript run of a process, on the caller's thread
 * (`threads: false`), whose module cache shows whether the compiler loaded (a worker thread loads it alike).
 */
import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { swcStripper } from "../node/strip.js";

const ENTRY = fileURLToPath(new URL("../dist/node/index.js", import.meta.url));

/** Runs `source` as the first TypeScript run of a new process: its status, result or error, and whether the compiler loaded. */
function firstRun(source: string) {
  const script = `
import { createRequire } from "node:module";
const { createSandbox } = await import(${JSON.stringify(ENTRY)});
const result = await createSandbox({ threads: false }).runCode(${JSON.stringify(source)});
const compiler = Object.keys(createRequire(import.meta.url).cache).some((path) => path.endsWith("/typescript/lib/typescript.js"));
console.log(JSON.stringify({ status: result.status, result: result.result, error: result.error && [result.error.name, result.error.message, result.error.line, result.error.column], compiler }));`;
  return JSON.parse(execFileSync(process.execPath, ["--input-type=module", "-e", script], { encoding: "utf8" }));
}

describe("TypeScript in a fresh Node process", () => {
  it("erasable code runs without the compiler, positions exact", () => {
    expect(
      firstRun(
        "interface P { x: number }\nconst p: P = { x: 1 } as P;\nconst f = <T,>(v: T): T => v;\nexport default f<number>(p.x satisfies number) + 1;",
      ),
    ).toEqual({ status: "success", result: 2, compiler: false });
    expect(firstRun('const a: "é😀" = "x" as const; const b: number = 1;\nnull!.x;')).toEqual({
      status: "error",
      error: ["TypeError", "cannot read property 'x' of null", 2, 6],
      compiler: false,
    });
  });

  it("an enum loads the compiler, and a syntax error is the compiler's, as on every platform", () => {
    expect(firstRun("enum E { A = 2 }\nexport default E.A;")).toEqual({ status: "success", result: 2, compiler: true });
    expect(firstRun("const a: = 1;")).toEqual({
      status: "link_error",
      error: ["SyntaxError", "Type expected.", 1, 10],
      compiler: true,
    });
  });
});

describe("SWC's strip-only mode as the stripper", () => {
  it("blanks types in place; refuses what it cannot erase; after a trap in its wasm the next source gets a fresh instance", () => {
    const strip = swcStripper();
    const annotation = ': "é😀"'; // 7 UTF-16 units: blanked to as many spaces, so columns after it stay exact
    expect(strip(`const a${annotation} = "x";\nlet b = c!;`)).toBe(`const a${" ".repeat(7)} = "x";\nlet b = c ;`);
    expect([strip("enum E { A }"), strip("const a: = 1;")]).toEqual([undefined, undefined]);
    // 20,000 nested parentheses overflow its stack: its memory is not trusted after that (later calls trapped).
    expect(strip(`let x = ${"(".repeat(20_000)}a${")".repeat(20_000)};`)).toBe(undefined);
    expect(strip("let n: number = 1;")).toBe("let n         = 1;");
  });
});
