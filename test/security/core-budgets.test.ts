/**
 * What the core does on the host with values, errors and logs a run hands back: bounded before the work starts,
 * charged to the run, and never steered by names the guest chose.
 */

import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { describe, expect, it } from "vitest";
import { rewriteStack } from "../../src/core/positions.js";
import { MAX_HOST_CALLS_IN_FLIGHT } from "../../src/core/run.js";
import { SerializationError } from "../../src/index.js";
import { decodeFromGuest } from "../../src/values/to-host.js";
import { attack, outcome, runCode, sandbox } from "./helpers.js";

/** Builds `x = [x, x]` forty times: 41 arrays that expand to 2^40 leaves when walked as a tree. */
const DAG = "let x = [0];\nfor (let i = 0; i < 40; i++) x = [x, x];\n";

describe("shared-reference expansion on the host", () => {
  it("a thrown shared-reference bomb becomes a bounded message", async () => {
    const started = performance.now();
    const result = await attack(runCode, `${DAG}throw x;`);
    expect(outcome(result)).toEqual({
      status: "error",
      error: "Error: Uncaught array too large to show (more than 65536 characters of JSON)",
    });
    expect(performance.now() - started).toBeLessThan(10_000);
  });

  it("a thrown object with a cycle says so instead of calling String() on it", async () => {
    const result = await attack(runCode, "const o = { a: [1] }; o.self = o; throw o;");
    expect(outcome(result)).toEqual({ status: "error", error: "Error: Uncaught object with a reference cycle" });
  });

  it("a thrown object small enough is shown as JSON", async () => {
    const result = await attack(runCode, "throw { code: 7, big: 12n, list: [1, 'two'] };");
    expect(outcome(result)).toEqual({ status: "error", error: 'Error: {"code":7,"big":"12n","list":[1,"two"]}' });
  });

  it("logs and reports are charged at the host heap they take, not at their tape's length", () => {
    setFlagsFromString("--expose-gc");
    const gc = runInNewContext("gc") as () => void;
    const side = { buffer: () => new ArrayBuffer(0), hostFunction: () => undefined, promise: () => Promise.resolve() };
    const n = 50_000;
    const list = (item: (i: number) => string) =>
      `["a",0,[${Array.from({ length: n }, (_, i) => item(i + 1)).join(",")}]]`;
    const tapes = {
      "empty objects": list((id) => `["o",${id},[]]`),
      "one-key objects": list((id) => `["o",${id},["k",0]]`),
      maps: list((id) => `["m",${id},[]]`),
      "non-integer numbers": list((id) => `${id}.5`),
      zeros: list(() => "0"),
    };
    for (const [name, tape] of Object.entries(tapes)) {
      const kept: unknown[] = [];
      const meter = { bytes: 0 };
      gc();
      const before = process.memoryUsage().heapUsed;
      for (let copy = 0; copy < 8; copy++) kept.push(decodeFromGuest(tape, side, meter));
      gc();
      const heap = process.memoryUsage().heapUsed - before;
      expect({ name, charged: meter.bytes >= heap }).toEqual({ name, charged: true });
      expect(kept.length).toBe(8);
    }
  });
});

describe("errors a run throws", () => {
  it("a 16 Mi-character message and a 13 MB stack reach the host cut to 65,536 characters", async () => {
    const source = `const e = new Error("x".repeat(1 << 24));
e.stack = "    at f (<runCode>:1:1)\\n".repeat(1 << 19);
throw e;`;
    const result = await runCode(source, { language: "javascript" });
    expect({
      status: result.status,
      message: result.error?.message === "x".repeat(65_536),
      stack: result.error?.stack?.length,
      lines: result.error?.stack?.split("\n").length,
    }).toEqual({ status: "error", message: true, stack: 65_536, lines: 2_622 });
  });
});

describe("host calls in flight", () => {
  it(`past ${MAX_HOST_CALLS_IN_FLIGHT} unawaited async calls, the next throws in the guest without reaching the bridge`, async () => {
    let calls = 0;
    // Settles once the guest yields (timers cannot fire while it runs synchronously).
    const slow = () => {
      calls++;
      return new Promise<number>((resolve) => setTimeout(() => resolve(1), 0));
    };
    const source = `import { slow } from "host";
const pending = [];
let refused = "";
for (let i = 0; i < 20000 && refused === ""; i++) {
  try { pending.push(slow()); } catch (error) { refused = error.name + ": " + error.message; }
}
await Promise.all(pending);
pending.push(slow());
await pending[pending.length - 1];
export default [pending.length, refused];`;
    const result = await runCode(source, { language: "javascript", imports: { host: { slow } } });
    expect(outcome(result)).toEqual({
      status: "success",
      result: [
        MAX_HOST_CALLS_IN_FLIGHT + 1,
        `RangeError: ${MAX_HOST_CALLS_IN_FLIGHT} host calls are in flight: await some before making more`,
      ],
    });
    expect(calls).toBe(MAX_HOST_CALLS_IN_FLIGHT + 1);
  });
});

