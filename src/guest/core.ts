/**
 * The guest's core prelude, evaluated in every fresh context before any user code. It captures the intrinsics the
 * runtime relies on (before user code can replace them), hardens the global object (no eval, no Function
 * constructors, no shared memory) and returns the internal functions the host calls; none is reachable from user
 * code. The marshaling half (`marshal.ts`) is compiled only when a run first moves an object across.
 *
 * Shipped as source text (sources.generated.ts, `npm run build:guest`): `guestCore` must not close over anything in
 * this file, and once user code has run no function here may touch a global, a prototype method or the iteration
 * protocol (all are the guest's to change), nor build a template literal with a substitution (the engine calls
 * `String.prototype.concat` for it).
 * The constants it repeats from `../values/tape.ts` are checked against it by `test/core/guest-constants.test.ts`.
 * @module
 */

/**
 * The host function the guest asks the host through: `(op, a, tape, side, ok) => value` (see values/tape.ts). Calls
 * of the caller's functions have their own, {@link HostFunctionCall}.
 */
export type HostCall = (op: number, a: number, tape: string, side: unknown[], ok?: number) => unknown;
/**
 * The host's function that calls the caller's functions: `this` is the function's number (see values/to-guest.ts's
 * `FunctionTable`), the arguments are the guest's own.
 */
export type HostFunctionCall = (this: number, ...args: unknown[]) => unknown;

type Fn = (...args: never[]) => unknown;
type Uncurried = (self: unknown, ...args: unknown[]) => unknown;
/** What a wrapped native does with a call: its receiver, its arguments and the engine's own function. */
export type Guard = (self: unknown, args: unknown[], original: Fn) => unknown;
/** Estimated native work of a call (units of about a nanosecond), from its receiver's length, its arguments, its result. */
type Cost = (length: number, args: unknown[], result?: unknown) => number;

/** What the core hands the JS implementations of the natives it guards (see slow-paths.ts). */
export interface NativeKit {
  apply: typeof Reflect.apply;
  isArray: typeof Array.isArray;
  trunc: typeof Math.trunc;
  sign: typeof Math.sign;
  min: typeof Math.min;
  max: typeof Math.max;
  symbolSpecies: symbol;
  symbolSpreadable: symbol;
  /** The proxies the guest made. */
  proxies: WeakSet<object>;
  /** ToLength(Get(ToObject(value), "length")) when reading it runs no guest code, else -1. */
  lengthOf(value: unknown): number;
  toLength(value: unknown): number;
  /** Adds estimated native work (units of about a nanosecond); throws once the run must stop. */
  charge(units: number): void;
  /** CreateDataProperty: an enumerable, writable, configurable data property. */
  define(target: object, key: PropertyKey, value: unknown): void;
  /** The engine's own Array.prototype functions the core wrapped, by name. */
  originals: Record<string, Fn>;
  /** ArraySpeciesCreate(o, n) would make a plain Array without running guest code. */
  defaultSpecies(o: object): boolean;
  speciesGetter: unknown;
  ArrayCtor: ArrayConstructor;
  ObjectCtor: ObjectConstructor;
  TypeErrorCtor: TypeErrorConstructor;
  RangeErrorCtor: RangeErrorConstructor;
  /** The estimated work above which a call runs the JS implementation. */
  MAX_NATIVE: number;
}

/** Intrinsics and helpers captured before user code runs, shared with the marshaling half. */
export interface Intrinsics {
  apply: typeof Reflect.apply;
  bind: Uncurried;
  defineProperty: typeof Object.defineProperty;
  getPrototypeOf: typeof Object.getPrototypeOf;
  getOwnPropertyDescriptor: typeof Object.getOwnPropertyDescriptor;
  hasOwn: (target: object, key: PropertyKey) => boolean;
  keys: typeof Object.keys;
  isArray: typeof Array.isArray;
  stringify: typeof JSON.stringify;
  parse: typeof JSON.parse;
  Object: ObjectConstructor;
  String: StringConstructor;
  BigInt: BigIntConstructor;
  Map: MapConstructor;
  Set: SetConstructor;
  WeakMap: WeakMapConstructor;
  Date: DateConstructor;
  RegExp: RegExpConstructor;
  Promise: PromiseConstructor;
  DataView: DataViewConstructor;
  ArrayBuffer: new (length: number, options?: { maxByteLength: number }) => ArrayBuffer;
  ObjectProto: object;
  ArrayProto: object;
  RegExpProto: object;
  symbolIterator: typeof Symbol.iterator;
  typedArrays: Record<string, new (buffer: ArrayBuffer, byteOffset: number, length: number) => unknown>;
  errorTypes: Record<string, ErrorConstructor>;
  /** `Object.prototype.__lookupGetter__`: the getter reading `key` would call, found without calling it. */
  lookupGetter: Uncurried;
  mapGet: Uncurried;
  mapSet: Uncurried;
  mapHas: Uncurried;
  mapForEach: Uncurried;
  setAdd: Uncurried;
  setHas: Uncurried;
  setForEach: Uncurried;
  weakGet: Uncurried;
  weakSet: Uncurried;
  dateGetTime: Uncurried;
  regExpSource: Uncurried;
  regExpFlags: Uncurried;
  bufferByteLength: Uncurried;
  bufferSlice: Uncurried;
  bufferResizable: Uncurried;
  bufferMaxByteLength: Uncurried;
  bufferDetached: Uncurried;
  bufferResize: Uncurried;
  bufferTransfer: Uncurried;
  typedArrayTag: Uncurried;
  typedArrayBuffer: Uncurried;
  typedArrayOffset: Uncurried;
  typedArrayLength: Uncurried;
  viewBuffer: Uncurried;
  viewOffset: Uncurried;
  viewLength: Uncurried;
  promiseThen: Uncurried;
  promiseResolve: typeof Promise.resolve;
  bigIntToString: Uncurried;
  functionToString: Uncurried;
  startsWith: Uncurried;
  indexOf: Uncurried;
  stringSlice: Uncurried;
  typedArrayAt: Uncurried;
  typedArraySet: Uncurried;
  /**
   * The prototypes of objects with internal slots that HTML's structured clone copies (the Boolean, Number, String
   * and BigInt wrappers) or refuses (Symbol wrappers, WeakMap, WeakSet, WeakRef, FinalizationRegistry), each with a
   * brand check that changes nothing, throws for anything else and returns a wrapper's primitive.
   */
  slotted: Map<object, { wrapper: boolean; check: Uncurried }>;
  /** `Error.isError`: whether the value has an error's internal slot, whatever its prototype. */
  errorIsError(value: unknown): boolean;
  /** Whether the value is a Proxy the guest made (host values never arrive as proxies). */
  isProxy(value: object): boolean;
  /** Defines an enumerable data property: never reaches setters, keeps `__proto__` an ordinary key. */
  define(target: object, key: PropertyKey, value: unknown): void;
  /** Defines a non-enumerable data property. */
  hide(target: object, key: PropertyKey, value: unknown): void;
  makeError(ctor: ErrorConstructor, name: string, message: string): Error;
  isError(value: object): boolean;
  /** Any value as a string, symbols included. */
  text(value: unknown): string;
}

