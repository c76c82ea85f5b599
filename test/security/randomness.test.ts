/**
 * Math.random: seeded for every run from the host's cryptographic source. The engine's own generator is seeded from
 * the clock when the context is made (xorshift64* over the microseconds, which this build only has to the
 * millisecond), so a run could recover its seed from `Date.now()` and one value, and replay its own or another run's
 * sequence.
 */
import { describe, expect, it } from "vitest";
import { outcome, runCode } from "./helpers.js";

const run = async (source: string) => outcome(await runCode(source, { language: "javascript" }));

describe("Math.random", () => {
  it("cannot be predicted from the clock: the engine's clock-seeded xorshift64* is not recoverable", async () => {
    // The attack that recovered the seed (and the next value) of every run before: try each millisecond of the last
    // five seconds as the engine's seed, keep the one that gives the observed value, predict the next one.
    const source = `const M = (1n << 64n) - 1n;
const step = (s) => { let x = s; x ^= x >> 12n; x ^= (x << 25n) & M; x ^= x >> 27n; return [x, Number(((x * 0x2545F4914F6CDD1Dn) & M) >> 12n) / 2 ** 52]; };
const observed = Math.random();
const now = Date.now();
let state = null;
for (let ms = now; ms > now - 5000 && state === null; ms--) { const [x, r] = step(BigInt(ms) * 1000n); if (r === observed) state = x; }
const predicted = state === null ? null : step(state)[1];
export default [state !== null, predicted === Math.random()];`;
    expect(await run(source)).toEqual({ status: "success", result: [false, false] });
  });

  it("differs between runs started together", async () => {
    const source = "export default [Math.random(), Math.random(), Math.random(), Math.random()];";
    const results = await Promise.all(Array.from({ length: 8 }, () => runCode(source, { language: "javascript" })));
    const sequences = results.map((r) => JSON.stringify(r.result));
    expect(results.map((r) => r.status)).toEqual(Array(8).fill("success"));
    expect(new Set(sequences).size).toBe(8);
  });

  it("gives doubles in [0, 1) with 53 random bits, evenly spread", async () => {
    const source = `const n = 100000, buckets = new Array(16).fill(0);
let min = 1, max = 0, sum = 0, odd = 0;
const seen = new Set();
for (let i = 0; i < n; i++) {
  const x = Math.random();
  if (typeof x !== "number" || !(x >= 0 && x < 1)) throw new Error("out of range: " + x);
  min = Math.min(min, x); max = Math.max(max, x); sum += x;
  buckets[Math.floor(x * 16)]++;
  if ((x * 2 ** 53) % 2 === 1) odd++;
  seen.add(x);
}
const expected = n / 16;
const chi2 = buckets.reduce((acc, b) => acc + (b - expected) ** 2 / expected, 0);
export default [seen.size === n, min < 0.001, max > 0.999, Math.abs(sum / n - 0.5) < 0.01, chi2 < 37.7, Math.abs(odd / n - 0.5) < 0.02];`;
    // chi2 < 37.7: the 0.1% critical value with 15 degrees of freedom; odd: the lowest of the 53 bits is random too.
    expect(await run(source)).toEqual({ status: "success", result: [true, true, true, true, true, true] });
  });

  it("keeps the built-in's shape: name, length, attributes, native source text, not a constructor", async () => {
    const source = `const d = Object.getOwnPropertyDescriptor(Math, "random");
let constructs = true; try { new Math.random(); } catch (e) { constructs = e.name; }
export default [Math.random.name, Math.random.length, d.writable, d.enumerable, d.configurable, String(Math.random), Object.getOwnPropertyNames(Math.random).join(), "prototype" in Math.random, constructs, typeof Math.random.call(null, 5)];`;
    expect(await run(source)).toEqual({
      status: "success",
      result: [
        "random",
        0,
        true,
        false,
        true,
        "function random() {\n    [native code]\n}",
        "length,name",
        false,
        "TypeError",
        "number",
      ],
    });
  });
});
