/**
 * Native loops: the engine polls for interrupts at calls and loop back-edges, never inside its own C loops. Every
 * native that loops over a guest-chosen length must still stop when asked (the safety cap, terminate()), and the
 * natives whose work is bounded but expensive must be charged to the cap for what they cost, not as one operation.
 * Each attack asserts its exact outcome and a host-side bound on wall-clock time (10x the 300 ms cap: it only
 * catches a hang; before the guards these ran for 8 s to many minutes). The last part checks the guards change
 * nothing a program can observe: `this` coercion, one `length` read, the same Proxy traps, the same function shapes.
 */
import { describe, expect, it } from "vitest";
import type { RunCode } from "../../src/core/types.js";
import { ATTEMPT, attack, capped, outcome, runCode } from "./helpers.js";

const CAP_MS = 300;
const CAPPED = {
  status: "terminated",
  error: `TerminatedError: Execution stopped by the safety cap after ${CAP_MS} ms of CPU time`,
};
/** Generous: only a hang (the unguarded natives ran 8 s to minutes) crosses it. */
const HANG_MS = 10 * CAP_MS;

/** Runs an attack under the 300 ms cap; returns its outcome and how long the host was busy. */
async function timed(source: string, run: RunCode = capped): Promise<{ outcome: unknown; ms: number }> {
  const start = performance.now();
  const result = await attack(run, source);
  return { outcome: outcome(result), ms: performance.now() - start };
}

const HOLES = "new Array(2 ** 32 - 1)";
const HUGE = "{ length: 2 ** 53 - 1 }";

/** Loops over a guest-chosen length that never poll in the engine: each must end by the safety cap. */
const unbounded: [string, string][] = [
  ["forEach over 2 ** 32 - 1 holes", `${HOLES}.forEach(() => {});`],
  ["map over 2 ** 32 - 1 holes", `${HOLES}.map((x) => x);`],
  ["filter over 2 ** 32 - 1 holes", `${HOLES}.filter(() => true);`],
  ["some over 2 ** 32 - 1 holes", `${HOLES}.some(() => true);`],
  ["every over 2 ** 32 - 1 holes", `${HOLES}.every(() => false);`],
  ["reduce over 2 ** 32 - 1 holes", `${HOLES}.reduce((a) => a, 0);`],
  ["reduceRight over 2 ** 32 - 1 holes", `${HOLES}.reduceRight((a) => a, 0);`],
  ["sort of 2 ** 32 - 1 holes", `${HOLES}.sort();`],
  ["join('') of 2 ** 32 - 1 holes", `${HOLES}.join("");`],
  ["toLocaleString of 2 ** 32 - 1 holes", `${HOLES}.toLocaleString();`],
  ["indexOf on a 2 ** 53 - 1 array-like", `Array.prototype.indexOf.call(${HUGE}, 1);`],
  ["lastIndexOf on a 2 ** 53 - 1 array-like", `Array.prototype.lastIndexOf.call(${HUGE}, 1);`],
  ["includes on a 2 ** 53 - 1 array-like", `Array.prototype.includes.call(${HUGE}, 1);`],
  ["reverse of a 2 ** 53 - 1 array-like", `Array.prototype.reverse.call(${HUGE});`],
  ["copyWithin on a 2 ** 53 - 1 array-like", `Array.prototype.copyWithin.call(${HUGE}, 0, 1);`],
  ["shift of a 2 ** 53 - 1 array-like", `Array.prototype.shift.call(${HUGE});`],
  ["unshift onto a 2 ** 53 - 2 array-like", "Array.prototype.unshift.call({ length: 2 ** 53 - 2 }, 1);"],
  ["slice of 2 ** 32 - 1 holes", `Array.prototype.slice.call({ length: 2 ** 32 - 1 });`],
  ["splice from 2 ** 32 - 1 holes", `${HOLES}.splice(0, 1);`],
  [
    "fill of a 2 ** 53 - 1 array-like over a typed array",
    `Array.prototype.fill.call({ length: 2 ** 53 - 1, __proto__: new Uint8Array(1) }, 1);`,
  ],
  ["flat of nested 2 ** 32 - 1 holes", `[${HOLES}].flat();`],
  ["flatMap returning 2 ** 32 - 1 holes", `[0].flatMap(() => ${HOLES});`],
  ["concat of 2 ** 32 - 1 holes", `[].concat(${HOLES});`],
  [
    "concat whose first element's getter lengthens the next operand",
    "const b = [1]; const a = [0]; Object.defineProperty(a, 0, { get() { b.length = 2 ** 32 - 1; return 0; } });\na.concat(b);",
  ],
  ["indexOf through a Proxy of 2 ** 32 - 1 holes", `new Proxy(${HOLES}, {}).indexOf(1);`],
  [
    "join through a Proxy whose get trap reports 2 ** 53 - 1",
    "Array.prototype.join.call(new Proxy({}, { get: (t, k) => (k === 'length' ? 2 ** 53 - 1 : undefined) }), '');",
  ],
];

