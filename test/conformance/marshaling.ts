/** §3.5 bridged value marshaling, both directions. */
import { describe, expect, it } from "vitest";
import type { RunCode } from "../../src/core/types.js";
import { arr, fails, nameAndMessage, ok, rec, thrown } from "./helpers.js";

/** Host value -> guest (as an argument) -> host (as the result). */
async function roundTrip(runCode: RunCode, value: unknown): Promise<unknown> {
  return await ok(runCode, "export default (v) => v", { execute: { args: [value] } });
}

const TYPED_ARRAYS = [
  "Int8Array",
  "Uint8Array",
  "Uint8ClampedArray",
  "Int16Array",
  "Uint16Array",
  "Int32Array",
  "Uint32Array",
  "Float32Array",
  "Float64Array",
  "BigInt64Array",
  "BigUint64Array",
] as const;

type TypedArrayName = (typeof TYPED_ARRAYS)[number];

const CONSTRUCTORS: Record<TypedArrayName, new (length: number) => ArrayBufferView> = {
  Int8Array,
  Uint8Array,
  Uint8ClampedArray,
  Int16Array,
  Uint16Array,
  Int32Array,
  Uint32Array,
  Float32Array,
  Float64Array,
  BigInt64Array,
  BigUint64Array,
};

function bytesOf(view: ArrayBufferView): number[] {
  return [...new Uint8Array(view.buffer, view.byteOffset, view.byteLength)];
}

class Foo {
  x = 1;
}

type Float16 = ArrayBufferView & ArrayLike<number>;
/** This host's Float16Array: workerd and Chromium have one, Node 20 has none. */
const HostFloat16 = (globalThis as { Float16Array?: new (values: number[]) => Float16 }).Float16Array;
/** What a host without one says when the sandbox hands it a Float16Array (§3.5). */
const NO_FLOAT16 = "A Float16Array cannot be made on this host: its JavaScript has no Float16Array";
/** Numbers as text, `-0` kept. */
const numbers = (list: ArrayLike<number>) => Array.from(list, (n) => (Object.is(n, -0) ? "-0" : String(n)));

