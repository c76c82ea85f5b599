import { describe, expect, test } from "vitest";
import { type EnvironmentModule, instantiate, type ServiceInfo } from "../../src/environment/index.js";
import { deferred, inThread, type Recorder, recorder, wasm } from "./helpers.js";

const KV: ServiceInfo[] = [
  {
    id: "kv",
    name: "Key-value store",
    description: "d",
    tools: [
      { id: "get", name: "get", description: "Reads", inputSchema: {}, outputSchema: {} },
      { id: "set", name: "set", description: "Writes", inputSchema: {}, outputSchema: {} },
    ],
  },
];

async function environment(
  bindings: Recorder,
  options: Parameters<typeof instantiate>[0] = {},
): Promise<EnvironmentModule> {
  const env = instantiate({ wasm: await wasm(), createSandbox: inThread, ...options });
  await env.setup({ config: {}, secrets: {}, bindings });
  return env;
}

describe("execute", () => {
  test("reports queued then running, streams console output as UTF-8 lines, succeeds", async () => {
    const b = recorder();
    const env = await environment(b);
    const exit = await env.execute({
      eid: 7,
      code: `console.log("héllo €", { a: 1, b: [1, 2] });\nconsole.info(new Map([["k", 1]]));\nconsole.debug("d");\nconsole.warn("w");\nconsole.error("e", 2);`,
      // The file's first run also loads the engine and TypeScript: room for that on a busy machine.
      options: { timeoutMs: 30_000 },
    });
    expect(exit).toBe("success");
    expect(b.states(7)).toEqual(["queued", "running"]);
    expect(b.text(7, "stdout")).toBe("héllo € { a: 1, b: [ 1, 2 ] }\nMap(1) { 'k' => 1 }\nd\n");
    expect(b.text(7, "stderr")).toBe("w\ne 2\n");
    expect(b.errors(7)).toEqual([]);
    const first = b.calls.find((c) => c.kind === "stdout");
    expect(first?.kind === "stdout" && first.bytes).toEqual(
      new TextEncoder().encode("héllo € { a: 1, b: [ 1, 2 ] }\n"),
    );
  });

  test("console values that cannot be cloned print as the guest has them; directives; hostile prototypes", async () => {
    const b = recorder();
    const env = await environment(b);
    const code = `class Point { x = 1; }
function named() {}
const cyclic: any = { a: 1 }; cyclic.self = cyclic;
const err = Object.assign(new RangeError("r"), { code: 7 });
console.log(new Point(), named, async () => {}, Point, Symbol("s"), Promise.resolve(1));
console.log(Object.assign(Object.create(null), { a: 1 }), { get g() { return 1; }, [Symbol("k")]: 2 }, cyclic);
console.log({ n: { m: { k: { deep: 1 } } }, p: [new Point()] }, [1, , 3], err, { e: err });
console.log("%s=%j %d", "v", { toJSON() { return [1]; } }, 2, new Map([[named, new Set([Symbol.iterator])]]));
Object.defineProperty(Object.prototype, "zz", { set() { throw new Error("setter ran"); }, configurable: true });
Object.keys = () => [];
console.log({ zz: 1 }, [2]);`;
    expect(await env.execute({ eid: 1, code })).toBe("success");
    expect(b.text(1, "stdout").split("\n")).toEqual([
      "Point { x: 1 } [Function: named] [AsyncFunction (anonymous)] [class Point] Symbol(s) Promise { <pending or settled> }",
      "[Object: null prototype] { a: 1 } { g: [Getter], [Symbol(k)]: 2 } { a: 1, self: [Circular] }",
      "{ n: { m: { k: [Object] } }, p: [ Point { x: 1 } ] } [ 1, <1 empty item>, 3 ] RangeError: r { code: 7 } { e: [RangeError: r] { code: 7 } }",
      "v=[1] 2 Map(1) { [Function: named] => Set(1) { Symbol(Symbol.iterator) } }",
      "{ zz: 1 } [ 2 ]",
      "",
    ]);
  });

  test("a Float16Array prints as util.inspect prints one, on every host (Node 20 has none to receive)", async () => {
    const b = recorder();
    const env = await environment(b);
    const code = `const h = new Float16Array([1.5, -0, NaN, 65504]);
console.log(h, { deep: { er: { h } } });
console.log(new Float16Array(101).fill(2));`;
    expect(await env.execute({ eid: 1, code })).toBe("success");
    const lines = b.text(1, "stdout").split("\n");
    expect(lines.slice(0, 1)).toEqual([
      "Float16Array(4) [ 1.5, -0, NaN, 65504 ] { deep: { er: { h: [Float16Array] } } }",
    ]);
    // The long one: its first 100 items, one a line, and what was left out.
    expect(lines.slice(1)).toEqual(["Float16Array(101) [", ...Array(100).fill("  2,"), "  ... 1 more item", "]", ""]);
  });

  test("TypeScript module: top-level await, types erased, a default-exported function is called", async () => {
    const b = recorder();
    const env = await environment(b);
    const code = `interface P { n: number }\nconst p: P = await Promise.resolve({ n: 2 });\nconsole.log("top", p.n);\nexport default async function main(): Promise<void> {\n  await null;\n  cyrnel.output({ main: true });\n}`;
    expect(await env.execute({ eid: 1, code })).toBe("success");
    expect(b.text(1, "stdout")).toBe("top 2\n");
    expect(b.outputs(1)).toEqual([{ main: true }]);
  });

  test("cyrnel.output sends each patch as a tree of JSON data, converted as the host stores it", async () => {
    const b = recorder();
    const env = await environment(b);
    const code = `cyrnel.output({ a: 1, when: new Date(0), tags: new Set(["x"]), big: 2n ** 70n, m: new Map<unknown, unknown>([[1, "one"], ["k", undefined]]),
  bytes: new Uint8Array([1, 2]), list: [undefined, NaN, -0, Infinity, , 3], gone: undefined, bad: new Date(NaN), re: /x/g });
cyrnel.output({ a: 2 });`;
    expect(await env.execute({ eid: 1, code })).toBe("success");
    const expected = [
      {
        a: 1,
        when: "1970-01-01T00:00:00.000Z",
        tags: ["x"],
        big: "1180591620717411303424",
        m: { 1: "one" },
        bytes: [1, 2],
        list: [null, null, 0, null, null, 3],
        bad: null,
        re: {},
      },
      { a: 2 },
    ];
    expect(b.outputs(1)).toStrictEqual(expected);
    expect(b.outputs(1).map((patch) => JSON.stringify(patch))).toEqual(expected.map((patch) => JSON.stringify(patch)));
  });

  test.each([
    ["an array", "cyrnel.output([1, 2]);", "an array"],
    ["a string", 'cyrnel.output("x");', "string"],
    ["a class instance", "class Box {}\ncyrnel.output(new Box());", "an instance of Box"],
    ["a Map", "cyrnel.output(new Map());", "an instance of Map"],
  ])("cyrnel.output refuses %s with a clear error at the call", async (_label, code, got) => {
    const b = recorder();
    const env = await environment(b);
    expect(await env.execute({ eid: 1, code })).toBe("failed");
    const line = code.split("\n").length;
    const column = (code.split("\n").at(-1) as string).indexOf("(") + 1;
    expect(b.errors(1)).toEqual([
      `TypeError: cyrnel.output(value) expects a plain object such as { total: 3 }, got ${got} (at line ${line}, column ${column})`,
    ]);
    expect(b.outputs(1)).toEqual([]);
  });

  test("failures name the line and column in the submitted code", async () => {
    const cases: [string, string][] = [
      [
        "const a = 1;\nconst b: any = undefined;\n\n   console.log(b.x);",
        "TypeError: cannot read property 'x' of undefined (at line 4, column 17)",
      ],
      ["const x = 1;\nlet y = ;", "SyntaxError: Expression expected (at line 2, column 9)"],
      [
        'function inner() {\n  throw new RangeError("deep");\n}\nfunction outer() { inner(); }\nouter();',
        "RangeError: deep (at line 2, column 23)\n    at inner (line 2, column 23)\n    at outer (line 4, column 25)\n    at <anonymous> (line 5, column 6)",
      ],
      [
        'const n = 1;\nimport fs from "fs";',
        "LinkError: Cannot import 'fs': process code is one module and imports nothing; tools are on the cyrnel global (at line 2, column 16)",
      ],
      ['throw "plain"', "Error: plain"],
    ];
    const b = recorder();
    const env = await environment(b);
    for (const [i, [code, message]] of cases.entries()) {
      expect(await env.execute({ eid: i + 1, code })).toBe("failed");
      expect(b.errors(i + 1)).toEqual([message]);
    }
  });

  test("a rejected tool call fails at the invoke call site; a caught one does not", async () => {
    const b = recorder(async () => {
      throw Object.assign(new Error("Invalid parameters for kv.get: key: must be a string"), { name: "ToolError" });
    }, KV);
    const env = await environment(b);
    const code = `try {\n  await cyrnel.services.kv.tools.get.invoke({ key: 1 });\n} catch (e) {\n  console.error((e as Error).name, (e as Error).message);\n}\nawait cyrnel.services.kv.tools.get.invoke({ key: 2 });`;
    expect(await env.execute({ eid: 1, code })).toBe("failed");
    expect(b.text(1, "stderr")).toBe("ToolError Invalid parameters for kv.get: key: must be a string\n");
    expect(b.errors(1)).toEqual([
      "ToolError: Invalid parameters for kv.get: key: must be a string (at line 6, column 42)",
    ]);
  });
});