describe("native loops over a guest-chosen length end by the safety cap", () => {
  it.each(unbounded)("%s", async (_name, source) => {
    const { outcome: result, ms } = await timed(source);
    expect(result).toEqual(CAPPED);
    expect(ms).toBeLessThan(HANG_MS);
  });

  it("a length getter that answers 0, then 2 ** 32 - 1, is read once: the call sees 0", async () => {
    const calls = ["join", "indexOf", "lastIndexOf", "includes", "reverse", "fill", "sort", "forEach"].map(
      (name) =>
        `(() => { let reads = 0; const o = { get length() { return reads++ === 0 ? 0 : 2 ** 32 - 1; } }; const r = Array.prototype.${name}.call(o, () => {}); return [r === o ? "o" : r, reads]; })()`,
    );
    const { outcome: result, ms } = await timed(`export default [${calls.join(", ")}];`);
    expect(result).toEqual({
      status: "success",
      result: [
        ["", 1],
        [-1, 1],
        [-1, 1],
        [false, 1],
        ["o", 1],
        ["o", 1],
        ["o", 1],
        [undefined, 1],
      ],
    });
    expect(ms).toBeLessThan(HANG_MS);
  });
});

/** Bounded natives that cost far more than the one operation a poll counts them as. */
const expensive: [string, string][] = [
  ["for (;;) indexOf on an 8 MiB Uint8Array", "const u8 = new Uint8Array(8 << 20);\nfor (;;) u8.indexOf(1);"],
  ["for (;;) lastIndexOf on a 32 MiB Uint8Array", "const u8 = new Uint8Array(32 << 20);\nfor (;;) u8.lastIndexOf(1);"],
  [
    "for (;;) sort of a 1 Mi-element Float64Array",
    "const f = new Float64Array(1 << 20).map((_, i) => (i * 7919) % 1000003);\nfor (;;) f.slice().sort();",
  ],
  ["for (;;) indexOf on a 32 Mi-character string", "const s = 'x'.repeat(1 << 25);\nfor (;;) s.indexOf('y');"],
  [
    "for (;;) JSON.stringify of a 16 Mi-character string",
    "const s = 'x'.repeat(1 << 24);\nfor (;;) JSON.stringify(s);",
  ],
  ["for (;;) indexOf on a 1 Mi-element array of holes", "const a = []; a.length = 1 << 20;\nfor (;;) a.indexOf(1);"],
  // No estimate for these: the wrappers' clock check stops them (before: 52 s, 111 s and minutes).
  [
    "for (;;) Object.assign of 262,144 keys",
    "const o = {}; for (let i = 0; i < 1 << 18; i++) o['k' + i] = i;\nfor (;;) Object.assign({}, o);",
  ],
  [
    "for (;;) Object.fromEntries of 262,144 entries",
    "const e = Array.from({ length: 1 << 18 }, (_, i) => ['k' + i, i]);\nfor (;;) Object.fromEntries(e);",
  ],
  ["for (;;) encodeURIComponent of 1 Mi characters", "const s = 'é'.repeat(1 << 20);\nfor (;;) encodeURIComponent(s);"],
  [
    "for (;;) toString of a 4 Mi-character RegExp",
    "const r = new RegExp('a'.repeat(1 << 22));\nfor (;;) r.toString();",
  ],
];

