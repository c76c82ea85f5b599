/**
 * Property tests with hostile values: shared-reference bombs, huge and sparse lengths, deep nesting and
 * adversarial strings, built inside the sandbox and handed to every host path that touches guest data. Whatever
 * the value, each path ends with its documented outcome, and the host's work stays bounded: a run settles within
 * its caps, a host walk stops at its budget.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { STATUSES } from "../conformance/helpers.js";
import { expectHealthy, sandbox } from "./helpers.js";

/** Strings that were super-linear for some host parser, or that bend formatting and escaping. */
const ADVERSARIAL_STRINGS = [
  "' ('.repeat(50_000)",
  "'at ' + ' ('.repeat(50_000)",
  "':1'.repeat(50_000)",
  '"\'".repeat(50_000)',
  "'%s%d%o%j%c'.repeat(10_000)",
  "'\\\\u0000\\\\'.repeat(20_000)",
  "'\\u0000\\ud800'.repeat(20_000)",
  "'x'.repeat(1 << 20)",
  "'$'.repeat(10_000)",
];

/** A guest expression for a hostile value; `leaf` is one of the strings above or a number. */
const hostileValue = fc.oneof(
  // Shared-reference bombs: 2^steps nodes as a tree, a few hundred bytes as a tape.
  fc
    .record({
      steps: fc.integer({ min: 20, max: 48 }),
      shape: fc.constantFrom("[x, x]", "{ a: x, b: x }", "new Map([[1, x], [2, x]])", "new Set([x, [x]])", "[x, x, x]"),
      leaf: fc.oneof(fc.constantFrom(...ADVERSARIAL_STRINGS), fc.constant("0")),
    })
    .map(
      ({ steps, shape, leaf }) =>
        `(() => { let x = ${leaf}; for (let i = 0; i < ${steps}; i++) x = ${shape}; return x; })()`,
    ),
  // Huge and sparse lengths.
  fc.constantFrom(
    "new Array(2 ** 32 - 1)",
    "Object.assign(new Array(2 ** 32 - 1), { 7: 'x', key: 'y' })",
    "[new Array(2 ** 31), new Array(2 ** 31)]",
    "new Map([[new Array(2 ** 32 - 1), 1]])",
  ),
  // Deep nesting, up to past the host's depth limits.
  fc
    .integer({ min: 500, max: 5000 })
    .map((depth) => `(() => { let x = 0; for (let i = 0; i < ${depth}; i++) x = [x]; return x; })()`),
  fc.constantFrom(...ADVERSARIAL_STRINGS),
);

/** Every way a run hands a value to the host. */
const SINKS = {
  result: (v: string) => `export default ${v};`,
  thrown: (v: string) => `throw ${v};`,
  "thrown error stack": (v: string) => `const e = new Error("m"); e.stack = String(${v}).slice(0, 1 << 20); throw e;`,
  log: (v: string) => `console.log(${v}, ${v}); export default 1;`,
  report: (v: string) => `report(${v}); export default 1;`,
  "bridge argument": (v: string) => `export default await sink(${v});`,
  structuredClone: (v: string) => `export default structuredClone(${v}) === 0;`,
};

describe("property: hostile values through every path of a run", () => {
  const run = sandbox({ safetyCap: { cpuTimeMs: 1_000 } });

  it("each settles with a status, within its caps, and leaves the sandbox healthy", async () => {
    await fc.assert(
      fc.asyncProperty(hostileValue, fc.constantFrom(...Object.keys(SINKS)), async (value, sinkName) => {
        const sink = SINKS[sinkName as keyof typeof SINKS];
        const started = performance.now();
        const handle = run(sink(value), {
          language: "javascript",
          memoryLimitBytes: 32 * 1024 * 1024,
          globals: { sink: (x: unknown) => typeof x },
        });
        const result = await handle;
        const elapsed = performance.now() - started;
        expect(STATUSES).toContain(result.status);
        expect(result.error === undefined).toBe(result.status === "success");
        // Only catches a hang: the budgets keep every host path far below this.
        expect({ sinkName, value, hung: elapsed > 20_000 }).toEqual({ sinkName, value, hung: false });
        if (result.error !== undefined) expect(result.error.message.length).toBeLessThanOrEqual(1 << 21);
      }),
      { numRuns: 80, seed: 91 },
    );
    await expectHealthy(run);
  }, 240_000);
});