describe("the in-sandbox surface", () => {
  test("tools from discovery: invoke forwards, results come back, unknown names list the known ones", async () => {
    const b = recorder(async (input) => ({ echoed: input.parameters, at: input.toolId }), KV);
    const env = await environment(b);
    const code = `const r = await cyrnel.services.kv.tools.get.invoke({ key: "a" });
console.log(r, Object.keys(cyrnel.services), Object.keys(cyrnel.services.kv.tools));
console.log(cyrnel.services.kv.name, cyrnel.services.kv.tools.set.description);
await cyrnel.services.kv.tools.set.invoke();
try { cyrnel.services.nope; } catch (e) { console.log((e as Error).message); }
try { cyrnel.services.kv.tools.nope; } catch (e) { console.log((e as Error).message); }
try { cyrnel.services.kv.tools.get.invoke([1]); } catch (e) { console.log((e as Error).message); }`;
    expect(await env.execute({ eid: 3, code })).toBe("success");
    expect(b.text(3, "stdout").split("\n")).toEqual([
      "{ echoed: { key: 'a' }, at: 'get' } [ 'kv' ] [ 'get', 'set' ]",
      "Key-value store Writes",
      "cyrnel.services has no service 'nope' (available: kv)",
      "cyrnel.services.kv.tools has no tool 'nope' (available: get, set)",
      "cyrnel.services.kv.tools.get.invoke(parameters) expects a plain object, got an array",
      "",
    ]);
    expect(b.calls.filter((c) => c.kind === "invoke").map((c) => c.kind === "invoke" && c.input)).toEqual([
      { serviceId: "kv", toolId: "get", parameters: { key: "a" }, eid: 3 },
      { serviceId: "kv", toolId: "set", parameters: {}, eid: 3 },
    ]);
  });

  test("tools as imports: each service a module of its tools, called as cyrnel's invoke is; a failed import lists them", async () => {
    const b = recorder(async (input) => ({ echoed: input.parameters, at: input.toolId }), KV);
    const env = await environment(b);
    const code = `import { get, set } from "kv";
import * as kv from "kv";
console.log(await get({ key: "a" }), Object.keys(kv).sort());
await set();
try { await get([1]); } catch (e) { console.log((e as Error).message); }`;
    expect(await env.execute({ eid: 4, code })).toBe("success");
    expect(b.text(4, "stdout")).toBe(
      "{ echoed: { key: 'a' }, at: 'get' } [ 'get', 'set' ]\nget(parameters) from \"kv\" expects a plain object\n",
    );
    expect(b.calls.filter((c) => c.kind === "invoke").map((c) => c.kind === "invoke" && c.input)).toEqual([
      { serviceId: "kv", toolId: "get", parameters: { key: "a" }, eid: 4 },
      { serviceId: "kv", toolId: "set", parameters: {}, eid: 4 },
    ]);
    expect(await env.execute({ eid: 5, code: 'import { get } from "kv";\nimport { del } from "db";' })).toBe("failed");
    expect(b.errors(5)).toEqual([
      "LinkError: Cannot import 'db': process code imports only its modules and the host's tools and packages: kv (at line 2, column 21)",
    ]);
  });

  test("code imports its modules by relative specifier, as /run's; a missing one is named with them; bad ones are refused", async () => {
    const b = recorder(async (input) => ({ echoed: input.parameters, at: input.toolId }), KV);
    const env = await environment(b);
    const modules = { "./util.js": 'import { get } from "kv";\nexport const read = (key) => get({ key });' };
    const code = 'import { read } from "./util.js";\nconsole.log(await read("a"));';
    expect(await env.execute({ eid: 1, code, modules })).toBe("success");
    expect(b.text(1, "stdout")).toBe("{ echoed: { key: 'a' }, at: 'get' }\n");
    expect(await env.execute({ eid: 2, code: 'import { x } from "./missing.js";', modules })).toBe("failed");
    expect(b.errors(2)).toEqual([
      "LinkError: Cannot import './missing.js': process code imports only its modules and the host's tools and packages: ./util.js, kv (at line 1, column 19)",
    ]);
    await expect(env.execute({ eid: 3, code, modules: { "util.js": "" } })).rejects.toThrow(
      "runCode: options.modules key 'util.js' must be a relative specifier such as './helpers.js'",
    );
    await expect(env.execute({ eid: 3, code, modules: { "./__runtime__.js": "" } })).rejects.toThrow(
      "modules['./__runtime__.js'] is the name the environment gives the process's own graph: rename it",
    );
    await expect(env.execute({ eid: 3, code, modules: { "./__entry__.js": "" } })).rejects.toThrow(
      "runCode: options.modules['./__entry__.js'] collides with options.filename",
    );
    expect(b.states(3)).toEqual([]);
  });

  test("a tool import's rejection fails the process with the tool's error, without a position (the host made it)", async () => {
    const b = recorder(async () => {
      throw Object.assign(new Error("Invalid parameters for kv.get: key: must be a string"), { name: "ToolError" });
    }, KV);
    const env = await environment(b);
    expect(await env.execute({ eid: 1, code: 'import { get } from "kv";\n\nawait get({ key: 2 });' })).toBe("failed");
    expect(b.errors(1)).toEqual(["ToolError: Invalid parameters for kv.get: key: must be a string"]);
  });

  test("without discovery, any service and tool name is forwarded as written", async () => {
    const b = recorder(async (input) => `${input.serviceId}/${input.toolId}`);
    const env = await environment(b);
    const code = `console.log(await cyrnel.services.math.tools["add-two"].invoke({ a: 1 }));`;
    expect(await env.execute({ eid: 1, code })).toBe("success");
    expect(b.text(1, "stdout")).toBe("math/add-two\n");
  });

  test("nothing else of the host is reachable and the surface cannot be replaced", async () => {
    const b = recorder(async () => 1, KV);
    const env = await environment(b);
    const code = `console.log(typeof report, typeof (cyrnel as any).__host, typeof (globalThis as any).cyrnel, typeof (globalThis as any).console);
console.log(Object.isFrozen(cyrnel), Object.isFrozen(console), Object.keys(cyrnel).join(","), Object.keys(console).join(","));
console.log(typeof fetch, typeof setTimeout, typeof process, typeof require);`;
    expect(await env.execute({ eid: 1, code })).toBe("success");
    expect(b.text(1, "stdout")).toBe(
      "undefined undefined undefined undefined\ntrue true services,output log,info,debug,warn,error\nundefined undefined undefined undefined\n",
    );
  });
});

