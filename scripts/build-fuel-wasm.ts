/**
 * Builds the metered wasm of the runtime: QuickJS's (the pinned `@jitl/quickjs-wasmfile-release-sync`) and SWC's
 * (the pinned `@swc/wasm-typescript`), each with a fuel counter, an exported mutable i32 global `fuel` that every
 * function entry and loop iteration decrements by one, every `memory.copy`/`memory.fill` by one per 32 bytes (before
 * it runs) and every call of a host import by a flat 50; when it drops below zero the code calls the import
 * `fuel.out`, which refills it or throws (see src/core/limits.ts and src/core/transpile.ts).
 * QuickJS polls for interrupts only at bytecode calls and back-edges, so a native such as a BigInt multiply or a
 * regex replace over megabytes is one poll whatever it costs, and SWC never polls (its parser's worst case, chains
 * of `<`, is quadratic); the counter sees their own loops.
 * The output is deterministic: `npm run build:wasm` rewrites wasm/quickjs-fuel.wasm and wasm/swc-fuel.wasm, and a
 * test checks the committed files equal a rebuild.
 * @module
 */
import { readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import binaryen from "binaryen";
import { swcPackage } from "#swc-wasm";
import { METER } from "../src/core/engine.js";

/** Fuel of a call to a host import (clock, time zone, callbacks into the host). */
const HOST_CALL_FUEL = 50;
/** Bytes of `memory.copy`/`memory.fill` per unit of fuel, as a shift. */
const BYTES_PER_FUEL_SHIFT = 5;

const OUT = "fuel$out";
const GLOBAL = "fuel$counter";

type Ref = number;

/** Accessors binaryen.js has that its type declarations lack. */
interface Accessor {
  getBody(expr: Ref): Ref;
  setBody(expr: Ref, body: Ref): void;
  getSize(expr: Ref): Ref;
  setSize(expr: Ref, size: Ref): void;
  getTarget(expr: Ref): string;
  setTarget(expr: Ref, target: string): void;
}
const api = binaryen as unknown as Record<"Loop" | "Call" | "MemoryCopy" | "MemoryFill" | "Function", Accessor> & {
  _BinaryenFunctionAddVar(fn: Ref, type: number): number;
};

/** The children of an expression, for the expression kinds of an MVP + bulk-memory + sign-ext module. */
function childrenOf(expr: Ref): Ref[] {
  const id = binaryen.getExpressionId(expr);
  const b = binaryen;
  if (
    id === b.LocalGetId ||
    id === b.GlobalGetId ||
    id === b.ConstId ||
    id === b.NopId ||
    id === b.UnreachableId ||
    id === b.MemorySizeId
  )
    return [];
  // biome-ignore lint/suspicious/noExplicitAny: the info's shape depends on the id
  const info = b.getExpressionInfo(expr) as any;
  const pick = (...keys: string[]): Ref[] => keys.map((key) => info[key] as Ref);
  switch (id) {
    case b.BlockId:
      return info.children;
    case b.IfId:
      return pick("condition", "ifTrue", "ifFalse");
    case b.LoopId:
      return pick("body");
    case b.BreakId:
    case b.SwitchId:
      return pick("condition", "value");
    case b.CallId:
      return info.operands;
    case b.CallIndirectId:
      return [info.target, ...info.operands];
    case b.LocalSetId:
    case b.GlobalSetId:
    case b.UnaryId:
    case b.DropId:
    case b.ReturnId:
      return pick("value");
    case b.LoadId:
      return pick("ptr");
    case b.StoreId:
      return pick("ptr", "value");
    case b.BinaryId:
      return pick("left", "right");
    case b.SelectId:
      return pick("ifTrue", "ifFalse", "condition");
    case b.MemoryGrowId:
      return pick("delta");
    case b.MemoryCopyId:
      return pick("dest", "source", "size");
    case b.MemoryFillId:
      return pick("dest", "value", "size");
    default:
      throw new Error(`build-fuel-wasm: unexpected expression kind ${id}`);
  }
}

/** The metered bytes of a pinned wasm's bytes. */
export function meterWasm(original: Uint8Array): Uint8Array {
  const module = binaryen.readBinary(original);
  // What the builds of QuickJS and SWC use; a module reads as MVP until told.
  const { Features } = binaryen;
  module.setFeatures(
    Features.MutableGlobals |
      Features.NontrappingFPToInt |
      Features.BulkMemory |
      Features.BulkMemoryOpt |
      Features.SignExt,
  );
  const { i32, none } = binaryen;
  // Full at instantiation: the engine's start code runs before the host can set it.
  module.addGlobal(GLOBAL, i32, true, module.i32.const(0x7fffffff));
  module.addGlobalExport(GLOBAL, METER.counter);
  module.addFunctionImport(OUT, METER.module, METER.hook, none, none);

  /** `fuel -= amount; if (fuel < 0) out()`, the new value read back from the local `scratch`, not the global. */
  const charge = (amount: Ref, scratch: number): Ref =>
    module.block(null, [
      module.global.set(GLOBAL, module.local.tee(scratch, module.i32.sub(module.global.get(GLOBAL, i32), amount), i32)),
      module.if(module.i32.lt_s(module.local.get(scratch, i32), module.i32.const(0)), module.call(OUT, [], none)),
    ]);

  const functions: Ref[] = [];
  const imports = new Map<string, Ref>();
  for (let i = 0; i < module.getNumFunctions(); i++) {
    const fn = module.getFunctionByIndex(i);
    const info = binaryen.getFunctionInfo(fn);
    if (!info.module) functions.push(fn);
    else if (info.name !== OUT) imports.set(info.name, fn);
  }
  // A charging wrapper per host import; calls are redirected to it.
  const wrappers = new Map<string, string>();
  for (const [name, fn] of imports) {
    const { params, results } = binaryen.getFunctionInfo(fn);
    const args = binaryen.expandType(params).map((type, index) => module.local.get(index, type));
    const wrapper = `${name}$fuel`;
    const call = module.call(name, args, results);
    const charged = charge(module.i32.const(HOST_CALL_FUEL), args.length);
    module.addFunction(wrapper, params, results, [i32], module.block(null, [charged, call], results));
    wrappers.set(name, wrapper);
  }

  for (const fn of functions) {
    const found: Ref[] = [];
    let leaf = true;
    const stack = [binaryen.getFunctionInfo(fn).body];
    while (stack.length > 0) {
      const expr = stack.pop() as Ref;
      if (expr === 0) continue;
      const id = binaryen.getExpressionId(expr);
      if (id === binaryen.CallIndirectId) leaf = false;
      else if (
        id === binaryen.LoopId ||
        id === binaryen.MemoryCopyId ||
        id === binaryen.MemoryFillId ||
        id === binaryen.CallId
      ) {
        leaf = false;
        found.push(expr);
      }
      stack.push(...childrenOf(expr));
    }
    // A function that neither loops nor calls does work bounded by its size: its callers' charges cover it.
    if (leaf) continue;
    const scratch = api._BinaryenFunctionAddVar(fn, i32);
    for (const expr of found) {
      const id = binaryen.getExpressionId(expr);
      if (id === binaryen.LoopId) {
        const body = api.Loop.getBody(expr);
        const type = binaryen.getExpressionType(body);
        api.Loop.setBody(expr, module.block(null, [charge(module.i32.const(1), scratch), body], type));
      } else if (id === binaryen.CallId) {
        const wrapper = wrappers.get(api.Call.getTarget(expr));
        if (wrapper !== undefined) api.Call.setTarget(expr, wrapper);
      } else {
        // The size is the last operand evaluated: charged through a local after it, before the copy runs.
        const kind = id === binaryen.MemoryCopyId ? api.MemoryCopy : api.MemoryFill;
        const size = kind.getSize(expr);
        const local = api._BinaryenFunctionAddVar(fn, i32);
        kind.setSize(
          expr,
          module.block(
            null,
            [
              module.local.set(local, size),
              charge(module.i32.shr_u(module.local.get(local, i32), module.i32.const(BYTES_PER_FUEL_SHIFT)), scratch),
              module.local.get(local, i32),
            ],
            i32,
          ),
        );
      }
    }
    const body = api.Function.getBody(fn);
    const type = binaryen.getExpressionType(body);
    api.Function.setBody(fn, module.block(null, [charge(module.i32.const(1), scratch), body], type));
  }
  if (!module.validate()) throw new Error("build-fuel-wasm: the metered module does not validate");
  const bytes = module.emitBinary();
  module.dispose();
  return bytes;
}

/** The pinned engine's wasm. */
export function pinnedEngine(): Uint8Array {
  return readFileSync(createRequire(import.meta.url).resolve("@jitl/quickjs-wasmfile-release-sync/wasm"));
}

/** The pinned SWC's wasm. */
export function pinnedSwc(): Uint8Array {
  return swcPackage().wasm;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  writeFileSync("wasm/quickjs-fuel.wasm", meterWasm(pinnedEngine()));
  writeFileSync("wasm/swc-fuel.wasm", meterWasm(pinnedSwc()));
}
