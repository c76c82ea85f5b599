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
 * - at each branch back to a loop's head (`br`, `br_if`, `br_table`): the iteration that branch ends, the weight of
 *   the path from the head to it (below); a loop's first iteration is its enclosing code's, walked through as a block,
 *   so a loop that runs once, or a dispatch loop's handler, costs no charge of its own;
 * - at the entry of a function entered other than by a direct call (exported, in the table, the start function) and
 *   of the functions that break every cycle of direct calls (each that calls itself, and the largest of any cycle the
 *   others leave), and of those whose entry costs more than a unit: its code up to its first charge point. Any other
 *   function is paid for by its callers' charges: a call costs them its callee's expected cost, so a chain of small
 *   functions is one charge where it was one a function. An exported function the engine also calls directly (the
 *   allocator's `malloc`) charges the host's calls in a wrapper of its export and is paid at its direct calls, its
 *   entry's whole units (so its work costs what it did in one charge where there were two). Every recursion passes an
 *   entry that charges, and every iteration past a loop's first a branch back;
 * - before each `memory.copy`/`memory.fill`: 1 per 32 bytes, so a bulk op never overshoots;
 * - at each call of a host import (clock, time zone, callbacks into the host): a flat 50; what the host then does is
 *   charged by the host.
 * The weight of a charge point is its code's expected cost ({@link expectedCost}): 3/8 for the point itself, 1/8 per
 * load or store and 9/8 per call or return ({@link COST}, fitted to CPU time), over the mean path with every branch
 * equally likely, the cost of a callee its callers pay for counted at its call; rounded, and at least 1. A loop or a
 * function whose iterations or calls do more memory work or calls than another's costs more per unit of progress, so
 * fuel follows CPU across natives (a bytecode dispatch, a regex backtracking step, a BigInt limb) far closer than one
 * unit per iteration did; a branch back weighs its own path, so a dispatch loop's cheap handler costs less than its
 * dear one.
 * The engine's wasm then carries what the core's probe finds of it ({@link withProbeFacts}), so that no process probes
 * it again.
 * The output is deterministic: `npm run build:wasm` rewrites wasm/quickjs-fuel.wasm and wasm/swc-fuel.wasm, and a
 * test checks the committed files equal a rebuild.
 * @module
 */
import { readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import binaryen from "binaryen";
import { swcPackage } from "#swc-wasm";
import { METER, PROBE_SECTION, STACK_MARK } from "../src/core/engine.js";
import { C_STACK_BYTES, probeFacts } from "../src/core/instance.js";

/** The most a function's entry may cost ({@link COST}) for its callers to pay for it at their call sites. */
const MOVED_COST = 1;
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
  getValue(expr: Ref): Ref;
  setValue(expr: Ref, value: Ref): void;
}
const api = binaryen as unknown as Record<
  "Loop" | "Call" | "Return" | "MemoryCopy" | "MemoryFill" | "Function",
  Accessor
> & {
  _BinaryenFunctionAddVar(fn: Ref, type: number): number;
};

/** The class of binaryen.js whose setters rewrite an expression of each kind that has children. */
const KINDS = new Map<number, string>([
  [binaryen.BlockId, "Block"],
  [binaryen.IfId, "If"],
  [binaryen.LoopId, "Loop"],
  [binaryen.BreakId, "Break"],
  [binaryen.SwitchId, "Switch"],
  [binaryen.CallId, "Call"],
  [binaryen.CallIndirectId, "CallIndirect"],
  [binaryen.LocalSetId, "LocalSet"],
  [binaryen.GlobalSetId, "GlobalSet"],
  [binaryen.UnaryId, "Unary"],
  [binaryen.DropId, "Drop"],
  [binaryen.ReturnId, "Return"],
  [binaryen.LoadId, "Load"],
  [binaryen.StoreId, "Store"],
  [binaryen.BinaryId, "Binary"],
  [binaryen.SelectId, "Select"],
  [binaryen.MemoryGrowId, "MemoryGrow"],
  [binaryen.MemoryCopyId, "MemoryCopy"],
  [binaryen.MemoryFillId, "MemoryFill"],
]);

/** A child of an expression and how to put another in its place (0 for an absent optional child). */
type Slot = [child: Ref, replace: (expr: Ref) => void];

/** The children of an expression, for the expression kinds of an MVP + bulk-memory + sign-ext module. */
function slotsOf(expr: Ref): Slot[] {
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
  const kind = KINDS.get(id);
  if (kind === undefined) throw new Error(`build-fuel-wasm: unexpected expression kind ${id}`);
  // biome-ignore lint/suspicious/noExplicitAny: the info's shape depends on the id
  const info = b.getExpressionInfo(expr) as any;
  const setters = (binaryen as unknown as Record<string, Record<string, (...args: unknown[]) => void>>)[kind] ?? {};
  const pick = (...keys: string[]): Slot[] =>
    keys.map((key) => {
      const set = setters[`set${key[0]?.toUpperCase()}${key.slice(1)}`] as (expr: Ref, child: Ref) => void;
      return [info[key] as Ref, (child: Ref) => set(expr, child)];
    });
  const list = (children: Ref[], setter: string): Slot[] =>
    children.map((child, index) => [child, (next: Ref) => setters[setter]?.(expr, index, next)]);
  switch (id) {
    case b.BlockId:
      return list(info.children, "setChildAt");
    case b.IfId:
      return pick("condition", "ifTrue", "ifFalse");
    case b.LoopId:
      return pick("body");
    case b.BreakId:
    case b.SwitchId:
      return pick("condition", "value");
    case b.CallId:
      return list(info.operands, "setOperandAt");
    case b.CallIndirectId:
      return [...pick("target"), ...list(info.operands, "setOperandAt")];
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
    default:
      return pick("dest", "value", "size");
  }
}

/** The children of an expression. */
const childrenOf = (expr: Ref): Ref[] => slotsOf(expr).map(([child]) => child);

/** Every expression of `code` (depth first, parents before children), each with its slot in its parent. */
function* walkSlots(code: Slot): Generator<Slot> {
  const stack = [code];
  while (stack.length > 0) {
    const slot = stack.pop() as Slot;
    if (slot[0] === 0) continue;
    yield slot;
    stack.push(...slotsOf(slot[0]));
  }
}

/**
 * What the code between two charge points costs, in fuel: the charge point itself, each load or store, each call or
 * return (a frame pushed or popped). Fitted by least squares to CPU time over bounded runs of bench/fuel.ts's programs
 * (one meter per kind of instruction, counting it alone); the other kinds (locals, arithmetic, branches) came out at
 * zero: V8's compiled code runs them nearly free beside memory and frames. Then scaled by 3/2 from the fit's scale
 * (1/4, 1/12, 3/4, where a unit cost the engine the CPU it did when every loop head and non-leaf function entry
 * weighed 1): with fewer charge points, each rounded to whole units, a finer unit keeps a cheap path's fraction, and
 * bench:fuel's CPU-per-unit spread fell from 5.4x to 3.7x (main's meter 3.8x; typed array sort 5.96 -> 3.77 ms per
 * 10^6 units, `Proxy` get 5.20 -> 3.24, sort 4.14 -> 2.74; load average 3.1-3.9), the catalogue's median 3.06 -> 2.55,
 * and the engine's speed kept (metered / pinned geomean 1.16x -> 1.14x; main's 1.22x). The host's rates
 * (src/core/host-fuel.ts) stayed where they were measured, so the host's work now pays the less fuel per CPU (its
 * runaways the slowest per unit, inside the spread); `FUEL_PER_MS` divides a CPU budget by the slowest rate.
 */
const COST = { site: 3 / 8, memory: 1 / 8, call: 9 / 8 } as const;

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

/** What the code from a charge point costs on average ({@link expectedCost}). */
interface Costs {
  /** The mean cost of the paths that leave the code (fall off its end, return, or branch out of it). */
  exit: number;
  /** The mean cost of the paths that reach each branch back to the loop's head (`br`, `br_if`, `br_table`). */
  edges: Map<Ref, number>;
}

/**
 * The expected cost ({@link COST}) of the code run from a charge point to the next, over `code` (the body of the
 * loop named `loop`, or a function's body): every arm of an `if` or `br_if` and every target of a `br_table` is
 * taken with equal chance, and a cost is the mean over the paths that reach a point: each branch back to the loop's
 * head, where its next iteration is charged, or the code's exit. A nested loop is walked once, its own branches back
 * going on past it, as a block: its first iteration is this code's, the others are charged at its own branches back.
 * A call costs its callee's `callCost` on top (a function its callers pay for).
 */
function expectedCost(code: Ref, loop: string | null, callCost: (name: string) => number): Costs {
  const b = binaryen;
  const targets = new Map<string, Flow>();
  const edges = new Map<Ref, Flow>();
  let out = NONE;
  const branch = (name: string | null, flow: Flow, expr: Ref) => {
    const block = name === null ? undefined : targets.get(name);
    if (block !== undefined) targets.set(name as string, sum(block, flow));
    else if (name !== null && name === loop) edges.set(expr, sum(edges.get(expr) ?? NONE, flow));
    else out = sum(out, flow);
  };
  const step = (flow: Flow, cost: number): Flow => ({ p: flow.p, cost: flow.cost + flow.p * cost });
  /** The flow that falls through `expr`, reached by `flow`. */
  const walk = (expr: Ref, flow: Flow): Flow => {
    if (expr === 0 || flow.p === 0) return flow;
    const id = b.getExpressionId(expr);
    if (id === b.UnreachableId) return NONE;
    // Only these kinds' info is read (binaryen.js has none for some others, such as `nop`).
    const described =
      id === b.BlockId || id === b.LoopId || id === b.IfId || id === b.BreakId || id === b.SwitchId || id === b.CallId;
    // biome-ignore lint/suspicious/noExplicitAny: the info's shape depends on the id
    const info = (described ? b.getExpressionInfo(expr) : {}) as any;
    if (id === b.BlockId || id === b.LoopId) {
      const name: string | null = info.name || null;
      if (name !== null) targets.set(name, NONE);
      let next = flow;
      for (const child of id === b.BlockId ? (info.children as Ref[]) : [info.body as Ref]) next = walk(child, next);
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
          branch(info.name, next, expr);
          return NONE;
        }
        branch(info.name, part(next, 0.5), expr);
        return part(next, 0.5);
      case b.SwitchId: {
        const names: string[] = [...info.names, info.defaultName];
        for (const name of names) branch(name, part(next, 1 / names.length), expr);
        return NONE;
      }
      case b.ReturnId:
        out = sum(out, next);
        return NONE;
      case b.CallId:
        return step(next, callCost(info.target));
      default:
        return next;
    }
  };
  const mean = (flow: Flow) => (flow.p > 0 ? flow.cost / flow.p : 0);
  const exit = sum(out, walk(code, { p: 1, cost: 0 }));
  return { exit: mean(exit), edges: new Map([...edges].map(([expr, flow]) => [expr, mean(flow)])) };
}

