/**
 * Every statement of the environment's model-facing documentation (`generateDocs`), run as documented: a model
 * writes code from that text, so each sentence there must be what happens.
 */
import { describe, expect, test } from "vitest";
import { type EnvironmentModule, instantiate, type ServiceInfo } from "../../src/environment/index.js";
import { deferred, inThread, type Recorder, recorder, wasm } from "./helpers.js";

const KV: ServiceInfo[] = [
  {
    id: "kv",
    name: "Key-value store",
    description: "d",
    tools: [
      {
        id: "get",
        name: "get",
        description: "Reads",
        inputSchema: { type: "object", properties: { key: { type: "string" } }, required: ["key"] },
        outputSchema: {},
      },
    ],
  },
];

const LIMITS = { defaultTimeoutMs: 2_000, memoryLimitBytes: 16 * 1024 * 1024, concurrency: 1 };
const BUDGETS = { consoleLine: 200, data: 300 };

async function environment(
  b: Recorder = recorder(async ({ parameters }) => {
    if (typeof parameters.key !== "string") throw new Error("Invalid parameters for kv.get: key must be a string");
    return { found: false, value: null };
  }, KV),
  webApis = false,
): Promise<{ env: EnvironmentModule; b: Recorder }> {
  const env = instantiate({ wasm: await wasm(), createSandbox: inThread, ...LIMITS, budgets: BUDGETS, webApis });
  await env.setup({ config: {}, secrets: {}, bindings: b });
  return { env, b };
}

/** Runs `code` as process `eid` (with room for the first run's TypeScript load) and returns what it left. */
async function run(code: string, eid = 1, timeoutMs = 30_000, webApis = false) {
  const { env, b } = await environment(undefined, webApis);
  const exit = await env.execute({ eid, code, options: { timeoutMs } });
  return { exit, stdout: b.text(eid, "stdout"), stderr: b.text(eid, "stderr"), errors: b.errors(eid), b };
}

describe("the documentation states the host's figures", () => {
  test("timeout, memory, concurrency and the cut lengths come from the module's settings", async () => {
    const { env } = await environment();
    const docs = await env.generateDocs();
    expect(docs).toContain("longer than its `timeoutMs` (default 2000 ms)");
    expect(docs).toContain("- **Memory**: 16 MiB of heap");
    expect(docs).toContain("At most 1 processes run at once");
    expect(docs).toContain("A line longer than about 200 characters");
    expect(docs).toContain("A patch larger than about 300 characters of JSON");
  });
});

describe("The program", () => {
  test("TypeScript with enum and namespace; plain JavaScript; top-level await; a default-exported function is awaited", async () => {
    const ts = await run(`enum E { A = 2 }
namespace N { export const k: number = 3; }
const v: number = await Promise.resolve(E.A * N.k);
export default async function main(): Promise<void> { await null; console.log("main", v); }`);
    expect([ts.exit, ts.stdout]).toEqual(["success", "main 6\n"]);
    const js = await run("var x = 1; function f(a) { return a + x; } console.log(f(1));");
    expect([js.exit, js.stdout]).toEqual(["success", "2\n"]);
  });

  test("imports of anything fail; so does require", async () => {
    const imported = await run(`import fs from "fs";\nconsole.log(fs);`);
    expect(imported.exit).toBe("failed");
    const required = await run(`require("fs");`);
    expect([required.exit, required.errors]).toEqual([
      "failed",
      ["ReferenceError: 'require' is not defined (at line 1, column 1)"],
    ]);
  });

  test("an uncaught error or rejection fails the process with its message, line and column", async () => {
    const thrown = await run("const a: any = undefined;\n\n\nconst b = 1; a.x;");
    expect([thrown.exit, thrown.errors]).toEqual([
      "failed",
      ["TypeError: cannot read property 'x' of undefined (at line 4, column 15)"],
    ]);
    const rejected = await run("await Promise.reject(new RangeError('no'));");
    expect([rejected.exit, rejected.errors[0]?.startsWith("RangeError: no")]).toEqual(["failed", true]);
  });
});