describe("values handed in", () => {
  it("probing many views of a big resizable buffer is bounded, not one buffer copy per view", () => {
    const Resizable = ArrayBuffer as unknown as new (n: number, o: { maxByteLength: number }) => ArrayBuffer;
    const buffer = new Resizable(2 * 1024 * 1024, { maxByteLength: 4 * 1024 * 1024 });
    const views = Array.from({ length: 200 }, () => new Uint8Array(buffer));
    expect(() => runCode("export default views.length;", { globals: { views } })).toThrow(
      new SerializationError(
        "Telling whether views track their resizable buffers would copy more than 268435456 bytes: too many views of large resizable buffers",
      ),
    );
  });
});

describe("text processing in linear time", () => {
  it("a crafted 480 KB error.stack is parsed in linear time", () => {
    const line = `at ${" (".repeat(240_000)}`;
    const started = performance.now();
    const rewritten = rewriteStack(line, () => undefined);
    expect(performance.now() - started).toBeLessThan(10_000);
    expect(rewritten).toEqual({ stack: line });
  });

  it("a crafted error.stack thrown by a run reaches the parser cut to 65,536 characters", async () => {
    const line = `at ${" (".repeat(240_000)}`;
    const result = await attack(runCode, `const e = new Error("crafted"); e.stack = ${JSON.stringify(line)}; throw e;`);
    expect(outcome(result)).toEqual({ status: "error", error: "Error: crafted" });
    expect(result.error?.stack).toBe(line.slice(0, 65_536));
  });

  it("frames still map to the caller's source, names with parentheses included", async () => {
    const source = "const o = { ['a (b)']() { throw new Error('in'); } };\no['a (b)']();";
    const result = await runCode(source, { filename: "/main.js" });
    expect(result.error?.stack).toBe("    at a (b) (/main.js:1:42)\n    at <anonymous> (/main.js:2:11)");
    expect({ line: result.error?.line, column: result.error?.column }).toEqual({ line: 1, column: 42 });
  });
});

describe("statuses come from the phase the host observed", () => {
  const forged: [string, string, string][] = [
    ["an Error named LinkError", "const e = new Error('x'); e.name = 'LinkError'; throw e;", "LinkError: x"],
    [
      "QuickJS's link message with an empty stack",
      "const e = new SyntaxError(\"Could not find export 'a' in module 'b'\"); e.stack = ''; throw e;",
      "SyntaxError: Could not find export 'a' in module 'b'",
    ],
    [
      "a SyntaxError with a parse error's position",
      "const e = new SyntaxError('unexpected token'); e.fileName = '/main.js'; e.lineNumber = 1; throw e;",
      "SyntaxError: unexpected token",
    ],
    ["a JSON.parse failure at run time", "JSON.parse('{');", "SyntaxError: expecting property name"],
    [
      "a copy of a recorded link failure, thrown after catching it",
      "const f = await import('nope').catch((e) => e);\nconst e = new Error(f.message); e.name = f.name; throw e;",
      "LinkError: Cannot find module 'nope': only options.imports and options.modules resolve",
    ],
  ];
  for (const [name, source, error] of forged) {
    it(`${name} is an error, not a link_error`, async () => {
      expect(outcome(await attack(runCode, source))).toEqual({ status: "error", error });
    });
  }

  it("real link failures are still link errors", async () => {
    const missing = await runCode("import { nope } from './dep.js';\nexport default nope;", {
      modules: { "./dep.js": "export const x = 1;" },
    });
    expect(outcome(missing)).toEqual({
      status: "link_error",
      error: "SyntaxError: Could not find export 'nope' in module './dep.js'",
    });
    const unknown = await runCode("import x from 'nope';\nexport default x;");
    expect(outcome(unknown)).toEqual({
      status: "link_error",
      error: "LinkError: Cannot find module 'nope': only options.imports and options.modules resolve",
    });
    const noExport = await runCode("export const a = 1;", { execute: { fn: "b" } });
    expect(outcome(noExport)).toEqual({ status: "link_error", error: "LinkError: The module does not export 'b'" });
  });

  it("the phase module, named by user code, runs nothing again: an error after it is still an error", async () => {
    const run = sandbox({});
    const named = await run("export default Object.keys(await import('runcode:phase'));");
    expect(outcome(named)).toEqual({ status: "success", result: [] });
    const source = "await import('runcode:phase');\nconst e = new Error('x'); e.name = 'LinkError'; throw e;";
    expect(outcome(await run(source))).toEqual({ status: "error", error: "LinkError: x" });
  });
});