describe("fetch", () => {
  test("reaches the origins of the host's fetch setting only, and the docs name them", async () => {
    const b = recorder();
    const requested: string[] = [];
    const fetch = async (url: string) => {
      requested.push(url);
      return Response.json({ ok: 1 });
    };
    const env = await environment(b, { fetch: { allow: ["https://api.example.com/v1/"], fetch } });
    const code = `console.log(await (await fetch("https://api.example.com/v1/x")).json());
console.log(await fetch("https://api.example.com/v2/x").catch((e) => e.message));`;
    expect(await env.execute({ eid: 1, code })).toBe("success");
    expect(b.text(1, "stdout")).toBe(
      "{ ok: 1 }\nfetch: https://api.example.com/v2/x is outside the paths allowed for https://api.example.com\n",
    );
    expect(requested).toEqual(["https://api.example.com/v1/x"]);
    const docs = await env.generateDocs();
    expect(docs).toContain("HTTP requests to `https://api.example.com/v1/` only");
    expect(docs).toContain("| Web APIs | `URL`");
    expect(docs).toContain("Not available: `process`");
    expect(await (await environment(recorder(), { webApis: true })).generateDocs()).toContain(
      "Not available: `fetch`, `process`",
    );
  });

  test("intl gives processes Intl, in en-US and UTC where they name none, and the docs list it; without it there is none", async () => {
    const b = recorder();
    const env = await environment(b, { intl: true });
    const code = `console.log(new Intl.NumberFormat("de-DE").format(1234.5), (1234.5).toLocaleString(), new Date(0).toLocaleString());`;
    expect(await env.execute({ eid: 1, code })).toBe("success");
    expect(b.text(1, "stdout")).toBe("1.234,5 1,234.5 1/1/1970, 12:00:00 AM\n");
    expect(await env.generateDocs()).toContain("| `Intl` | `NumberFormat`");
    const without = recorder();
    const plain = await environment(without);
    expect(await plain.execute({ eid: 1, code: "console.log(typeof Intl);" })).toBe("success");
    expect(without.text(1, "stdout")).toBe("undefined\n");
    expect(await plain.generateDocs()).not.toContain("| `Intl` |");
  });

  test("bootModules: process code imports the host's packages by name; another import's error and the docs name them", async () => {
    const b = recorder();
    const env = await environment(b, { bootModules: { "tiny-pkg": "export const answer = 42;" } });
    expect(await env.execute({ eid: 1, code: 'import { answer } from "tiny-pkg";\nconsole.log(answer);' })).toBe(
      "success",
    );
    expect(b.text(1, "stdout")).toBe("42\n");
    expect(await env.execute({ eid: 2, code: 'import fs from "fs";' })).toBe("failed");
    expect(b.errors(2)).toEqual([
      "LinkError: Cannot import 'fs': process code imports only its modules and the host's tools and packages: tiny-pkg (at line 1, column 16)",
    ]);
    expect(await env.generateDocs()).toContain(
      "; the host's npm packages are imported by name (`tiny-pkg`); the process's own modules, when it was created with some, by their relative names (`import { f } from \"./util.js\"`). Nothing else: `require` and any other import fail (there is no file system, no Node or browser API).",
    );
  });

  test("a bad setting is refused when the environment is made", () => {
    expect(() => instantiate({ fetch: { allow: ["ftp://x.org"] } })).toThrow(
      new TypeError('instantiate: fetch.allow[0] must be an http: or https: origin, got "ftp://x.org"'),
    );
    expect(() => instantiate({ intl: "yes" as unknown as boolean })).toThrow(new TypeError("intl must be a boolean"));
  });
});

