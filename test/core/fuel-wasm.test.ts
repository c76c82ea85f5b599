/**
 * The metered wasm is built, not hand-made: the committed wasm/quickjs-fuel.wasm and wasm/swc-fuel.wasm must be
 * exactly what scripts/build-fuel-wasm.ts makes from the pinned QuickJS and SWC wasm (`npm run build:wasm` rewrites
 * them); and its charges weigh what they cover by one rule, checked on small modules whose weights are worked out by
 * hand.
 */
import { readFileSync } from "node:fs";
import binaryen from "binaryen";
import { describe, expect, it } from "vitest";
import { markStackLow, meterWasm, pinnedEngine, pinnedSwc, withProbeFacts } from "../../scripts/build-fuel-wasm.js";
import { METER, STACK_MARK } from "../../src/core/engine.js";
import { C_STACK_BYTES } from "../../src/core/instance.js";

const stackExports = [
  { name: STACK_MARK.low, kind: "global" },
  { name: STACK_MARK.pointer, kind: "global" },
];

describe.each([
  [
    "QuickJS",
    "quickjs-fuel.wasm",
    pinnedEngine,
    (bytes: Uint8Array) => withProbeFacts(markStackLow(meterWasm(bytes))),
    stackExports,
  ],
  ["SWC", "swc-fuel.wasm", pinnedSwc, async (bytes: Uint8Array) => meterWasm(bytes), []],
])("the metered %s", (_, file, pinned, build, extraExports) => {
  const committed = new Uint8Array(readFileSync(new URL(`../../wasm/${file}`, import.meta.url)));

  it("is byte for byte a rebuild from the pinned wasm (the engine's with its probe's findings)", async () => {
    const rebuilt = await build(pinned());
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
  /** `wat`'s module metered, and how many times it called the hook. */
  const metered = (wat: string) => {
    const module = binaryen.parseText(`(module (memory 1) ${wat})`);
    const bytes = module.emitBinary();
    module.dispose();
    const hook = { calls: 0 };
    const { exports } = new WebAssembly.Instance(new WebAssembly.Module(meterWasm(bytes) as BufferSource), {
      [METER.module]: { [METER.hook]: () => void hook.calls++ },
    });
    return { exports, counter: exports[METER.counter] as WebAssembly.Global, hook };
  };
  /** The fuel `run(...args)` (or another export's) of `wat`'s function takes when metered. */
  const spent = (wat: string, name = "run") => {
    const { exports, counter } = metered(wat);
    return (...args: number[]) => {
      counter.value = 1e9;
      (exports[name] as (...args: number[]) => void)(...args);
      return 1e9 - counter.value;
    };
  };
  /** The charges `run(...args)` makes: from an empty counter, each calls the hook. */
  const charges = (wat: string) => {
    const { exports, counter, hook } = metered(wat);
    return (...args: number[]) => {
      counter.value = 0;
      (exports.run as (...args: number[]) => void)(...args);
      return hook.calls;
    };
  };
  const stores = (count: number) =>
    Array.from({ length: count }, (_, i) => `(i32.store offset=${4 * i} (i32.const 0) (local.get $n))`).join(" ");
  /** A function `run` looping `n` times over `body`. */
  const loop = (body: string, extra = "", params = "") =>
    `${extra} (func (export "run") (param $n i32) ${params} (loop $again ${body} (br_if $again (local.tee $n (i32.sub (local.get $n) (i32.const 1))))))`;

  it("charge the first iteration at the function's entry and each next one at its branch back: 1 at the least, 3/8 for itself plus 1/8 per load or store", () => {
    expect(spent(loop(""))(1000)).toBe(1 + 999 * 1);
    // 3/8 + 21/8 = 3: before, every iteration was 1 whatever its body.
    expect(spent(loop(stores(21)))(1000)).toBe(3 + 999 * 3);
  });

  it("count a call as 9/8 and a leaf callee's own cost at its call", () => {
    const leaf = `(func $leaf (param $p i32) (result i32) ${"(drop (i32.load (local.get $p)))".repeat(21)} (i32.const 0))`;
    // 3/8 + 2 * (9/8 + 21/8) = 7.875.
    expect(spent(loop("(drop (call $leaf (local.get $n))) (drop (call $leaf (local.get $n)))", leaf))(1000)).toBe(
      8 + 999 * 8,
    );
  });

  it("weigh a dispatch by the mean of its cases, not their sum", () => {
    const dispatch = `(block $done (block $c (block $b (block $a
      (br_table $a $b $c (i32.and (local.get $n) (i32.const 3))))
      ${stores(54)} (br $done)) (br $done)))`;
    // 3/8 + (54/8) / 3 = 2.625 (the sum of the cases would be 7.125).
    expect(spent(loop(dispatch))(1000)).toBe(3 + 999 * 3);
  });

  it("weigh an iteration by the path that goes on to the next, not by its exit", () => {
    const body = `(if (local.get $n) (then ${stores(30)} (local.set $n (i32.sub (local.get $n) (i32.const 1))) (br $again)))`;
    const run = `(func (export "run") (param $n i32) (loop $again ${body}))`;
    // Every path back to the head runs the 30 stores: 3/8 + 30/8 = 4.125 (halved by the \`if\`, it would be 2.25); the
    // entry pays the first iteration, one path of two: 3/8 + 30/8 / 2 = 2.25.
    expect(spent(run)(1000)).toBe(2 + 1000 * 4);
  });

  it("charge each branch back for the path that reaches it", () => {
    const next = "(br_if $again (local.tee $n (i32.sub (local.get $n) (i32.const 1))))";
    const run = `(func (export "run") (param $n i32) (param $p i32) (loop $again (if (local.get $p) (then ${stores(30)} ${next}) (else ${next}))))`;
    // The branch back after the stores weighs 3/8 + 30/8 = 4.125, the other 3/8 (before, both their mean, 2.25).
    expect(spent(run)(1000, 1)).toBe(2 + 999 * 4);
    expect(spent(run)(1000, 0)).toBe(2 + 999 * 1);
  });

  it("charge a branch back that is a br_table's", () => {
    const run = `(func (export "run") (param $n i32) (block $done (loop $again
      ${stores(6)} (local.set $n (i32.sub (local.get $n) (i32.const 1)))
      (br_table $again $done (i32.eqz (local.get $n))))))`;
    // 3/8 + 6/8 = 1.125 an iteration; never less than 1 though the table goes back only on one target in two.
    expect(spent(run)(1000)).toBe(1 + 999 * 1);
    expect(spent(run)(2000)).toBe(1 + 1999 * 1);
  });

  it("charge a function that is only called directly, outside any cycle, at its callers' charges", () => {
    // Not a leaf (it loops), but its entry is its callers' to pay: 3/8 + 9/8 + 4/8 = 2 an iteration of the caller's
    // loop, where before its entry charged 1 of its own on top of the caller's 2.
    const callee = `(func $callee (param $n i32) ${stores(4)} (loop $l (br_if $l (local.tee $n (i32.sub (local.get $n) (i32.const 1))))))`;
    expect(spent(loop("(call $callee (i32.const 1))", callee))(1000)).toBe(2 + 999 * 2);
  });

  it("charge an exported function the engine also calls at its direct calls, and the host's calls in its export", () => {
    // Not a leaf (it loops); its entry weighs 3/8 + 4/8 = 1, which its export's wrapper charges the host's calls.
    const callee = `(func $callee (export "callee") (param $n i32) ${stores(4)} (loop $l (br_if $l (local.tee $n (i32.sub (local.get $n) (i32.const 1))))))`;
    const run = loop("(call $callee (i32.const 1))", callee);
    expect(spent(run, "callee")(1)).toBe(1);
    // The caller's loop pays the callee's whole unit at the call, 3/8 + 9/8 + 1 = 2.5, rounded to 3 an iteration: what
    // its own 2 and the callee's entry made, in one charge where there were two.
    expect(spent(run)(1000)).toBe(3 + 999 * 3);
    expect(charges(run)(1000)).toBe(1 + 999);
  });

  it("charge every round of a cycle of direct calls, at the entry of one of its functions", () => {
    const cycle = `(func $a (param $n i32) (if (local.get $n) (then (call $b (i32.sub (local.get $n) (i32.const 1))))))
      (func $b (param $n i32) (if (local.get $n) (then (call $a (i32.sub (local.get $n) (i32.const 1))))))
      (func (export "run") (param $n i32) (call $a (local.get $n)))`;
    // `run`'s entry (3/8 + 9/8 = 1.5, rounded to 2), then $a's on each of its 501 calls; $b, called only by $a, is
    // paid by $a's charge.
    expect(spent(cycle)(1000)).toBe(2 + 501);
    const self = `(func $f (param $n i32) (if (local.get $n) (then (call $f (i32.sub (local.get $n) (i32.const 1))))))
      (func (export "run") (param $n i32) (call $f (local.get $n)))`;
    expect(spent(self)(1000)).toBe(2 + 1001);
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

  it("leaves unmarked a write that gives a frame back, and marks one that goes below the pointer the frame took", () => {
    // The stack as the engine's: its top C_STACK_BYTES above its bottom, here at 4096.
    const top = C_STACK_BYTES + 4096;
    const pages = Math.ceil(top / 65_536);
    const module = binaryen.parseText(`(module (memory ${pages}) (global $sp (mut i32) (i32.const ${top}))
      (func (export "get") (result i32) (global.get $sp))
      (func (export "set") (param i32) (global.set $sp (local.get 0)))
      (func $deep (export "deep") (param $n i32) (local $frame i32)
        (global.set $sp (local.tee $frame (i32.sub (global.get $sp) (i32.const 32))))
        (if (local.get $n) (then (call $deep (i32.sub (local.get $n) (i32.const 1)))))
        (global.set $sp (i32.add (local.get $frame) (i32.const 32))))
      (func (export "lower") (local $frame i32)
        (local.set $frame (i32.sub (global.get $sp) (i32.const 32)))
        (global.set $sp (i32.add (local.get $frame) (i32.const 16)))))`);
    const bytes = module.emitBinary();
    module.dispose();
    const output = markStackLow(bytes);
    const { exports } = new WebAssembly.Instance(new WebAssembly.Module(output as BufferSource), {});
    const low = exports[STACK_MARK.low] as WebAssembly.Global;
    const pointer = exports[STACK_MARK.pointer] as WebAssembly.Global;
    (exports.deep as (n: number) => void)(3);
    expect([low.value, pointer.value]).toEqual([top - 4 * 32, top]);
    // `frame + 16` with `frame = sp - 32` lowers the pointer: marked.
    (exports.lower as () => void)();
    expect([low.value, pointer.value]).toEqual([top - 4 * 32, top - 16]);
    low.value = top;
    (exports.lower as () => void)();
    expect([low.value, pointer.value]).toEqual([top - 32, top - 32]);
    // Three writes marked (the setter's, the prologue's, `lower`'s): the epilogue's is not.
    const text = binaryen.readBinary(output);
    const mark = binaryen.getExportInfo(text.getExport(STACK_MARK.low)).value;
    expect(text.emitText().split(`(global.set $${mark}`).length - 1).toBe(3);
    text.dispose();
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
