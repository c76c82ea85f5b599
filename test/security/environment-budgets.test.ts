/**
 * The environment's work on what the guest hands out is bounded before it starts (issue 9, classes 1, 2 and 7):
 * console lines formatted within a budget that counts every visit of a shared reference, output patches and tool
 * parameters copied into bounded trees of JSON data (or refused with an error the guest can catch), guest text
 * parsed in linear time and cut before it reaches the host, and `timeoutMs` kept when the host's own work delays the
 * timer. Each attack asserts its exact outcome and a host-side bound (bytes emitted, units spent, or a wall-clock
 * bound that only catches a hang).
 */
import { describe, expect, it } from "vitest";
import {
  DEFAULT_BUDGETS,
  type EnvironmentOptions,
  type InvokeInput,
  instantiate,
  MAX_TOOL_ID_LENGTH,
  truncationMarker,
} from "../../src/environment/index.js";
import { WorkBudget } from "../../src/values/budget.js";
import { inThread, type Recorder, recorder, wasm } from "../environment/helpers.js";

/** Generous: only a hang (minutes, before these fixes) goes past it. */
const HANG_MS = 20_000;
const LINE_MARKER = truncationMarker(DEFAULT_BUDGETS.consoleLine);
const CONSOLE_MARKER = (limit: number) =>
  `[console output truncated: the process's console budget of ${limit} units is spent; later console calls print nothing]`;

interface Outcome {
  exit: string;
  b: Recorder;
  ms: number;
  stdout: string;
  stderr: string;
  /** Bytes handed to emitStdout and emitStderr. */
  bytes: number;
}

async function run(
  code: string,
  options: { env?: EnvironmentOptions; timeoutMs?: number; tool?: (input: InvokeInput) => Promise<unknown> } = {},
): Promise<Outcome> {
  const b = recorder(options.tool);
  const env = instantiate({ wasm: await wasm(), createSandbox: inThread, ...options.env });
  await env.setup({ config: {}, secrets: {}, bindings: b });
  // Warm: the first execution also compiles the engine and loads TypeScript, which a 200 ms timeout would not cover.
  await env.execute({ eid: 0, code: "1" });
  const started = performance.now();
  const exit = await env.execute({ eid: 1, code, options: { timeoutMs: options.timeoutMs ?? 30_000 } });
  const ms = performance.now() - started;
  let bytes = 0;
  for (const call of b.calls) if (call.kind === "stdout" || call.kind === "stderr") bytes += call.bytes.length;
  return { exit, b, ms, stdout: b.text(1, "stdout"), stderr: b.text(1, "stderr"), bytes };
}

/** Every object of `value` is reached once (a tree), and nothing but own data properties of plain objects. */
function assertPlainTree(value: unknown, seen = new Set<object>()): void {
  if (typeof value !== "object" || value === null) return;
  expect(seen.has(value)).toBe(false);
  seen.add(value);
  expect(Object.getPrototypeOf(value)).toBe(Array.isArray(value) ? Array.prototype : Object.prototype);
  for (const key of Reflect.ownKeys(value)) {
    const descriptor = Object.getOwnPropertyDescriptor(value, key) as PropertyDescriptor;
    expect(typeof key).toBe("string");
    expect("value" in descriptor).toBe(true);
    if (key !== "length" || !Array.isArray(value)) assertPlainTree(descriptor.value, seen);
  }
}

/** The text of an attack's one console call: cut at the default line budget and marked. */
function expectCutLine(outcome: Outcome): string {
  expect(outcome.exit).toBe("success");
  expect(outcome.stdout.endsWith(` ${LINE_MARKER}\n`)).toBe(true);
  expect(outcome.stdout.indexOf(LINE_MARKER)).toBe(outcome.stdout.length - LINE_MARKER.length - 1);
  expect(outcome.stdout.length).toBeLessThanOrEqual(DEFAULT_BUDGETS.consoleLine + LINE_MARKER.length + 2);
  expect(outcome.bytes).toBe(outcome.stdout.length);
  expect(outcome.ms).toBeLessThan(HANG_MS);
  return outcome.stdout;
}