describe("Globals", () => {
  test("console.log/info/debug to stdout and console.warn/error to stderr, one line per call", async () => {
    const r = await run(
      `console.log("l"); console.info("i"); console.debug("d"); console.warn("w"); console.error("e");`,
    );
    expect([r.stdout, r.stderr]).toEqual(["l\ni\nd\n", "w\ne\n"]);
  });

  test("what is not available is absent or throws; Date.now and Math.random work", async () => {
    const r =
      await run(`console.log([typeof fetch, typeof setTimeout, typeof setInterval, typeof process, typeof require,
  typeof TextEncoder, typeof crypto, typeof WebAssembly].join(" "));
try { eval("1"); } catch (e) { console.log(String(e)); }
try { new Function("return 1"); } catch (e) { console.log(String(e)); }
const r = Math.random();
console.log(typeof Date.now(), Date.now() > 1.6e12, r >= 0 && r < 1);`);
    expect(r.stdout).toBe(
      "undefined undefined undefined undefined undefined undefined undefined undefined\n" +
        "ReferenceError: 'eval' is not defined\n" +
        "TypeError: Function constructor is disabled in the sandbox: code cannot be compiled from strings\n" +
        "number true true\n",
    );
  });

  test("with webApis: the Web APIs are there as listed; timers run before the process ends; what is still absent", async () => {
    const { env } = await environment(undefined, true);
    const docs = await env.generateDocs();
    expect(docs).toContain(
      "| Web APIs | `URL`, `URLSearchParams`, `TextEncoder`, `TextDecoder` (UTF-8), `atob`, `btoa`,",
    );
    expect(docs).toContain("A process waits for its pending timers before it ends");
    const r = await run(
      `const listed = ["URL", "URLSearchParams", "TextEncoder", "TextDecoder", "atob", "btoa", "setTimeout", "setInterval",
  "clearTimeout", "clearInterval", "AbortController", "AbortSignal", "Event", "EventTarget", "DOMException", "Blob", "File",
  "FormData"];
console.log(listed.filter((name) => typeof globalThis[name] !== "function").join(",") || "all functions",
  typeof crypto.getRandomValues, typeof crypto.randomUUID, typeof crypto.subtle.digest, typeof performance.now);
console.log([typeof fetch, typeof process, typeof require, typeof WebAssembly].join(" "));
setTimeout(() => console.log(new URL("../b?x=1", "https://h.example/a/c").href), 20);`,
      1,
      30_000,
      true,
    );
    expect([r.exit, r.stdout]).toEqual([
      "success",
      "all functions function function function function\nundefined undefined undefined undefined\nhttps://h.example/b?x=1\n",
    ]);
    const failing = await run("setTimeout(() => {\n  null.x;\n}, 5);", 2, 30_000, true);
    expect([failing.exit, failing.errors]).toEqual([
      "failed",
      ["TypeError: cannot read property 'x' of null (at line 2, column 7)"],
    ]);
  });

  test("console formats like util.inspect, with the documented directives, cuts long lines and never throws", async () => {
    const r = await run(`console.log("a", 1, { a: 1, b: ["x"] }, new Map([["k", 1]]), function f() {});
console.log({ n: { m: { k: { deep: 1 } } } });
console.log("%s|%d|%i|%f|%j|%o|%O|%c|%%", "s", 1.5, 1.5, 1.5, { j: 1 }, [1], { o: 1 }, "color: red");
console.log("x".repeat(500));
const hostile = { get boom() { throw new Error("getter"); } };
console.log(hostile, Object.create(null));`);
    const lines = r.stdout.split("\n");
    expect(lines.slice(0, 3)).toEqual([
      "a 1 { a: 1, b: [ 'x' ] } Map(1) { 'k' => 1 } [Function: f]",
      "{ n: { m: { k: [Object] } } }",
      's|1.5|1|1.5|{"j":1}|[ 1 ]|{ o: 1 }||%',
    ]);
    expect(lines[3]).toBe(`${"x".repeat(200)} ... [console output truncated: formatting budget of 200 units spent]`);
    expect(r.exit).toBe("success");
  });

  test("cyrnel.output merges plain objects with JSON conversions; other values, shared-too-big and __proto__ throw", async () => {
    const r =
      await run(`cyrnel.output({ a: 1, d: new Date(0), b: 2n, m: new Map([["k", 1]]), s: new Set([1]), u: undefined });
cyrnel.output({ a: 2 });
const shared = { x: 1 };
cyrnel.output({ p: shared, q: shared });
const caught: string[] = [];
for (const bad of [[1], { p: new (class P {})() }, { f() {} }, { big: "y".repeat(400) }, { ["__proto__"]: 1 }]) {
  try { cyrnel.output(bad as any); } catch (e) { caught.push((e as Error).name); }
}
const self: any = {}; self.self = self;
try { cyrnel.output(self); } catch (e) { caught.push((e as Error).name); }
console.log(caught.join(" "));`);
    expect(r.b.outputs(1)).toEqual([
      { a: 1, d: "1970-01-01T00:00:00.000Z", b: "2", m: { k: 1 }, s: [1] },
      { a: 2 },
      { p: { x: 1 }, q: { x: 1 } },
    ]);
    expect(r.stdout).toBe("TypeError SerializationError SerializationError SerializationError TypeError TypeError\n");
  });

  test("tools: invoke returns a Promise; a tool error rejects it with the message; unknown names throw a TypeError listing the known", async () => {
    const r = await run(`const got = cyrnel.services.kv.tools.get.invoke({ key: "k" });
console.log(got instanceof Promise, JSON.stringify(await got));
try { await cyrnel.services.kv.tools.get.invoke({ key: 42 } as any); } catch (e) { console.log((e as Error).message); }
try { cyrnel.services.nope; } catch (e) { console.log(String(e)); }
try { cyrnel.services.kv.tools.put; } catch (e) { console.log(String(e)); }
const kv = cyrnel.services.kv;
console.log(kv.id, kv.name, kv.description, Object.keys(kv.tools).join(","), kv.tools.get.id, kv.tools.get.name, kv.tools.get.description);`);
    expect(r.stdout).toBe(
      'true {"found":false,"value":null}\n' +
        "Invalid parameters for kv.get: key must be a string\n" +
        "TypeError: cyrnel.services has no service 'nope' (available: kv)\n" +
        "TypeError: cyrnel.services.kv.tools has no tool 'put' (available: get)\n" +
        "kv Key-value store d get get get Reads\n",
    );
  });
});

