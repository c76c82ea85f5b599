/**
 * The guest's core prelude, evaluated in every fresh context before any user code. It captures the intrinsics the
 * runtime relies on (before user code can replace them), hardens the global object (no eval, no Function
 * constructors, no shared memory) and returns the internal functions the host calls; none is reachable from user
 * code. The marshaling half (`marshal.ts`) is compiled only when a run first moves an object across.
 *
 * Shipped as source text: `guestCore` must not close over anything in this file, and once user code has run no
 * function here may touch a global, a prototype method or the iteration protocol (all are the guest's to change).
 * The constants it repeats from `../marshal/tape.ts` are checked against it by `test/guest-constants.test.ts`.
 * @module
 */

/** The single host function the guest may call: `(op, a, tape, side, ok) => value` (see marshal/tape.ts). */
export type HostCall = (op: number, a: number, tape: string, side: unknown[], ok?: number) => unknown;

type Fn = (...args: never[]) => unknown;
type Uncurried = (self: unknown, ...args: unknown[]) => unknown;

/** Intrinsics and helpers captured before user code runs, shared with the marshaling half. */
export interface Intrinsics {
  apply: typeof Reflect.apply;
  defineProperty: typeof Object.defineProperty;
  getPrototypeOf: typeof Object.getPrototypeOf;
  keys: typeof Object.keys;
  isArray: typeof Array.isArray;
  stringify: typeof JSON.stringify;
  parse: typeof JSON.parse;
  String: StringConstructor;
  BigInt: BigIntConstructor;
  Map: MapConstructor;
  Set: SetConstructor;
  WeakMap: WeakMapConstructor;
  Date: DateConstructor;
  RegExp: RegExpConstructor;
  Promise: PromiseConstructor;
  DataView: DataViewConstructor;
  ObjectProto: object;
  RegExpProto: object;
  typedArrays: Record<string, new (buffer: ArrayBuffer, byteOffset: number, length: number) => unknown>;
  errorTypes: Record<string, ErrorConstructor>;
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
   * Put the decoded globals, the imports and the phase mark where the globals script and the internals module
   * read them once (the phase module of linker.ts calls the mark when evaluation begins).
   */
  stage(globals: Record<string, unknown> | undefined, imports: unknown, stageKey: string): void;
  /** `true` once any user module started evaluating: errors before that are link errors. */
  evaluating(): boolean;
  /** Whether the namespace has the selected export. */
  hasExport(namespace: object, name: string): boolean;
  /** Call the selected export (it exists), await thenables. */
  runExport(namespace: object, name: string, args: unknown[]): Promise<unknown>;
  /** An error (or any thrown value) -> a JSON text of its fields, read without running host code. */
  describeError(error: unknown): string;
  /** A guest promise with its resolvers, for a host promise handed to the guest (see `Run#newDeferred`). */
  deferred(): { promise: Promise<unknown>; resolve(value: unknown): void; reject(reason: unknown): void };
}