describe("console formatting counts every visit of a shared reference", () => {
  it("an error DAG 2^40 (errors showed their properties at any depth) stops at the depth shown", async () => {
    const code = `let e: any = new Error("leaf");
for (let i = 0; i < 40; i++) { const n: any = new Error("n"); n.a = e; n.b = e; e = n; }
console.log(e);`;
    const outcome = await run(code);
    expect(outcome.exit).toBe("success");
    const inner = "[Error: n] { a: [Error: n], b: [Error: n] }";
    const middle = `[Error: n] {\n    a: ${inner},\n    b: ${inner}\n  }`;
    expect(outcome.stdout).toBe(`Error: n {\n  a: ${middle},\n  b: ${middle}\n}\n`);
    expect(outcome.ms).toBeLessThan(HANG_MS);
  });

  it("x = [x, x] forty times prints its depth-2 view in full", async () => {
    const outcome = await run(`let x: any = [1]; for (let i = 0; i < 40; i++) x = [x, x]; console.log(x);`);
    expect(outcome.stdout).toBe(
      "[\n  [ [ [Array], [Array] ], [ [Array], [Array] ] ],\n  [ [ [Array], [Array] ], [ [Array], [Array] ] ]\n]\n",
    );
  });

  it("100 items x depth 2 of one big object (10^10 characters as a tree)", async () => {
    const code = `const big: any = {}; for (let i = 0; i < 100; i++) big["k" + i] = "v".repeat(1000);
const row = Array(100).fill(big); console.log(Array(100).fill(row));`;
    const line = expectCutLine(await run(code));
    expect(line.startsWith(`[\n  [\n    {\n      k0: '${"v".repeat(1000)}',\n      k1: '`)).toBe(true);
  });

  it("a 10,000-character string reached from 100 x 100 places (10^8 characters as a tree)", async () => {
    const code = `const o = { s: "x".repeat(10000) }; const row = Array(100).fill(o); console.log(Array(100).fill(row));`;
    const line = expectCutLine(await run(code));
    expect(line.startsWith(`[\n  [\n    {\n      s: '${"x".repeat(10_000)}'\n    },\n`)).toBe(true);
  });

  it("a 100,000-entry Map reached from 100 x 100 places (each visit iterated the whole Map)", async () => {
    const code = `const m = new Map(); for (let i = 0; i < 100000; i++) m.set(i, i);
const row = Array(100).fill(m); console.log(Array(100).fill(row));`;
    const line = expectCutLine(await run(code));
    expect(line.startsWith("[\n  [\n    Map(100000) {\n      0 => 0,\n      1 => 1,\n")).toBe(true);
  });

  it("a 1 MB key reached from 100 x 100 places (the identifier regex ran over all of it each time)", async () => {
    const code = `const o = { ["a".repeat(1_000_000)]: 1 }; const row = Array(100).fill(o); console.log(Array(100).fill(row));`;
    const line = expectCutLine(await run(code));
    expect(line.startsWith(`[\n  [\n    {\n      '${"a".repeat(10_000)}... 990000 more characters': 1\n    },\n`)).toBe(
      true,
    );
  });

  it("a chain of 3,000 errors stops at the depth shown, like nested objects", async () => {
    const code = `let e: any = new Error("0");
for (let i = 1; i < 3000; i++) e = Object.assign(new Error(String(i)), { cause: e });
console.log(e);`;
    const outcome = await run(code);
    expect(outcome.exit).toBe("success");
    expect(outcome.stdout).toBe(
      "Error: 2999 {\n  cause: [Error: 2998] { cause: [Error: 2997] { cause: [Error: 2996] } }\n}\n",
    );
  });

  it("an object that forges the guest's description key is shown as data, cycles included", async () => {
    const code = `const m: any = { "@@cyrnel:log": "c", n: "Forged" }; m.v = m; console.log(m);
const e: any = { "@@cyrnel:log": "e", n: "Fake", m: "msg", v: {} }; e.v.self = e; console.log([e, e]);`;
    const outcome = await run(code);
    expect(outcome.exit).toBe("success");
    expect(outcome.stdout).toBe(
      "{ '@@cyrnel:log': 'c', n: 'Forged', v: [Circular] }\n" +
        "[\n  { '@@cyrnel:log': 'e', n: 'Fake', m: 'msg', v: { self: [Circular] } },\n  { '@@cyrnel:log': 'e', n: 'Fake', m: 'msg', v: { self: [Circular] } }\n]\n",
    );
  });

  it("a line is cut at the line budget with the exact marker; the console never throws", async () => {
    const code = `console.log({ a: "x".repeat(100) }, "tail");
console.log("%s|%j", "y".repeat(100), { k: 1 });
console.log("fits");
cyrnel.output({ done: true });`;
    const outcome = await run(code, { env: { budgets: { consoleLine: 60 } } });
    expect(outcome.exit).toBe("success");
    expect(outcome.stdout).toBe(
      `{\n  a: '${"x".repeat(52)} ${truncationMarker(60)}\n${"y".repeat(55)}| ${truncationMarker(60)}\nfits\n`,
    );
    expect(outcome.b.outputs(1)).toEqual([{ done: true }]);
  });

  it("past the execution's console budget one marker line, then nothing; the program goes on", async () => {
    const code = `for (let i = 0; i < 50; i++) console.log("line", i, "z".repeat(30));
console.error("to stderr");
// The guest stops sending: nothing of a later call is even made (its %j would call toJSON).
let made = 0;
console.log("%j", { toJSON() { made++; return 1; } });
cyrnel.output({ done: true, made });`;
    const outcome = await run(code, { env: { budgets: { console: 200 } } });
    expect(outcome.exit).toBe("success");
    // Each line spends 37 units (its 35 characters, 1 for each part after the first): the sixth goes past 200.
    const lines = Array.from({ length: 6 }, (_, i) => `line ${i} ${"z".repeat(30)}`);
    expect(outcome.stdout).toBe(`${lines.join("\n")}\n${CONSOLE_MARKER(200)}\n`);
    expect(outcome.stderr).toBe("");
    expect(outcome.b.outputs(1)).toEqual([{ done: true, made: 0 }]);
    expect(outcome.bytes).toBe(outcome.stdout.length);
  });

  it("a guest string of 16 MB printed as is is cut at the line budget", async () => {
    const outcome = await run(`const s = "s".repeat(16_000_000); console.log(s); console.log("%s!", s);`);
    expect(outcome.exit).toBe("success");
    const limit = DEFAULT_BUDGETS.consoleLine;
    // The format string's 3 characters are paid first; what a directive stands for is cut where the budget ends.
    expect(outcome.stdout).toBe(`${"s".repeat(limit)} ${LINE_MARKER}\n${"s".repeat(limit - 3)}! ${LINE_MARKER}\n`);
  });
});

