/**
 * TypeScript is the run's work, bounded like the rest of it: no parser whose time explodes with nesting (the
 * TypeScript compiler's doubled and more per level of nested `async (`), transpiling counted by a thread's watchdog,
 * and a stopped run's worker replaced however long SWC would have taken.
 */
import { describe, expect, it } from "vitest";
import { createSandbox } from "../../node/index.js";

/** An enum beside 12 nested `async (x, async (`: 259 bytes that held the compiler's parser for tens of seconds. */
const NESTED_ASYNC = `enum E { A }\nlet x = ${"async (x, async (".repeat(12)}${")".repeat(12)};\nexport default E.A;\n`;
/**
 * Chains of `<` that SWC tries as type arguments at each one: about 5 s of its parser for 30 KB (each chain well
 * short of the depth that overflows its stack, which would end the transpile at once).
 */
const LESS_THAN_CHAINS = `a${"<b".repeat(500)};\n`.repeat(30);

describe("TypeScript within the run's limits", () => {
  for (const threads of [false, true]) {
    it(`the nested-async enum program is a syntax error found at once (threads: ${threads})`, async () => {
      const result = await createSandbox({ threads }).runCode(NESTED_ASYNC);
      expect([result.status, result.error?.name, result.error?.line]).toEqual(["link_error", "SyntaxError", 2]);
    }, 10_000);
  }

  it("on a worker thread the watchdog counts transpiling: the safety cap ends a source SWC takes seconds over", async () => {
    const sandbox = createSandbox({ safetyCap: { cpuTimeMs: 100 } });
    const result = await sandbox.runCode(LESS_THAN_CHAINS);
    expect([result.status, result.error?.message]).toEqual([
      "terminated",
      "Execution stopped by the safety cap after 100 ms of CPU time",
    ]);
    expect((await sandbox.runCode("const n: number = 2; export default n")).result).toBe(2);
  });

  it("terminate() during a transpile on a worker thread ends it, and the next run gets a fresh worker", async () => {
    const sandbox = createSandbox();
    const run = sandbox.runCode(`${LESS_THAN_CHAINS}// terminated`);
    setTimeout(() => run.terminate(), 50);
    expect((await run).status).toBe("terminated");
    expect((await sandbox.runCode("const n: number = 3; export default n")).result).toBe(3);
  });
});