/** The strongly connected components of a graph (Tarjan's algorithm, iterative), `nodes` and their `edges` in it. */
function components(nodes: Set<string>, edges: (node: string) => Iterable<string>): string[][] {
  const found: string[][] = [];
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  for (const root of nodes) {
    if (index.has(root)) continue;
    const frames: { node: string; next: Iterator<string> }[] = [];
    const enter = (node: string) => {
      low.set(node, index.size);
      index.set(node, index.size);
      stack.push(node);
      onStack.add(node);
      frames.push({ node, next: edges(node)[Symbol.iterator]() });
    };
    enter(root);
    while (frames.length > 0) {
      const frame = frames[frames.length - 1] as (typeof frames)[number];
      const step = frame.next.next();
      if (!step.done) {
        const next = step.value;
        if (!nodes.has(next)) continue;
        if (!index.has(next)) enter(next);
        else if (onStack.has(next))
          low.set(frame.node, Math.min(low.get(frame.node) as number, index.get(next) as number));
        continue;
      }
      frames.pop();
      const parent = frames[frames.length - 1];
      if (parent !== undefined)
        low.set(parent.node, Math.min(low.get(parent.node) as number, low.get(frame.node) as number));
      if (low.get(frame.node) === index.get(frame.node)) {
        const component: string[] = [];
        let member: string;
        do {
          member = stack.pop() as string;
          onStack.delete(member);
          component.push(member);
        } while (member !== frame.node);
        found.push(component);
      }
    }
  }
  return found;
}

