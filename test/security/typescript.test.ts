/**
 * TypeScript is the run's work, bounded like the rest of it: no parser whose time explodes with nesting (the
 * TypeScript compiler's doubled and more per level of nested `async (`), SWC metered (its fuel is the run's, at most
 * an allowance per character, and a stop lands at its refills: in-thread with a frozen clock too), transpiling
 * counted by a thread's watchdog, and a stopped run's worker replaced however long SWC would have taken.
 */
import { describe, expect, it } from "vitest";
import { createSandbox } from "../../node/index.js";
import { TRANSPILE_BASE_FUEL, TRANSPILE_FUEL_PER_CHAR } from "../../src/core/transpile.js";

/** An enum beside 12 nested `async (x, async (`: 259 bytes that held the compiler's parser for tens of seconds. */
const NESTED_ASYNC = `enum E { A }\nlet x = ${"async (x, async (".repeat(12)}${")".repeat(12)};\nexport default E.A;\n`;
/** `prefix`, then chains of `<` `depth` deep up to 100 KiB (the hosts' MAX_CODE_BYTES). */
function lessThanChains(prefix: string, depth: number): string {
  const line = `a${"<b".repeat(depth)};\n`;
  return prefix + line.repeat(Math.floor((102_400 - prefix.length) / line.length));
}
/**
 * SWC tries them as type arguments at each `<`: 600 deep, ~44,000 units of its fuel per character, 12-26 s of its
 * parser unmetered (well short of the depth that overflows its stack, which would end the transpile at once).
 */
const ATTACK = lessThanChains("enum E { A }\n", 600);
/** 12 deep: ~700 units per character, within the allowance (~0.3 s). */
const COSTLY = lessThanChains("", 12);

describe("TypeScript within the run's limits", () => {
  for (const threads of [false, true]) {
    it(`the nested-async enum program is a syntax error found at once (threads: ${threads})`, async () => {
      const result = await createSandbox({ threads }).runCode(NESTED_ASYNC);
      expect([result.status, result.error?.name, result.error?.line]).toEqual(["link_error", "SyntaxError", 2]);
    }, 10_000);
  }

  for (const prefix of ["enum E { A }\n", ""]) {
    const mode = prefix === "" ? "strip-only" : "transform";
    it(`in-thread with a frozen clock, 100 KiB of \`<\` chains fail at their allowance of SWC's fuel (${mode} mode)`, async () => {
      const sandbox = createSandbox({ threads: false, clock: () => 0 });
      const source = lessThanChains(prefix, 600);
      const allowance = TRANSPILE_BASE_FUEL + TRANSPILE_FUEL_PER_CHAR * source.length;
      const result = await sandbox.runCode(source);
      expect([result.status, result.error]).toEqual([
        "link_error",
        {
          name: "SyntaxError",
          message: `Source is too costly to transpile: over ${allowance} units of fuel for its ${source.length} characters`,
          line: 1,
          column: 1,
          filename: expect.any(String),
        },
      ]);
      // The instance stopped mid-run was replaced: enums, positions as before.
      const next = await sandbox.runCode(
        "enum E { A = 2 }\nnamespace N { export const b = 1 }\nexport default E.A + N.b;",
      );
      expect(next.result).toBe(3);
      const failed = await sandbox.runCode("enum E { A }\nconst a: = 1;");
      expect([failed.error?.name, failed.error?.line, failed.error?.column]).toEqual(["SyntaxError", 2, 10]);
    }, 60_000);
  }

  it("in-thread with a frozen clock, transpiling spends the run's fuel: the safety cap ends it", async () => {
    const result = await createSandbox({ threads: false, clock: () => 0, safetyCap: { fuel: 10_000_000 } }).runCode(
      COSTLY,
    );
    expect([result.status, result.error?.message]).toEqual([
      "terminated",
      "Execution stopped by the safety cap after 10000000 units of fuel",
    ]);
  }, 60_000);

  it("in-thread, an outside stop lands inside a transpile", async () => {
    let asked = 0;
    const sandbox = createSandbox({ threads: false, clock: () => 0, interrupted: () => ++asked > 3 });
    const result = await sandbox.runCode(`${ATTACK}// stopped`);
    expect([result.status, result.error?.message]).toEqual(["terminated", "Execution terminated by the caller"]);
    expect(asked).toBeLessThan(100);
  }, 10_000);

  it("on a worker thread the watchdog counts transpiling: the safety cap ends a source SWC takes a while over", async () => {
    const sandbox = createSandbox({ safetyCap: { cpuTimeMs: 100 } });
    const result = await sandbox.runCode(COSTLY);
    expect([result.status, result.error?.message]).toEqual([
      "terminated",
      "Execution stopped by the safety cap after 100 ms of CPU time",
    ]);
    expect((await sandbox.runCode("const n: number = 2; export default n")).result).toBe(2);
  });

  it("terminate() during a transpile on a worker thread ends it, and the next run gets a fresh worker", async () => {
    const sandbox = createSandbox();
    const run = sandbox.runCode(`${COSTLY}// terminated`);
    setTimeout(() => run.terminate(), 50);
    expect((await run).status).toBe("terminated");
    expect((await sandbox.runCode("const n: number = 3; export default n")).result).toBe(3);
  });
});