export function marshalingSuite(runCode: RunCode): void {
  describe("§3.5 marshaling: primitives", () => {
    const primitives: [string, unknown][] = [
      ["string", "héllo \u{1F600} end"],
      ["string with NUL", "a\u0000b\u0000"],
      ["empty string", ""],
      ["number", 1.5],
      ["max safe integer", Number.MAX_SAFE_INTEGER],
      ["true", true],
      ["false", false],
      ["null", null],
      ["undefined", undefined],
      ["bigint", 10n],
      ["big negative bigint", -(2n ** 70n)],
      ["NaN", Number.NaN],
      ["-0", -0],
      ["Infinity", Number.POSITIVE_INFINITY],
      ["-Infinity", Number.NEGATIVE_INFINITY],
    ];
    it.each(primitives)("%s round-trips host -> guest -> host", async (_label, value) => {
      // toBe is Object.is: NaN equals NaN, -0 differs from 0.
      expect(await roundTrip(runCode, value)).toBe(value);
    });

    it("a lone surrogate round-trips", async () => {
      const back = await roundTrip(runCode, "a\uD800b");
      expect(back).toBe("a\uD800b");
    });

    it("guest-made strings with NUL and lone surrogates arrive intact, in results, reports and host calls", async () => {
      const seen: unknown[] = [];
      const source = "const s = ['a\\u0000b', 'x\\uD800y', '\\uDFFF'];\nreport(s);\nsink(s);\nexport default s";
      const r = await runCode(source, {
        globals: {
          sink: (v: unknown) => {
            seen.push(v);
          },
        },
      });
      const expected = ["a\u0000b", "x\uD800y", "\uDFFF"];
      expect(r.status).toBe("success");
      expect(r.result).toEqual(expected);
      expect(r.reports).toEqual([expected]);
      expect(seen).toEqual([expected]);
    });

    it("the guest sees the same primitives", async () => {
      const source = `export default (...v) => v.map((x) => Object.is(x, -0) ? '-0' : typeof x + ':' + String(x))`;
      const args = ["s", 2, true, null, undefined, 3n, Number.NaN, -0, Number.POSITIVE_INFINITY];
      expect(await ok(runCode, source, { execute: { args } })).toEqual([
        "string:s",
        "number:2",
        "boolean:true",
        "object:null",
        "undefined:undefined",
        "bigint:3",
        "number:NaN",
        "-0",
        "number:Infinity",
      ]);
    });

    it("guest-made special numbers arrive intact", async () => {
      const result = arr(
        await ok(runCode, "export default [NaN, -0, Infinity, -Infinity, 2n ** 64n, undefined, null]"),
      );
      const expected: unknown[] = [
        Number.NaN,
        -0,
        Number.POSITIVE_INFINITY,
        Number.NEGATIVE_INFINITY,
        2n ** 64n,
        undefined,
        null,
      ];
      expect(result.length).toBe(expected.length);
      expected.forEach((value, i) => {
        expect(result[i]).toBe(value);
      });
    });
  });

  describe("§3.5 marshaling: objects and arrays", () => {
    it("plain nested objects and arrays round-trip", async () => {
      const value = { a: 1, b: { c: [1, "two", { d: null }] }, e: [] };
      expect(await roundTrip(runCode, value)).toEqual(value);
    });

    it("a plain object arrives with Object.prototype", async () => {
      const result = await ok(runCode, "export default { a: 1 }");
      expect(Object.getPrototypeOf(result)).toBe(Object.prototype);
      expect(result).toEqual({ a: 1 });
    });

    it("array holes are preserved guest -> host", async () => {
      const result = arr(await ok(runCode, "export default [1, , 3]"));
      expect(result.length).toBe(3);
      expect(1 in result).toBe(false);
      expect(result[0]).toBe(1);
      expect(result[2]).toBe(3);
    });

    it("array holes are preserved host -> guest", async () => {
      // biome-ignore lint/suspicious/noSparseArray: the hole is the point
      const holey = [1, , 3];
      const source = "export default (a) => [a.length, 1 in a, a[2]]";
      expect(await ok(runCode, source, { execute: { args: [holey] } })).toEqual([3, false, 3]);
    });

    it("cycles are preserved guest -> host", async () => {
      const result = rec(await ok(runCode, "const o = { n: 1 };\no.self = o;\nexport default o"));
      expect(result.self).toBe(result);
      expect(result.n).toBe(1);
    });

    it("shared references are preserved guest -> host", async () => {
      const result = rec(await ok(runCode, "const s = { v: 1 };\nexport default { a: s, b: s, list: [s] }"));
      expect(result.a).toBe(result.b);
      expect(arr(result.list)[0]).toBe(result.a);
    });

    it("cycles and shared references are preserved host -> guest", async () => {
      const o: Record<string, unknown> = { n: 1 };
      o.self = o;
      const s = { v: 1 };
      const source = "export default (o, p) => [o.self === o, p.a === p.b, p.a.v]";
      expect(await ok(runCode, source, { execute: { args: [o, { a: s, b: s }] } })).toEqual([true, true, 1]);
    });

    it("a guest mutation of a received object does not affect the host object", async () => {
      const obj = { x: 1, list: [1] };
      const arg = { y: 1 };
      const source = "export default (a) => { obj.x = 99; obj.list.push(2); a.y = 5; return [obj.x, a.y]; }";
      expect(await ok(runCode, source, { globals: { obj }, execute: { args: [arg] } })).toEqual([99, 5]);
      expect(obj).toEqual({ x: 1, list: [1] });
      expect(arg).toEqual({ y: 1 });
    });

    it("a host mutation of a received argument does not affect the guest object", async () => {
      const source = "const o = { x: 1 };\nmut(o);\nexport default o.x";
      const mut = (o: unknown) => {
        rec(o).x = 2;
      };
      expect(await ok(runCode, source, { globals: { mut } })).toBe(1);
    });

    it("each host function return is a fresh clone", async () => {
      const shared = { n: 1 };
      const source = "const a = get();\na.n = 5;\nconst b = get();\nexport default [a === b, a.n, b.n]";
      expect(await ok(runCode, source, { globals: { get: () => shared } })).toEqual([false, 5, 1]);
      expect(shared).toEqual({ n: 1 });
    });

    it("a deep structure of moderate size round-trips", async () => {
      const big = Array.from({ length: 5000 }, (_, i) => ({ i, s: `item ${i}`, tags: [i % 3] }));
      expect(await roundTrip(runCode, big)).toEqual(big);
    });
  });

  describe("§3.5 marshaling: built-in types", () => {
    it("Map arrives as a host Map, both ways", async () => {
      const source = "export default (m) => [m instanceof Map, m.get('a'), new Map([[{ k: 1 }, m]])]";
      const result = arr(await ok(runCode, source, { execute: { args: [new Map([["a", 1]])] } }));
      expect(result.slice(0, 2)).toEqual([true, 1]);
      const outer = result[2];
      expect(outer).toBeInstanceOf(Map);
      expect(outer).toEqual(new Map([[{ k: 1 }, new Map([["a", 1]])]]));
    });

    it("Set arrives as a host Set, both ways", async () => {
      const source = "export default (s) => [s instanceof Set, s.has(2), new Set([...s, 'x'])]";
      const result = arr(await ok(runCode, source, { execute: { args: [new Set([1, 2])] } }));
      expect(result.slice(0, 2)).toEqual([true, true]);
      expect(result[2]).toBeInstanceOf(Set);
      expect(result[2]).toEqual(new Set([1, 2, "x"]));
    });

    it("Date round-trips, including an invalid date", async () => {
      const source = "export default (d, bad) => [d instanceof Date, d.getTime(), new Date(86400000), bad]";
      const result = arr(await ok(runCode, source, { execute: { args: [new Date(1234), new Date(Number.NaN)] } }));
      expect(result.slice(0, 2)).toEqual([true, 1234]);
      expect(result[2]).toBeInstanceOf(Date);
      expect((result[2] as Date).getTime()).toBe(86400000);
      expect(result[3]).toBeInstanceOf(Date);
      expect(Number.isNaN((result[3] as Date).getTime())).toBe(true);
    });

    it("RegExp round-trips with source and flags", async () => {
      const source = "export default (r) => [r instanceof RegExp, r.test('AAB'), /x+y/m]";
      const result = arr(await ok(runCode, source, { execute: { args: [/a+b/gi] } }));
      expect(result.slice(0, 2)).toEqual([true, true]);
      const re = result[2];
      expect(re).toBeInstanceOf(RegExp);
      expect([(re as RegExp).source, (re as RegExp).flags]).toEqual(["x+y", "m"]);
    });

    it("Error objects keep name and message guest -> host", async () => {
      const source = "export default [new Error('e'), new TypeError('t'), new RangeError('r'), new SyntaxError('s')]";
      const result = arr(await ok(runCode, source));
      expect(result.map((e) => e instanceof Error)).toEqual([true, true, true, true]);
      expect(result.map(nameAndMessage)).toEqual([
        { name: "Error", message: "e" },
        { name: "TypeError", message: "t" },
        { name: "RangeError", message: "r" },
        { name: "SyntaxError", message: "s" },
      ]);
    });

    it("Error objects keep name and message host -> guest, without host stack", async () => {
      const source = "export default (e) => [e instanceof Error, e.name, e.message, String(e.stack ?? '')]";
      const result = arr(await ok(runCode, source, { execute: { args: [new TypeError("host")] } }));
      expect(result.slice(0, 3)).toEqual([true, "TypeError", "host"]);
      const stack = String(result[3]);
      expect(stack).not.toContain("node_modules");
      expect(stack).not.toContain("/work");
      expect(stack).not.toContain("file://");
    });

    it("ArrayBuffer round-trips with the same bytes", async () => {
      const buffer = new Uint8Array([1, 2, 250]).buffer;
      const source = "export default (b) => [b instanceof ArrayBuffer, [...new Uint8Array(b)], b]";
      const result = arr(await ok(runCode, source, { execute: { args: [buffer] } }));
      expect(result.slice(0, 2)).toEqual([true, [1, 2, 250]]);
      expect(result[2]).toBeInstanceOf(ArrayBuffer);
      expect([...new Uint8Array(result[2] as ArrayBuffer)]).toEqual([1, 2, 250]);
      expect(result[2]).not.toBe(buffer);
    });

    it("a buffer from the host dies with the guest's last reference: 48 of 1 MiB dropped in turn fit 16 MiB", async () => {
      const globals = { mebibyte: () => new Uint8Array(1 << 20).fill(7).buffer };
      const source =
        "let sum = 0;\nfor (let i = 0; i < 48; i++) sum += new Uint8Array(mebibyte())[i];\nexport default sum";
      expect(await ok(runCode, source, { globals, memoryLimitBytes: 16 << 20 })).toBe(48 * 7);
    });

    it.each(TYPED_ARRAYS)("%s guest -> host keeps kind and bytes", async (name) => {
      const big = name.startsWith("Big");
      const values = big ? "[1n, -2n, 3n]" : "[1, -2, 3.5]";
      const source = `const v = new ${name}(${values});\nexport default [v, [...new Uint8Array(v.buffer)]]`;
      const result = arr(await ok(runCode, source));
      const view = result[0] as ArrayBufferView;
      expect(Object.getPrototypeOf(view)).toBe(CONSTRUCTORS[name].prototype);
      expect(bytesOf(view)).toEqual(result[1]);
    });

    it.each(TYPED_ARRAYS)("%s host -> guest keeps kind and bytes", async (name) => {
      const view = new CONSTRUCTORS[name](3);
      new Uint8Array(view.buffer).forEach((_, i, bytes) => {
        bytes[i] = (i * 37 + 5) % 256;
      });
      const source = `export default (v) => [v instanceof ${name}, v.length, [...new Uint8Array(v.buffer, v.byteOffset, v.byteLength)]]`;
      expect(await ok(runCode, source, { execute: { args: [view] } })).toEqual([true, 3, bytesOf(view)]);
    });

    it("DataView round-trips with the same bytes", async () => {
      const dv = new DataView(new Uint8Array([9, 8, 7, 6]).buffer, 1, 2);
      const source = "export default (d) => [d instanceof DataView, d.byteOffset, d.byteLength, d.getUint8(0), d]";
      const result = arr(await ok(runCode, source, { execute: { args: [dv] } }));
      expect(result.slice(0, 4)).toEqual([true, 1, 2, 8]);
      const back = result[4];
      expect(back).toBeInstanceOf(DataView);
      expect(bytesOf(back as DataView)).toEqual([8, 7]);
    });

    it("offset views of one buffer keep sharing it guest -> host", async () => {
      const source =
        "const b = new ArrayBuffer(8);\nconst a = new Uint8Array(b, 2, 4);\nconst d = new DataView(b, 4);\na[2] = 42;\nexport default { a, d }";
      const result = rec(await ok(runCode, source));
      const a = result.a as Uint8Array;
      const d = result.d as DataView;
      expect(a).toBeInstanceOf(Uint8Array);
      expect(d).toBeInstanceOf(DataView);
      expect(a.buffer).toBe(d.buffer);
      expect([a.byteOffset, a.length, d.byteOffset, d.byteLength, a.buffer.byteLength]).toEqual([2, 4, 4, 4, 8]);
      expect(d.getUint8(0)).toBe(42);
    });

    it("offset views of one buffer keep sharing it host -> guest", async () => {
      const b = new ArrayBuffer(8);
      const x = { a: new Uint8Array(b, 2, 4), d: new DataView(b, 4) };
      const source =
        "export default (x) => { x.a[2] = 7; return [x.a.buffer === x.d.buffer, x.a.byteOffset, x.d.byteOffset, x.a.buffer.byteLength, x.d.getUint8(0)]; }";
      expect(await ok(runCode, source, { execute: { args: [x] } })).toEqual([true, 2, 4, 8, 7]);
      expect(new Uint8Array(b)[4]).toBe(0);
    });
  });

  describe("§3.5 marshaling: Float16Array", () => {
    it("is a value of the sandbox: made, viewed, cloned and logged there", async () => {
      const source = `
        const h = new Float16Array([1.5, -0, 65504, 70000, 2 ** -25]);
        const copy = structuredClone({ h, d: new DataView(h.buffer, 2) });
        console.log(h);
        const text = (n) => (Object.is(n, -0) ? "-0" : String(n));
        export default [
          Object.prototype.toString.call(copy.h), Array.from(copy.h, text), copy.d.buffer === copy.h.buffer,
          copy.h.buffer === h.buffer, Float16Array.BYTES_PER_ELEMENT,
        ];
      `;
      expect(await ok(runCode, source)).toEqual([
        "[object Float16Array]",
        ["1.5", "-0", "65504", "Infinity", "0"],
        true,
        false,
        2,
      ]);
    });

    const paths: [string, string][] = [
      ["the result", "export default new Float16Array([1.5, -2])"],
      ["a report", "report(new Float16Array([1.5, -2]));\nexport default 0"],
      ["a host function's argument", "sink(new Float16Array([1.5, -2]));\nexport default 0"],
    ];
    it.each(paths)("%s arrives as a Float16Array, or is refused where the host has none", async (_path, source) => {
      const kept: unknown[] = [];
      const options = { globals: { sink: (v: unknown) => void kept.push(v) } };
      if (HostFloat16 === undefined) {
        const error = await fails(runCode, "error", source, options);
        expect(nameAndMessage(error)).toEqual({ name: "SerializationError", message: NO_FLOAT16 });
        return;
      }
      const r = await runCode(source, options);
      const value = [r.result, ...r.reports, ...kept].find((v) => typeof v === "object") as Float16;
      expect(r.status).toBe("success");
      expect(Object.getPrototypeOf(value)).toBe(HostFloat16.prototype);
      expect(numbers(value)).toEqual(["1.5", "-2"]);
    });

    it("a logged Float16Array never fails the run: itself, or a placeholder where the host has none", async () => {
      const r = await runCode(
        "console.log(new Float16Array([1.5]), [new Float16Array(2)], 'after');\nexport default 0",
      );
      expect(r.status).toBe("success");
      const args = r.logs[0]?.args as unknown[];
      if (HostFloat16 === undefined) {
        expect(args).toEqual(["[Float16Array (not on this host)]", ["[Float16Array (not on this host)]"], "after"]);
        return;
      }
      expect(args).toEqual([new HostFloat16([1.5]), [new HostFloat16([0, 0])], "after"]);
      expect(Object.getPrototypeOf(args[0])).toBe(HostFloat16.prototype);
    });

    it.skipIf(HostFloat16 === undefined)("host -> guest -> host keeps kind, values and the shared buffer", async () => {
      const Float16 = HostFloat16 as NonNullable<typeof HostFloat16>;
      const h = new Float16([1.5, -0, 65504]);
      const source =
        "export default (v) => [Object.prototype.toString.call(v.h), v.h[0], v.h.buffer === v.b.buffer, v]";
      const result = arr(await ok(runCode, source, { execute: { args: [{ h, b: new Uint8Array(h.buffer) }] } }));
      expect(result.slice(0, 3)).toEqual(["[object Float16Array]", 1.5, true]);
      const back = rec(result[3]);
      expect(Object.getPrototypeOf(back.h)).toBe(Float16.prototype);
      expect(numbers(back.h as Float16)).toEqual(["1.5", "-0", "65504"]);
      expect((back.h as Float16).buffer).toBe((back.b as Uint8Array).buffer);
    });
  });

  describe("§3.5 marshaling: functions and promises", () => {
    it("host functions are callable proxies: args cloned in, return cloned back", async () => {
      const seen: unknown[] = [];
      const source = "export default add({ a: 2 }, [3])";
      const add = (x: unknown, y: unknown) => {
        seen.push(x, y);
        return { sum: Number(rec(x).a) + Number(arr(y)[0]) };
      };
      expect(await ok(runCode, source, { globals: { add } })).toEqual({ sum: 5 });
      expect(seen).toEqual([{ a: 2 }, [3]]);
    });

    it("async host functions return promises the guest can await", async () => {
      const source = "const p = load();\nexport default [p instanceof Promise, await p]";
      expect(await ok(runCode, source, { globals: { load: async () => new Map([["k", 1]]) } })).toEqual([
        true,
        new Map([["k", 1]]),
      ]);
    });

    it("a host function receives this === undefined however it is called", async () => {
      const thisValues: unknown[] = [];
      function probe(this: unknown): string {
        thisValues.push(this);
        return typeof this;
      }
      const source = `
        import * as ns from 'tools';
        import { probe as p2 } from 'tools';
        export default [probe(), holder.probe(), ns.probe(), p2.call({ a: 1 }), Reflect.apply(probe, [1], [])];
      `;
      const result = await ok(runCode, source, {
        globals: { probe, holder: { probe } },
        imports: { tools: { probe } },
      });
      expect(result).toEqual(["undefined", "undefined", "undefined", "undefined", "undefined"]);
      expect(thisValues).toEqual([undefined, undefined, undefined, undefined, undefined]);
    });

    it("fn.name in the guest equals the host function's name", async () => {
      function readFile(): string {
        return "";
      }
      const source = "import { readFile as r } from 'fs';\nexport default [r.name, g.name, o.log.name]";
      const result = await ok(runCode, source, {
        imports: { fs: { readFile } },
        globals: { g: function namedGlobal() {}, o: { log: (..._a: unknown[]) => undefined } },
      });
      expect(result).toEqual(["readFile", "namedGlobal", "log"]);
    });

    it("a host function proxy is a guest function and reveals no host source", async () => {
      function secretFn(): number {
        const SECRET = "TOPSECRET-123";
        return SECRET.length;
      }
      const source =
        "export default [typeof secretFn, secretFn instanceof Function, Object.getPrototypeOf(secretFn) === Function.prototype, String(secretFn).includes('TOPSECRET'), secretFn()]";
      expect(await ok(runCode, source, { globals: { secretFn } })).toEqual(["function", true, true, false, 13]);
    });

    it("a host throw is caught in the guest with name and message, without host stack", async () => {
      const source = `
        let out;
        try { boom(); } catch (e) { out = [e instanceof Error, e.name, e.message, String(e.stack ?? '')]; }
        export default out;
      `;
      const boom = () => {
        throw new TypeError("no");
      };
      const result = arr(await ok(runCode, source, { globals: { boom } }));
      expect(result.slice(0, 3)).toEqual([true, "TypeError", "no"]);
      const stack = String(result[3]);
      expect(stack).not.toContain("node_modules");
      expect(stack).not.toContain("/work");
      expect(stack).not.toContain("file://");
    });

    it("an uncaught host throw ends the run as an error", async () => {
      const boom = () => {
        throw new RangeError("host range");
      };
      const error = await fails(runCode, "error", "boom();\nexport default 1", { globals: { boom } });
      expect(error.name).toBe("RangeError");
      expect(error.message).toBe("host range");
      for (const text of [error.message, error.stack ?? ""]) {
        expect(text).not.toContain("node_modules");
        expect(text).not.toContain("/work");
        expect(text).not.toContain("file://");
      }
    });

    it("a rejecting async host function rejects inside the guest", async () => {
      const source = "export default await load().then(() => 'resolved', (e) => [e.name, e.message])";
      const load = async () => {
        throw new Error("nope");
      };
      expect(await ok(runCode, source, { globals: { load } })).toEqual(["Error", "nope"]);
    });

    it("host promises in globals and imports resolve inside the guest", async () => {
      const source = "import { ready } from 'cfg';\nexport default [await p, await ready]";
      const options = { globals: { p: Promise.resolve(5) }, imports: { cfg: { ready: Promise.resolve("yes") } } };
      expect(await ok(runCode, source, options)).toEqual([5, "yes"]);
    });

    it("a rejected host promise rejects inside the guest", async () => {
      const rejected = Promise.reject(new RangeError("r"));
      rejected.catch(() => undefined);
      const source = "export default await p.then(() => 'resolved', (e) => [e.name, e.message])";
      expect(await ok(runCode, source, { globals: { p: rejected } })).toEqual(["RangeError", "r"]);
    });

    it("a guest promise passed to a host function arrives as a host promise of the clone", async () => {
      let received: unknown;
      const take = (p: unknown) => {
        received = p;
        return p;
      };
      const result = await ok(runCode, "export default await take(Promise.resolve({ a: 1 }))", { globals: { take } });
      expect(result).toEqual({ a: 1 });
      expect(received).toBeInstanceOf(Promise);
      await expect(received).resolves.toEqual({ a: 1 });
    });

    it("a guest function cannot cross to the host", async () => {
      const error = await fails(runCode, "error", "export default { f() { return 1 } }");
      expect(error.name).toBe("SerializationError");
    });

    it("a guest function passed to a host function makes the guest call throw", async () => {
      const source = "let out;\ntry { sink(() => 1); out = 'sent'; } catch (e) { out = e.name; }\nexport default out";
      expect(await ok(runCode, source, { globals: { sink: () => undefined } })).toBe("SerializationError");
    });
  });

  describe("§3.5 marshaling: volume and concurrency", () => {
    it("a thousand synchronous host calls all arrive", async () => {
      let calls = 0;
      const add = (n: unknown) => {
        calls++;
        return Number(n) + 1;
      };
      const source = "let s = 0;\nfor (let i = 0; i < 1000; i++) s += add(i);\nexport default s";
      expect(await ok(runCode, source, { globals: { add } })).toBe(500500);
      expect(calls).toBe(1000);
    });

    it("concurrent async host calls settle in the guest with their own values", async () => {
      // Once the guest has made all three calls, the host settles them last first, each in a later task: an order
      // of the host's choosing, not of timers racing on a loaded machine.
      const calls: [number, (value: number) => void][] = [];
      const settleLastFirst = () => {
        const [n, resolve] = calls.pop() as [number, (value: number) => void];
        resolve(n * 10);
        if (calls.length > 0) setTimeout(settleLastFirst, 0);
      };
      const delayed = (n: unknown) =>
        new Promise<number>((resolve) => {
          calls.push([Number(n), resolve]);
          if (calls.length === 3) setTimeout(settleLastFirst, 0);
        });
      const source =
        "const order = [];\nconst all = await Promise.all([1, 2, 3].map((n) => delayed(n).then((v) => { order.push(n); return v; })));\nexport default [all, order]";
      expect(await ok(runCode, source, { globals: { delayed } })).toEqual([
        [10, 20, 30],
        [3, 2, 1],
      ]);
    });

    it("a host function returning nothing gives undefined", async () => {
      const source = "export default [nothing(), await nothingAsync()]";
      const options = { globals: { nothing: () => undefined, nothingAsync: async () => undefined } };
      expect(await ok(runCode, source, options)).toEqual([undefined, undefined]);
    });

    it("a 1 MB string and a 2 MB Uint8Array round-trip", async () => {
      const text = "abcdefghij".repeat(100_000);
      const bytes = new Uint8Array(2 * 1024 * 1024).map((_, i) => i % 251);
      const result = arr(
        await ok(runCode, "export default (t, b) => [t, b, t.length, b[1000]]", { execute: { args: [text, bytes] } }),
      );
      expect(result[0] === text).toBe(true);
      const back = result[1];
      expect(back).toBeInstanceOf(Uint8Array);
      const view = back as Uint8Array;
      expect(view.length).toBe(bytes.length);
      expect(view.findIndex((b, i) => b !== bytes[i])).toBe(-1);
      expect(result.slice(2)).toEqual([1_000_000, 1000 % 251]);
    });
  });

  describe("§3.5 marshaling: not transferable", () => {
    it.each([
      ["a class instance", "class Foo { x = 1 }\nexport default new Foo()"],
      ["a WeakMap", "export default new WeakMap()"],
      ["a WeakRef", "export default new WeakRef({})"],
      ["a symbol", "export default Symbol('s')"],
      ["a nested class instance", "class Foo {}\nexport default { list: [1, new Foo()] }"],
      ["an object with toJSON", "export default { a: 1, toJSON() { return 'x' } }"],
    ])("guest -> host: %s is a SerializationError", async (_label, source) => {
      const error = await fails(runCode, "error", source);
      expect(error.name).toBe("SerializationError");
    });

    const hostValues: [string, () => unknown][] = [
      ["a class instance", () => new Foo()],
      ["a WeakMap", () => new WeakMap()],
      ["a WeakRef", () => new WeakRef({})],
      ["a symbol", () => Symbol("s")],
      ["a nested class instance", () => ({ list: [1, new Foo()] })],
    ];

    it.each(hostValues)("host -> guest in globals: %s throws SerializationError synchronously", (_label, make) => {
      const error = thrown(() => runCode("export default 1", { globals: { v: make() } }));
      expect(nameAndMessage(error).name).toBe("SerializationError");
    });

    it.each(hostValues)("host -> guest in execute.args: %s throws SerializationError synchronously", (_label, make) => {
      const error = thrown(() => runCode("export default (v) => 1", { execute: { args: [make()] } }));
      expect(nameAndMessage(error).name).toBe("SerializationError");
    });

    it("host -> guest in imports: a class instance throws SerializationError synchronously", () => {
      const error = thrown(() => runCode("export default 1", { imports: { m: { v: new Foo() } } }));
      expect(nameAndMessage(error).name).toBe("SerializationError");
    });

    it("a host function returning a class instance throws a catchable SerializationError in the guest", async () => {
      const source = "let out;\ntry { make(); out = 'returned'; } catch (e) { out = e.name; }\nexport default out";
      expect(await ok(runCode, source, { globals: { make: () => new Foo() } })).toBe("SerializationError");
    });

    it("an async host function resolving to a symbol rejects with SerializationError in the guest", async () => {
      const source = "export default await make().then(() => 'resolved', (e) => e.name)";
      expect(await ok(runCode, source, { globals: { make: async () => Symbol("s") } })).toBe("SerializationError");
    });
  });

  describe("§3.5 marshaling: hostile guest values", () => {
    it("getters run in the guest and arrive as data", async () => {
      const result = await ok(runCode, "let n = 0;\nexport default { get x() { n++; return n; } }");
      expect(result).toEqual({ x: 1 });
      expect(Object.getOwnPropertyDescriptor(result, "x")).toEqual({
        value: 1,
        writable: true,
        enumerable: true,
        configurable: true,
      });
    });

    it("a throwing getter makes the run an error", async () => {
      await fails(runCode, "error", "export default { get x() { throw new Error('getter') } }");
    });

    it("a __proto__ key stays an own property and pollutes nothing", async () => {
      const result = await ok(runCode, `export default JSON.parse('{"__proto__": {"polluted": 1}, "a": 2}')`);
      expect(Object.getOwnPropertyNames(result)).toContain("__proto__");
      expect(Object.getPrototypeOf(result)).toBe(Object.prototype);
      expect(rec(result).a).toBe(2);
      expect((rec(result) as { polluted?: unknown }).polluted).toBeUndefined();
      expect(({} as { polluted?: unknown }).polluted).toBeUndefined();
    });

    it("a __proto__ key in a host function argument pollutes nothing", async () => {
      let got: unknown;
      const sink = (v: unknown) => {
        got = v;
      };
      await ok(runCode, `sink(JSON.parse('{"__proto__": {"polluted2": 1}}'));\nexport default 0`, {
        globals: { sink },
      });
      expect(Object.getPrototypeOf(got)).toBe(Object.prototype);
      expect(({} as { polluted2?: unknown }).polluted2).toBeUndefined();
    });

    it("a polluted guest Object.prototype does not reach host objects", async () => {
      const source = "Object.prototype.polluted = 1;\nArray.prototype.extra = 2;\nexport default { o: {}, a: [1] }";
      const result = rec(await ok(runCode, source));
      expect(result).toEqual({ o: {}, a: [1] });
      expect(Object.getOwnPropertyNames(result.o)).toEqual([]);
      expect(Object.getOwnPropertyNames(result.a)).toEqual(["0", "length"]);
      expect(({} as { polluted?: unknown }).polluted).toBeUndefined();
      expect(([] as unknown as { extra?: unknown }).extra).toBeUndefined();
    });

    it("overridden guest intrinsics do not change the marshaled result", async () => {
      const source = `
        const value = { list: [1, 2], m: new Map([['k', 'v']]) };
        Array.prototype.map = () => { throw new Error('hijacked map'); };
        Array.prototype[Symbol.iterator] = function* () { yield 'hijacked'; };
        Object.keys = () => ['hijacked'];
        Object.entries = () => [];
        JSON.stringify = () => '"hijacked"';
        Map.prototype.entries = function* () {};
        Map.prototype.forEach = () => {};
        export default value;
      `;
      const result = rec(await ok(runCode, source));
      expect(result.list).toEqual([1, 2]);
      expect(result.m).toEqual(new Map([["k", "v"]]));
    });

    it("a very deep result fails cleanly or arrives whole", async () => {
      const r = await runCode("let o = {};\nfor (let i = 0; i < 100000; i++) o = { o };\nexport default o");
      expect(["success", "error"]).toContain(r.status);
      if (r.status === "error") expect(typeof r.error?.message).toBe("string");
    });
  });

  describe("§3.5 marshaling: resizable buffers, views and detached buffers, bounded", () => {
    it("a value whose resizable buffers reserve more than 4 GiB on the host is a SerializationError", async () => {
      // QuickJS allows a maxByteLength below 2 GiB: five buffers of 1 GiB.
      const source = "export default [0, 1, 2, 3, 4].map(() => new ArrayBuffer(0, { maxByteLength: 2 ** 30 }))";
      const error = await fails(runCode, "error", source);
      expect(error.name).toBe("SerializationError");
      expect(error.message).toContain("maxByteLength");
    });

    it("logged resizable buffers are charged at their maxByteLength", async () => {
      const source = "for (let i = 0; i < 4; i++) console.log(new ArrayBuffer(0, { maxByteLength: 8 * 2 ** 20 }));";
      const r = await runCode(source, { memoryLimitBytes: 16 * 2 ** 20 });
      expect(r.status).toBe("memory");
    });

    it("the console describes what structured clone refuses instead of failing", async () => {
      const source = `
        const gone = new ArrayBuffer(8); gone.transfer();
        const b = new ArrayBuffer(8, { maxByteLength: 16 });
        const t = new Uint8Array(b, 4, 4), d = new DataView(b, 4);
        b.resize(2);
        console.log(gone, t, d, [gone]);
        export default 0;
      `;
      const r = await runCode(source);
      expect(r.status).toBe("success");
      expect(r.logs.map((l) => l.args)).toEqual([
        [
          "[ArrayBuffer (detached)]",
          "[Uint8Array (out of bounds)]",
          "[DataView (out of bounds)]",
          ["[ArrayBuffer (detached)]"],
        ],
      ]);
    });

    it("telling a fixed view from a tracking one leaves the sandbox's buffers as they were", async () => {
      const source = `
        const full = new ArrayBuffer(8, { maxByteLength: 8 });
        new Uint8Array(full).set([1, 2, 3, 4, 5, 6, 7, 8]);
        const odd = new ArrayBuffer(7, { maxByteLength: 7 });
        new Uint8Array(odd).set([9, 8, 7, 6, 5, 4, 3]);
        const views = [new Uint8Array(full, 0, 8), new Float64Array(full), new Uint16Array(odd, 2, 2), new DataView(odd, 1)];
        report(views);
        const copy = structuredClone(views);
        const kept = [full.byteLength, [...new Uint8Array(full)], odd.byteLength, [...new Uint8Array(odd)]];
        copy[0].buffer.resize(4);
        copy[2].buffer.resize(3);
        export default [kept, copy.map((v) => v.byteLength ?? v.length)];
      `;
      // The copies: fixed Uint8Array out of bounds (0), tracking Float64Array (0), fixed Uint16Array out of bounds
      // (0), tracking DataView (3 - 1).
      expect(await ok(runCode, source)).toEqual([
        [8, [1, 2, 3, 4, 5, 6, 7, 8], 7, [9, 8, 7, 6, 5, 4, 3]],
        [0, 0, 0, 2],
      ]);
    });

    it("the guest's structuredClone copies buffers without consulting a replaceable species", async () => {
      const source = `
        const b = new Uint8Array([1, 2]).buffer, other = new ArrayBuffer(2);
        b.constructor = { [Symbol.species]: function () { return other; } };
        const copy = structuredClone(b);
        export default [copy === other, copy === b, [...new Uint8Array(copy)]];
      `;
      expect(await ok(runCode, source)).toEqual([false, false, [1, 2]]);
    });

    it("the caller's resizable buffers are never resized", async () => {
      const Resizable = ArrayBuffer as unknown as new (n: number, o: { maxByteLength: number }) => ArrayBuffer;
      const buffer = new Resizable(8, { maxByteLength: 8 });
      new Uint8Array(buffer).set([1, 2, 3, 4, 5, 6, 7, 8]);
      const views = [new Uint8Array(buffer, 0, 8), new Uint32Array(buffer)];
      const source = "export default (v) => v.map((x) => [x.buffer.resizable, x.length])";
      expect(await ok(runCode, source, { execute: { args: [views] } })).toEqual([
        [true, 8],
        [true, 2],
      ]);
      expect([buffer.byteLength, [...new Uint8Array(buffer)]]).toEqual([8, [1, 2, 3, 4, 5, 6, 7, 8]]);
    });
  });

  describe("§3.5 marshaling: accessors the guest puts on the prototypes' indices", () => {
    // The boundary reads tapes and arguments within their lengths: a read past an end would run these.
    const trap = `for (const proto of [Object.prototype, Array.prototype]) {
        for (let i = 0; i < 8; i++) {
          const fail = () => { throw new Error("index " + i + " read through a prototype"); };
          Object.defineProperty(proto, i, { get: fail, set: fail, configurable: true });
        }
      }`;

    it("never run while values cross, both ways, nor in structuredClone", async () => {
      const echo = (...args: unknown[]) => args;
      const source = `${trap}
        const sent = [undefined, NaN, -0, 1n, new Error("e", { cause: 1 }), new Map([[1, 2]]), new Date(0), /x/g,
          new ArrayBuffer(2, { maxByteLength: 4 }), new Uint8Array(3), new DataView(new ArrayBuffer(1))];
        const back = await echo(...sent);
        const cloned = structuredClone(sent);
        console.log(sent);
        report(back.length, cloned.length);
        export default [back.length, cloned.length, String(back[3]), Object.is(cloned[2], -0)];`;
      const r = await runCode(source, { globals: { echo } });
      expect([r.status, r.error, r.result, r.reports.length]).toEqual(["success", undefined, [11, 11, "1", true], 1]);
    });

    it("never run when built-ins are called with fewer arguments than they take", async () => {
      const source = `${trap}
        const proxy = new Proxy([3, 1, 2], {});
        export default [[3, 1, 2].sort(), [1, 2].indexOf(2), [1, 2].lastIndexOf(1), [1, 2].includes(3), [1, 2, 3].fill(0),
          [1, 2, 3].splice(1), [1, 2, 3].copyWithin(1), "ab".startsWith("a"), JSON.parse("[1]"), new Uint8Array().length,
          Array.prototype.sort.call(proxy).length, Array.prototype.map.call(proxy, (x) => x * 2)];`;
      expect(await ok(runCode, source)).toEqual([
        [1, 2, 3],
        1,
        0,
        false,
        [0, 0, 0],
        [2, 3],
        [1, 1, 2],
        true,
        [1],
        0,
        3,
        [2, 4, 6],
      ]);
    });

    it("leave a sort whose comparator throws as the engine does (the accessor read once, nothing written)", async () => {
      const source = `const seen = [];
        Object.defineProperty(Object.prototype, "2", {
          get() { seen.push("read"); return 9; },
          set(v) { seen.push("wrote " + v); },
          configurable: true,
        });
        const list = [undefined, 5, , 4, undefined, , 8];
        let calls = 0;
        try {
          list.sort((a, b) => { if (++calls === 3) throw new Error("third"); return a - b; });
        } catch (error) { seen.push(error.message); }
        const state = [list.length, Object.hasOwn(list, 2), 2 in list, Object.hasOwn(list, 5), list[1], list[3], list[6]];
        export default [seen, state];`;
      expect(await ok(runCode, source)).toEqual([
        ["read", "third"],
        [7, false, true, false, 5, 4, 8],
      ]);
    });
  });
}