describe("timeouts", () => {
  test("while(true){} stops at timeoutMs with exit timeout and a message", async () => {
    const b = recorder();
    const env = await environment(b);
    const started = performance.now();
    expect(await env.execute({ eid: 1, code: "while (true) {}", options: { timeoutMs: 300 } })).toBe("timeout");
    expect(performance.now() - started).toBeLessThan(5_000);
    expect(b.errors(1)).toEqual(["Timeout: the process ran longer than its timeoutMs (300 ms) and was stopped"]);
  });

  test("where the clock stands still, fuel still stops the loop", async () => {
    const b = recorder();
    const env = await environment(b, { clock: () => 0 });
    const started = performance.now();
    expect(await env.execute({ eid: 1, code: "let i = 0; while (true) { i++; }", options: { timeoutMs: 200 } })).toBe(
      "timeout",
    );
    expect(performance.now() - started).toBeLessThan(10_000);
    expect(b.errors(1)).toEqual([
      "Timeout: the process was stopped by its fuel cap (200000000 units: its timeoutMs of 200 ms at 1000000 units per ms)",
    ]);
  });

  test("where the clock stands still, fuel stops a BigInt loop, which polls for interrupts once per multiply", async () => {
    const b = recorder();
    const env = await environment(b, { clock: () => 0 });
    const started = performance.now();
    const code = "let x = 3n ** 200000n; for (;;) x = (x * x) % (3n ** 200000n);";
    expect(await env.execute({ eid: 1, code, options: { timeoutMs: 300 } })).toBe("timeout");
    expect(performance.now() - started).toBeLessThan(10_000);
    expect(b.errors(1)).toEqual([
      "Timeout: the process was stopped by its fuel cap (300000000 units: its timeoutMs of 300 ms at 1000000 units per ms)",
    ]);
  });

  test("a tool call that never settles is cut off by the timeout", async () => {
    const b = recorder(() => new Promise(() => {}), KV);
    const env = await environment(b);
    const code = `console.log("before");\nawait cyrnel.services.kv.tools.get.invoke({ key: "k" });\nconsole.log("after");`;
    expect(await env.execute({ eid: 1, code, options: { timeoutMs: 200 } })).toBe("timeout");
    expect(b.text(1, "stdout")).toBe("before\n");
  });

  test("maxCpuMs stops a run's guest work before a longer timeoutMs, and the message names the CPU cap and its value", async () => {
    const b = recorder();
    const env = await environment(b, { maxCpuMs: 200 });
    const started = performance.now();
    expect(await env.execute({ eid: 1, code: "while (true) {}", options: { timeoutMs: 60_000 } })).toBe("timeout");
    // A bound that only catches a run held to its timeoutMs.
    expect(performance.now() - started).toBeLessThan(30_000);
    expect(b.errors(1)).toEqual([
      "Timeout: the process was stopped by the host's CPU cap per run (maxCpuMs = 200 ms) before its timeoutMs (60000 ms)",
    ]);
    await expect(environment(recorder(), { maxCpuMs: 0 })).rejects.toThrow("maxCpuMs must be a positive number");
  });

  test("a stop by maxCpuMs names the host's setting it came from, exactly, with a clock that moves a millisecond a read", async () => {
    const b = recorder();
    let now = 0;
    const env = await environment(b, { maxCpuMs: 20, maxCpuMsSetting: "RUN_CPU_MS", clock: () => now++ });
    expect(await env.execute({ eid: 1, code: "while (true) {}", options: { timeoutMs: 60_000 } })).toBe("timeout");
    expect(b.errors(1)).toEqual([
      "Timeout: the process was stopped by the host's CPU cap per run (RUN_CPU_MS = 20 ms) before its timeoutMs (60000 ms)",
    ]);
    await expect(environment(recorder(), { maxCpuMsSetting: 1 as never })).rejects.toThrow(
      "maxCpuMsSetting must be a string",
    );
  });

  test("undefined options fall back to the environment's default timeout", async () => {
    const b = recorder();
    const env = await environment(b, { defaultTimeoutMs: 250 });
    expect(await env.execute({ eid: 1, code: "while (true) {}" })).toBe("timeout");
    expect(b.errors(1)).toEqual(["Timeout: the process ran longer than its timeoutMs (250 ms) and was stopped"]);
  });
});