export function guestCore(hostCall: HostCall, maxArrayLength: number): CoreInternals {
  const OP_REPORT = 1;
  const OP_LOG = 2;
  const OP_MARSHAL = 4;
  const MODE_CLONE = 0;
  const MODE_LOG = 2;

  const G = globalThis;
  const { apply } = Reflect;
  const { defineProperty, getPrototypeOf, getOwnPropertyDescriptor, keys, freeze, hasOwn } = Object;
  const uncurry =
    (fn: Fn): Uncurried =>
    (self, ...args) =>
      apply(fn, self, args);
  const getter = (proto: object, key: PropertyKey) => uncurry(getOwnPropertyDescriptor(proto, key)?.get as Fn);
  const TypedArrayProto = getPrototypeOf(Uint8Array.prototype) as object;
  const symbolToString = uncurry(Symbol.prototype.toString);
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
    typeof value === "symbol" ? (symbolToString(value) as string) : value === undefined ? "" : String(value);

  const I: Intrinsics = {
    __proto__: null,
    apply,
    defineProperty,
    getPrototypeOf,
    keys,
    isArray: Array.isArray,
    stringify: JSON.stringify,
    parse: JSON.parse,
    String,
    BigInt,
    Map,
    Set,
    WeakMap,
    Date,
    RegExp,
    Promise,
    DataView,
    ObjectProto: Object.prototype,
    RegExpProto: RegExp.prototype,
    typedArrays: {
      __proto__: null,
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
    define,
    hide,
    makeError,
    isError,
    text,
  } as Intrinsics;

  // The marshaling half is compiled on first use: most runs move only primitives.
  let marshal:
    | { encode(value: unknown, mode: number): [string, unknown[]]; clone(value: unknown): unknown }
    | undefined;
  const loadMarshal = () => {
    marshal ??= hostCall(OP_MARSHAL, 0, "", []) as NonNullable<typeof marshal>;
    return marshal;
  };

  const guestConsole = {};
  const levels = ["log", "info", "warn", "error", "debug"];
  for (let level = 0; level < levels.length; level++) {
    hide(guestConsole, levels[level] as string, (...args: unknown[]) => {
      const encoded = loadMarshal().encode(args, MODE_LOG);
      hostCall(OP_LOG, level, encoded[0], encoded[1]);
    });
  }
  freeze(guestConsole);
  const report = (value: unknown) => {
    const encoded = loadMarshal().encode(value, MODE_CLONE);
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

  function stage(globals: Record<string, unknown> | undefined, imports: unknown, stageKey: string) {
    const bindings = { __proto__: null, console: guestConsole, report } as Record<string, unknown>;
    const names = globals === undefined ? [] : keys(globals);
    for (let i = 0; i < names.length; i++) define(bindings, names[i] as string, globals?.[names[i] as string]);
    hide(G, stageKey, { __proto__: null, globals: bindings, imports, phase });
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

  function describeError(error: unknown): string {
    if (typeof error !== "object" || error === null || !isError(error)) {
      return `{"thrown":${loadMarshal().encode(error, MODE_LOG)[0]}}`;
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
      out += `${i === 0 ? "" : ","}"${fields[i]}":${typeof value === "number" ? value : I.stringify(text(value))}`;
    }
    return `{${out}}`;
  }

  // Harden the global object: no way to compile source text, no shared memory, nothing beyond ECMAScript.
  const lockConstructor = (proto: object, label: string) => {
    const Locked = () => {
      throw makeError(
        TypeError,
        "TypeError",
        `${label} constructor is disabled in the sandbox: code cannot be compiled from strings`,
      );
    };
    defineProperty(Locked, "prototype", { value: proto, writable: false });
    defineProperty(Locked, "name", { value: label });
    hide(proto, "constructor", Locked);
    return Locked;
  };
  hide(G, "Function", lockConstructor(Function.prototype, "Function"));
  lockConstructor(
    getPrototypeOf(async () => {}),
    "AsyncFunction",
  );
  lockConstructor(
    getPrototypeOf(function* () {}),
    "GeneratorFunction",
  );
  lockConstructor(
    getPrototypeOf(async function* () {}),
    "AsyncGeneratorFunction",
  );
  for (const name of ["eval", "SharedArrayBuffer", "Atomics", "WebAssembly", "InternalError"])
    delete (G as never)[name];
  hide(G, "structuredClone", (value: unknown) => loadMarshal().clone(value));

  // These generic methods loop up to `length` natively, never polling for interrupts: on a huge sparse array or
  // array-like they froze the host for minutes (measured: 541 s for `new Array(2 ** 32 - 1).join("x")`), out of
  // reach of the safety cap and of terminate(). A real array that long cannot fit in the run's memory
  // (`maxArrayLength` is the memory limit over 8 bytes per element), so such lengths are refused up front.
  const ArrayProto = Array.prototype as unknown as Record<string, Fn>;
  const looping = ["join", "toString", "toLocaleString", "indexOf", "lastIndexOf", "includes", "fill", "copyWithin"];
  for (const name of [...looping, "reverse", "slice", "splice", "shift", "unshift", "flat", "concat"]) {
    const original = ArrayProto[name] as Fn;
    const guarded = {
      [name](this: { length?: unknown }, ...args: unknown[]) {
        const length = this === null || this === undefined ? 0 : Number(this.length);
        if (length > maxArrayLength) {
          throw makeError(
            RangeError,
            "RangeError",
            `Array.prototype.${name}: length ${length} is more than this sandbox can hold`,
          );
        }
        return apply(original, this, args);
      },
    }[name] as Fn;
    defineProperty(guarded, "length", { value: original.length });
    hide(ArrayProto, name, guarded);
  }
  const resolved = Promise.resolve();
  const then = I.promiseThen;
  hide(G, "queueMicrotask", (callback: () => void) => {
    if (typeof callback !== "function")
      throw makeError(TypeError, "TypeError", "queueMicrotask: callback must be a function");
    then(resolved, () => callback());
  });

  // Made here rather than by the library's `newPromise`, which reads its resolvers through a view of the wasm
  // memory taken before the call: when creating the promise grows the memory, that view is detached and the
  // run failed with "Cannot perform %TypedArray%.prototype.values on a detached ArrayBuffer".
  const PromiseCtor = Promise;
  function deferred() {
    const made = { __proto__: null, promise: undefined as unknown, resolve: undefined as unknown, reject: undefined };
    made.promise = new PromiseCtor((resolve, reject) => {
      made.resolve = resolve;
      made.reject = reject as never;
    });
    return made as never;
  }

  return { intrinsics: I, stage, evaluating, hasExport, runExport, describeError, deferred };
}

/** The core prelude as an expression evaluating to the function, ready for `evalCode`. */
export const guestCoreSource = `(${guestCore.toString()})`;
