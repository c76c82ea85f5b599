/**
 * Every statement of the `run_code` tool's guide (its description, which a model writes code from), run as stated
 * through the server and the SDK's client.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createSandbox } from "../../../node/index.js";
import type { JsonValue } from "../../../src/values/json.js";
import { fromWire, toWire } from "../../../src/values/wire.js";
import { mcpServerOf } from "./helpers.js";

const { runCode } = createSandbox({ threads: false, safetyCap: { cpuTimeMs: 2_000 } });
const client = new Client({ name: "test", version: "1.0.0" });
let guide = "";

beforeAll(async () => {
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await mcpServerOf(runCode).connect(serverSide);
  await client.connect(clientSide);
  guide = (await client.listTools()).tools[0]?.description ?? "";
});
afterAll(() => client.close());

type Answer = {
  status: string;
  result?: unknown;
  error?: { name: string; message: string; line?: number };
  logs: { level: string; args: unknown[] }[];
  reports: unknown[];
};
async function call(args: Record<string, unknown>): Promise<Answer> {
  const result = (await client.callTool({ name: "run_code", arguments: args })) as CallToolResult;
  return fromWire(result.structuredContent as JsonValue) as Answer;
}

describe("the run_code guide, statement by statement", () => {
  it("an ES module: export default a value, a Promise or an async function's result; execute picks another export", async () => {
    expect(guide).toContain("Return a value with `export default <value>`; it may be a Promise");
    expect(guide).toContain("Without a default export it runs as a script: the call succeeds with no result");
    expect(await call({ code: "console.log('ran');" })).toMatchObject({ status: "success", result: undefined });
    expect((await call({ code: "console.log('ran');" })).logs.map((log) => log.args)).toEqual([["ran"]]);
    expect((await call({ code: "export default 6 * 7;" })).result).toBe(42);
    expect((await call({ code: "export default Promise.resolve(42);" })).result).toBe(42);
    expect((await call({ code: "export default async () => 42;" })).result).toBe(42);
    expect((await call({ code: "const v = await Promise.resolve(41);\nexport default v + 1;" })).result).toBe(42);
    expect(
      (
        await call({
          code: "export function add(a: number, b: number) { return a + b; }",
          execute: { fn: "add", args: [40, 2] },
        })
      ).result,
    ).toBe(42);
  });

  it("TypeScript by default (enum and namespace work); javascript on request; errors carry the line", async () => {
    expect(guide).toContain("TypeScript by default (types are erased, not checked; `enum` and `namespace` work)");
    expect(
      (await call({ code: "enum E { A = 40 }\nnamespace N { export const b = 2; }\nexport default E.A + N.b;" }))
        .result,
    ).toBe(42);
    expect((await call({ code: "const x: number = 1;", language: "javascript" })).status).toBe("link_error");
    const thrown = await call({ code: "const a = 1;\n\nthrow new RangeError('no');" });
    expect([thrown.status, thrown.error?.name, thrown.error?.line]).toEqual(["error", "RangeError", 3]);
  });

  it("console calls are logs and report(value) records values in order", async () => {
    expect(guide).toContain("`console.log/info/warn/error/debug` are captured as logs; `report(value)` records");
    const answer = await call({ code: "console.log('a', 1); console.warn('w'); report(1); report({ b: 2 });" });
    expect(answer.logs.map((l) => [l.level, l.args])).toEqual([
      ["log", ["a", 1]],
      ["warn", ["w"]],
    ]);
    expect(answer.reports).toEqual([1, { b: 2 }]);
  });

  it("values cross as structured clone; functions, symbols and class instances cannot be returned", async () => {
    const { result } = await call({
      code: "export default [NaN, -0, Infinity, 2n ** 64n, undefined, [1, , 3], new Map([[1, new Set([2])]]), new Date(0), /a/g, new RangeError('r'), new Uint8Array([1, 2])];",
    });
    const holey = [1, 2, 3];
    delete holey[1];
    expect(result).toEqual([
      NaN,
      -0,
      Infinity,
      2n ** 64n,
      undefined,
      holey,
      new Map([[1, new Set([2])]]),
      new Date(0),
      /a/g,
      new RangeError("r"),
      new Uint8Array([1, 2]),
    ]);
    for (const code of [
      "export default { f() {} };",
      "export default Symbol('s');",
      "class P {}\nexport default new P();",
    ]) {
      const answer = await call({ code });
      expect([code, answer.status, answer.error?.name]).toEqual([code, "error", "SerializationError"]);
    }
  });

  it("globals put JSON values, or wire-encoded ones, in scope of the code", async () => {
    expect(guide).toContain(
      "`globals` puts JSON values (or wire-encoded ones, as in the result) in scope of your code as free identifiers",
    );
    const answer = await call({
      code: "export default [typeof input, input.n, big * 2n, typeof globalThis.input];",
      globals: { input: { n: 1 }, big: toWire(21n) },
    });
    expect(answer.result).toEqual(["object", 1, 42n, "undefined"]);
  });

  it("only ECMAScript built-ins, structuredClone and queueMicrotask: none of the rest, and no code from strings", async () => {
    expect(guide).toContain("Only ECMAScript built-ins, `structuredClone` and `queueMicrotask` exist");
    const answer = await call({
      code: `const absent = [typeof fetch, typeof setTimeout, typeof require, typeof process, typeof eval];
let fn = "";
try { new Function("return 1"); } catch (e) { fn = (e as Error).name; }
export default [absent, typeof structuredClone, typeof queueMicrotask, fn];`,
    });
    expect(answer.result).toEqual([
      ["undefined", "undefined", "undefined", "undefined", "undefined"],
      "function",
      "function",
      "TypeError",
    ]);
  });

  it("with a fetch setting: fetch reaches only the origins the guide names", async () => {
    const allow = ["https://api.example.com"];
    const fetch = async () => Response.json({ temperature: 21 });
    const sandbox = createSandbox({ threads: false, webApis: true, fetch: { allow, fetch } });
    const fetching = new Client({ name: "test", version: "1.0.0" });
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    await mcpServerOf(sandbox.runCode, undefined, { webApis: true, fetchAllow: allow }).connect(serverSide);
    await fetching.connect(clientSide);
    const described = (await fetching.listTools()).tools[0]?.description ?? "";
    expect(described).toContain(
      "`DOMException`, `Headers`, `Request`, `Response`, `Blob`, `File`, `FormData`. `fetch(url, init?)` reaches only `https://api.example.com`: any other URL, or a\n  redirect to one, rejects with a TypeError; read a response whole (`await res.json()`, `text()`). No `require`,",
    );
    const code = `const res = await fetch("https://api.example.com/weather");
export default [(await res.json()).temperature, await fetch("https://evil.com/").catch((e) => e.name)];`;
    const result = (await fetching.callTool({ name: "run_code", arguments: { code } })) as CallToolResult;
    expect((fromWire(result.structuredContent as JsonValue) as Answer).result).toEqual([21, "TypeError"]);
    await fetching.close();
  });

  it("past the memory cap the status is memory; past timeoutMs it is terminated", async () => {
    expect(guide).toContain("past them the status is `memory` or `terminated`");
    expect(
      (await call({ code: "const a = []; for (;;) a.push(new Array(1e5).fill(1));", memoryLimitBytes: 16 << 20 }))
        .status,
    ).toBe("memory");
    expect((await call({ code: "for (;;) {}", timeoutMs: 300 })).status).toBe("terminated");
  });
});

describe("the run_code guide of a sandbox with the Web APIs", () => {
  const web = new Client({ name: "test", version: "1.0.0" });
  let webGuide = "";
  beforeAll(async () => {
    const sandbox = createSandbox({ threads: false, webApis: true, safetyCap: { cpuTimeMs: 2_000 } });
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    await mcpServerOf(sandbox.runCode, undefined, { webApis: true }).connect(serverSide);
    await web.connect(clientSide);
    webGuide = (await web.listTools()).tools[0]?.description ?? "";
  });
  afterAll(() => web.close());

  it("lists the Web APIs, which are there; the run waits for pending timers; fetch, require and process are not", async () => {
    expect(webGuide).toContain(
      "ECMAScript built-ins, `structuredClone`, `queueMicrotask` and these Web APIs exist: `URL`",
    );
    expect(webGuide).toContain("`setInterval` (the run waits for pending timers)");
    expect(webGuide).not.toContain("Only ECMAScript built-ins");
    const result = (await web.callTool({
      name: "run_code",
      arguments: {
        code: `const out: unknown[] = [new URL("?q=1", "https://h.example/p").href, new TextEncoder().encode("é").length,
  atob(btoa("x")), typeof crypto.randomUUID(), typeof AbortController, typeof Event, typeof DOMException,
  typeof crypto.subtle.digest, typeof performance.now(), typeof FormData,
  [typeof fetch, typeof require, typeof process].join(" ")];
setTimeout(() => out.push("timer"), 10);
export default out;`,
      },
    })) as CallToolResult;
    expect((fromWire(result.structuredContent as JsonValue) as Answer).result).toEqual([
      "https://h.example/p?q=1",
      2,
      "x",
      "string",
      "function",
      "function",
      "function",
      "function",
      "number",
      "function",
      "undefined undefined undefined",
      "timer",
    ]);
  });
});

describe("the run_code guide of a sandbox with Intl", () => {
  const intl = new Client({ name: "test", version: "1.0.0" });
  let intlGuide = "";
  beforeAll(async () => {
    const sandbox = createSandbox({ threads: false, intl: true, safetyCap: { cpuTimeMs: 2_000 } });
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    await mcpServerOf(sandbox.runCode, undefined, { intl: true }).connect(serverSide);
    await intl.connect(clientSide);
    intlGuide = (await intl.listTools()).tools[0]?.description ?? "";
  });
  afterAll(() => intl.close());

  it("says Intl exists, honours locales, and defaults to en-US and UTC, as it does", async () => {
    expect(guide).not.toContain("`Intl` exists");
    expect(intlGuide).toContain("- `Intl` exists (`NumberFormat`, `DateTimeFormat` with time zones, `Collator`");
    expect(intlGuide).toContain('with no locale they use "en-US", with no `timeZone` "UTC"');
    const result = (await intl.callTool({
      name: "run_code",
      arguments: {
        code: `export default [(1234.5).toLocaleString("de-DE"), new Date(0).toLocaleString(),
  new Intl.DateTimeFormat("en-US", { timeZone: "America/New_York", timeStyle: "short" }).format(0)];`,
      },
    })) as CallToolResult;
    expect((fromWire(result.structuredContent as JsonValue) as Answer).result).toEqual([
      "1.234,5",
      "1/1/1970, 12:00:00 AM",
      "7:00 PM",
    ]);
  });
});