describe("sandboxes", () => {
  test("one, made at its first execution and reused by every later one whatever its timeout", async () => {
    const made: unknown[] = [];
    const b = recorder();
    const env = await environment(b, {
      createSandbox: (settings) => {
        made.push(settings.safetyCap);
        return inThread(settings);
      },
    });
    const exits = [];
    for (const timeoutMs of [20_000, 20_000, 25_000, 20_000, 25_000]) {
      exits.push(await env.execute({ eid: exits.length, code: "console.log(1);", options: { timeoutMs } }));
    }
    expect({ exits, made }).toEqual({
      exits: Array(5).fill("success"),
      made: [{ cpuTimeMs: Number.POSITIVE_INFINITY, fuel: Number.POSITIVE_INFINITY }],
    });
  });
});

describe("kill and teardown", () => {
  test("a queued execution is canceled without running", async () => {
    const gate = deferred<unknown>();
    const b = recorder(() => gate.promise, KV);
    const env = await environment(b, { concurrency: 1 });
    const first = env.execute({ eid: 1, code: `await cyrnel.services.kv.tools.get.invoke({ key: "k" });` });
    const second = env.execute({ eid: 2, code: `console.log("ran");` });
    await env.kill(2);
    expect(await second).toBe("canceled");
    expect(b.states(2)).toEqual(["queued"]);
    expect(b.text(2, "stdout")).toBe("");
    gate.resolve({ value: 1 });
    expect(await first).toBe("success");
  });

  test("a running execution awaiting a tool is stopped promptly and resolves canceled", async () => {
    const b = recorder(() => new Promise(() => {}), KV);
    const env = await environment(b);
    const code = `console.log("waiting");\nawait cyrnel.services.kv.tools.get.invoke({ key: "k" });\nconsole.log("never");`;
    const running = env.execute({ eid: 5, code, options: { timeoutMs: 20_000 } });
    while (!b.text(5, "stdout").includes("waiting")) await new Promise((r) => setTimeout(r, 5));
    const started = performance.now();
    await env.kill(5);
    expect(await running).toBe("canceled");
    expect(performance.now() - started).toBeLessThan(1_000);
    expect(b.errors(5)).toEqual([]);
    const before = b.calls.length;
    await new Promise((r) => setTimeout(r, 20));
    expect(b.calls.length).toBe(before);
  });

  test("kill of an unknown eid is a no-op", async () => {
    const env = await environment(recorder());
    await expect(env.kill(12345)).resolves.toBeUndefined();
  });

  test("teardown cancels what is in flight; execute afterwards rejects", async () => {
    const b = recorder(() => new Promise(() => {}), KV);
    const env = await environment(b, { concurrency: 1 });
    const a = env.execute({ eid: 1, code: `await cyrnel.services.kv.tools.get.invoke({ key: "k" });` });
    const q = env.execute({ eid: 2, code: "1" });
    while (!b.states(1).includes("running")) await new Promise((r) => setTimeout(r, 5));
    await env.teardown();
    expect(await a).toBe("canceled");
    expect(await q).toBe("canceled");
    await expect(env.execute({ eid: 3, code: "1" })).rejects.toThrow("The environment is torn down");
  });

  test("execute before setup and a duplicate eid reject", async () => {
    const env = instantiate({ wasm: await wasm(), createSandbox: inThread });
    await expect(env.execute({ eid: 1, code: "1" })).rejects.toThrow("call setup() first");
    await env.setup({ config: {}, secrets: {}, bindings: recorder(() => new Promise(() => {}), KV) });
    const first = env.execute({ eid: 1, code: `await cyrnel.services.kv.tools.get.invoke({ key: "k" });` });
    await expect(env.execute({ eid: 1, code: "1" })).rejects.toThrow("execution 1 is already in flight");
    await env.kill(1);
    expect(await first).toBe("canceled");
  });
});

