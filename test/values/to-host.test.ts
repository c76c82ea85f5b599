/**
 * Guest values to the host: plain subtrees cross as JSON text written by the engine's own `JSON.stringify`
 * (`["j",json]`), everything else as the tape's own nodes, and the host gets exactly what the tape alone gave.
 */
import { readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import variant from "@jitl/quickjs-wasmfile-release-sync";
import { newQuickJSWASMModuleFromVariant, newVariant, type QuickJSWASMModule } from "quickjs-emscripten-core";
import { beforeAll, describe, expect, it } from "vitest";
import { guestCoreSource, guestMarshalSource } from "../../src/guest/sources.generated.js";
import { createSandbox } from "../../src/index.js";
import { MODE_CLONE, MODE_LOG, OP_CHARGE, OP_MARSHAL } from "../../src/values/tape.js";
import { decodeFromGuest, type HeapMeter } from "../../src/values/to-host.js";

let engine: QuickJSWASMModule;
beforeAll(async () => {
  const wasm = await readFile(createRequire(import.meta.url).resolve("@jitl/quickjs-wasmfile-release-sync/wasm"));
  engine = await newQuickJSWASMModuleFromVariant(newVariant(variant, { wasmModule: new WebAssembly.Module(wasm) }));
});

/**
 * The tape the guest's encoder makes of `expression` in `mode`, after `setup` ran as user code: the core prelude and
 * the marshaling half evaluated as a run evaluates them, in a bare context of the same engine.
 */
function guestTape(expression: string, setup = "", mode = MODE_CLONE): string {
  const runtime = engine.newRuntime();
  const ctx = runtime.newContext();
  try {
    const boot = `let marshal;
      const hostCall = (op) => (op === ${OP_MARSHAL} ? marshal : op === ${OP_CHARGE} ? false : undefined);
      const core = (${guestCoreSource})(hostCall);
      marshal = (${guestMarshalSource})(core.intrinsics, hostCall, () => undefined);
      globalThis.encode = (value) => marshal.encode(value, ${mode})[0];`;
    ctx.unwrapResult(ctx.evalCode(boot)).dispose();
    const tape = ctx.unwrapResult(ctx.evalCode(`${setup};\nencode(${expression})`));
    try {
      return ctx.getString(tape);
    } finally {
      tape.dispose();
    }
  } finally {
    ctx.dispose();
    runtime.dispose();
  }
}

const JSON_NODE = '["j",';

describe("the guest's encoder: plain subtrees as JSON text", () => {
  it("writes plain objects and dense arrays of JSON values as one JSON node", () => {
    const value = '{ a: [1, "x", true, null, { b: 2.5 }], c: {}, "": [[]], __proto__: null }';
    expect(guestTape(value)).toBe('["j",{"a":[1,"x",true,null,{"b":2.5}],"c":{},"":[[]]}]');
    expect(guestTape('JSON.parse(\'{"__proto__":{"k":1}}\')')).toBe('["j",{"__proto__":{"k":1}}]');
    expect(guestTape("[]")).toBe('["j",[]]');
    expect(guestTape('"a\\u0000b\\ud800"')).toBe('"a\\u0000b\\ud800"');
  });

  it("keeps the plain parts of a value that is not JSON as JSON nodes", () => {
    expect(guestTape("{ u: undefined, data: { x: [1] }, list: [{ y: 2 }, -0] }")).toBe(
      '["o",0,["u",["u"],"data",["j",{"x":[1]}],"list",["a",3,[["j",{"y":2}],["n","-0"]]]]]',
    );
    expect(guestTape('new Map([["k", { a: [1] }]])')).toBe('["m",0,["k",["j",{"a":[1]}]]]');
  });

  // Each of these, written by `JSON.stringify`, would arrive changed, run guest code twice or not at all.
  it.each([
    ["-0", "{ v: -0 }", ""],
    ["NaN", "{ v: NaN }", ""],
    ["Infinity", "{ v: [-Infinity] }", ""],
    ["undefined", "{ v: undefined }", ""],
    ["a bigint", "{ v: 1n }", ""],
    ["a Date", "{ v: new Date(0) }", ""],
    ["a Map", "{ v: new Map() }", ""],
    ["a Set", "{ v: new Set([1]) }", ""],
    ["a RegExp", "{ v: /a/g }", ""],
    ["a typed array", "{ v: new Uint8Array(2) }", ""],
    ["an object reached twice", "[shared, { s: shared }]", "const shared = { s: 1 }"],
    ["a cycle", "cyclic", "const cyclic = { a: [1] }; cyclic.a.push(cyclic)"],
    ["a sparse array", "{ v: [1, , 3] }", ""],
    ["an array with another key", "{ v: Object.assign([1], { k: 2 }) }", ""],
    ["an array of another prototype", "{ v: Object.setPrototypeOf([1], Custom.prototype) }", "class Custom {}"],
    ["a getter", "{ v: { get g() { return 1; } } }", ""],
    ["a getter of an array's item", "{ v: Object.defineProperty([0], 0, { get: () => 1, enumerable: true }) }", ""],
    ["a proxy", "{ v: new Proxy({ a: 1 }, {}) }", ""],
    [
      "an own toJSON that is not enumerable",
      "{ v: hidden }",
      'const hidden = Object.defineProperty({ a: 1 }, "toJSON", { value: () => "x" })',
    ],
    [
      "an array's own toJSON",
      "{ v: hidden }",
      'const hidden = Object.defineProperty([1], "toJSON", { value: () => "x" })',
    ],
    ["a toJSON on Object.prototype", "{ v: { a: 1 } }", 'Object.prototype.toJSON = () => "x"'],
    ["a toJSON on Array.prototype", "{ v: [1] }", 'Array.prototype.toJSON = () => "x"'],
    ["a toJSON above Array.prototype", "{ v: [1] }", 'Object.setPrototypeOf(Array.prototype, { toJSON: () => "x" })'],
    ["an index of Array.prototype", "{ v: [[1]] }", "Object.defineProperty(Array.prototype, 1, { set() {} })"],
    ["an index of Object.prototype", "{ v: [[1]] }", "Object.defineProperty(Object.prototype, 1, { set() {} })"],
  ])("takes the tape for %s", (_what, expression, setup) => {
    expect(guestTape(expression, setup)).not.toContain(JSON_NODE);
  });

  it("takes the tape for what the console describes", () => {
    expect(guestTape("[{ a: 1 }, () => 1]", "", MODE_LOG)).toBe('["a",0,[["o",1,["a",1]],"[Function (anonymous)]"]]');
    expect(guestTape("[{ a: 1 }, new (class K {})()]", "", MODE_LOG)).not.toContain(JSON_NODE);
  });

  it("writes JSON again once an index of Object.prototype is deeper than the value", () => {
    expect(guestTape("{ v: [[1]] }", "Object.defineProperty(Object.prototype, 5, { set() {} })")).toBe(
      '["j",{"v":[[1]]}]',
    );
  });
});

describe("guest values reach the host as the tape alone gave them", () => {
  const { runCode } = createSandbox();
  const js = { language: "javascript" } as const;
  const result = async (source: string) => {
    const r = await runCode(source, js);
    if (r.status !== "success") throw new Error(`${r.error?.name}: ${r.error?.message}`);
    return r.result;
  };

  it("plain data round-trips identically, keys in order, __proto__ an own key", async () => {
    const data = JSON.parse(
      '{"b":1,"10":"ten","2":[1.5,-2,1e21,5e-324,true,false,null,"",{"nested":[[[]]]}],"__proto__":{"p":1},"s":"a\\u0000\\ud800\\u2028é"}',
    );
    const out = (await runCode("export default data", { ...js, globals: { data } })).result as Record<string, unknown>;
    expect(out).toEqual(data);
    expect(Object.keys(out)).toEqual(["2", "10", "b", "__proto__", "s"]);
    expect(Object.getPrototypeOf(out)).toBe(Object.prototype);
    expect(Object.hasOwn(out, "__proto__")).toBe(true);
    const made = await result(
      'const o = { a: [1, { b: "x" }], c: null }; o["__proto__"] = 1; Object.defineProperty(o, "__proto__", { value: { d: 2 }, enumerable: true }); export default o;',
    );
    expect(made).toEqual(JSON.parse('{"a":[1,{"b":"x"}],"c":null,"__proto__":{"d":2}}'));
  });

  it("values JSON cannot carry arrive exact beside plain ones", async () => {
    const out = (await result(
      "export default { z: -0, n: NaN, i: [Infinity], u: undefined, b: 1n, h: [1, , 3], d: new Date(5), m: new Map([[1, { a: [1] }]]), plain: { a: [{ b: 1 }] } };",
    )) as Record<string, unknown>;
    expect(Object.is(out.z, -0)).toBe(true);
    expect(out.n).toBeNaN();
    expect(out.i).toEqual([Number.POSITIVE_INFINITY]);
    expect(Object.hasOwn(out, "u") && out.u === undefined).toBe(true);
    expect(out.b).toBe(1n);
    expect(out.h).toHaveLength(3);
    expect(1 in (out.h as unknown[])).toBe(false);
    expect(out.d).toEqual(new Date(5));
    expect(out.m).toEqual(new Map([[1, { a: [1] }]]));
    expect(out.plain).toEqual({ a: [{ b: 1 }] });
  });

  it("shared references and cycles keep their identity", async () => {
    const out = (await result("const o = { a: [1] }; o.self = o; export default [o, o, { o }];")) as Record<
      string,
      unknown
    >[];
    expect(out[0]).toBe(out[1]);
    expect(out[0]?.self).toBe(out[0]);
    expect(out[2]?.o).toBe(out[0]);
  });

  it("getters and proxy traps run once each, in the guest", async () => {
    const source = `let reads = 0;
      const o = { get g() { reads++; return { x: [1] }; }, p: { q: [2] } };
      const proxy = new Proxy({ a: { b: 1 } }, { get(t, k) { reads++; return t[k]; } });
      report(o); report(proxy); report([proxy]);
      export default reads;`;
    const reports: unknown[] = [];
    const r = await runCode(source, { ...js, report: (v) => void reports.push(v) });
    expect(r.result).toBe(3);
    expect(reports).toEqual([{ g: { x: [1] }, p: { q: [2] } }, { a: { b: 1 } }, [{ a: { b: 1 } }]]);
  });

  it("never calls toJSON, wherever it is", async () => {
    const out = await result(`const hidden = Object.defineProperty({ a: 1 }, "toJSON", { value: () => "x" });
      const list = Object.defineProperty([1], "toJSON", { value: () => "x" });
      Object.prototype.toJSON = () => "x"; Array.prototype.toJSON = () => "x";
      export default { hidden, list, plain: { b: [2] } };`);
    expect(out).toEqual({ hidden: { a: 1 }, list: [1], plain: { b: [2] } });
  });

  it("runs no setter of an index of Array.prototype or Object.prototype", async () => {
    for (const proto of ["Array.prototype", "Object.prototype"]) {
      const out =
        await result(`for (let i = 0; i < 4; i++) Object.defineProperty(${proto}, i, { set() { throw new Error("setter ran"); } });
        export default { a: [[[{ b: 1 }]]], c: [1, 2] };`);
      expect(out).toEqual({ a: [[[{ b: 1 }]]], c: [1, 2] });
    }
  });
});

describe("decodeFromGuest: JSON nodes", () => {
  const noSide = { buffer: () => new ArrayBuffer(0), hostFunction: () => undefined, promise: () => Promise.resolve() };

  it("returns the JSON as it was parsed", () => {
    expect(decodeFromGuest('["o",0,["a",["j",{"b":[1,{"c":null}]}]]]', noSide)).toEqual({ a: { b: [1, { c: null }] } });
    expect(decodeFromGuest('["j",[]]', noSide)).toEqual([]);
  });

  it("charges JSON as the same values decoded one by one", () => {
    const heap = (tape: string) => {
      const meter: HeapMeter = { bytes: 0 };
      decodeFromGuest(tape, noSide, meter);
      return meter.bytes - tape.length;
    };
    const tape = '["o",0,["a",["a",1,[1,2.5,"x",["o",2,[]]]]]]';
    const json = '["j",{"a":[1,2.5,"x",{}]}]';
    expect(heap(json)).toBe(heap(tape));
    expect(heap(json)).toBeGreaterThan(0);
  });
});