describe("expensive natives are charged to the safety cap by the work they do", () => {
  it.each(expensive)("%s", async (_name, source) => {
    const { outcome: result, ms } = await timed(source);
    expect(result).toEqual(CAPPED);
    expect(ms).toBeLessThan(HANG_MS);
  });
});

describe("terminate() stops a run inside native loops", () => {
  it.each([
    ["Uint8Array.indexOf on 8 MiB", "const u8 = new Uint8Array(8 << 20);\nstop();\nfor (;;) u8.indexOf(1);"],
    ["forEach over 2 ** 32 - 1 holes", `stop();\n${HOLES}.forEach(() => {});`],
  ])("%s", async (_name, source) => {
    let run: ReturnType<RunCode> | undefined;
    let stoppedAt = 0;
    const stop = () => {
      stoppedAt = performance.now();
      run?.terminate("stopped from the bridge");
    };
    // The default safety cap (30 s): only terminate() can end this run soon.
    run = runCode(source, { language: "javascript", globals: { stop } });
    const result = await run;
    const latency = performance.now() - stoppedAt;
    expect(outcome(result)).toEqual({ status: "terminated", error: "TerminatedError: stopped from the bridge" });
    expect(latency).toBeLessThan(HANG_MS);
  });
});

/** Every method the prelude wraps, with arguments that make each loop once. */
const WRAPPED: [string, string][] = [
  ["Array.prototype.every", "() => true"],
  ["Array.prototype.some", "() => false"],
  ["Array.prototype.forEach", "() => {}"],
  ["Array.prototype.map", "(x) => x"],
  ["Array.prototype.filter", "() => true"],
  ["Array.prototype.reduce", "(a, x) => a + x"],
  ["Array.prototype.reduceRight", "(a, x) => a + x"],
  ["Array.prototype.fill", "0"],
  ["Array.prototype.indexOf", "'b'"],
  ["Array.prototype.lastIndexOf", "'b'"],
  ["Array.prototype.includes", "'b'"],
  ["Array.prototype.shift", ""],
  ["Array.prototype.unshift", "'z'"],
  ["Array.prototype.reverse", ""],
  ["Array.prototype.slice", "0"],
  ["Array.prototype.splice", "0, 1"],
  ["Array.prototype.copyWithin", "0, 1"],
  ["Array.prototype.sort", ""],
  ["Array.prototype.toSorted", ""],
  ["Array.prototype.join", "'-'"],
  ["Array.prototype.toLocaleString", ""],
  ["Array.prototype.concat", "[1]"],
  ["Array.prototype.flat", ""],
  ["Array.prototype.flatMap", "(x) => [x]"],
  ["Array.prototype.toReversed", ""],
  ["Array.prototype.toSpliced", "0, 1"],
  ["Array.prototype.with", "0, 'z'"],
];

