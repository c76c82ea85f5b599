/**
 * The metered wasm is built, not hand-made: the committed wasm/quickjs-fuel.wasm and wasm/swc-fuel.wasm must be
 * exactly what scripts/build-fuel-wasm.ts makes from the pinned QuickJS and SWC wasm (`npm run build:wasm` rewrites
 * them); and its charges weigh what they cover by one rule, checked on small modules whose weights are worked out by
 * hand.
 */
import { readFileSync } from "node:fs";
import binaryen from "binaryen";
import { describe, expect, it } from "vitest";
import { markStackLow, meterWasm, pinnedEngine, pinnedSwc } from "../../scripts/build-fuel-wasm.js";
import { METER, STACK_MARK } from "../../src/core/engine.js";

const stackExports = [
  { name: STACK_MARK.low, kind: "global" },
  { name: STACK_MARK.pointer, kind: "global" },
];

describe.each([
  ["QuickJS", "quickjs-fuel.wasm", pinnedEngine, (bytes: Uint8Array) => markStackLow(meterWasm(bytes)), stackExports],
  ["SWC", "swc-fuel.wasm", pinnedSwc, meterWasm, []],
])("the metered %s", (_, file, pinned, build, extraExports) => {
  const committed = new Uint8Array(readFileSync(new URL(`../../wasm/${file}`, import.meta.url)));

  it("is byte for byte a rebuild from the pinned wasm", () => {
    const rebuilt = build(pinned());
    expect(rebuilt.length).toBe(committed.length);
    expect(Buffer.compare(Buffer.from(rebuilt), Buffer.from(committed))).toBe(0);
  }, 120_000);

  it("exports its counter (the engine also its stack pointer and mark) and imports the hook, and nothing else changed in its interface", () => {
    const original = new WebAssembly.Module(pinned() as BufferSource);
    const metered = new WebAssembly.Module(committed as BufferSource);
    const sorted = (entries: object[]) => entries.map((entry) => JSON.stringify(entry)).sort();
    expect(sorted(WebAssembly.Module.exports(metered))).toEqual(
      sorted([...WebAssembly.Module.exports(original), { name: METER.counter, kind: "global" }, ...extraExports]),
    );
    expect(sorted(WebAssembly.Module.imports(metered))).toEqual(
      sorted([...WebAssembly.Module.imports(original), { module: METER.module, name: METER.hook, kind: "function" }]),
    );
  });
});

describe("the meter's weights", () => {
  /** The fuel `run(n)` of `wat`'s function takes when metered. */
  const spent = (wat: string) => {
    const module = binaryen.parseText(`(module (memory 1) ${wat})`);
    const bytes = module.emitBinary();
    module.dispose();
    const { exports } = new WebAssembly.Instance(new WebAssembly.Module(meterWasm(bytes) as BufferSource), {
      [METER.module]: { [METER.hook]: () => {} },
    });
    const counter = exports[METER.counter] as WebAssembly.Global;
    return (n: number) => {
      counter.value = 1e9;
      (exports.run as (n: number) => void)(n);
      return 1e9 - counter.value;
    };
  };
  const stores = (count: number) =>
    Array.from({ length: count }, (_, i) => `(i32.store offset=${4 * i} (i32.const 0) (local.get $n))`).join(" ");
  /** A function `run` looping `n` times over `body`. */
  const loop = (body: string, extra = "") =>
    `${extra} (func (export "run") (param $n i32) (loop $again ${body} (br_if $again (local.tee $n (i32.sub (local.get $n) (i32.const 1))))))`;

  it("charge a loop's iteration 1 at the least, 1/4 for itself plus 1/12 per load or store", () => {
    expect(spent(loop(""))(1000)).toBe(1 + 1000 * 1);
    // 1/4 + 33/12 = 3: before, every iteration was 1 whatever its body.
    expect(spent(loop(stores(33)))(1000)).toBe(1 + 1000 * 3);
  });

  it("count a call as 3/4 and a leaf callee's own cost at its call", () => {
    const leaf = `(func $leaf (param $p i32) (result i32) ${"(drop (i32.load (local.get $p)))".repeat(21)} (i32.const 0))`;
    // 1/4 + 2 * (3/4 + 21/12) = 5.25.
    expect(spent(loop("(drop (call $leaf (local.get $n))) (drop (call $leaf (local.get $n)))", leaf))(1000)).toBe(
      1 + 1000 * 5,
    );
  });

  it("weigh a dispatch by the mean of its cases, not their sum", () => {
    const dispatch = `(block $done (block $c (block $b (block $a
      (br_table $a $b $c (i32.and (local.get $n) (i32.const 3))))
      ${stores(54)} (br $done)) (br $done)))`;
    // 1/4 + (54/12) / 3 = 1.75 (the sum of the cases would be 4.75).
    expect(spent(loop(dispatch))(1000)).toBe(1 + 1000 * 2);
  });

  it("weigh an iteration by the paths that go on to the next, not by its exit", () => {
    const body = `(if (local.get $n) (then ${stores(30)} (local.set $n (i32.sub (local.get $n) (i32.const 1))) (br $again)))`;
    const run = `(func (export "run") (param $n i32) (loop $again ${body}))`;
    // Every path back to the head runs the 30 stores: 1/4 + 30/12 = 2.75 (halved by the `if`, it would be 1.5).
    expect(spent(run)(1000)).toBe(1 + 1000 * 3 + 3);
  });
});