/** What the core hands back to the host. */
export interface CoreInternals {
  intrinsics: Intrinsics;
  /**
   * Gather the decoded globals, the imports and the phase mark for the internals module's `take` (the phase module
   * of core/linker.ts calls the mark when evaluation begins), and put them under `stageKey` on the global object
   * where a globals script reads them once (none when the image binds the run's globals: `stageKey` undefined), seed
   * `Math.random` for this run, and say whether the engine meters its own work (then the clock checks of native work
   * are off). Returns what it gathered.
   */
  stage(
    globals: Record<string, unknown> | undefined,
    imports: unknown,
    stageKey: string | undefined,
    s0: number,
    s1: number,
    s2: number,
    s3: number,
    metered: boolean,
  ): object;
  /** `true` once any user module started evaluating: errors before that are link errors. */
  evaluating(): boolean;
  /** Whether the namespace has the selected export. */
  hasExport(namespace: object, name: string): boolean;
  /** Call the selected export (it exists), await thenables. */
  runExport(namespace: object, name: string, args: unknown[]): Promise<unknown>;
  /** An error (or any thrown value) -> a JSON text of its fields, read without running host code. */
  describeError(error: unknown): string;
  /** A guest promise for the host promise the host numbered `id`, settled later by {@link settle}. */
  deferred(id: number): Promise<unknown>;
  /**
   * Settles guest promises made by {@link deferred}: `deliveries` are `id, ok, value` for each (fulfilled with
   * `value` when `ok`, else rejected with it), in the order their host promises settled.
   */
  settle(...deliveries: unknown[]): void;
}