describe("docs", () => {
  test("generateDocs documents the surface, the limits and examples", async () => {
    const env = await environment(recorder(), { defaultTimeoutMs: 12_345, concurrency: 3 });
    const docs = await env.generateDocs();
    for (const text of [
      "cyrnel.services[serviceId].tools[toolId].invoke(parameters)",
      "cyrnel.output(patch)",
      "console.warn/error",
      "Top-level `await` works",
      "default 12345 ms",
      "At most 3 processes",
      "64 MiB",
      '- **Imports**: each service of the host is a module of its tools: `import { get } from "kv"; await get({ key: "a" })` is the call `cyrnel.services.kv.tools.get.invoke({ key: "a" })` makes; the process\'s own modules, when it was created with some, by their relative names (`import { f } from "./util.js"`). Nothing else: `require` and any other import fail (there is no file system, no npm, no Node or browser API).',
    ])
      expect(docs).toContain(text);
    expect(docs).not.toContain("**CPU**");
    expect(await (await environment(recorder(), { maxCpuMs: 200 })).generateDocs()).toContain(
      "- **CPU**: at most 200 ms of synchronous work (time awaiting tools, timers or `fetch` does not count) per run, whatever its `timeoutMs`; past it the process exits with `timeout`, its error naming the host's CPU cap.",
    );
  });

  test("generateToolDocs renders parameters, returns and an example call that runs", async () => {
    const inputSchema = {
      type: "object",
      properties: {
        city: { type: "string", description: "City name", minLength: 2 },
        days: { type: "integer", minimum: 1, maximum: 7 },
        units: { enum: ["metric", "imperial"] },
      },
      required: ["city"],
      additionalProperties: false,
    };
    const outputSchema = { type: "object", properties: { summary: { type: "string" } }, required: ["summary"] };
    const env = await environment(recorder());
    const md = await env.generateToolDocs({
      serviceId: "weather",
      toolId: "forecast",
      description: "Forecast for a city.",
      inputSchema,
      outputSchema,
    });
    expect(md).toContain("| `city` | `string` | yes | City name (minLength: 2) |");
    expect(md).toContain('| `units` | `"metric" \\| "imperial"` | no |  |');
    expect(md).toContain("| `summary` | `string` | yes |  |");
    const example = /## Example\n```ts\n([\s\S]*?)```/.exec(md)?.[1] as string;
    expect(example).toBe(
      'const result = await cyrnel.services.weather.tools.forecast.invoke({\n  "city": "example",\n  "days": 1,\n  "units": "metric"\n});\nconsole.log(result);\n',
    );
    const b = recorder(async (input) => ({ summary: `sunny in ${String(input.parameters.city)}` }));
    const runner = await environment(b);
    expect(await runner.execute({ eid: 1, code: example })).toBe("success");
    expect(b.text(1, "stdout")).toBe("{ summary: 'sunny in example' }\n");
  });
});