describe("the engine's stack mark", () => {
  /** `wat`'s module with an emscripten-like stack pointer at 4096 and its exported getter and setter, marked. */
  const marked = (wat: string) => {
    const module = binaryen.parseText(`(module (memory 1) (global $sp (mut i32) (i32.const 4096))
      (func (export "get") (result i32) (global.get $sp))
      (func (export "set") (param i32) (global.set $sp (local.get 0))) ${wat})`);
    const bytes = module.emitBinary();
    module.dispose();
    return markStackLow(bytes);
  };
  const frames = `(func $deep (export "deep") (param $n i32)
    (global.set $sp (i32.sub (global.get $sp) (i32.const 32)))
    (if (local.get $n) (then (call $deep (i32.sub (local.get $n) (i32.const 1)))))
    (global.set $sp (i32.add (global.get $sp) (i32.const 32))))`;

  it("keeps the least value the stack pointer had since the host set it, and exports the pointer", () => {
    const { exports } = new WebAssembly.Instance(new WebAssembly.Module(marked(frames) as BufferSource), {});
    const low = exports[STACK_MARK.low] as WebAssembly.Global;
    const pointer = exports[STACK_MARK.pointer] as WebAssembly.Global;
    const deep = exports.deep as (n: number) => void;
    expect([low.value, pointer.value]).toEqual([4096, 4096]);
    deep(3);
    expect([low.value, pointer.value]).toEqual([4096 - 4 * 32, 4096]);
    low.value = 4096;
    deep(0);
    expect(low.value).toBe(4096 - 32);
    // The setter the host's own calls use moves it too.
    (exports.set as (at: number) => void)(1000);
    expect(low.value).toBe(1000);
  });

  it("fails the build where no stack pointer is found", () => {
    const module = binaryen.parseText(
      `(module (global $g (mut i32) (i32.const 0)) (func (export "f") (global.set $g (i32.const 1))))`,
    );
    const bytes = module.emitBinary();
    module.dispose();
    expect(() => markStackLow(bytes)).toThrow(/stack pointer was not found/);
  });

  it(`fails the build where a function writes below the pointer past the red zone (${STACK_MARK.redZoneBytes} bytes) without moving it`, () => {
    const within = `(func (export "leaf") (i32.store (i32.sub (global.get $sp) (i32.const ${STACK_MARK.redZoneBytes})) (i32.const 1)))`;
    expect(marked(within).length).toBeGreaterThan(0);
    const past = within.replace(`${STACK_MARK.redZoneBytes}`, `${STACK_MARK.redZoneBytes + 16}`);
    expect(() => marked(past)).toThrow(/past the red zone/);
  });
});
