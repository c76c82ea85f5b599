/**
 * The differential harness: the same programs run in raw QuickJS (the same wasm build, no prelude, a bare runtime
 * and context made with quickjs-emscripten directly) and through `runCode`, and must end the same way: the value
 * they return (as a JSON-able description), the error they throw (name and message), and every getter and Proxy
 * trap call they observe, in order.
 *
 * Only what contract.md §6 forbids may differ. Those differences are listed once, by rule, in {@link RULES}: a
 * program that hits one names it, and the rule says exactly what the sandbox must do instead (never "anything").
 * @module
 */
import { readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import variant from "@jitl/quickjs-wasmfile-release-sync";
import {
  newQuickJSWASMModuleFromVariant,
  newVariant,
  type QuickJSContext,
  type QuickJSHandle,
  type QuickJSRuntime,
  type QuickJSWASMModule,
} from "quickjs-emscripten-core";
import { beforeAll, describe, expect, it } from "vitest";
import { nodeWasm } from "../../node/index.js";
import { createSandbox } from "../../src/index.js";

/** How one program ended: its result's description or what it threw, and the getter/trap calls it observed. */
export interface Outcome {
  value?: unknown;
  threw?: string;
  log: string[];
}

/** A program: the body of a function (statements ending in `return`), run with the helpers of {@link HARNESS}. */
export interface Program {
  name: string;
  body: string;
  /** The body is awaited (an `async` function). */
  async?: boolean;
  /** The program changes intrinsics or globals: it runs alone in its own engines. */
  isolated?: boolean;
  /** The rule of docs/contract.md §6 this program runs into (a key of {@link RULES}); the sandbox must do what the rule says. */
  differs?: RuleId;
  /** For rules whose expected outcome depends on the program (a constructor's label, an expected shape). */
  detail?: string;
}

/** A program made of one expression. */
export const expr = (name: string, expression: string, extra: Omit<Program, "name" | "body"> = {}): Program => ({
  name,
  body: `return (${expression});`,
  ...extra,
});

/**
 * Helpers every program can use, evaluated first in both engines. They capture what they use, touch no
 * Array.prototype method (those are what the prelude wraps) and record only while the program itself runs.
 * - `__.traced(target, label)`: a Proxy logging every trap as `label.trap key`.
 * - `__.getters(entries, label)`: an object whose properties are logging accessors.
 * - `__.counted(value, label)`: an object whose `valueOf`/`toString` log and return `value`.
 * - `__.trace(entry)`: logs `entry`. `__.drain(iterator, n)`: up to `n` results of `next()`, as `[done, value]`.
 * - `__.shape(fn)`, `__.descShape(object, key)`: one line describing a function or an own property (flags, name,
 *   length, whether its source text is native code, whether it is a constructor, its own keys).
 */
export const HARNESS = String.raw`
const __ = (() => {
  const { getPrototypeOf, getOwnPropertyDescriptor, defineProperty, is } = Object;
  const R = Reflect;
  const { apply } = R;
  const ProxyCtor = Proxy;
  const stringify = JSON.stringify;
  const objToString = Object.prototype.toString;
  const isView = ArrayBuffer.isView;
  const TypedArrayProto = getPrototypeOf(Int8Array.prototype);
  const taGetter = (k) => getOwnPropertyDescriptor(TypedArrayProto, k).get;
  const taLength = taGetter("length");
  const taOffset = taGetter("byteOffset");
  const taTag = taGetter(Symbol.toStringTag);
  const symToString = Symbol.prototype.toString;
  const fnToString = Function.prototype.toString;
  const ErrorProto = Error.prototype;
  const log = [];
  let tracing = false;
  const trace = (entry) => { if (tracing) log[log.length] = entry; };
  const key = (k) => (typeof k === "symbol" ? apply(symToString, k, []) : "" + k);
  const brief = (v) =>
    typeof v === "function" ? "[function]" : typeof v === "object" && v !== null ? "[object]" :
    typeof v === "symbol" ? key(v) : typeof v === "string" ? stringify(v) : typeof v === "bigint" ? v + "n" :
    is(v, -0) ? "-0" : "" + v;
  const handler = (label) => ({
    __proto__: null,
    get(t, k, r) { trace(label + ".get " + key(k)); return R.get(t, k, r); },
    set(t, k, v, r) { trace(label + ".set " + key(k) + " " + brief(v)); return R.set(t, k, v, r); },
    has(t, k) { trace(label + ".has " + key(k)); return R.has(t, k); },
    deleteProperty(t, k) { trace(label + ".delete " + key(k)); return R.deleteProperty(t, k); },
    defineProperty(t, k, d) {
      trace(label + ".define " + key(k) + " " + brief(getOwnPropertyDescriptor(d, "value")?.value));
      return R.defineProperty(t, k, d);
    },
    getOwnPropertyDescriptor(t, k) { trace(label + ".gopd " + key(k)); return R.getOwnPropertyDescriptor(t, k); },
    ownKeys(t) { trace(label + ".ownKeys"); return R.ownKeys(t); },
    getPrototypeOf(t) { trace(label + ".getPrototypeOf"); return R.getPrototypeOf(t); },
    setPrototypeOf(t, p) { trace(label + ".setPrototypeOf"); return R.setPrototypeOf(t, p); },
    isExtensible(t) { trace(label + ".isExtensible"); return R.isExtensible(t); },
    preventExtensions(t) { trace(label + ".preventExtensions"); return R.preventExtensions(t); },
    apply(t, self, args) { trace(label + ".apply " + args.length); return apply(t, self, args); },
    construct(t, args, nt) { trace(label + ".construct " + args.length); return R.construct(t, args, nt); },
  });
  const traced = (target, label) => new ProxyCtor(target, handler(label === undefined ? "P" : label));
  const getters = (entries, label) => {
    label = label === undefined ? "O" : label;
    const o = {};
    const keys = R.ownKeys(entries);
    for (let i = 0; i < keys.length; i++) {
      const k = keys[i];
      let value = entries[k];
      defineProperty(o, k, {
        get() { trace(label + ".get " + key(k)); return value; },
        set(v) { trace(label + ".set " + key(k) + " " + brief(v)); value = v; },
        enumerable: true,
        configurable: true,
      });
    }
    return o;
  };
  const counted = (value, label) => ({
    valueOf() { trace((label === undefined ? "V" : label) + ".valueOf"); return value; },
    toString() { trace((label === undefined ? "V" : label) + ".toString"); return "" + value; },
  });
  const drain = (iterator, n) => {
    const out = [];
    for (let i = 0; i < n; i++) {
      const step = iterator.next();
      out[i] = [step.done, step.value];
      if (step.done) break;
    }
    return out;
  };

  const known = [];
  const name = (p, label) => { if (p !== undefined && p !== null) known[known.length] = [p, label]; };
  const ctors = ["Object", "Array", "Function", "Error", "TypeError", "RangeError", "SyntaxError", "ReferenceError",
    "EvalError", "URIError", "AggregateError", "Map", "Set", "WeakMap", "WeakSet", "Promise", "RegExp", "Date",
    "ArrayBuffer", "DataView", "Boolean", "Number", "String", "Symbol", "BigInt", "Int8Array", "Uint8Array",
    "Uint8ClampedArray", "Int16Array", "Uint16Array", "Int32Array", "Uint32Array", "Float16Array", "Float32Array",
    "Float64Array", "BigInt64Array", "BigUint64Array", "Iterator", "WeakRef", "FinalizationRegistry"];
  for (let i = 0; i < ctors.length; i++) {
    const c = globalThis[ctors[i]];
    if (typeof c === "function") name(c.prototype, ctors[i] + ".prototype");
  }
  name(getPrototypeOf(Int8Array.prototype), "%TypedArray%.prototype");
  name(getPrototypeOf([][Symbol.iterator]()), "%ArrayIteratorPrototype%");
  name(getPrototypeOf(async () => {}), "%AsyncFunction.prototype%");
  name(getPrototypeOf(function* () {}), "%GeneratorFunction.prototype%");
  name(getPrototypeOf(async function* () {}), "%AsyncGeneratorFunction.prototype%");
  name(globalThis, "globalThis");
  const protoName = (p) => {
    if (p === null) return "null";
    for (let i = 0; i < known.length; i++) if (known[i][0] === p) return known[i][1];
    if (typeof p === "function") return "function " + nameOf(p);
    const c = getOwnPropertyDescriptor(p, "constructor");
    if (c !== undefined && typeof c.value === "function") return "proto of " + nameOf(c.value);
    return "anonymous";
  };
  const nameOf = (f) => {
    const d = getOwnPropertyDescriptor(f, "name");
    return d === undefined ? "<no name>" : "value" in d ? brief(d.value) : "<accessor>";
  };
  const isError = (v) => {
    for (let p = getPrototypeOf(v); p !== null; p = getPrototypeOf(p)) if (p === ErrorProto) return true;
    return false;
  };
  const flags = (d) =>
    ("value" in d ? (d.writable ? "w" : "-") : "a") + (d.enumerable ? "e" : "-") + (d.configurable ? "c" : "-");
  const describe = (v, depth) => {
    if (v === globalThis) return "globalThis";
    switch (typeof v) {
      case "undefined": return "undefined";
      case "number": return is(v, -0) ? "-0" : v !== v ? "NaN" : v === 1 / 0 ? "Infinity" : v === -1 / 0 ? "-Infinity" : v;
      case "string": return "s:" + v;
      case "boolean": return v;
      case "bigint": return "bigint:" + v;
      case "symbol": return "symbol:" + key(v);
    }
    if (v === null) return "null";
    if (depth > 3) return "(deep)";
    try {
      if (typeof v !== "function" && isError(v)) return { error: "" + R.get(v, "name") + ": " + R.get(v, "message") };
      const out = { proto: protoName(getPrototypeOf(v)), tag: apply(objToString, v, []) };
      if (isView(v) && apply(taTag, v, []) !== undefined) {
        out.typed = apply(taLength, v, []) + " at " + apply(taOffset, v, []);
      }
      if (typeof v === "function") {
        out.fn = nameOf(v) + "/" + brief(getOwnPropertyDescriptor(v, "length")?.value);
        let source = "";
        try { source = apply(fnToString, v, []); } catch {}
        out.native = source.length < 200 && /^function [\w$ ]*\(\) \{\s+\[native code\]\s+\}$/.test(source);
      }
      const keys = R.ownKeys(v);
      const own = [];
      for (let i = 0; i < keys.length && i < 40; i++) {
        const d = getOwnPropertyDescriptor(v, keys[i]);
        if (d === undefined) continue;
        const entry = [key(keys[i]), flags(d)];
        if ("value" in d) entry[2] = describe(d.value, depth + 1);
        own[own.length] = entry;
      }
      if (keys.length > 40) own[own.length] = ["(more keys)", keys.length];
      out.own = own;
      return out;
    } catch (e) {
      return "(undescribable: " + describeThrown(e) + ")";
    }
  };
  const describeThrown = (e) => {
    if (typeof e === "object" && e !== null && isError(e)) {
      try { return "" + R.get(e, "name") + ": " + R.get(e, "message"); } catch { return "(error without name)"; }
    }
    return "thrown " + stringify(describe(e, 0));
  };
  const isConstructor = (f) => {
    try {
      R.construct(function () {}, [], f);
      return true;
    } catch {
      return false;
    }
  };
  const shapeOf = (v) => {
    if (typeof v !== "function") {
      return typeof v === "object" && v !== null
        ? "object " + protoName(getPrototypeOf(v)) + " " + apply(objToString, v, [])
        : stringify(describe(v, 0));
    }
    let source = "";
    try { source = apply(fnToString, v, []); } catch {}
    const native = /^function [\w$ ]*\(\) \{\s+\[native code\]\s+\}$/.test(source);
    const keys = R.ownKeys(v);
    let own = "";
    for (let i = 0; i < keys.length; i++) {
      const d = getOwnPropertyDescriptor(v, keys[i]);
      if (d !== undefined) own += (i ? ", " : "") + key(keys[i]) + " " + flags(d);
    }
    return "function " + nameOf(v) + "/" + brief(getOwnPropertyDescriptor(v, "length")?.value) +
      (native ? " native" : " not-native") + (isConstructor(v) ? " constructor" : "") +
      " proto=" + protoName(getPrototypeOf(v)) + " own[" + own + "]";
  };
  /** A function's shape as one line: name, length, native source text, constructor or not, own keys and flags. */
  const shape = (v) => {
    const was = tracing;
    tracing = false;
    try { return shapeOf(v); } finally { tracing = was; }
  };
  /** An own property's shape: its flags and the shape of its value, or of its getter and setter. */
  const descShape = (o, k) => {
    const was = tracing;
    tracing = false;
    try {
      const d = getOwnPropertyDescriptor(o, k);
      if (d === undefined) return "absent";
      return flags(d) + " " + ("value" in d ? shapeOf(d.value) : "get " + shapeOf(d.get) + "; set " + shapeOf(d.set));
    } finally {
      tracing = was;
    }
  };
  const copy = (a) => { const out = []; for (let i = 0; i < a.length; i++) out[i] = a[i]; return out; };
  const settle = (value, threw, error) => {
    tracing = false;
    const out = threw ? { threw: describeThrown(error) } : { value: describe(value, 0) };
    out.log = copy(log);
    log.length = 0;
    return out;
  };
  const all = async (cases) => {
    const out = [];
    for (let i = 0; i < cases.length; i++) {
      log.length = 0;
      tracing = true;
      try {
        out[i] = settle(cases[i][0] ? await cases[i][1]() : cases[i][1](), false);
      } catch (e) {
        out[i] = settle(undefined, true, e);
      }
    }
    return stringify(out);
  };
  return { traced, getters, counted, trace, drain, describe, shape, descShape, all, __proto__: null };
})();
`;

/** One module running `programs` in order; its default export is the JSON text of their outcomes. */
export function moduleSource(programs: readonly Program[]): string {
  const cases = programs.map((p) => `[${p.async ? 1 : 0}, ${p.async ? "async " : ""}() => {\n${p.body}\n}]`);
  return `${HARNESS}\nexport default __.all([\n${cases.join(",\n")}\n]);\n`;
}

// ---------------------------------------------------------------------------------------------------------------
// The raw engine: the pinned wasm the sandbox's metered one is built from (scripts/build-fuel-wasm.ts), no prelude.

let rawModule: Promise<QuickJSWASMModule> | undefined;
const loadRaw = () => {
  rawModule ??= (async () => {
    const bytes = await readFile(createRequire(import.meta.url).resolve("@jitl/quickjs-wasmfile-release-sync/wasm"));
    const wasmModule = await WebAssembly.compile(bytes as BufferSource);
    return newQuickJSWASMModuleFromVariant(newVariant(variant, { wasmModule }));
  })();
  return rawModule;
};

/** Settles a handle that may be a promise: pumps jobs until it is not pending. Consumes `handle`. */
function settleHandle(rt: QuickJSRuntime, ctx: QuickJSContext, handle: QuickJSHandle): QuickJSHandle {
  for (;;) {
    const state = ctx.getPromiseState(handle);
    if (state.type === "fulfilled") {
      if (state.notAPromise) return handle;
      handle.dispose();
      return state.value;
    }
    if (state.type === "rejected") {
      handle.dispose();
      const error = ctx.dump(state.error);
      state.error.dispose();
      throw new Error(`raw program rejected: ${JSON.stringify(error)}`);
    }
    const ran = rt.executePendingJobs();
    if (ran.error) {
      const error = ctx.dump(ran.error);
      ran.error.dispose();
      handle.dispose();
      throw new Error(`raw job failed: ${JSON.stringify(error)}`);
    }
    if (ran.value === 0) {
      handle.dispose();
      throw new Error("raw program deadlocked");
    }
  }
}

/** Evaluates a module in a fresh runtime and context of the raw engine; returns its default export (a string). */
export async function runRaw(source: string): Promise<string> {
  const quickjs = await loadRaw();
  const rt = quickjs.newRuntime();
  rt.setMaxStackSize(512 * 1024);
  const deadline = Date.now() + 20_000;
  rt.setInterruptHandler(() => Date.now() > deadline);
  const ctx = rt.newContext();
  try {
    const evaluated = ctx.evalCode(source, "main.js", { type: "module" });
    if (evaluated.error) {
      const error = ctx.dump(evaluated.error);
      evaluated.error.dispose();
      throw new Error(`raw module failed: ${JSON.stringify(error)}`);
    }
    const namespace = settleHandle(rt, ctx, evaluated.value);
    const exported = ctx.getProp(namespace, "default");
    namespace.dispose();
    const value = settleHandle(rt, ctx, exported);
    const text = ctx.dump(value) as unknown;
    value.dispose();
    if (typeof text !== "string") throw new Error(`raw program returned ${typeof text}`);
    return text;
  } catch (error) {
    // A host exception thrown through wasm frames leaves the instance unusable: start over with a new one.
    if (!(error instanceof Error && error.message.startsWith("raw "))) rawModule = undefined;
    throw error;
  } finally {
    if (rawModule !== undefined) {
      ctx.dispose();
      rt.dispose();
    }
  }
}

// ---------------------------------------------------------------------------------------------------------------
// The sandbox: runCode with its defaults (64 MiB of memory), a smaller safety cap.

const sandbox = createSandbox({ wasm: nodeWasm, safetyCap: { cpuTimeMs: 20_000 } });

/** Runs a module through `runCode`; returns its default export (a string). */
export async function runSandboxed(source: string): Promise<string> {
  const result = await sandbox.runCode(source, { language: "javascript" });
  if (result.status !== "success" || typeof result.result !== "string") {
    throw new Error(`sandboxed program ended ${result.status}: ${result.error?.name}: ${result.error?.message}`);
  }
  return result.result;
}

// ---------------------------------------------------------------------------------------------------------------
// The allowed differences, by rule.

/** The sandbox's message for a disabled Function-family constructor (see test/security/helpers.ts). */
export const disabledMessage = (label: string) =>
  `TypeError: ${label} constructor is disabled in the sandbox: code cannot be compiled from strings`;

/** Globals the raw engine has and the sandbox must not, each with the rule that removes it. */
export const REMOVED_GLOBALS: Readonly<Record<string, string>> = {
  eval: "§6.2 No Dynamic Code Loading: eval is absent or throws",
  SharedArrayBuffer: "§6.3 No Shared Memory With the Host: no SharedArrayBuffer",
  Atomics: "§6.3 No Shared Memory With the Host: no Atomics",
  WebAssembly: "§6.1 No Host Capabilities on globalThis: WebAssembly is listed as absent",
  InternalError: "§6.1 No Host Capabilities on globalThis: only ECMAScript intrinsics (InternalError is QuickJS's own)",
};

/** Globals the sandbox adds to the raw engine's, in the order the prelude defines them. */
export const ADDED_GLOBALS: Readonly<Record<string, string>> = {
  structuredClone: "§6.1: the sandbox's globalThis contains structuredClone",
  queueMicrotask: "§6.6: the sandbox has a working microtask queue: queueMicrotask behaves normally",
};

export interface Rule {
  /** The clause of docs/contract.md (or of docs/limits.md's table of defaults, which states it) this rule comes from. */
  source: string;
  /** What the sandbox must end with, given the raw engine's outcome and the program's `detail`. */
  sandbox(raw: Outcome, detail: string | undefined): Outcome;
}

/**
 * Every difference the suite allows, by rule. Nothing else may differ; and a program that names a rule must end
 * exactly as the rule says in the sandbox.
 */
export const RULES = {
  /** Calling or constructing any Function-family constructor (directly, bound, proxied, through a subclass). */
  compile: {
    source:
      "§6.2 No Dynamic Code Loading: Function, AsyncFunction and GeneratorFunction constructors throw " +
      "(docs/limits.md, globals: 'no Function constructors (they throw)'): every call or construction, whatever its " +
      "arguments, throws the sandbox's TypeError naming the constructor",
    sandbox: (raw, label) => ({ threw: disabledMessage(label ?? "Function"), log: raw.log }),
  },
  /** Reading or calling `eval`: absent, so a reference to it is a ReferenceError and `typeof eval` "undefined". */
  eval: {
    source: REMOVED_GLOBALS.eval as string,
    sandbox: (raw, detail) =>
      detail === "typeof"
        ? { value: "s:undefined", log: raw.log }
        : { threw: "ReferenceError: 'eval' is not defined", log: raw.log },
  },
  /**
   * The global object's own keys, as the text `Reflect.ownKeys(globalThis).map(String).join()`: the removed ones
   * are gone, the added ones follow the raw engine's string keys (the prelude defines them after the engine's).
   */
  globals: {
    source: `${Object.values(REMOVED_GLOBALS).join("; ")}; ${Object.values(ADDED_GLOBALS).join("; ")}`,
    sandbox: (raw) => {
      const keys = String(raw.value).replace(/^s:/, "").split(",");
      const kept = keys.filter((k) => !(k in REMOVED_GLOBALS));
      const strings = kept.filter((k) => !k.startsWith("Symbol("));
      const symbols = kept.filter((k) => k.startsWith("Symbol("));
      return { value: `s:${[...strings, ...Object.keys(ADDED_GLOBALS), ...symbols].join()}`, log: raw.log };
    },
  },
  /** A global the sandbox removes (the program's `detail`), read as `[typeof globalThis[k], k in globalThis].join()`. */
  removed: {
    source: "the entry of REMOVED_GLOBALS for the global named by the program",
    sandbox: (raw) => ({ value: "s:undefined,false", log: raw.log }),
  },
  /**
   * structuredClone and queueMicrotask are not in the raw engine. The program's `detail` is the JSON of the outcome
   * the sandbox must have, from the HTML standard: WebIDL operations named `structuredClone` and `queueMicrotask`,
   * `length` 1, not constructors, source text of a built-in (`function name() { [native code] }`), writable and
   * configurable; they are not enumerable, like every other property of the sandbox's global object.
   */
  web: {
    source: `${ADDED_GLOBALS.structuredClone}; ${ADDED_GLOBALS.queueMicrotask}; their shape per the HTML standard`,
    sandbox: (_raw, detail) => ({ log: [], ...(JSON.parse(detail ?? "{}") as Partial<Outcome>) }),
  },
} satisfies Record<string, Rule>;

export type RuleId = keyof typeof RULES;

/** The outcome the sandbox must have for `program`, given the raw engine's. */
export function expectedSandbox(program: Program, raw: Outcome): Outcome {
  if (program.differs === undefined) return raw;
  return (RULES[program.differs] as Rule).sandbox(raw, program.detail);
}

// ---------------------------------------------------------------------------------------------------------------
// Running programs on both sides.

export interface Compared {
  program: Program;
  raw: Outcome;
  sandbox: Outcome;
  expected: Outcome;
  /** The sandbox's outcome is not what the raw engine (and the rules) say. */
  differs: boolean;
}

/** An outcome as text, its fields in one order. */
const canonical = (o: Outcome) =>
  JSON.stringify("threw" in o ? { threw: o.threw, log: o.log } : { value: o.value, log: o.log });

/** Runs `programs` in both engines, in batches of `batch` per module (isolated programs alone), and compares. */
export async function compare(programs: readonly Program[], batch = 60): Promise<Compared[]> {
  const groups: Program[][] = [];
  let current: Program[] = [];
  for (const p of programs) {
    if (p.isolated) {
      groups.push([p]);
      continue;
    }
    current.push(p);
    if (current.length >= batch) {
      groups.push(current);
      current = [];
    }
  }
  if (current.length > 0) groups.push(current);
  const out: Compared[] = [];
  for (const group of groups) {
    const source = moduleSource(group);
    // A run that fails as a whole (a memory cap, a host-side failure) gives every program of the group that outcome.
    const outcomes = async (run: (source: string) => Promise<string>) => {
      try {
        return JSON.parse(await run(source)) as Outcome[];
      } catch (error) {
        return group.map(() => ({ threw: `(the whole run failed) ${String(error)}`, log: [] }));
      }
    };
    const raws = await outcomes(runRaw);
    const sandboxes = await outcomes(runSandboxed);
    group.forEach((program, i) => {
      const raw = raws[i] as Outcome;
      const sandbox = sandboxes[i] as Outcome;
      const expected = expectedSandbox(program, raw);
      out.push({ program, raw, sandbox, expected, differs: canonical(expected) !== canonical(sandbox) });
    });
  }
  return out;
}

/** A difference as a short, reproducible text: the program, the raw and the sandbox outcomes. */
export function explain(c: Compared): string {
  const show = (o: Outcome) => JSON.stringify(o);
  return [
    `program: ${c.program.name}`,
    `  ${c.program.body.replace(/\n/g, "\n  ")}`,
    `  raw:      ${show(c.raw)}`,
    ...(c.program.differs ? [`  expected: ${show(c.expected)} (rule ${c.program.differs})`] : []),
    `  sandbox:  ${show(c.sandbox)}`,
  ].join("\n");
}

/**
 * A suite of programs: one test a program (its outcome against the raw engine's and the rules), a check that names
 * are unique, and the file's own tests (`more`), after one run of every program in batches of `batch`.
 */
export function describeAgainstRaw(
  title: string,
  programs: readonly Program[],
  { more, timeoutMs = 180_000, batch }: { more?: () => void; timeoutMs?: number; batch?: number } = {},
) {
  describe(title, () => {
    let results = new Map<string, Compared>();
    beforeAll(async () => {
      results = new Map((await compare(programs, batch)).map((c) => [c.program.name, c]));
    }, timeoutMs);

    it("every program has its own name", () => {
      expect(new Set(programs.map((p) => p.name)).size).toBe(programs.length);
    });

    more?.();

    it.each(programs.map((p) => [p.name]))("%s", (name) => {
      const c = results.get(name);
      if (c === undefined) throw new Error(`no outcome for ${name}`);
      if (c.differs) expect.fail(explain(c));
    });
  });
}