describe("the guards keep exact ECMAScript behaviour", () => {
  it("`this` null or undefined is a TypeError for every wrapped Array method (strict, no coercion to the global)", async () => {
    const calls = WRAPPED.flatMap(([name, args]) =>
      ["null", "undefined"].map((self) => `attempt(() => ${name}.call(${self}${args ? `, ${args}` : ""}))`),
    );
    const result = await runCode(`${ATTEMPT}export default [${calls.join(", ")}];`, { language: "javascript" });
    expect(outcome(result)).toEqual({
      status: "success",
      result: calls.map(() => "TypeError: cannot convert to object"),
    });
  });

  it("`length` is read exactly once by every wrapped Array method", async () => {
    const calls = WRAPPED.map(
      ([name, args]) =>
        `(() => { let reads = 0; const o = { get length() { reads++; return 2; }, 0: 'a', 1: 'b' }; attempt(() => ${name}.call(o${args ? `, ${args}` : ""})); return reads; })()`,
    );
    const result = await runCode(`${ATTEMPT}export default [${calls.join(", ")}];`, { language: "javascript" });
    // concat reads the length of spreadable operands only: an array-like receiver is one element, never measured.
    expect(outcome(result)).toEqual({
      status: "success",
      result: WRAPPED.map(([name]) => (name.endsWith(".concat") ? 0 : 1)),
    });
  });

  it("a Proxy sees the engine's traps, in the engine's order", async () => {
    const source = `const log = [];
const traced = (target) => new Proxy(target, {
  get(t, k, r) { log.push("get " + String(k)); return Reflect.get(t, k, r); },
  has(t, k) { log.push("has " + String(k)); return Reflect.has(t, k); },
  set(t, k, v, r) { log.push("set " + String(k)); return Reflect.set(t, k, v, r); },
  deleteProperty(t, k) { log.push("delete " + String(k)); return Reflect.deleteProperty(t, k); },
});
const out = [];
const run = (f) => { log.length = 0; out.push([f(), log.join()]); };
run(() => traced(["a", , "b"]).indexOf("b"));
run(() => traced(["a", "b"]).includes("z"));
run(() => Array.prototype.join.call(traced({ length: 2, 0: "x" }), "+"));
run(() => traced(["b", "a", "c"]).sort().length);
run(() => traced([1, , 3]).reverse().length);
export default out;`;
    const result = await runCode(source, { language: "javascript" });
    expect(outcome(result)).toEqual({
      status: "success",
      result: [
        [2, "get indexOf,get length,has 0,get 0,has 1,has 2,get 2"],
        [false, "get includes,get length,get 0,get 1"],
        ["x+", "get length,get 0,get 1"],
        [3, "get sort,get length,has 0,get 0,has 1,get 1,has 2,get 2,set 0,set 1,get length"],
        [3, "get reverse,get length,has 0,get 0,has 2,get 2,set 0,set 2,get length"],
      ],
    });
  });

  it("wrapped methods keep their name, length, attributes and native source text, and are not constructors", async () => {
    const names: [string, string][] = [
      ...WRAPPED.map(([name]): [string, string] => ["Array.prototype", name.slice("Array.prototype.".length)]),
      ["Array", "from"],
      ["Object.getPrototypeOf(Uint8Array.prototype)", "indexOf"],
      ["String.prototype", "indexOf"],
      ["JSON", "parse"],
      ["Function.prototype", "toString"],
      ["globalThis", "Proxy"],
      ["Proxy", "revocable"],
      ["Math", "random"],
      ["Object", "assign"],
      ["Reflect", "ownKeys"],
      ["globalThis", "encodeURIComponent"],
      ["RegExp.prototype", "toString"],
    ];
    const shape = ([where, key]: [string, string]) =>
      `(() => { const f = ${where}.${key}; const d = Object.getOwnPropertyDescriptor(${where}, "${key}"); let constructs = true; try { Reflect.construct(String, [], f); } catch { constructs = false; } return [f.name, f.length, d.writable, d.enumerable, d.configurable, Function.prototype.toString.call(f), Object.getOwnPropertyNames(f).join(), constructs]; })()`;
    const source = `export default [${names.map(shape).join(", ")}];`;
    const result = await runCode(source, { language: "javascript" });
    const raw = (name: string, length: number, constructs = false): unknown[] => [
      name,
      length,
      true,
      false,
      true,
      `function ${name}() {\n    [native code]\n}`,
      name === "Proxy" ? "length,name,revocable" : "length,name",
      constructs,
    ];
    const lengths: Record<string, number> = {
      shift: 0,
      reverse: 0,
      toReversed: 0,
      toLocaleString: 0,
      flat: 0,
      concat: 1,
    };
    expect(outcome(result)).toEqual({
      status: "success",
      result: [
        ...WRAPPED.map(([name]) => {
          const key = name.slice(name.lastIndexOf(".") + 1);
          const length = lengths[key] ?? (["splice", "slice", "copyWithin", "toSpliced", "with"].includes(key) ? 2 : 1);
          return raw(key, length);
        }),
        raw("from", 1),
        raw("indexOf", 1),
        raw("indexOf", 1),
        raw("parse", 2),
        raw("toString", 0),
        raw("Proxy", 2, true),
        raw("revocable", 2),
        raw("random", 0),
        raw("assign", 2),
        raw("ownKeys", 1),
        raw("encodeURIComponent", 1),
        raw("toString", 0),
      ],
    });
  });
});
