/**
 * TypeScript in Node: SWC alone erases types, never the TypeScript compiler (whose parser's time is exponential in
 * some nestings). Each case runs in a fresh Node process, as the first TypeScript run of a process, on the caller's
 * thread (`threads: false`), whose module cache shows whether the compiler loaded (a worker thread loads it alike).
 */
import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { loadSwc } from "../../node/swc.js";
import type { FuelAccount } from "../../src/core/ports.js";
import { Transpiler } from "../../src/core/transpile.js";

const ENTRY = fileURLToPath(new URL("../../dist/bundle/index.js", import.meta.url));

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

  it("an enum, a namespace and a syntax error do not load the compiler either, positions exact", () => {
    expect(firstRun("enum E { A = 2 }\nnamespace N { export const b = 1 }\nexport default E.A + N.b;")).toEqual({
      status: "success",
      result: 3,
      compiler: false,
    });
    expect(firstRun("const a: = 1;")).toEqual({
      status: "link_error",
      error: ["SyntaxError", expect.stringContaining("Unexpected token `=`"), 1, 10],
      compiler: false,
    });
  });
  it("30 traps in SWC's wasm leave the process's memory as it was: each replaced instance is released", () => {
    const script = `
const { createSandbox } = await import(${JSON.stringify(ENTRY)});
const sandbox = createSandbox({ threads: false });
await sandbox.runCode("const a: number = 1; export default a");
// Wasm memories are freed after their instances are collected: a turn of the event loop between two collections.
const rss = async () => { globalThis.gc(); await new Promise((r) => setTimeout(r, 100)); globalThis.gc(); return process.memoryUsage().rss; };
const before = await rss();
for (let i = 0; i < 30; i++) await sandbox.runCode(\`// \${i}\\nlet x = \${"(".repeat(20_000)}a\${")".repeat(20_000)};\`);
console.log(JSON.stringify(((await rss()) - before) / 2 ** 20));`;
    const grown = JSON.parse(
      execFileSync(process.execPath, ["--expose-gc", "--input-type=module", "-e", script], { encoding: "utf8" }),
    );
    // Each trap kept its instance (~8 MiB) before: 250 MiB over 30.
    expect(grown).toBeLessThan(64);
  });
});

describe("SWC as the transpiler", () => {
  const transpiler = new Transpiler(loadSwc);
  const unlimited: FuelAccount = { fuelLeft: Number.POSITIVE_INFINITY, spend: () => {}, stopped: () => false };
  const transpile = (source: string) => transpiler.transpile(source, unlimited);

  it("blanks erasable types in place and maps what it transforms; after a trap in its wasm the next source gets a fresh instance", async () => {
    await transpiler.load();
    const annotation = ': "é😀"'; // 7 UTF-16 units: blanked to as many spaces, so columns after it stay exact
    expect(transpile(`const a${annotation} = "x";\nlet b = c!;`)).toEqual({
      code: `const a${" ".repeat(7)} = "x";\nlet b = c ;`,
    });
    expect(transpile("enum E { A }")).toMatchObject({ code: expect.stringContaining('E[E["A"] = 0] = "A"') });
    // 20,000 nested parentheses overflow its stack: its memory is not trusted after that (later calls trapped).
    expect(transpile(`let x = ${"(".repeat(20_000)}a${")".repeat(20_000)};`)).toEqual({
      message: "Source is nested too deeply to parse",
      line: 1,
      column: 1,
    });
    expect(transpile("let n: number = 1;")).toEqual({ code: "let n         = 1;" });
  });

  it("places a syntax error at its UTF-16 column after tabs, wide characters and astral ones", async () => {
    await transpiler.load();
    for (const before of ["\t", "中", "😀", "é\u0301", "😀中\t"]) {
      const line = `/* ${before} */ let z: = 1;`;
      expect([before, transpile(`let a = 1;\r\n${line}`)]).toEqual([
        before,
        { message: expect.stringContaining("Unexpected token `=`"), line: 2, column: line.indexOf("=") + 1 },
      ]);
    }
  });
});
