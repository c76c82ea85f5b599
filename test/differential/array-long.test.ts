/**
 * Array.prototype on real arrays of over a million elements (sparse, so they stay small): long enough that the
 * sandbox may run a method through its JS implementation rather than the engine's loop. Holes, `undefined`, NaN and
 * -0, length updates, frozen arrays and species of a real Array must behave as in the raw engine. Kept apart from
 * array.test.ts so the two run in parallel.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { type Compared, compare, explain, type Program } from "./engine.js";
import { callProgram } from "./generators.js";

const method = (key: string) => `Array.prototype${key}`;
const call = (key: string, receiver: string, args: string[]) => callProgram("long", method(key), receiver, args);
const named = (name: string, p: Program): Program => ({ ...p, name });

/**
 * Real arrays long enough (over a million elements, sparse so they stay small) that the sandbox may run a method
 * through its JS implementation rather than the engine's loop: holes, `undefined`, NaN and -0, length updates and
 * species of a real Array, one program per method, each in its own engines (together they fragment 64 MiB).
 */
function longArrayPrograms(): Program[] {
  const L = 1_100_000;
  const make = `(() => { const a = new Array(${L}); a[0] = 3; a[1] = undefined; a[5] = -0; a[7] = NaN; a[9] = 'b'; a[${L - 1}] = 'z'; return a; })()`;
  const cb = (body: string) => `(x, i) => { __.trace('cb ' + i); ${body} }`;
  const calls: [string, string[]][] = [
    [".at", ["-1"]],
    [".indexOf", ["NaN"]],
    [".indexOf", ["0"]],
    [".indexOf", ["'z'", "-2"]],
    [".includes", ["NaN"]],
    [".includes", ["undefined"]],
    [".lastIndexOf", ["undefined"]],
    [".lastIndexOf", ["3", "-2"]],
    [".every", [cb("return x !== 'q';")]],
    [".some", [cb("return x === 'z';")]],
    [".forEach", [cb("")]],
    [".map", [cb("return typeof x;")]],
    [".filter", [cb("return x === x;")]],
    [".find", [cb("return i === 7;")]],
    [".findLastIndex", [cb(`return i === ${L - 3};`)]],
    [".reduce", ["(a, x, i) => { __.trace('r ' + i); return a + '|' + String(x); }"]],
    [".reduceRight", ["(a, x, i) => { __.trace('r ' + i); return a + '|' + String(x); }", "''"]],
    [".fill", ["7", "-3"]],
    [".copyWithin", ["0", "-2"]],
    [".reverse", []],
    [".shift", []],
    [".unshift", ["'u'", "'v'"]],
    [".slice", ["-3"]],
    [".splice", ["1", "2", "'x'"]],
    [".splice", ["-2"]],
    [".sort", []],
    [".sort", ["(a, b) => { __.trace('cmp'); return String(a) < String(b) ? -1 : 1; }"]],
    [".toSorted", []],
    [".join", ["'-'"]],
    [".toLocaleString", []],
    [".concat", ["[1, , 2]"]],
    [".flat", []],
  ];
  const out: Program[] = [];
  for (const [key, args] of calls) {
    const p = call(key, make, args);
    // The receiver and a result may be long: describe their lengths and a few indices only.
    p.body = p.body.replace(
      "return [r, o];",
      `const at = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, ${L - 3}, ${L - 2}, ${L - 1}, ${L}]; const brief = (v) => Array.isArray(v) ? [v.length, at.map((k) => (k in v ? String(v[k]) : 'hole')).join()] : typeof v === 'string' ? [v.length, v.slice(0, 40), v.slice(-40)] : v; return [brief(r), brief(o)];`,
    );
    out.push(named(`${method(key)}(${args.join(", ")}) on a sparse array of length ${L}`, p));
  }
  const species = `Object.assign(${make}, { constructor: { [Symbol.species]: function (n) { __.trace('species ' + n); return {}; } } })`;
  for (const key of [".map", ".filter", ".slice", ".splice"]) {
    const args = key === ".map" || key === ".filter" ? [cb("return x;")] : ["-2"];
    out.push(named(`${method(key)} with species on a sparse array of length ${L}`, call(key, species, args)));
  }
  out.push(
    named(`fill on a frozen array of length ${L}`, call(".fill", `Object.freeze(${make})`, ["1"])),
    named(
      `push on an array of length ${L} with a non-writable length`,
      call(".push", `Object.defineProperty(${make}, 'length', { writable: false })`, ["1"]),
    ),
    named(
      `reverse on an array of length ${L} with a non-configurable element`,
      call(".reverse", `Object.defineProperty(${make}, 3, { value: 'fixed', configurable: false })`, []),
    ),
  );
  return out;
}

const LONG = longArrayPrograms();

describe("Array: long real arrays against the raw engine", () => {
  let results = new Map<string, Compared>();
  beforeAll(async () => {
    results = new Map((await compare(LONG, 1)).map((c) => [c.program.name, c]));
  }, 180_000);

  it.each(LONG.map((p) => [p.name]))("%s", (name) => {
    const c = results.get(name);
    if (c === undefined) throw new Error(`no outcome for ${name}`);
    if (c.differs) expect.fail(explain(c));
  });
});