describe("output patches are bounded trees of JSON data", () => {
  it("a patch that is a 2^40 DAG throws a SerializationError the guest catches; nothing reaches the host", async () => {
    const code = `let x: any = { v: 1 }; for (let i = 0; i < 40; i++) x = { a: x, b: x };
try { cyrnel.output({ x }); } catch (e) { console.log((e as Error).name + ": " + (e as Error).message); }
cyrnel.output({ after: true });`;
    const outcome = await run(code);
    expect(outcome.exit).toBe("success");
    expect(outcome.stdout).toBe(
      `SerializationError: cyrnel.output(patch) needs more than ${DEFAULT_BUDGETS.data} units of work (shared references count each time they are reached)\n`,
    );
    expect(outcome.b.outputs(1)).toEqual([{ after: true }]);
    expect(outcome.ms).toBeLessThan(HANG_MS);
  });

  it("a DAG that fits arrives as the tree it stands for, with no shared references", async () => {
    const outcome = await run(
      `let x: any = { v: 1 }; for (let i = 0; i < 8; i++) x = { a: x, b: x }; cyrnel.output({ x });`,
    );
    expect(outcome.exit).toBe("success");
    const [patch] = outcome.b.outputs(1);
    let tree: unknown = { v: 1 };
    for (let i = 0; i < 8; i++) tree = { a: tree, b: tree };
    expect(JSON.stringify(patch)).toBe(JSON.stringify({ x: tree }));
    assertPlainTree(patch);
  });

  it("__proto__, constructor and prototype keys: own data below the top, refused at the top", async () => {
    const code = `cyrnel.output(JSON.parse('{"a": {"__proto__": {"polluted": 1}, "constructor": {"prototype": {"p": 2}}}, "prototype": 3}'));
try { cyrnel.output(JSON.parse('{"__proto__": {"polluted": 1}}')); } catch (e) { console.log((e as Error).name + ": " + (e as Error).message); }`;
    const outcome = await run(code);
    expect(outcome.exit).toBe("success");
    expect(outcome.stdout).toBe(
      'TypeError: cyrnel.output(patch) cannot have a "__proto__" key: the host merges patches with Object.assign, which would take it for the output\'s prototype\n',
    );
    const patches = outcome.b.outputs(1);
    expect(patches.length).toBe(1);
    const patch = patches[0] as Record<string, Record<string, unknown>>;
    assertPlainTree(patch);
    expect(Object.keys(patch.a as object)).toEqual(["__proto__", "constructor"]);
    expect(Object.getOwnPropertyDescriptor(patch.a, "__proto__")?.value).toEqual({ polluted: 1 });
    // A host that merges as the spec says (Object.assign) keeps its objects' prototypes.
    const output: Record<string, unknown> = {};
    Object.assign(output, patch);
    expect(Object.getPrototypeOf(output)).toBe(Object.prototype);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it("a cyclic patch throws a TypeError the guest catches", async () => {
    const code = `const o: any = { a: 1 }; o.self = o;
try { cyrnel.output(o); } catch (e) { console.log((e as Error).name + ": " + (e as Error).message); }`;
    const outcome = await run(code);
    expect(outcome.stdout).toBe("TypeError: cyrnel.output(patch) is circular: only trees of data cross to the host\n");
    expect(outcome.b.outputs(1)).toEqual([]);
  });

  it("a 2^32-1-long sparse array is paid for in full before anything is copied", async () => {
    const code = `try { cyrnel.output({ a: new Array(2 ** 32 - 1) }); } catch (e) { console.log((e as Error).message); }`;
    const outcome = await run(code);
    expect(outcome.stdout).toBe(
      `cyrnel.output(patch) needs more than ${DEFAULT_BUDGETS.data} units of work (shared references count each time they are reached)\n`,
    );
    expect(outcome.ms).toBeLessThan(HANG_MS);
  });

  it("past the execution's data budget, patches and tool calls throw", async () => {
    const code = `const errors: string[] = [];
for (let i = 0; i < 5; i++) { try { cyrnel.output({ ["k" + i]: "x".repeat(40) }); } catch (e) { errors.push((e as Error).message); } }
try { await cyrnel.services.s.tools.t.invoke({}); } catch (e) { errors.push((e as Error).message); }
console.log(errors.join("\\n"));`;
    const outcome = await run(code, { env: { budgets: { dataTotal: 100 } } });
    expect(outcome.exit).toBe("success");
    const spent = "the process has spent its budget of 100 units for output patches and tool parameters";
    expect(outcome.stdout).toBe(
      `cyrnel.output(patch): ${spent}\ncyrnel.output(patch): ${spent}\ncyrnel.services.s.tools.t.invoke(parameters): ${spent}\n`,
    );
    // Each patch takes 50 units: the third goes past 100 (and still crosses), the later calls throw.
    expect(outcome.b.outputs(1)).toEqual([0, 1, 2].map((i) => ({ [`k${i}`]: "x".repeat(40) })));
    expect(outcome.b.calls.filter((c) => c.kind === "invoke")).toEqual([]);
  });
});

describe("tool parameters are bounded trees of JSON data", () => {
  it("parameters that are a 2^40 DAG fail the invoke at its call site; the tool is never called", async () => {
    const code = `let x: any = { v: 1 }; for (let i = 0; i < 40; i++) x = { a: x, b: x };
try { await cyrnel.services.kv.tools.set.invoke({ key: "k", value: x }); }
catch (e) { console.log((e as Error).name + ": " + (e as Error).message); }`;
    const outcome = await run(code);
    expect(outcome.exit).toBe("success");
    expect(outcome.stdout).toBe(
      `SerializationError: cyrnel.services.kv.tools.set.invoke(parameters) needs more than ${DEFAULT_BUDGETS.data} units of work (shared references count each time they are reached)\n`,
    );
    expect(outcome.b.calls.filter((c) => c.kind === "invoke")).toEqual([]);
    expect(outcome.ms).toBeLessThan(HANG_MS);
  });

  it("parameters arrive as JSON data: Date as an ISO string, Map as an object, shared parts copied", async () => {
    const code = `const shared = { n: 1 };
await cyrnel.services.s.tools.t.invoke({ when: new Date(0), m: new Map([["a", shared]]), list: [shared, shared, undefined] });`;
    const outcome = await run(code, { tool: async () => "ok" });
    expect(outcome.exit).toBe("success");
    const calls = outcome.b.calls.filter((c) => c.kind === "invoke");
    expect(calls.length).toBe(1);
    const parameters = calls[0]?.kind === "invoke" ? calls[0].input.parameters : undefined;
    expect(JSON.stringify(parameters)).toBe(
      '{"when":"1970-01-01T00:00:00.000Z","m":{"a":{"n":1}},"list":[{"n":1},{"n":1},null]}',
    );
    assertPlainTree(parameters);
  });

  it(`ids longer than ${MAX_TOOL_ID_LENGTH} characters are refused before the host sees them`, async () => {
    const code = `try { await cyrnel.services["s".repeat(5_000_000)].tools.t.invoke({}); } catch (e) { console.log((e as Error).name + ": " + (e as Error).message); }`;
    const outcome = await run(code);
    expect(outcome.stdout).toBe(
      `TypeError: Service and tool ids are strings of at most ${MAX_TOOL_ID_LENGTH} characters\n`,
    );
    expect(outcome.b.calls.filter((c) => c.kind === "invoke")).toEqual([]);
  });
});

describe("failures: guest text is cut and parsed in linear time", () => {
  it("a crafted 1 MB stack line does not backtrack", async () => {
    const code = `const e = new Error("m"); e.stack = "at " + " (".repeat(500_000) + "x"; throw e;`;
    const outcome = await run(code);
    expect(outcome.exit).toBe("failed");
    expect(outcome.b.errors(1)).toEqual(["Error: m"]);
    expect(outcome.ms).toBeLessThan(HANG_MS);
  });

  it("a 5 MB message and a long name are cut in the process error", async () => {
    // The guest hands over at most 65,536 characters of a message; the process error keeps 10,000 of them.
    const code = `const e = new Error("x".repeat(5_000_000)); e.name = "N".repeat(1000); throw e;`;
    const outcome = await run(code);
    expect(outcome.exit).toBe("failed");
    expect(outcome.b.errors(1)).toEqual([
      `${"N".repeat(200)}... 800 more characters: ${"x".repeat(10_000)}... 55536 more characters (at line 1, column 20)`,
    ]);
  });
});

describe("timeoutMs holds while the guest awaits the host", () => {
  const message = "Timeout: the process ran longer than its timeoutMs (200 ms) and was stopped";
  const code = `console.log("a");\nawait cyrnel.services.slow.tools.call.invoke({});\nconsole.log("b");`;

  it("a tool that resolves after 1.6 s", async () => {
    const outcome = await run(code, {
      timeoutMs: 200,
      tool: () => new Promise((resolve) => setTimeout(() => resolve(1), 1600)),
    });
    expect(outcome.exit).toBe("timeout");
    expect(outcome.b.errors(1)).toEqual([message]);
    expect(outcome.stdout).toBe("a\n");
    expect(outcome.ms).toBeLessThan(HANG_MS);
  });

  it("a tool that blocks the event loop for 1.6 s and then resolves (the timer could not fire)", async () => {
    const outcome = await run(code, {
      timeoutMs: 200,
      tool: async () => {
        const end = performance.now() + 1600;
        while (performance.now() < end) {
          // The host's own synchronous work: no timer fires meanwhile.
        }
        return 1;
      },
    });
    expect(outcome.exit).toBe("timeout");
    expect(outcome.b.errors(1)).toEqual([message]);
    expect(outcome.stdout).toBe("a\n");
    expect(outcome.ms).toBeLessThan(HANG_MS);
  });
});

describe("WorkBudget.trySpend", () => {
  it("answers instead of throwing, and stays spent", () => {
    const budget = new WorkBudget(10, "v");
    expect([budget.trySpend(4), budget.trySpend(6), budget.exhausted]).toEqual([true, true, false]);
    expect([budget.trySpend(1), budget.exhausted, budget.trySpend(0), budget.spent, budget.left]).toEqual([
      false,
      true,
      false,
      11,
      0,
    ]);
  });
});