describe("Limits", () => {
  test("timeout: inside while (true) {} and while awaiting a tool, the exit is timeout", async () => {
    expect((await run("while (true) {}", 1, 300)).exit).toBe("timeout");
    const never = deferred<unknown>();
    const { env } = await environment(recorder(() => never.promise, KV));
    expect(
      await env.execute({
        eid: 2,
        code: `await cyrnel.services.kv.tools.get.invoke({ key: "k" });`,
        options: { timeoutMs: 300 },
      }),
    ).toBe("timeout");
  });

  test("memory: over the heap cap the process fails with MemoryError, naming memoryLimitBytes and its value", async () => {
    const r = await run("const a: Uint8Array[] = []; for (;;) a.push(new Uint8Array(1 << 20));");
    expect([r.exit, r.errors[0]?.replace(/ \(at line \d+, column \d+\)$/, "")]).toEqual([
      "failed",
      "MemoryError: The sandbox ran out of memory (memoryLimitBytes: 16777216)",
    ]);
  });

  test("stack: deep recursion fails with the RangeError the documentation names", async () => {
    const { env } = await environment();
    const docs = await env.generateDocs();
    const r = await run("function f(n: number): number { return f(n + 1) + 1; }\nf(0);");
    expect(r.exit).toBe("failed");
    const name = (r.errors[0] as string).split(":")[0] as string;
    expect(docs).toContain(`- **Stack**: deep recursion fails with \`${name}: Maximum call stack size exceeded\``);
    expect(r.errors[0]).toMatch(/^RangeError: Maximum call stack size exceeded/);
  });

  test("concurrency: past it processes wait in queued; kill ends one as canceled", async () => {
    const never = deferred<unknown>();
    const b = recorder(() => never.promise, KV);
    const { env } = await environment(b);
    const first = env.execute({
      eid: 1,
      code: `await cyrnel.services.kv.tools.get.invoke({ key: "k" });`,
      options: { timeoutMs: 30_000 },
    });
    const second = env.execute({ eid: 2, code: "console.log('ran')", options: { timeoutMs: 30_000 } });
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect([b.states(1), b.states(2)]).toEqual([["queued", "running"], ["queued"]]);
    await env.kill(1);
    expect([await first, await second, b.text(2, "stdout")]).toEqual(["canceled", "success", "ran\n"]);
  });
});