/**
 * Functions that break every cycle of direct calls (`callees` of each function by name): each calls itself, or is
 * the largest (`size`) of a cycle the others left. Charged at their entry, they make every recursion charge.
 */
function cycleBreakers(shapes: Map<string, { callees: Set<string>; size: number }>): Set<string> {
  const breakers = new Set<string>();
  const callees = (name: string) => shapes.get(name)?.callees ?? [];
  for (const [name, shape] of shapes) if (shape.callees.has(name)) breakers.add(name);
  let pending = components(new Set(shapes.keys()), callees);
  while (pending.length > 0) {
    const component = pending.pop() as string[];
    const rest = new Set(component.filter((name) => !breakers.has(name)));
    if (rest.size < 2) continue;
    const [largest] = [...rest].sort(
      (a, b) => (shapes.get(b)?.size ?? 0) - (shapes.get(a)?.size ?? 0) || (a < b ? -1 : 1),
    );
    breakers.add(largest as string);
    rest.delete(largest as string);
    pending = pending.concat(components(rest, callees));
  }
  return breakers;
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
    const charged = charge(module.i32.const(METER.hostCallFuel), args.length);
    module.addFunction(wrapper, params, results, [i32], module.block(null, [charged, call], results));
    wrappers.set(name, wrapper);
  }

  // What each function does that bears on its charges.
  interface Shape {
    fn: Ref;
    name: string;
    /** Its loops, each by its label. */
    loops: Map<string, Ref>;
    /** Its branches (`br`, `br_if`, `br_table`), each with its slot in its parent. */
    branches: Slot[];
    /** Its bulk memory ops. */
    bulk: Ref[];
    /** Its calls. */
    calls: Ref[];
    /** The functions it calls directly. */
    callees: Set<string>;
    indirect: boolean;
    /** Its number of expressions. */
    size: number;
  }
  const shapes = new Map<string, Shape>();
  for (const fn of functions) {
    const name = binaryen.getFunctionInfo(fn).name;
    const shape: Shape = {
      fn,
      name,
      loops: new Map(),
      branches: [],
      bulk: [],
      calls: [],
      callees: new Set(),
      indirect: false,
      size: 0,
    };
    const labels = new Set<string>();
    for (const slot of walkSlots([api.Function.getBody(fn), (expr) => api.Function.setBody(fn, expr)])) {
      const [expr] = slot;
      const id = binaryen.getExpressionId(expr);
      shape.size++;
      if (id === binaryen.LoopId || id === binaryen.BlockId) {
        const label = (binaryen.getExpressionInfo(expr) as binaryen.BlockInfo).name;
        if (label) {
          // A branch names its target: labels must be unique in the function (binaryen's reader makes them so).
          if (labels.has(label)) throw new Error(`build-fuel-wasm: label ${label} twice in ${name}`);
          labels.add(label);
          if (id === binaryen.LoopId) shape.loops.set(label, expr);
        }
      } else if (id === binaryen.BreakId || id === binaryen.SwitchId) shape.branches.push(slot);
      else if (id === binaryen.MemoryCopyId || id === binaryen.MemoryFillId) shape.bulk.push(expr);
      else if (id === binaryen.CallIndirectId) shape.indirect = true;
      else if (id === binaryen.CallId) {
        shape.calls.push(expr);
        shape.callees.add(api.Call.getTarget(expr));
      }
    }
    shapes.set(name, shape);
  }
  // Leaves: functions that never charge. Neither looping nor calling anything that charges, their work is bounded by
  // their size (and their callees'), and their callers pay it.
  const leaves = new Set<string>();
  for (let grew = true; grew; ) {
    grew = false;
    for (const shape of shapes.values())
      if (
        !leaves.has(shape.name) &&
        shape.loops.size === 0 &&
        shape.bulk.length === 0 &&
        !shape.indirect &&
        [...shape.callees].every((callee) => leaves.has(callee))
      ) {
        leaves.add(shape.name);
        grew = true;
      }
  }
  // Functions entered other than by a direct call (exports, the table, the start function) charge at their entry, and
  // so do the functions that break every cycle of direct calls: every recursion charges. Any other function is paid
  // for at its call sites, by its callers' charges, like a leaf.
  const entered = cycleBreakers(shapes);
  for (let i = 0; i < module.getNumElementSegments(); i++)
    for (const name of binaryen.getElementSegmentInfo(module.getElementSegmentByIndex(i)).data) entered.add(name);
  const start = module.getStart();
  if (start !== 0) entered.add(binaryen.getFunctionInfo(start).name);
  // An exported function that the engine also calls directly (the allocator's `malloc`, called for every object) is
  // paid for at its direct calls like any other, and its export goes through a wrapper that charges what its entry
  // would: the host's calls pay as before, the engine's make one charge where they made two. Any other is entered.
  const exports = new Map<string, string[]>();
  for (let i = 0; i < module.getNumExports(); i++) {
    const info = binaryen.getExportInfo(module.getExportByIndex(i));
    if (info.kind === binaryen.ExternalFunction)
      exports.set(info.value, [...(exports.get(info.value) ?? []), info.name]);
  }
  const called = new Set([...shapes.values()].flatMap((shape) => [...shape.callees]));
  const wrapped = new Set<string>();
  for (const name of exports.keys())
    if (!entered.has(name) && called.has(name) && shapes.has(name) && !leaves.has(name)) wrapped.add(name);
    else entered.add(name);

  // Every charge is at least 1: a loop whose branch back charged nothing would never stop.
  const weight = (cost: number) => Math.max(1, Math.round(COST.site + cost));
  // What a call costs its caller's charge: the whole entry of a function its callers pay for (memoized: no cycles).
  // One whose entry costs more than `MOVED_COST` charges at its entry: averaged over its callers' paths, where every
  // branch is taken half the time, a dear callee on a path rarely run would charge them for work seldom done. A
  // wrapped export's callers pay the whole units its entry charged, so that the engine's work costs what it did.
  const callCosts = new Map<string, number>();
  const callCost = (name: string): number => {
    const shape = shapes.get(name);
    if (shape === undefined || entered.has(name)) return 0;
    let cost = callCosts.get(name);
    if (cost === undefined) {
      cost = expectedCost(api.Function.getBody(shape.fn), null, callCost).exit;
      if (cost > MOVED_COST && !leaves.has(name)) {
        entered.add(name);
        cost = 0;
      } else if (wrapped.has(name)) cost = weight(cost);
      callCosts.set(name, cost);
    }
    return cost;
  };
  for (const name of shapes.keys()) callCost(name);
  for (const name of wrapped) {
    // Entered after all (its entry costs more than `MOVED_COST`): its entry charges the host's calls too.
    if (entered.has(name)) continue;
    const { params, results } = binaryen.getFunctionInfo((shapes.get(name) as Shape).fn);
    const args = binaryen.expandType(params).map((type, index) => module.local.get(index, type));
    const wrapper = `${name}$export`;
    const charged = charge(module.i32.const(callCosts.get(name) as number), args.length);
    module.addFunction(
      wrapper,
      params,
      results,
      [i32],
      module.block(null, [charged, module.call(name, args, results)], results),
    );
    for (const exportName of exports.get(name) ?? []) {
      module.removeExport(exportName);
      module.addFunctionExport(wrapper, exportName);
    }
  }
  const plans = [...shapes.values()]
    .filter((shape) => !leaves.has(shape.name))
    .map((shape) => {
      const edges = new Map<Ref, Map<string, number>>();
      for (const [label, loop] of shape.loops)
        for (const [expr, cost] of expectedCost(api.Loop.getBody(loop), label, callCost).edges) {
          const byLabel = edges.get(expr) ?? new Map<string, number>();
          edges.set(expr, byLabel.set(label, weight(cost)));
        }
      const entry = entered.has(shape.name)
        ? weight(expectedCost(api.Function.getBody(shape.fn), null, callCost).exit)
        : 0;
      return { shape, entry, edges };
    });

  // Labels of the blocks that charge a `br_table`'s branches back: unique in the module, as binaryen's are per function.
  let labels = 0;
  for (const { shape, entry, edges } of plans) {
    const { fn, loops } = shape;
    const scratch = api._BinaryenFunctionAddVar(fn, i32);
    const charged = (amount: number) => charge(module.i32.const(amount), scratch);
    for (const expr of shape.calls) {
      const wrapper = wrappers.get(api.Call.getTarget(expr));
      if (wrapper !== undefined) api.Call.setTarget(expr, wrapper);
    }
    // Each branch back to a loop's head charges the iteration it ends; the first is its enclosing code's.
    // Children first: a branch inside another's operands is rewritten before its parent is rebuilt around it.
    for (const [expr, replace] of shape.branches.reverse()) {
      // biome-ignore lint/suspicious/noExplicitAny: the info's shape depends on the id
      const info = binaryen.getExpressionInfo(expr) as any;
      const weights = edges.get(expr);
      const back = (label: string) => module.block(null, [charged(weights?.get(label) ?? 1), module.br(label)]);
      if (binaryen.getExpressionId(expr) === binaryen.BreakId) {
        if (!loops.has(info.name)) continue;
        replace(info.condition ? module.if(info.condition, back(info.name)) : back(info.name));
        continue;
      }
      // A `br_table` goes to each loop's head through a block of its own, ended by the charge and the branch back.
      const heads = [...new Set<string>([...info.names, info.defaultName])].filter((label) => loops.has(label));
      if (heads.length === 0) continue;
      const via = new Map(heads.map((label) => [label, `fuel$${labels++}`]));
      const to = (label: string) => via.get(label) ?? label;
      let table = module.switch(info.names.map(to), to(info.defaultName), info.condition, info.value || undefined);
      for (const label of heads)
        table = module.block(null, [
          module.block(to(label), [table], none),
          charged(weights?.get(label) ?? 1),
          module.br(label),
        ]);
      replace(table);
    }
    for (const expr of shape.bulk) {
      // The size is the last operand evaluated: charged through a local after it, before the copy runs.
      const kind = binaryen.getExpressionId(expr) === binaryen.MemoryCopyId ? api.MemoryCopy : api.MemoryFill;
      const size = kind.getSize(expr);
      const length = api._BinaryenFunctionAddVar(fn, i32);
      kind.setSize(
        expr,
        module.block(
          null,
          [
            module.local.set(length, size),
            charge(module.i32.shr_u(module.local.get(length, i32), module.i32.const(BYTES_PER_FUEL_SHIFT)), scratch),
            module.local.get(length, i32),
          ],
          i32,
        ),
      );
    }
    if (entry > 0) {
      const body = api.Function.getBody(fn);
      api.Function.setBody(fn, module.block(null, [charged(entry), body], binaryen.getExpressionType(body)));
    }
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
 * A write that cannot take the pointer below a value it has had is left unmarked ({@link restoresFrame}): a
 * function's epilogue, which gives back its frame, is half of the writes and cost the regex floor program 3-4% of its
 * CPU.
 */
export function markStackLow(metered: Uint8Array): Uint8Array {
  const module = readModule(metered);
  const { i32 } = binaryen;
  const pointer = stackPointerOf(module);
  const pointerAt = (expr: Ref) =>
    binaryen.getExpressionId(expr) === binaryen.GlobalGetId && globalName(expr) === pointer;
  const top = binaryen.getExpressionInfo(binaryen.getGlobalInfo(module.getGlobal(pointer)).init) as binaryen.ConstInfo;
  const stackBottom = (top.value as number) - C_STACK_BYTES;
  for (let i = 0; i < module.getNumFunctions(); i++) {
    const fn = module.getFunctionByIndex(i);
    const { body, name, module: imported } = binaryen.getFunctionInfo(fn);
    if (imported) continue;
    const sets: Ref[] = [];
    /** The values each local is set to. */
    const assigned = new Map<number, Ref[]>();
    /** The most bytes below the pointer an address `pointer - constant` reaches. */
    let below = 0;
    const stack = [body];
    while (stack.length > 0) {
      const expr = stack.pop() as Ref;
      if (expr === 0) continue;
      const id = binaryen.getExpressionId(expr);
      if (id === binaryen.GlobalSetId && globalName(expr) === pointer) sets.push(expr);
      else if (id === binaryen.LocalSetId) {
        const { index, value } = binaryen.getExpressionInfo(expr) as binaryen.LocalSetInfo;
        assigned.set(index, [...(assigned.get(index) ?? []), value]);
      } else if (id === binaryen.BinaryId) {
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
    const frame = { params: binaryen.expandType(binaryen.getFunctionInfo(fn).params).length, assigned, stackBottom };
    const marked = sets.filter((set) => !restoresFrame(globalSet.getValue(set), pointerAt, frame));
    if (marked.length === 0) continue;
    const value = api._BinaryenFunctionAddVar(fn, i32);
    for (const set of marked) {
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

/** `expr` as `base` plus a constant (`base`, `base + c`, `base - c`): the constant; `undefined` for any other shape. */
function offsetFrom(expr: Ref, base: (expr: Ref) => boolean): number | undefined {
  if (base(expr)) return 0;
  if (binaryen.getExpressionId(expr) !== binaryen.BinaryId) return undefined;
  const { op, left, right } = binaryen.getExpressionInfo(expr) as binaryen.BinaryInfo;
  if ((op !== binaryen.AddInt32 && op !== binaryen.SubInt32) || !base(left)) return undefined;
  if (binaryen.getExpressionId(right) !== binaryen.ConstId) return undefined;
  const constant = (binaryen.getExpressionInfo(right) as binaryen.ConstInfo).value as number;
  return op === binaryen.AddInt32 ? constant : -constant;
}

/**
 * Whether a value written to the stack pointer is never below the least value the pointer has had (the mark, which it
 * then need not move): a local plus a constant `b` (an epilogue: `sp = frame + size`), the local a variable (not a
 * parameter) set only to the pointer plus a constant `a` (the prologue's `frame = sp - size`) where `a + b >= 0`, so
 * the value written is at least what the pointer held when the local was set. A local read before it is set is zero:
 * the value written is then `b`, which must lie below the stack (`stackBottom`), where the host rewrites everything
 * after a run whatever the mark. Any other write is marked.
 */
function restoresFrame(
  value: Ref,
  pointerAt: (expr: Ref) => boolean,
  frame: { params: number; assigned: Map<number, Ref[]>; stackBottom: number },
): boolean {
  let local: number | undefined;
  const b = offsetFrom(value, (expr) => {
    if (binaryen.getExpressionId(expr) !== binaryen.LocalGetId) return false;
    local = (binaryen.getExpressionInfo(expr) as binaryen.LocalGetInfo).index;
    return true;
  });
  if (b === undefined || local === undefined || local < frame.params || b < 0 || b >= frame.stackBottom) return false;
  const sets = frame.assigned.get(local) ?? [];
  return sets.length > 0 && sets.every((set) => (offsetFrom(set, pointerAt) ?? Number.NEGATIVE_INFINITY) + b >= 0);
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

/**
 * `engine` with what the core's probe finds of it (its memory layout and how its objects are read: see
 * src/core/instance.ts) pinned in a custom section, {@link PROBE_SECTION}; the build fails where the probe finds less.
 */
export async function withProbeFacts(engine: Uint8Array): Promise<Uint8Array> {
  const facts = await probeFacts(new WebAssembly.Module(engine as BufferSource));
  if (facts === undefined)
    throw new Error("build-fuel-wasm: the core's probe does not find all it needs of the engine");
  const { breakAt, stackTop, toJSON } = facts;
  return withCustomSection(engine, PROBE_SECTION, JSON.stringify({ breakAt, stackTop, toJSON }));
}

/** `wasm` with a custom section `name` holding `text` appended. */
export function withCustomSection(wasm: Uint8Array, name: string, text: string): Uint8Array {
  const encoder = new TextEncoder();
  const nameBytes = encoder.encode(name);
  const content = [...leb128(nameBytes.length), ...nameBytes, ...encoder.encode(text)];
  const section = [0, ...leb128(content.length), ...content];
  const out = new Uint8Array(wasm.length + section.length);
  out.set(wasm);
  out.set(section, wasm.length);
  return out;
}

/** `value` as unsigned LEB128, as wasm encodes sizes. */
function leb128(value: number): number[] {
  const bytes: number[] = [];
  let rest = value;
  do {
    const low = rest & 0x7f;
    rest >>>= 7;
    bytes.push(rest === 0 ? low : low | 0x80);
  } while (rest !== 0);
  return bytes;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  writeFileSync("wasm/quickjs-fuel.wasm", await withProbeFacts(markStackLow(meterWasm(pinnedEngine()))));
  writeFileSync("wasm/swc-fuel.wasm", meterWasm(pinnedSwc()));
}
