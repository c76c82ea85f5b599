/** §6.1-§6.3, §6.6-§6.8 and §8: what the sandbox does not have, and fresh runs. */
import { describe, expect, it } from "vitest";
import type { RunCode } from "../../src/core/types.js";
import { fails, ok } from "./helpers.js";

const ABSENT = [
  "process",
  "global",
  "window",
  "self",
  "document",
  "require",
  "module",
  "exports",
  "Deno",
  "Bun",
  "fetch",
  "Request",
  "Response",
  "Headers",
  "URL",
  "URLSearchParams",
  "WebSocket",
  "WebAssembly",
  "crypto",
  "setTimeout",
  "setInterval",
  "setImmediate",
  "clearTimeout",
  "performance",
  "atob",
  "btoa",
  "TextEncoder",
  "TextDecoder",
  "SharedArrayBuffer",
  "Atomics",
  "postMessage",
  "importScripts",
  "std",
  "os",
  "print",
  "console",
  "eval",
] as const;

export function isolationSuite(runCode: RunCode): void {
  describe("§6.1 no host capabilities on globalThis", () => {
    it("globalThis has none of the host capabilities", async () => {
      const names = JSON.stringify(ABSENT);
      const source = `const own = Object.getOwnPropertyNames(globalThis);\nexport default ${names}.filter((n) => own.includes(n) || n in globalThis)`;
      expect(await ok(runCode, source)).toEqual([]);
    });

    it("none of them is reachable as a free identifier (except the capturing console)", async () => {
      const names = ABSENT.filter((n) => n !== "console");
      const source = `export default [${names.map((n) => `typeof ${n}`).join(", ")}]`;
      expect(await ok(runCode, source)).toEqual(names.map(() => "undefined"));
    });

    it("Object.keys(globalThis) is empty", async () => {
      expect(await ok(runCode, "export default Object.keys(globalThis)")).toEqual([]);
    });

    it("the ECMAScript intrinsics are present", async () => {
      const names = [
        "Object",
        "Array",
        "Promise",
        "Math",
        "JSON",
        "Map",
        "Set",
        "WeakMap",
        "Date",
        "RegExp",
        "Error",
        "Uint8Array",
        "BigInt",
        "Symbol",
        "Reflect",
        "Proxy",
        "structuredClone",
        "globalThis",
      ];
      const source = `export default [${names.map((n) => `typeof ${n}`).join(", ")}]`;
      expect(await ok(runCode, source)).toEqual(
        names.map((n) =>
          n === "Math" || n === "JSON" || n === "Reflect" || n === "globalThis" ? "object" : "function",
        ),
      );
    });

    it("structuredClone deep-clones a Map", async () => {
      const source = `
        const m = new Map([['a', { n: 1 }]]);
        const c = structuredClone(m);
        c.get('a').n = 2;
        export default [c instanceof Map, c !== m, m.get('a').n, c.get('a').n];
      `;
      expect(await ok(runCode, source)).toEqual([true, true, 1, 2]);
    });

    it("structuredClone refuses a function", async () => {
      const source =
        "let out;\ntry { structuredClone({ f() {} }); out = 'cloned'; } catch (e) { out = 'threw'; }\nexport default out";
      expect(await ok(runCode, source)).toBe("threw");
    });

    it("this at module top level is undefined", async () => {
      expect(await ok(runCode, "export default typeof this")).toBe("undefined");
    });
  });

  describe("§6.2 no dynamic code loading", () => {
    it("eval throws a ReferenceError", async () => {
      const source = "let out;\ntry { out = eval('1'); } catch (e) { out = e.name; }\nexport default out";
      expect(await ok(runCode, source)).toBe("ReferenceError");
    });

    it("every function constructor throws on source strings", async () => {
      const source = `
        const attempts = {
          newFunction: () => new Function('return 1')(),
          callFunction: () => Function('return 1')(),
          asyncFunction: () => (async function () {}).constructor('return 1'),
          generatorFunction: () => (function* () {}).constructor('yield 1'),
          asyncGeneratorFunction: () => (async function* () {}).constructor('yield 1'),
          reflectConstruct: () => Reflect.construct(Function, ['return 1']),
          prototypeConstructor: () => Function.prototype.constructor('return 1'),
          arrowConstructor: () => (() => 1).constructor('return 1'),
          boundConstructor: () => Function.bind(null, 'return 1')(),
          applyFunction: () => Function.apply(null, ['return 1']),
        };
        const out = {};
        for (const [name, attempt] of Object.entries(attempts)) {
          try { attempt(); out[name] = 'ran'; } catch (e) { out[name] = 'threw'; }
        }
        export default out;
      `;
      expect(await ok(runCode, source)).toEqual({
        newFunction: "threw",
        callFunction: "threw",
        asyncFunction: "threw",
        generatorFunction: "threw",
        asyncGeneratorFunction: "threw",
        reflectConstruct: "threw",
        prototypeConstructor: "threw",
        arrowConstructor: "threw",
        boundConstructor: "threw",
        applyFunction: "threw",
      });
    });

    it("functions still are functions", async () => {
      const source = `export default [
        (() => 1) instanceof Function,
        (async () => 1) instanceof Function,
        typeof Function.prototype.call,
        (function (a) { return a * 2; }).call(null, 3),
        Math.max.apply(null, [1, 5, 2]),
        ((a, b) => a + b).bind(null, 1)(2),
      ]`;
      expect(await ok(runCode, source)).toEqual([true, true, "function", 6, 5, 3]);
    });

    it("an uncaught Function constructor call ends the run as an error", async () => {
      await fails(runCode, "error", "export default new Function('return 1')()");
    });
  });

  describe("§6.3 no shared memory", () => {
    it("SharedArrayBuffer and Atomics are absent", async () => {
      expect(await ok(runCode, "export default [typeof SharedArrayBuffer, typeof Atomics]")).toEqual([
        "undefined",
        "undefined",
      ]);
    });
  });

  describe("§6.6 microtasks without timers", () => {
    it("promises and queueMicrotask work; timers are absent", async () => {
      const source = `
        const order = [];
        queueMicrotask(() => order.push('micro'));
        Promise.resolve().then(() => order.push('then'));
        order.push('sync');
        await Promise.resolve();
        await Promise.resolve();
        export default [order, typeof setTimeout, typeof setInterval];
      `;
      expect(await ok(runCode, source)).toEqual([["sync", "micro", "then"], "undefined", "undefined"]);
    });
  });

  describe("§6.7 nondeterministic intrinsics", () => {
    it("Date.now and Math.random work", async () => {
      const source =
        "const r = Math.random();\nexport default [typeof Date.now(), Date.now() > 1.6e12, r >= 0 && r < 1, new Date().getFullYear() >= 2024]";
      expect(await ok(runCode, source)).toEqual(["number", true, true, true]);
    });
  });

  describe("§6.8 each run is fresh", () => {
    it("global and intrinsic mutations do not carry over", async () => {
      await ok(
        runCode,
        "globalThis.leak = 1;\nArray.prototype.x = 1;\nObject.prototype.y = 2;\nJSON.parse = () => 'hijacked';\nexport default 1",
      );
      const source = "export default [typeof globalThis.leak, 'x' in Array.prototype, 'y' in {}, JSON.parse('3')]";
      expect(await ok(runCode, source)).toEqual(["undefined", false, false, 3]);
    });

    it("module state does not carry over", async () => {
      const modules = { "./counter.js": "export let n = 0;\nexport const inc = () => ++n;" };
      const source = "import { inc } from './counter.js';\ninc();\nexport default inc()";
      expect(await ok(runCode, source, { modules })).toBe(2);
      expect(await ok(runCode, source, { modules })).toBe(2);
    });

    it("a host object mutated through its proxy in one run is unchanged in the next", async () => {
      const state = { n: 0 };
      const source = "state.n++;\nexport default state.n";
      expect(await ok(runCode, source, { globals: { state } })).toBe(1);
      expect(await ok(runCode, source, { globals: { state } })).toBe(1);
    });
  });

  describe("§8 module semantics: import.meta", () => {
    it("import.meta is exactly { url: 'sandbox:<runCode>' }", async () => {
      const source = "export default [JSON.stringify(import.meta), Object.keys(import.meta)]";
      expect(await ok(runCode, source)).toEqual(['{"url":"sandbox:<runCode>"}', ["url"]]);
    });

    it("import.meta.url follows filename", async () => {
      expect(await ok(runCode, "export default import.meta.url", { filename: "x.ts" })).toBe("sandbox:x.ts");
    });

    it("import.meta in a module exposes only a sandbox: url", async () => {
      const source = "import { meta } from './m.js';\nexport default meta";
      const result = await ok(runCode, source, { modules: { "./m.js": "export const meta = { ...import.meta }" } });
      expect(Object.keys(result as object)).toEqual(["url"]);
      expect(String((result as { url?: unknown }).url)).toMatch(/^sandbox:/);
      expect(String((result as { url?: unknown }).url)).toContain("m.js");
    });
  });

  describe("§11 hostile code fails cleanly", () => {
    it("deep recursion is an error and the next run is fine", async () => {
      await fails(runCode, "error", "function f() { return f(); }\nf();");
      expect(await ok(runCode, "export default 'after recursion'")).toBe("after recursion");
    });

    it("JSON.stringify of a 100,000-deep object is an error and the next run is fine", async () => {
      await fails(runCode, "error", "let o = {};\nfor (let i = 0; i < 100000; i++) o = { o };\nJSON.stringify(o);");
      expect(await ok(runCode, "export default 'after json'")).toBe("after json");
    });

    it("10,000 nested parentheses fail cleanly and the next run is fine", async () => {
      const source = `export default ${"(".repeat(10000)}1${")".repeat(10000)}`;
      const r = await runCode(source, { language: "javascript" });
      expect(["error", "link_error"]).toContain(r.status);
      expect(typeof r.error?.message).toBe("string");
      expect(await ok(runCode, "export default 'after parens'")).toBe("after parens");
    });

    it("10,000 nested parentheses in TypeScript fail cleanly", async () => {
      const source = `export default ${"(".repeat(10000)}1${")".repeat(10000)}`;
      const r = await runCode(source);
      expect(["success", "error", "link_error"]).toContain(r.status);
      if (r.status === "success") expect(r.result).toBe(1);
    });

    it("a guest cannot reach host objects through a function proxy", async () => {
      const source = `
        const out = [];
        out.push(fn.constructor === Function);
        try { out.push(typeof fn.constructor('return 1')()); } catch (e) { out.push(e.name); }
        out.push(Object.getOwnPropertyNames(fn).filter((k) => !['length', 'name', 'prototype'].includes(k)));
        export default out;
      `;
      const result = await ok(runCode, source, { globals: { fn: () => 1 } });
      expect(Array.isArray(result)).toBe(true);
      const [isGuestFunction, escaped, extra] = result as [unknown, unknown, unknown];
      expect(isGuestFunction).toBe(true);
      expect(escaped).not.toBe("number");
      expect(typeof escaped).toBe("string");
      expect(extra).toEqual([]);
    });
  });
}
