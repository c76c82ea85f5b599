/**
 * Builds the metered wasm of the runtime: QuickJS's (the pinned `@jitl/quickjs-wasmfile-release-sync`) and SWC's
 * (the pinned `@swc/wasm-typescript`), each with a fuel counter, an exported mutable i32 global `fuel`; when it drops
 * below zero the code calls the import `fuel.out`, which refills it or throws (see src/core/limits.ts and
 * src/core/transpile.ts).
 * QuickJS polls for interrupts only at bytecode calls and back-edges, so a native such as a BigInt multiply or a
 * regex replace over megabytes is one poll whatever it costs, and SWC never polls (its parser's worst case, chains
 * of `<`, is quadratic); the counter sees their own loops.
 *
 * The meter, where and what it charges:
 * - at each function entry (but in leaves, functions that neither loop nor call: their work is bounded by their
 *   size, and their callers pay it) and at the head of each loop iteration: the weight of the code run from there to
 *   the next charge point, the same rule everywhere (below);
 * - before each `memory.copy`/`memory.fill`: 1 per 32 bytes, so a bulk op never overshoots;
 * - at each call of a host import (clock, time zone, callbacks into the host): a flat 50; what the host then does is
 *   charged by the host.
 * The weight of a charge point is its code's expected cost ({@link expectedCost}): 1/4 for the point itself, 1/12 per
 * load or store and 3/4 per call or return ({@link COST}, fitted to CPU time), over the mean path with every branch
 * equally likely, a leaf callee's cost counted at its call; rounded, and at least 1. A loop or a function whose
 * iterations or calls do more memory work or calls than another's costs more per unit of progress, so fuel follows
 * CPU across natives (a bytecode dispatch, a regex backtracking step, a BigInt limb) far closer than one unit per
 * iteration did. Where the charges sit is independent of what they weigh: moving them (to basic blocks, out of
 * loops, to leaves' call sites) keeps {@link expectedCost} as the measure of what each one covers.
 * The output is deterministic: `npm run build:wasm` rewrites wasm/quickjs-fuel.wasm and wasm/swc-fuel.wasm, and a
 * test checks the committed files equal a rebuild.
 * @module
 */
import { readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import binaryen from "binaryen";
import { swcPackage } from "#swc-wasm";
import { METER, STACK_MARK } from "../src/core/engine.js";

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

/**
 * What the code between two charge points costs, in fuel: the charge point itself, each load or store, each call or
 * return (a frame pushed or popped). Fitted by least squares to CPU time over bounded runs of bench/fuel.ts's programs
 * (one meter per kind of instruction, counting it alone); the other kinds (locals, arithmetic, branches) came out at
 * zero: V8's compiled code runs them nearly free beside memory and frames. Scaled so that a unit costs the engine
 * the CPU it did when every charge point weighed 1 (the median of the catalogue, about 3.4 ns here): the host's rates
 * (src/core/host-fuel.ts) and `FUEL_PER_MS` are measured against it.
 */
const COST = { site: 1 / 4, memory: 1 / 12, call: 3 / 4 } as const;

/** The cost of one instruction of kind `id` past the charge point, leaf callees aside. */
function costOf(id: number): number {
  const b = binaryen;
  if (id === b.LoadId || id === b.StoreId) return COST.memory;
  if (id === b.CallId || id === b.CallIndirectId || id === b.ReturnId) return COST.call;
  return 0;
}

/** Control reaching a point: its probability, and the cost of the code run on the way times that probability. */
interface Flow {
  p: number;
  cost: number;
}
const NONE: Flow = { p: 0, cost: 0 };
const sum = (a: Flow, b: Flow): Flow => ({ p: a.p + b.p, cost: a.cost + b.cost });
const part = (a: Flow, share: number): Flow => ({ p: a.p * share, cost: a.cost * share });

/**
 * The expected cost ({@link COST}) of the code run from a charge point to the next, over `code` (the body of the
 * loop named `loop`, or a function's body): every arm of an `if` or `br_if` and every target of a `br_table` is taken with equal chance, and
 * the cost is the mean over the paths that go on: back to the loop's head for a loop (its exit runs once), to the
 * function's end for a function. A nested loop is a charge point of its own and costs nothing here; a call of a
 * function that never charges (a leaf) costs that function's own expected cost too, `leafCost` of its name.
 */
function expectedCost(code: Ref, loop: string | null, leafCost: (name: string) => number): number {
  const b = binaryen;
  const targets = new Map<string, Flow>();
  let again = NONE;
  let out = NONE;
  const branch = (name: string | null, flow: Flow) => {
    const block = name === null ? undefined : targets.get(name);
    if (block !== undefined) targets.set(name as string, sum(block, flow));
    else if (name !== null && name === loop) again = sum(again, flow);
    else out = sum(out, flow);
  };
  const step = (flow: Flow, cost: number): Flow => ({ p: flow.p, cost: flow.cost + flow.p * cost });
  /** The flow that falls through `expr`, reached by `flow`. */
  const walk = (expr: Ref, flow: Flow): Flow => {
    if (expr === 0 || flow.p === 0) return flow;
    const id = b.getExpressionId(expr);
    if (id === b.LoopId) return flow;
    if (id === b.UnreachableId) return NONE;
    // Only these kinds' info is read (binaryen.js has none for some others, such as `nop`).
    const described = id === b.BlockId || id === b.IfId || id === b.BreakId || id === b.SwitchId || id === b.CallId;
    // biome-ignore lint/suspicious/noExplicitAny: the info's shape depends on the id
    const info = (described ? b.getExpressionInfo(expr) : {}) as any;
    if (id === b.BlockId) {
      const name: string | null = info.name || null;
      if (name !== null) targets.set(name, NONE);
      let next = flow;
      for (const child of info.children as Ref[]) next = walk(child, next);
      if (name === null) return next;
      const arriving = targets.get(name) as Flow;
      targets.delete(name);
      return sum(next, arriving);
    }
    if (id === b.IfId) {
      const test = walk(info.condition, flow);
      const other = info.ifFalse ? walk(info.ifFalse, part(test, 0.5)) : part(test, 0.5);
      return sum(walk(info.ifTrue, part(test, 0.5)), other);
    }
    let next = flow;
    for (const child of childrenOf(expr)) next = walk(child, next);
    next = step(next, costOf(id));
    switch (id) {
      case b.BreakId:
        if (!info.condition) {
          branch(info.name, next);
          return NONE;
        }
        branch(info.name, part(next, 0.5));
        return part(next, 0.5);
      case b.SwitchId: {
        const names: string[] = [...info.names, info.defaultName];
        for (const name of names) branch(name, part(next, 1 / names.length));
        return NONE;
      }
      case b.ReturnId:
        out = sum(out, next);
        return NONE;
      case b.CallId:
        return step(next, leafCost(info.target));
      default:
        return next;
    }
  };
  const end = walk(code, { p: 1, cost: 0 });
  const paths = loop !== null && again.p > 0 ? again : sum(out, end);
  return paths.p > 0 ? paths.cost / paths.p : 0;
}

/**
 * A wasm's module in binaryen, with the features the builds of QuickJS and SWC use: a module reads as MVP until told,
 * and more would change how the binary is written.
 */
function readModule(bytes: Uint8Array): binaryen.Module {
  const module = binaryen.readBinary(bytes);
  const { Features } = binaryen;
  module.setFeatures(
    Features.MutableGlobals |
      Features.NontrappingFPToInt |
      Features.BulkMemory |
      Features.BulkMemoryOpt |
      Features.SignExt,
  );
  return module;
}

/** The metered bytes of a pinned wasm's bytes. */
export function meterWasm(original: Uint8Array): Uint8Array {
  const module = readModule(original);
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

  // What each function charges at: its loops, bulk memory ops and calls; none at all for a leaf.
  const sites = new Map<Ref, Ref[]>();
  const leaves = new Map<string, number>();
  for (const fn of functions) {
    const found: Ref[] = [];
    let leaf = true;
    const { body, name } = binaryen.getFunctionInfo(fn);
    const stack = [body];
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
    if (leaf)
      leaves.set(
        name,
        expectedCost(body, null, () => 0),
      );
    else sites.set(fn, found);
  }
  const leafCost = (name: string) => leaves.get(name) ?? 0;
  // Every loop iteration charges at least 1: a loop that charged nothing would never stop.
  const weight = (code: Ref, loop: string | null) =>
    Math.max(1, Math.round(COST.site + expectedCost(code, loop, leafCost)));

  for (const [fn, found] of sites) {
    const scratch = api._BinaryenFunctionAddVar(fn, i32);
    const entry = weight(api.Function.getBody(fn), null);
    const loops = found.map((expr) =>
      binaryen.getExpressionId(expr) === binaryen.LoopId
        ? weight(api.Loop.getBody(expr), (binaryen.getExpressionInfo(expr) as binaryen.LoopInfo).name)
        : 0,
    );
    for (const [index, expr] of found.entries()) {
      const id = binaryen.getExpressionId(expr);
      if (id === binaryen.LoopId) {
        const body = api.Loop.getBody(expr);
        const type = binaryen.getExpressionType(body);
        api.Loop.setBody(
          expr,
          module.block(null, [charge(module.i32.const(loops[index] as number), scratch), body], type),
        );
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
    api.Function.setBody(fn, module.block(null, [charge(module.i32.const(entry), scratch), body], type));
  }
  if (!module.validate()) throw new Error("build-fuel-wasm: the metered module does not validate");
  const bytes = module.emitBinary();
  module.dispose();
  return bytes;
}

/** The internal name of the stack mark's global. */
const STACK_LOW = "stack$low";

/** The accessors of `global.set` binaryen.js has that its type declarations lack. */
const globalSet = (
  binaryen as unknown as { GlobalSet: { getValue(expr: Ref): Ref; setValue(expr: Ref, value: Ref): void } }
).GlobalSet;

/** The global a `global.get` or `global.set` names. */
const globalName = (expr: Ref): string => (binaryen.getExpressionInfo(expr) as binaryen.GlobalGetInfo).name;

/**
 * The engine's stack low-water mark, a pass of its own over the metered engine: after every write of the C stack
 * pointer (emscripten's `__stack_pointer`: every prologue and epilogue, and the library's `stackAlloc` for a call's
 * string arguments), the exported mutable i32 global `STACK_MARK.low` keeps the least value the pointer has had. The
 * host sets it to the stack's top and, after a run, rewrites only the stack between it, less the red zone, and the top;
 * the pointer itself is exported as `STACK_MARK.pointer` so the host can see it is back at the top. A function that
 * never moves the pointer may still write below it, within LLVM's red zone for wasm (`STACK_MARK.redZoneBytes`): a
 * build where one reaches further, or whose stack pointer is not found, fails.
 */
export function markStackLow(metered: Uint8Array): Uint8Array {
  const module = readModule(metered);
  const { i32 } = binaryen;
  const pointer = stackPointerOf(module);
  const pointerAt = (expr: Ref) =>
    binaryen.getExpressionId(expr) === binaryen.GlobalGetId && globalName(expr) === pointer;
  for (let i = 0; i < module.getNumFunctions(); i++) {
    const fn = module.getFunctionByIndex(i);
    const { body, name, module: imported } = binaryen.getFunctionInfo(fn);
    if (imported) continue;
    const sets: Ref[] = [];
    /** The most bytes below the pointer an address `pointer - constant` reaches. */
    let below = 0;
    const stack = [body];
    while (stack.length > 0) {
      const expr = stack.pop() as Ref;
      if (expr === 0) continue;
      const id = binaryen.getExpressionId(expr);
      if (id === binaryen.GlobalSetId && globalName(expr) === pointer) sets.push(expr);
      else if (id === binaryen.BinaryId) {
        const { op, left, right } = binaryen.getExpressionInfo(expr) as binaryen.BinaryInfo;
        if (op === binaryen.SubInt32 && pointerAt(left) && binaryen.getExpressionId(right) === binaryen.ConstId)
          below = Math.max(below, (binaryen.getExpressionInfo(right) as binaryen.ConstInfo).value as number);
      }
      stack.push(...childrenOf(expr));
    }
    // A function that never moves the pointer writes below it only within the red zone (LLVM's rule for wasm).
    if (sets.length === 0 && below > STACK_MARK.redZoneBytes)
      throw new Error(
        `build-fuel-wasm: function ${name} uses ${below} bytes below the stack pointer without moving it, past the red zone`,
      );
    if (sets.length === 0) continue;
    const value = api._BinaryenFunctionAddVar(fn, i32);
    for (const set of sets) {
      const lower = module.i32.lt_u(module.local.get(value, i32), module.global.get(STACK_LOW, i32));
      globalSet.setValue(
        set,
        module.block(
          null,
          [
            module.local.set(value, globalSet.getValue(set)),
            module.if(lower, module.global.set(STACK_LOW, module.local.get(value, i32))),
            module.local.get(value, i32),
          ],
          i32,
        ),
      );
    }
  }
  module.addGlobal(STACK_LOW, i32, true, module.copyExpression(binaryen.getGlobalInfo(module.getGlobal(pointer)).init));
  module.addGlobalExport(STACK_LOW, STACK_MARK.low);
  module.addGlobalExport(pointer, STACK_MARK.pointer);
  if (!module.validate()) throw new Error("build-fuel-wasm: the engine with its stack mark does not validate");
  const bytes = module.emitBinary();
  module.dispose();
  return bytes;
}

/**
 * The engine's stack pointer: the mutable i32 global that one exported function returns as it is
 * (`emscripten_stack_get_current`) and another sets from its argument (`_emscripten_stack_restore`); their names are
 * minified away, their bodies are not.
 */
function stackPointerOf(module: binaryen.Module): string {
  const got = new Set<string>();
  const set = new Set<string>();
  for (let i = 0; i < module.getNumExports(); i++) {
    const exported = binaryen.getExportInfo(module.getExportByIndex(i));
    if (exported.kind !== binaryen.ExternalFunction) continue;
    const body = binaryen.getFunctionInfo(module.getFunction(exported.value)).body;
    const id = binaryen.getExpressionId(body);
    if (id === binaryen.GlobalGetId) got.add(globalName(body));
    else if (id === binaryen.GlobalSetId && binaryen.getExpressionId(globalSet.getValue(body)) === binaryen.LocalGetId)
      set.add(globalName(body));
  }
  const found = [...got].filter((name) => {
    const global = binaryen.getGlobalInfo(module.getGlobal(name));
    return set.has(name) && global.mutable && global.type === binaryen.i32 && !global.module;
  });
  if (found.length !== 1)
    throw new Error(
      `build-fuel-wasm: the engine's stack pointer was not found (${found.length} globals are read and set by exported functions as emscripten's stack functions do)`,
    );
  return found[0] as string;
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
  writeFileSync("wasm/quickjs-fuel.wasm", markStackLow(meterWasm(pinnedEngine())));
  writeFileSync("wasm/swc-fuel.wasm", meterWasm(pinnedSwc()));
}