export function guestCore(hostCall: HostCall): CoreInternals {
  // biome-ignore lint/suspicious/noRedundantUseStrict: shipped as source text and evaluated as a sloppy script.
  "use strict";
  const OP_REPORT = 1;
  const OP_LOG = 2;
  const OP_MARSHAL = 4;
  const OP_CHARGE = 5;
  const OP_PLAIN = 10;
  const MODE_CLONE = 0;
  const MODE_LOG = 2;

  const G = globalThis;
  const { apply } = Reflect;
  const { defineProperty, getPrototypeOf, getOwnPropertyDescriptor, keys, freeze, hasOwn } = Object;
  // `call` bound to `fn`: the engine's own call, with no guest frame and no array of arguments per call.
  const uncurry = (fn: Fn): Uncurried => apply(Function.prototype.bind, Function.prototype.call, [fn]) as Uncurried;
  const getter = (proto: object, key: PropertyKey) => uncurry(getOwnPropertyDescriptor(proto, key)?.get as Fn);
  const TypedArrayProto = getPrototypeOf(Uint8Array.prototype) as object;
  const slotEntry = (proto: object, wrapper: boolean, check: Uncurried) => [proto, { wrapper, check }] as const;
  const unregister = FinalizationRegistry.prototype.unregister;
  const symbolToString = uncurry(Symbol.prototype.toString);
  const StringCtor = String;
  const ErrorProto = Error.prototype;

  const slot = { __proto__: null, value: undefined as unknown, writable: true, enumerable: true, configurable: true };
  const hidden = {
    __proto__: null,
    value: undefined as unknown,
    writable: true,
    enumerable: false,
    configurable: true,
  };
  const define = (target: object, key: PropertyKey, value: unknown) => {
    slot.value = value;
    defineProperty(target, key, slot as PropertyDescriptor);
    slot.value = undefined;
  };
  const hide = (target: object, key: PropertyKey, value: unknown) => {
    hidden.value = value;
    defineProperty(target, key, hidden as PropertyDescriptor);
    hidden.value = undefined;
  };
  const makeError = (ctor: ErrorConstructor, name: string, message: string) => {
    const error = new ctor(message);
    if (error.name !== name) hide(error, "name", name);
    return error;
  };
  const isError = (value: object) => {
    for (let proto = getPrototypeOf(value); proto !== null; proto = getPrototypeOf(proto)) {
      if (proto === ErrorProto) return true;
    }
    return false;
  };
  const text = (value: unknown): string =>
    typeof value === "symbol" ? (symbolToString(value) as string) : value === undefined ? "" : StringCtor(value);

  const I: Intrinsics = {
    __proto__: null,
    apply,
    bind: uncurry(Function.prototype.bind),
    defineProperty,
    getPrototypeOf,
    getOwnPropertyDescriptor,
    hasOwn,
    keys,
    isArray: Array.isArray,
    stringify: JSON.stringify,
    parse: JSON.parse,
    Object,
    String,
    BigInt,
    Map,
    Set,
    WeakMap,
    Date,
    RegExp,
    Promise,
    DataView,
    ArrayBuffer,
    ObjectProto: Object.prototype,
    ArrayProto: Array.prototype,
    RegExpProto: RegExp.prototype,
    symbolIterator: Symbol.iterator,
    typedArrays: {
      __proto__: null,
      Int8Array,
      Uint8Array,
      Uint8ClampedArray,
      Int16Array,
      Uint16Array,
      Int32Array,
      Uint32Array,
      // Not in the TypeScript lib the project compiles against; QuickJS has it.
      Float16Array: (G as unknown as { Float16Array: unknown }).Float16Array,
      Float32Array,
      Float64Array,
      BigInt64Array,
      BigUint64Array,
    } as never,
    errorTypes: {
      __proto__: null,
      Error,
      EvalError,
      RangeError,
      ReferenceError,
      SyntaxError,
      TypeError,
      URIError,
    } as never,
    lookupGetter: uncurry((Object.prototype as { __lookupGetter__: Fn }).__lookupGetter__),
    mapGet: uncurry(Map.prototype.get),
    mapSet: uncurry(Map.prototype.set),
    mapHas: uncurry(Map.prototype.has),
    mapForEach: uncurry(Map.prototype.forEach),
    setAdd: uncurry(Set.prototype.add),
    setHas: uncurry(Set.prototype.has),
    setForEach: uncurry(Set.prototype.forEach),
    weakGet: uncurry(WeakMap.prototype.get),
    weakSet: uncurry(WeakMap.prototype.set),
    dateGetTime: uncurry(Date.prototype.getTime),
    regExpSource: getter(RegExp.prototype, "source"),
    regExpFlags: getter(RegExp.prototype, "flags"),
    bufferByteLength: getter(ArrayBuffer.prototype, "byteLength"),
    bufferSlice: uncurry(ArrayBuffer.prototype.slice),
    bufferResizable: getter(ArrayBuffer.prototype, "resizable"),
    bufferMaxByteLength: getter(ArrayBuffer.prototype, "maxByteLength"),
    bufferDetached: getter(ArrayBuffer.prototype, "detached"),
    bufferResize: uncurry((ArrayBuffer.prototype as unknown as { resize: Fn }).resize),
    bufferTransfer: uncurry((ArrayBuffer.prototype as unknown as { transfer: Fn }).transfer),
    typedArrayTag: getter(TypedArrayProto, Symbol.toStringTag),
    typedArrayBuffer: getter(TypedArrayProto, "buffer"),
    typedArrayOffset: getter(TypedArrayProto, "byteOffset"),
    typedArrayLength: getter(TypedArrayProto, "length"),
    viewBuffer: getter(DataView.prototype, "buffer"),
    viewOffset: getter(DataView.prototype, "byteOffset"),
    viewLength: getter(DataView.prototype, "byteLength"),
    promiseThen: uncurry(Promise.prototype.then),
    promiseResolve: Promise.resolve,
    bigIntToString: uncurry(BigInt.prototype.toString),
    functionToString: uncurry(Function.prototype.toString),
    startsWith: uncurry(String.prototype.startsWith),
    indexOf: uncurry(String.prototype.indexOf),
    stringSlice: uncurry(String.prototype.slice),
    typedArrayAt: uncurry((TypedArrayProto as { at: Fn }).at),
    typedArraySet: uncurry((TypedArrayProto as { set: Fn }).set),
    slotted: new Map([
      slotEntry(Boolean.prototype, true, uncurry(Boolean.prototype.valueOf)),
      slotEntry(Number.prototype, true, uncurry(Number.prototype.valueOf)),
      slotEntry(String.prototype, true, uncurry(String.prototype.valueOf)),
      slotEntry(BigInt.prototype, true, uncurry(BigInt.prototype.valueOf)),
      slotEntry(Symbol.prototype, false, uncurry(Symbol.prototype.valueOf)),
      slotEntry(WeakMap.prototype, false, uncurry(WeakMap.prototype.has)),
      slotEntry(WeakSet.prototype, false, uncurry(WeakSet.prototype.has)),
      slotEntry(WeakRef.prototype, false, uncurry(WeakRef.prototype.deref)),
      // A fresh token: unregistering it changes nothing.
      slotEntry(FinalizationRegistry.prototype, false, (self) => apply(unregister, self, [{}])),
    ]),
    errorIsError: (Error as unknown as { isError(value: unknown): boolean }).isError,
    // `proxies` records every Proxy the guest makes (see "Native work" below).
    isProxy: (value: object) => proxies.has(value),
    define,
    hide,
    makeError,
    isError,
    text,
  } as Intrinsics;

  // The marshaling half is compiled on first use: most runs move only primitives.
  let marshal:
    | {
        encode(value: unknown, mode: number, plainLevels?: number): [string, unknown[]];
        clone(value: unknown, options: unknown): unknown;
      }
    | undefined;
  const loadMarshal = () => {
    marshal ??= hostCall(OP_MARSHAL, 0, "", []) as NonNullable<typeof marshal>;
    return marshal;
  };

  // The host reads whether an object is plain data faster than a walk here (see OP_PLAIN); no guest code runs between
  // its reading and the encoding.
  const plainLevels = (value: unknown) =>
    typeof value === "object" && value !== null ? (hostCall(OP_PLAIN, 0, "", value as unknown[]) as number) : 0;
  const guestConsole = {};
  const levels = ["log", "info", "warn", "error", "debug"];
  for (let level = 0; level < levels.length; level++) {
    hide(guestConsole, levels[level] as string, (...args: unknown[]) => {
      const encoded = loadMarshal().encode(args, MODE_LOG, plainLevels(args));
      hostCall(OP_LOG, level, encoded[0], encoded[1]);
    });
  }
  freeze(guestConsole);
  const report = (value: unknown) => {
    const encoded = loadMarshal().encode(value, MODE_CLONE, plainLevels(value));
    return hostCall(OP_REPORT, 0, encoded[0], encoded[1]);
  };

  // Set by the phase module, which every user module imports first: it evaluates after the whole graph linked and
  // before any user code, so nothing the guest does can make an evaluation error look like a link error.
  let started = false;
  const evaluating = () => started;
  const hasExport = (namespace: object, name: string) => hasOwn(namespace, name);

  const phase = () => {
    started = true;
  };

  function stage(
    globals: Record<string, unknown> | undefined,
    imports: unknown,
    stageKey: string | undefined,
    s0: number,
    s1: number,
    s2: number,
    s3: number,
    metered: boolean,
  ) {
    reseed(s0, s1, s2, s3);
    clockChecks = !metered;
    const bindings = { __proto__: null, console: guestConsole, report } as Record<string, unknown>;
    const names = globals === undefined ? [] : keys(globals);
    for (let i = 0; i < names.length; i++) define(bindings, names[i] as string, globals?.[names[i] as string]);
    const staged = { __proto__: null, globals: bindings, imports, phase };
    if (stageKey !== undefined) hide(G, stageKey, staged);
    return staged;
  }

  async function runExport(namespace: Record<string, unknown>, name: string, args: unknown[]) {
    let value = namespace[name];
    if (typeof value === "function") value = apply(value as Fn, undefined, args);
    else if (args.length > 0) {
      throw makeError(
        TypeError,
        "TypeError",
        `Export '${name}' is ${typeof value}, not a function: execute.args must be empty`,
      );
    }
    return await value;
  }

  /** Longest text of an error's field (name, message, stack, file name) that reaches the host. */
  const MAX_ERROR_TEXT = 65_536;
  function describeError(error: unknown): string {
    if (typeof error !== "object" || error === null || !isError(error)) {
      return '{"thrown":' + loadMarshal().encode(error, MODE_LOG)[0] + "}";
    }
    const fields = ["name", "message", "stack", "fileName", "lineNumber", "columnNumber"];
    let out = "";
    for (let i = 0; i < fields.length; i++) {
      let value: unknown;
      try {
        value = (error as Record<string, unknown>)[fields[i] as string];
      } catch {
        value = "";
      }
      // Cut here, before the host reads it: a guest can make `stack` or `message` tens of megabytes, and the host
      // copies and parses what crosses several times over.
      const field = typeof value === "number" ? value : I.stringify(I.stringSlice(text(value), 0, MAX_ERROR_TEXT));
      out += (i === 0 ? "" : ",") + '"' + fields[i] + '":' + field;
    }
    return "{" + out + "}";
  }

  // Harden the global object: no way to compile source text, no shared memory, nothing beyond ECMAScript.
  // The four Function-family constructors become stand-ins that throw on every call and every construction, with
  // the originals' shape otherwise (test/differential/function.test.ts compares them with the raw engine): they are
  // constructors, so `class X extends Function {}` defines and only constructing it throws; `length`, `name` and
  // `prototype` and the prototypes' `constructor` keep their attributes (only Function.prototype.constructor is
  // writable); AsyncFunction and the generator kinds inherit from Function. Each is a bound function, which QuickJS
  // prints by its `name` as a built-in (`function Function() { [native code] }`); its target shares the original's
  // `prototype`, so `instanceof` keeps working.
  const bindFunction = Function.prototype.bind;
  const lockConstructor = (original: { prototype: object }, parent: object | undefined, label: string) => {
    const proto = original.prototype;
    // biome-ignore lint/complexity/useArrowFunction: it must be a constructor (an arrow function is not).
    const refuse = function () {
      throw makeError(
        TypeError,
        "TypeError",
        `${label} constructor is disabled in the sandbox: code cannot be compiled from strings`,
      );
    };
    defineProperty(refuse, "prototype", { value: proto, writable: false });
    const Locked = apply(bindFunction, refuse, [undefined]) as Fn;
    for (const key of ["length", "name", "prototype"]) {
      defineProperty(Locked, key, getOwnPropertyDescriptor(original, key) as PropertyDescriptor);
    }
    if (parent !== undefined) Object.setPrototypeOf(Locked, parent);
    const own = getOwnPropertyDescriptor(proto, "constructor") as PropertyDescriptor;
    own.value = Locked;
    defineProperty(proto, "constructor", own);
    return Locked;
  };
  const LockedFunction = lockConstructor(Function, undefined, "Function");
  hide(G, "Function", LockedFunction);
  lockConstructor(getPrototypeOf(async () => {}).constructor, LockedFunction, "AsyncFunction");
  lockConstructor(getPrototypeOf(function* () {}).constructor, LockedFunction, "GeneratorFunction");
  lockConstructor(getPrototypeOf(async function* () {}).constructor, LockedFunction, "AsyncGeneratorFunction");
  for (const name of ["eval", "SharedArrayBuffer", "Atomics", "WebAssembly", "InternalError"])
    delete (G as never)[name];
  hide(
    G,
    "structuredClone",
    {
      structuredClone(value: unknown) {
        // biome-ignore lint/complexity/noArguments: WebIDL tells a missing argument from `undefined`; only `arguments` can.
        const given = arguments;
        if (given.length === 0) {
          throw makeError(TypeErrorCtor, "TypeError", "structuredClone: 1 argument required, but only 0 present");
        }
        // Read within `arguments`: past its end the read would run a getter the guest put on Object.prototype.
        return loadMarshal().clone(value, given.length > 1 ? given[1] : undefined);
      },
    }.structuredClone,
  );

  // Native work. The engine polls for interrupts at calls and loop back-edges, never inside its own loops: a native
  // method looping over a guest-chosen length (2 ** 53 - 1 for an array-like) froze the host for minutes, out of
  // reach of terminate() and the safety cap, and even bounded natives (`u8.indexOf` on 8 MB) cost far more than the
  // 10,000 bytecode operations a poll stands for. So the methods that loop take the engine's own path only when the
  // length is known without running guest code and the estimated work is small; that work is charged (about 1 unit
  // per nanosecond) and reported to the host, which counts it as interrupt polls and checks its clock (OP_CHARGE).
  // Everything else runs a JS implementation of the same algorithm (slow-paths.ts), whose loops poll.
  const { construct } = Reflect;
  const ObjectCtor = Object;
  const ArrayCtor = Array;
  const ErrorCtor = Error;
  const TypeErrorCtor = TypeError;
  const RangeErrorCtor = RangeError;
  const { isArray } = Array;
  const { trunc, log2, sign, min, max } = Math;
  const FunctionProto = getPrototypeOf(apply) as object;
  const NativeProxy = Proxy;
  const UNITS_PER_POLL = 100_000;
  const FLUSH_UNITS = 2_000_000;
  const MAX_NATIVE = 10_000_000;
  const EMPTY: unknown[] = [];
  let pending = 0;
  let stopped = false;
  const refuse = () => {
    throw makeError(ErrorCtor, "InternalError", "interrupted");
  };
  // Estimates miss work they cannot see (a copy of an object's properties, a spread whose iterator this wrapper
  // handed out): so every wrapped call also looks at the clock, and once CHECK_MS have passed since the host last
  // looked, it asks the host to (which counts real time against the cap). Where the clock stands still during
  // synchronous work (deployed Workers), the estimates and the poll count remain. A metered engine counts that work
  // and has the host look at its clock at every refill: there these checks are off (they only made the run's fuel
  // depend on timing).
  const now = Date.now;
  const CHECK_MS = 10;
  let checked = now();
  let clockChecks = true;
  const due = () => clockChecks && now() - checked >= CHECK_MS;
  const flush = () => {
    const polls = pending / UNITS_PER_POLL;
    pending = 0;
    checked = now();
    if (hostCall(OP_CHARGE, polls, "0", EMPTY) === true) stopped = true;
  };
  const charge = (units: number) => {
    pending += units;
    if (pending >= FLUSH_UNITS || due()) flush();
    if (stopped) refuse();
  };

  // Private collections with own methods: guest changes to WeakSet.prototype or WeakMap.prototype never reach them.
  const proxies = new WeakSet<object>();
  defineProperty(proxies, "add", { value: WeakSet.prototype.add });
  defineProperty(proxies, "has", { value: WeakSet.prototype.has });
  const natives = new WeakMap<object, Fn>();
  defineProperty(natives, "get", { value: WeakMap.prototype.get });
  defineProperty(natives, "set", { value: WeakMap.prototype.set });

  // A wrapper's receiver: an Array method's (any value; `length` read without running guest code), a typed
  // array's, a string's. Its costs are estimated before the call (`pre`, which also decides whether an Array method
  // takes the engine's loop) and after it from the result (`post`, for calls that may stop early). The logic is
  // inline, so a wrapped call adds one frame: recursion through natives (a sort comparator that sorts) must still
  // reach the engine's own stack limit before the host's.
  const ARRAY = 0;
  const TYPED = 1;
  const STRING = 2;
  const OTHER = 3;
  // A wrapper doubles the host stack a level of recursion through a native takes (a comparator that sorts, a map
  // callback that maps): past this many nested native calls the guest gets the engine's own error, which it can
  // catch, rather than the host's stack running out first (which ends the run).
  const MAX_NESTING = 256;
  let nesting = 0;
  /** Over this length an Array method runs its JS implementation (a loop over holes costs up to ~80 ms here). */
  const MAX_NATIVE_LENGTH = 1 << 20;
  /** Replaces `target[key]` with a strict wrapper of the same name and length whose source text reads as native. */
  const wrap = (target: object, key: PropertyKey, how: Guard | number, pre?: Cost, post?: Cost) => {
    const original = (target as Record<PropertyKey, Fn>)[key] as Fn;
    const wrapper = {
      [key](this: unknown, ...args: unknown[]) {
        if (stopped || due()) charge(0);
        if (typeof how !== "number") return how(this, args, original);
        let length = 0;
        if (how === ARRAY) {
          if (this !== null && this !== undefined) {
            length = lengthOf(this);
            if (length < 0 || length > MAX_NATIVE_LENGTH || (pre !== undefined && pre(length, args) > MAX_NATIVE)) {
              return slow(key as string, this, args, original);
            }
          }
        } else if (how === TYPED) length = taTag(this) === undefined ? 0 : (taLength(this) as number);
        else if (how === STRING) length = typeof this === "string" ? this.length : 0;
        if (pre !== undefined) {
          pending += pre(length, args);
          if (pending >= FLUSH_UNITS) charge(0);
        }
        if (nesting >= MAX_NESTING) throw makeError(ErrorCtor, "InternalError", "stack overflow");
        nesting++;
        let result: unknown;
        try {
          result = apply(original, this, args);
        } finally {
          nesting--;
        }
        if (post !== undefined) {
          pending += post(length, args, result);
          if (pending >= FLUSH_UNITS) charge(0);
        }
        return result;
      },
    }[key as string] as Fn;
    defineProperty(wrapper, "length", { value: original.length });
    natives.set(wrapper, original);
    hide(target, key, wrapper);
  };
  /**
   * The argument at `index`, read within the arguments: a read past their end would go on to Array.prototype and
   * Object.prototype and run a getter the guest put there (test262's sort tests put one on index 0 and 2).
   */
  const arg = (args: unknown[], index: number) => (index >= 0 && index < args.length ? args[index] : undefined);
  /** A position argument (relative from the end when negative) clamped to [0, length]; other values give `or`. */
  const at = (value: unknown, length: number, or: number) => {
    if (typeof value !== "number") return or;
    // biome-ignore lint/suspicious/noSelfCompare: NaN without the guest's Number.isNaN.
    const n = value !== value ? 0 : trunc(value);
    return n < 0 ? max(0, length + n) : min(n, length);
  };
  const perElement =
    (weight: number): Cost =>
    (length) =>
      length * weight;
  /** The elements between the arguments at `i` and `j` (start and end). */
  const span =
    (weight: number, i: number, j: number): Cost =>
    (length, args) =>
      max(0, at(arg(args, j), length, length) - at(arg(args, i), length, 0)) * weight;
  /** What a search went through, from its result (an index, or -1, or a boolean: all of it). */
  const scanned =
    (weight: number, backward: boolean): Cost =>
    (length, args, result) => {
      const hit = typeof result === "number" && result >= 0;
      const from = at(arg(args, 1), length, backward ? length : 0);
      return (
        (backward ? from - (hit ? (result as number) : 0) : (hit ? (result as number) + 1 : length) - from) * weight
      );
    };
  /** What a call produced: a string's characters, an array's or a typed array's elements. */
  const produced =
    (weight: number): Cost =>
    (_length, _args, result) =>
      typeof result === "string"
        ? result.length
        : isArray(result) && !proxies.has(result as object)
          ? (result as unknown[]).length * weight
          : taTag(result) !== undefined
            ? (taLength(result) as number) * weight
            : 0;
  /** n log n comparisons, dearer without a comparator (the engine compares strings of the elements). */
  const sorting =
    (weight: number): Cost =>
    (length, args) =>
      length * log2(length + 2) * (arg(args, 0) === undefined ? weight : 2);
  // As the engine prints a built-in: by the function's `name` property, read when printed.
  wrap(FunctionProto, "toString", (self, args, original) => {
    if (natives.get(self as object) === undefined) return apply(original, self, args);
    const name = (self as { name: unknown }).name;
    return `function ${name === undefined ? "" : name}() {\n    [native code]\n}`;
  });

  // Every Proxy the guest makes is recorded (host values never arrive as proxies): the length of anything else is
  // read here without running guest code.
  const revocable = NativeProxy.revocable;
  hide(
    NativeProxy,
    "revocable",
    {
      revocable(target: object, handler: ProxyHandler<object>) {
        const made = revocable(target, handler);
        proxies.add(made.proxy);
        return made;
      },
    }.revocable,
  );
  natives.set(NativeProxy.revocable, revocable);
  const ProxyStandIn = new NativeProxy(NativeProxy, {
    __proto__: null,
    construct(target: ProxyConstructor, args: unknown[], newTarget: Fn) {
      const made = construct(target, args, newTarget) as object;
      proxies.add(made);
      return made;
    },
  } as unknown as ProxyHandler<ProxyConstructor>);
  proxies.add(ProxyStandIn);
  natives.set(ProxyStandIn, NativeProxy as unknown as Fn);
  hide(G, "Proxy", ProxyStandIn);

  const MAX_LENGTH = 2 ** 53 - 1;
  const toLength = (value: unknown) => {
    const n = trunc(value as number);
    return n > 0 ? min(n, MAX_LENGTH) : 0;
  };
  const typedLength = getOwnPropertyDescriptor(TypedArrayProto, "length")?.get;
  const taTag = I.typedArrayTag;
  const taLength = I.typedArrayLength;
  /** ToLength(Get(ToObject(self), "length")) when reading it runs no guest code, else -1. */
  const lengthOf = (self: unknown): number => {
    if (typeof self === "string") return self.length;
    const o = typeof self === "object" || typeof self === "function" ? (self as object) : ObjectCtor(self);
    if (proxies.has(o)) return -1;
    if (isArray(o)) return (o as unknown[]).length;
    for (let p: object | null = o; p !== null; p = getPrototypeOf(p)) {
      if (proxies.has(p)) return -1;
      const d = getOwnPropertyDescriptor(p, "length");
      if (d === undefined) continue;
      if (hasOwn(d, "value")) {
        const t = typeof d.value;
        return t === "number" || t === "string" || t === "boolean" || d.value == null ? toLength(d.value) : -1;
      }
      return d.get === typedLength && taTag(o) !== undefined ? (taLength(o) as number) : -1;
    }
    return 0;
  };

  // The JS implementations, compiled on first use (most runs never need them).
  let slowPaths: Record<string, Guard> | undefined;
  const slow = (name: string, self: unknown, args: unknown[], original: Fn) => {
    if (stopped) refuse();
    if (self === null || self === undefined) return apply(original, self, args);
    slowPaths ??= (hostCall(OP_CHARGE, -1, "0", EMPTY) as (kit: NativeKit) => Record<string, Guard>)({
      __proto__: null,
      apply,
      isArray,
      trunc,
      sign,
      min,
      max,
      symbolSpecies,
      symbolSpreadable,
      proxies,
      lengthOf,
      toLength,
      charge,
      define,
      originals: ArrayOriginals,
      defaultSpecies,
      speciesGetter,
      ArrayCtor,
      ObjectCtor,
      TypeErrorCtor,
      RangeErrorCtor,
      MAX_NATIVE,
    } as NativeKit);
    return (slowPaths[name] as Guard)(self, args, original);
  };

  // Array.prototype: the engine's loop when `length` is known and the work small, else the JS implementation.
  const ArrayProto = Array.prototype as unknown as Record<string, Fn>;
  const ArrayOriginals = { __proto__: null } as unknown as Record<string, Fn>;
  const symbolSpecies = Symbol.species;
  const symbolSpreadable = Symbol.isConcatSpreadable;
  const speciesGetter = getOwnPropertyDescriptor(Array, symbolSpecies)?.get;
  /** The first own property `key` along `o`'s prototype chain, read without running guest code (null: a proxy). */
  const lookup = (o: object, key: PropertyKey): PropertyDescriptor | undefined | null => {
    for (let p: object | null = o; p !== null; p = getPrototypeOf(p)) {
      if (proxies.has(p)) return null;
      const d = getOwnPropertyDescriptor(p, key);
      if (d !== undefined) return d;
    }
    return undefined;
  };
  /** ArraySpeciesCreate(o, n) would make a plain Array without running guest code. */
  const defaultSpecies = (o: object) => {
    if (!isArray(o)) return true;
    const d = lookup(o, "constructor");
    if (d === null || d === undefined || !hasOwn(d, "value")) return false;
    if (d.value !== ArrayCtor) return typeof d.value !== "object" && typeof d.value !== "function" && d.value !== null;
    const s = getOwnPropertyDescriptor(ArrayCtor, symbolSpecies);
    return s !== undefined && s.get === speciesGetter;
  };
  const arrayMethod = (name: string, pre?: Cost, post?: Cost) => {
    ArrayOriginals[name] = ArrayProto[name] as Fn;
    wrap(ArrayProto, name, ARRAY, pre, post);
  };
  // Calling back polls already; these charge the elements without a call (holes).
  for (const name of ["every", "some", "forEach", "map", "filter", "reduce", "reduceRight"]) {
    arrayMethod(name, perElement(2));
  }
  arrayMethod("indexOf", undefined, scanned(10, false));
  arrayMethod("lastIndexOf", undefined, scanned(10, true));
  arrayMethod("includes", undefined, scanned(10, false));
  for (const name of ["shift", "unshift", "reverse"]) arrayMethod(name, perElement(5));
  arrayMethod("fill", span(5, 1, 2));
  arrayMethod("copyWithin", span(5, 1, 2));
  arrayMethod("slice", undefined, produced(5));
  arrayMethod("splice", span(5, 0, -1), produced(5));
  arrayMethod("sort", sorting(8));
  arrayMethod("toSorted", sorting(8));
  arrayMethod("join", perElement(2), produced(1));
  arrayMethod("toLocaleString", perElement(2), produced(1));
  // Only the receiver spreads and nothing can change its length before the engine reads it: the engine's loop.
  arrayMethod("concat", perElement(5));
  const concat = ArrayProto.concat as Fn;
  const concatOriginal = ArrayOriginals.concat as Fn;
  hide(ArrayProto, "concat", concatOriginal);
  wrap(ArrayProto, "concat", (self, args, original) => {
    for (let i = 0; i < args.length; i++) {
      const t = typeof args[i];
      if ((t === "object" && args[i] !== null) || t === "function") return slow("concat", self, args, original);
    }
    const o = self === null || self === undefined ? null : ObjectCtor(self);
    if (o !== null && (!defaultSpecies(o) || lookup(o, symbolSpreadable) !== undefined)) {
      return slow("concat", self, args, original);
    }
    return apply(concat, self, args);
  });
  // Nested lengths are read in the engine's loop: always the JS implementation.
  for (const name of ["flat", "flatMap"]) {
    ArrayOriginals[name] = ArrayProto[name] as Fn;
    wrap(ArrayProto, name, (self, args, original) =>
      self === null || self === undefined ? apply(original, self, args) : slow(name, self, args, original),
    );
  }
  // These allocate the whole result first, so their loops are bounded by the run's memory: charged only.
  for (const name of ["toReversed", "toSpliced", "with"]) {
    ArrayOriginals[name] = ArrayProto[name] as Fn;
    wrap(ArrayProto, name, OTHER, undefined, produced(10));
  }
  wrap(ArrayCtor, "from", OTHER, undefined, produced(10));

  // Typed array and ArrayBuffer constructors zero memory and copy array-likes natively (`new Uint8Array({ length:
  // 5e7 })` took 1.9 s): behind a Proxy of the constructor, every construction is charged by what it made (nothing
  // for a view of a given buffer). The Proxy is otherwise invisible: it forwards everything, prints as native code,
  // and each prototype's `constructor` is it.
  const standIn = (name: string, cost: (made: object, args: unknown[]) => number) => {
    const Ctor = (G as unknown as Record<string, { prototype: object } | undefined>)[name];
    if (Ctor === undefined) return;
    const proxy = new NativeProxy(Ctor, {
      __proto__: null,
      construct(target: Fn, args: unknown[], newTarget: Fn) {
        if (stopped) refuse();
        const made = construct(target, args, newTarget) as object;
        charge(cost(made, args));
        return made;
      },
    } as ProxyHandler<object>);
    proxies.add(proxy);
    natives.set(proxy, Ctor as unknown as Fn);
    hide(G, name, proxy);
    const d = getOwnPropertyDescriptor(Ctor.prototype, "constructor") as PropertyDescriptor;
    d.value = proxy;
    defineProperty(Ctor.prototype, "constructor", d);
  };
  for (const name of [
    "Int8Array",
    "Uint8Array",
    "Uint8ClampedArray",
    "Int16Array",
    "Uint16Array",
    "Int32Array",
    "Uint32Array",
    "Float16Array",
    "Float32Array",
    "Float64Array",
    "BigInt64Array",
    "BigUint64Array",
  ]) {
    // Fresh memory is cheap (about 16 bytes a nanosecond); copying from another object is not.
    standIn(name, (made, args) => {
      const source = arg(args, 0);
      if (typeof source !== "object" || source === null) return (taLength(made) as number) / 4;
      return I.typedArrayBuffer(made) === source ? 0 : (taLength(made) as number) * 10;
    });
  }
  standIn("ArrayBuffer", (made) => (I.bufferByteLength(made) as number) / 16);

  // Bounded by the object's own properties, charged by what they list.
  for (const name of ["keys", "values", "entries", "getOwnPropertyNames"])
    wrap(ObjectCtor, name, OTHER, undefined, produced(10));
  // These copy or visit every property without calling back (262,144 keys: `for (;;) Object.assign({}, o)` ran 52 s
  // against a 300 ms cap): no estimate, the clock check only.
  for (const name of [
    "assign",
    "fromEntries",
    "getOwnPropertyDescriptors",
    "defineProperties",
    "create",
    "freeze",
    "seal",
    "isFrozen",
    "isSealed",
    "getOwnPropertySymbols",
  ])
    wrap(ObjectCtor, name, OTHER);
  wrap(Reflect, "ownKeys", OTHER);
  // Text built from text in memory (`encodeURIComponent` of 1 Mi "é" took 95 ms a call): charged by what it made.
  for (const name of ["encodeURI", "encodeURIComponent", "decodeURI", "decodeURIComponent", "escape", "unescape"])
    wrap(G, name, OTHER, undefined, produced(10));
  for (const proto of [RegExp.prototype, Error.prototype]) wrap(proto, "toString", OTHER, undefined, produced(10));

  // %TypedArray%.prototype: the length is the array's own, bounded by the run's memory; the work is charged.
  const TypedProto = TypedArrayProto as Record<string, Fn>;
  wrap(TypedProto, "indexOf", TYPED, undefined, scanned(1, false));
  wrap(TypedProto, "lastIndexOf", TYPED, undefined, scanned(2, true));
  wrap(TypedProto, "includes", TYPED, undefined, scanned(1, false));
  wrap(TypedProto, "fill", TYPED, span(1, 1, 2));
  wrap(TypedProto, "copyWithin", TYPED, span(1, 1, 2));
  for (const name of ["reverse", "toReversed", "with", "set"]) wrap(TypedProto, name, TYPED, perElement(2));
  wrap(TypedProto, "slice", TYPED, undefined, produced(2));
  wrap(TypedProto, "join", TYPED, perElement(50), produced(1));
  wrap(TypedProto, "sort", TYPED, sorting(30));
  wrap(TypedProto, "toSorted", TYPED, sorting(30));
  wrap(getPrototypeOf(Uint8Array) as object, "from", OTHER, undefined, produced(10));
  // Strings, JSON, BigInt: bounded by the run's memory per call, charged by the characters they go through.
  const StringProto = String.prototype as unknown as Record<string, Fn>;
  wrap(StringProto, "indexOf", STRING, undefined, scanned(2, false));
  wrap(StringProto, "lastIndexOf", STRING, undefined, scanned(2, true));
  wrap(StringProto, "includes", STRING, undefined, scanned(2, false));
  for (const name of ["isWellFormed", "localeCompare"]) wrap(StringProto, name, STRING, perElement(2));
  const prefix: Cost = (length, args) => {
    const search = arg(args, 0);
    return typeof search === "string" ? min(search.length, length) * 2 : 0;
  };
  for (const name of ["startsWith", "endsWith"]) wrap(StringProto, name, STRING, prefix);
  for (const name of [
    "split",
    "replace",
    "replaceAll",
    "repeat",
    "padStart",
    "padEnd",
    "normalize",
    "toUpperCase",
    "toLowerCase",
    "toLocaleUpperCase",
    "toLocaleLowerCase",
    "trim",
    "trimStart",
    "trimEnd",
    "slice",
    "substring",
    "substr",
    "concat",
    "toWellFormed",
  ]) {
    wrap(StringProto, name, STRING, undefined, produced(10));
  }
  const JSONObject = JSON as unknown as Record<string, Fn>;
  wrap(JSONObject, "parse", (self, args, original) => {
    const text = arg(args, 0);
    charge(typeof text === "string" ? text.length * 5 : 0);
    return apply(original, self, args);
  });
  wrap(JSONObject, "stringify", (self, args, original) => {
    if (stopped) refuse();
    const result = apply(original, self, args);
    charge(typeof result === "string" ? result.length * 5 : 0);
    return result;
  });
  wrap(BigInt.prototype, "toString", (self, args, original) => {
    if (stopped) refuse();
    const result = apply(original, self, args) as string;
    charge(result.length * (result.length >> 6));
    return result;
  });

  // Math.random, seeded for every run from the host's cryptographic source (the engine's own seeds from the clock at
  // start-up, so one run could recover the seed and replay another's values, and a restored instance would repeat
  // the booted state's sequence): xoshiro128**, 53 bits per value.
  let r0 = 1;
  let r1 = 0;
  let r2 = 0;
  let r3 = 0;
  const reseed = (s0: number, s1: number, s2: number, s3: number) => {
    r0 = s0 | 0;
    r1 = s1 | 0;
    r2 = s2 | 0;
    r3 = s3 | 0;
    if ((r0 | r1 | r2 | r3) === 0) r0 = 1;
  };
  const { imul } = Math;
  const next = () => {
    const out = imul((imul(r1, 5) << 7) | (imul(r1, 5) >>> 25), 9);
    const t = r1 << 9;
    r2 ^= r0;
    r3 ^= r1;
    r1 ^= r2;
    r0 ^= r3;
    r2 ^= t;
    r3 = (r3 << 11) | (r3 >>> 21);
    return out >>> 0;
  };
  wrap(Math, "random", () => ((next() >>> 5) * 67108864 + (next() >>> 6)) / 9007199254740992);

  const resolved = Promise.resolve();
  const then = I.promiseThen;
  hide(
    G,
    "queueMicrotask",
    {
      queueMicrotask(callback: () => void) {
        if (typeof callback !== "function")
          throw makeError(TypeErrorCtor, "TypeError", "queueMicrotask: callback must be a function");
        then(resolved, () => callback());
      },
    }.queueMicrotask,
  );
  // Both read as the built-ins the HTML standard makes them: their source text is native code (a bound function
  // prints by its name).
  for (const name of ["structuredClone", "queueMicrotask"]) {
    const standIn = apply(bindFunction, refuse, [undefined]) as Fn;
    defineProperty(standIn, "name", { value: name });
    natives.set((G as unknown as Record<string, Fn>)[name] as Fn, standIn);
  }

  // Made here rather than by the library's `newPromise`, which reads its resolvers through a view of the wasm
  // memory taken before the call: when creating the promise grows the memory, that view is detached and the
  // run failed with "Cannot perform %TypedArray%.prototype.values on a detached ArrayBuffer". The resolvers stay
  // here, so the host holds no handle per pending promise and settles any number of them in one call.
  const PromiseCtor = Promise;
  // Indexed by number: no Map method, whose uncurried call costs more than the rest of the work here.
  const resolvers: Record<number, [(value: unknown) => void, (reason: unknown) => void]> = { __proto__: null } as never;
  function deferred(id: number) {
    return new PromiseCtor((resolve, reject) => {
      resolvers[id] = [resolve, reject];
    });
  }
  function settle(...deliveries: unknown[]) {
    for (let i = 0; i < deliveries.length; i += 3) {
      const id = deliveries[i] as number;
      const settlers = resolvers[id] as [(value: unknown) => void, (reason: unknown) => void];
      delete resolvers[id];
      settlers[deliveries[i + 1] === true ? 0 : 1](deliveries[i + 2]);
    }
  }

  return { intrinsics: I, stage, evaluating, hasExport, runExport, describeError, deferred, settle };
}
