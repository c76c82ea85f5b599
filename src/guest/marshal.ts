/**
 * The guest's marshaling half: guest values <-> tapes (see `../values/tape.ts`). Compiled on a run's first
 * object crossing, possibly after user code has run, so it reaches nothing global: every intrinsic comes from the
 * core prelude's capture (`Intrinsics`). Guest getters, proxies and `toJSON` run here, inside the guest, never on
 * the host; `toJSON` is never called at all.
 *
 * Shipped as source text: `guestMarshal` must not close over anything in this file. It writes no template literal
 * with a substitution: the engine builds one by calling `String.prototype.concat`, which the guest can replace.
 * The constants it repeats from `../values/tape.ts` are checked against it by `test/core/guest-constants.test.ts`.
 * @module
 */
import type { HostCall, HostFunctionCall, Intrinsics } from "./core.js";

/** What the marshaling half hands back. */
export interface MarshalInternals {
  /**
   * Value -> `[tape, side]` in the given mode; throws `SerializationError` for what cannot cross. `plainLevels`: the
   * host read the value as plain data that many levels deep (see `core/plain-data.ts`).
   */
  encode(value: unknown, mode: number, plainLevels?: number): [string, unknown[]];
  /** `tape` + side values -> a guest value. */
  decode(tape: string, ...side: unknown[]): unknown;
  /** A host function's arguments -> `[tape, side]`, for the host when one of them is not a primitive it reads. */
  encodeArguments(...args: unknown[]): [string, unknown[]];
  /** The guest's `structuredClone(value, options)`: the HTML structured clone algorithm, `transfer` included. */
  clone(value: unknown, options: unknown): unknown;
}

export function guestMarshal(I: Intrinsics, hostCall: HostCall, call: HostFunctionCall): MarshalInternals {
  const MODE_CALL = 1;
  const MODE_LOG = 2;
  const MODE_STRUCTURED_CLONE = 3;
  const OP_SETTLE = 3;
  const { define, text, stringify, mapGet, mapSet, getPrototypeOf, keys, hasOwn } = I;
  const { isArray, isProxy, lookupGetter } = I;

  const serializationError = (message: string) =>
    I.makeError(I.errorTypes.TypeError as ErrorConstructor, "SerializationError", message);
  const typeError = (message: string) => I.makeError(I.errorTypes.TypeError as ErrorConstructor, "TypeError", message);
  /** What the HTML algorithm throws: a DOMException named DataCloneError, here an Error with its name and code. */
  const dataCloneError = (message: string) => {
    const error = I.makeError(I.errorTypes.Error as ErrorConstructor, "DataCloneError", message);
    I.hide(error, "code", 25);
    return error;
  };
  const is = (check: (self: unknown) => unknown, value: unknown) => {
    try {
      check(value);
      return true;
    } catch {
      return false;
    }
  };
  const isPromise = (value: object) => {
    try {
      return I.apply(I.promiseResolve, I.Promise, [value]) === value;
    } catch {
      return false;
    }
  };
  const className = (value: object) => {
    try {
      const name = (getPrototypeOf(value) as { constructor?: { name?: unknown } } | null)?.constructor?.name;
      return typeof name === "string" && name !== "" ? name : "Object";
    } catch {
      return "Object";
    }
  };
  const functionLabel = (fn: object) => {
    try {
      const kind = I.startsWith(I.functionToString(fn), "class") ? "class" : "Function";
      const name = (fn as { name?: unknown }).name;
      return typeof name === "string" && name !== "" ? "[" + kind + ": " + name + "]" : "[" + kind + " (anonymous)]";
    } catch {
      return "[Function]";
    }
  };

  // Frames of the runtime's own modules (`runcode:...`), and the native frames they called, are not the user's:
  // a stack that crosses the boundary keeps the user's frames only. Linear in the stack's length.
  const userFrames = (stack: string): string => {
    if ((I.indexOf(stack, "(runcode:") as number) < 0) return stack;
    let out = "";
    let natives = "";
    for (let at = 0; at < stack.length; ) {
      const newline = I.indexOf(stack, "\n", at) as number;
      const next = newline < 0 ? stack.length : newline + 1;
      const line = I.stringSlice(stack, at, next) as string;
      if ((I.indexOf(line, "(runcode:") as number) >= 0) natives = "";
      else if ((I.indexOf(line, "(native)") as number) >= 0) natives += line;
      else {
        out += natives + line;
        natives = "";
      }
      at = next;
    }
    return out + natives;
  };
  /** ToString, as a template literal converts (a symbol throws). */
  const toText = (value: unknown) => (typeof value === "symbol" ? "" + (value as never as string) : I.String(value));
  // The own data property `key` of an error, as structured clone reads `message` and `cause` (accessors are not).
  const ownData = (object: object, key: string): { value: unknown } | undefined => {
    const descriptor = I.getOwnPropertyDescriptor(object, key);
    return descriptor !== undefined && hasOwn(descriptor, "value") ? (descriptor as { value: unknown }) : undefined;
  };
  /**
   * What the HTML algorithm makes of an object none of the other kinds claimed: a wrapper's primitive (`[value]`),
   * `undefined` for an ordinary object, or a refusal. Only a prototype on its chain names a kind to check the
   * brand of, so a class instance costs no exception. Generators, iterators and arguments objects have no brand
   * check that changes nothing: they are copied as the ordinary objects they look like.
   */
  const wrapped = (object: object): [unknown] | undefined => {
    for (let p = getPrototypeOf(object); p !== null; p = getPrototypeOf(p)) {
      const kind = mapGet(I.slotted, p) as { wrapper: boolean; check: (self: unknown) => unknown } | undefined;
      if (kind === undefined || !is(kind.check, object)) continue;
      if (kind.wrapper) return [kind.check(object)];
      throw dataCloneError("An instance of " + className(object) + " cannot be cloned");
    }
    return undefined;
  };
  const inBounds = (view: object, dataView: boolean) =>
    is(dataView ? I.viewLength : (v) => I.typedArrayAt(v, -1 / 0), view);
  /**
   * Whether a view's length tracks its resizable buffer. JavaScript has no way to ask, so the buffer's size is
   * changed and put back, with intrinsics only (no guest code runs meanwhile): grown by what adds one element to a
   * tracking view, or, at its maximum, shrunk by one byte past the view's last whole element (those bytes are
   * saved and written back), which puts a fixed-length view out of bounds and leaves a tracking one in.
   */
  const tracksLength = (view: object, buffer: object, element: number, dataView: boolean): boolean => {
    if (!I.bufferResizable(buffer)) return false;
    const size = () => (dataView ? I.viewLength(view) : I.typedArrayLength(view)) as number;
    const count = size();
    const offset = (dataView ? I.viewOffset(view) : I.typedArrayOffset(view)) as number;
    const length = I.bufferByteLength(buffer) as number;
    const rest = (length - offset) % element;
    // A view that ends before the buffer's last whole element is fixed-length.
    if (offset + count * element !== length - rest) return false;
    const grow = element - rest;
    if ((I.bufferMaxByteLength(buffer) as number) - length >= grow) {
      I.bufferResize(buffer, length + grow);
      const tracking = size() !== count;
      I.bufferResize(buffer, length);
      return tracking;
    }
    // No size of this buffer tells an empty fixed view from an empty tracking one: they behave the same.
    if (count === 0) return false;
    const Bytes = I.typedArrays.Uint8Array as unknown as new (...args: unknown[]) => object;
    const cut = length - rest - 1;
    const saved = new Bytes(rest + 1);
    I.typedArraySet(saved, new Bytes(buffer, cut, rest + 1));
    I.bufferResize(buffer, cut);
    const tracking = inBounds(view, dataView);
    I.bufferResize(buffer, length);
    I.typedArraySet(new Bytes(buffer), saved, cut);
    return tracking;
  };

  // Guest promises handed to the host are numbered here and settled through OP_SETTLE.
  let nextPromise = 0;
  // Guest stand-ins of host functions, so a host function handed back arrives as itself.
  const hostFunctionIds = new I.WeakMap<object, number>();
  const hostFunctions = new I.Map<number, unknown>();

  /**
   * Thrown by an encoding that writes plain subtrees as JSON at the first step that could run guest code (a getter, a
   * proxy's trap, a promise's `then`, an error's `name`, a function's `name`) or that meets an object a second time.
   * Until then it ran no guest code, so the value is encoded again without JSON and guest code runs exactly as the
   * tape's encoder runs it, and no JSON text ever holds an object the tape refers to twice.
   */
  const TAPE_ONLY = { __proto__: null };

  // The state of the encoding under way, kept here rather than in closures made for each one (which cost more than
  // encoding a small value). A getter the encoder calls may encode in turn: `encode` saves and restores it.
  let encoding = false;
  let mode = 0;
  // The guest's own structuredClone follows the HTML algorithm; the boundary keeps its own rules (docs/contract.md).
  let html = false;
  /** Plain subtrees are being written as JSON (see `TAPE_ONLY`). */
  let json = false;
  let ids = new I.Map<object, number | string>();
  let side: unknown[] = [];
  let nextId = 0;
  // Levels of arrays and objects the encoder is inside, the most it was, and up to which `JSON.stringify` is safe.
  let level = 0;
  let deepest = 0;
  let safeLevels = -1;

  /**
   * Value -> `[tape, side]`. Plain subtrees (plain objects and dense arrays of the standard prototypes whose members
   * are data properties holding strings, booleans, null, finite numbers other than -0 and such subtrees) cross as
   * `["j",json]`, written by the engine's own `JSON.stringify`; everything else as the tape's own nodes.
   */
  function encode(value: unknown, as: number, plainLevels?: number): [string, unknown[]] {
    const outer = encoding ? [mode, html, json, ids, side, nextId, level, deepest, safeLevels] : undefined;
    encoding = true;
    try {
      try {
        return encodeAs(value, as, true, plainLevels);
      } catch (error) {
        if (error !== TAPE_ONLY) throw error;
      }
      return encodeAs(value, as, false);
    } finally {
      encoding = outer !== undefined;
      if (outer !== undefined) {
        mode = outer[0] as number;
        html = outer[1] as boolean;
        json = outer[2] as boolean;
        ids = outer[3] as Map<object, number | string>;
        side = outer[4] as unknown[];
        nextId = outer[5] as number;
        level = outer[6] as number;
        deepest = outer[7] as number;
        safeLevels = outer[8] as number;
      }
    }
  }

  /** `plainLevels`: the host found `value` plain data that many levels deep, so it is written as JSON at once. */
  function encodeAs(value: unknown, as: number, asJson: boolean, plainLevels = 0): [string, unknown[]] {
    mode = as;
    html = as === MODE_STRUCTURED_CLONE;
    json = asJson;
    ids = new I.Map<object, number | string>();
    side = [];
    nextId = 0;
    level = 0;
    deepest = plainLevels;
    safeLevels = -1;
    return [plainLevels > 0 ? plainTape(value) : tape(value), side];
  }

  /** What cannot be cloned; the boundary says why. */
  const cannot = (what: string, why: string) =>
    html ? dataCloneError(what + " cannot be cloned") : serializationError(what + " cannot be cloned: " + why);
  const toSide = (item: unknown) => {
    const index = side.length;
    define(side, index, item);
    return index;
  };
  /**
   * Throws unless the engine's `JSON.stringify` runs no guest code on plain data `deepest` levels deep. It calls a
   * `toJSON` the standard prototypes hold, and it keeps the objects it is inside in an array it grows by assignment,
   * which reaches index properties of Array.prototype and Object.prototype (a setter there would run, a read-only
   * one throw).
   */
  const checkStringify = () => {
    if (safeLevels < 0) {
      const safe =
        (I.ArrayProto as unknown[]).length === 0 &&
        getPrototypeOf(I.ArrayProto) === I.ObjectProto &&
        !hasOwn(I.ArrayProto, "toJSON") &&
        !hasOwn(I.ObjectProto, "toJSON");
      if (!safe) throw TAPE_ONLY;
      safeLevels = 0;
    }
    for (; safeLevels < deepest; safeLevels++) if (hasOwn(I.ObjectProto, safeLevels)) throw TAPE_ONLY;
  };
  /** The tape of a value `enc` found plain: a primitive stands for itself, an object crosses as `["j",json]`. */
  const plainTape = (v: unknown): string => {
    if (typeof v !== "object" || v === null) return stringify(v);
    if (safeLevels < deepest) checkStringify();
    return '["j",' + stringify(v) + "]";
  };
  /** The tape of `v`, or `undefined` when it is plain: a JSON primitive, or while writing JSON a plain subtree. */
  const enc = (v: unknown): string | undefined =>
    (typeof v === "object" && v !== null) || typeof v === "function"
      ? encObject(v as Record<string, unknown>)
      : encPrimitive(v);
  const tape = (v: unknown): string => enc(v) ?? plainTape(v);
  /** The tape of the first `count` members, all plain data properties: read again, as no guest code ran since. */
  const plainMembers = (object: Record<string, unknown>, names: string[] | undefined, count: number) => {
    let out = "";
    for (let i = 0; i < count; i++) {
      const key = names === undefined ? i : (names[i] as string);
      out += (i === 0 ? "" : ",") + (names === undefined ? "" : stringify(key) + ",") + plainTape(object[key]);
    }
    return out;
  };
  // The id of an object logged as a placeholder string stands for that string: a second reference to it must not
  // become `["r",id]`, which the host cannot resolve (it fails the whole run).
  const describeAs = (object: object, placeholder: string) => {
    mapSet(ids, object, placeholder);
    return placeholder;
  };
  // What structured clone refuses (a detached buffer, a view out of its buffer's bounds): logged as `label`.
  const refuse = (object: object, label: string, message: string) => {
    if (mode === MODE_LOG) return describeAs(object, stringify(label));
    throw html ? dataCloneError(message) : serializationError(message);
  };
  // Primitives, objects and the rarer kinds of object each have their own function: a call costs more the more
  // locals its function has. Arrays and objects recurse through `encObject` alone, one frame a level, so the
  // engine's own stack check stops a deep value before the host's stack runs out.
  const encPrimitive = (v: unknown): string | undefined => {
    switch (typeof v) {
      case "number":
        if (v - v === 0) return v !== 0 || 1 / v > 0 ? undefined : '["n","-0"]';
        // biome-ignore lint/suspicious/noSelfCompare: Number.isNaN is the guest's to replace.
        if (v !== v) return '["n","NaN"]';
        return v > 0 ? '["n","Infinity"]' : '["n","-Infinity"]';
      case "undefined":
        return '["u"]';
      case "bigint":
        return '["b","' + I.bigIntToString(v) + '"]';
      case "symbol":
        if (mode === MODE_LOG) return stringify(text(v));
        throw cannot(text(v), "symbols do not cross the sandbox boundary");
    }
    // Strings, booleans and null.
    return undefined;
  };
  const encObject = (object: Record<string, unknown>): string | undefined => {
    const seen = mapGet(ids, object) as number | string | undefined;
    if (seen !== undefined) {
      if (json) throw TAPE_ONLY;
      // A string is the placeholder of a value the log mode describes instead of encoding (see `describeAs`).
      return typeof seen === "string" ? seen : '["r",' + seen + "]";
    }
    if (typeof object === "function") {
      const hostId = I.weakGet(hostFunctionIds, object);
      if (hostId !== undefined && mode === MODE_CALL) return '["f",' + hostId + ',"",0]';
      if (json) throw TAPE_ONLY;
      if (mode === MODE_LOG) return stringify(functionLabel(object));
      throw cannot(functionLabel(object), "functions do not leave the sandbox");
    }
    if (isProxy(object)) {
      if (json) throw TAPE_ONLY;
      // A proxy has internal slots of its own: the HTML algorithm refuses it before any trap runs.
      if (html) throw dataCloneError("A Proxy cannot be cloned");
    }
    const id = nextId++;
    mapSet(ids, object, id);
    // Arrays cross as `["a",id,[items]]` when dense, else as `["A",id,length,[key,value,...]]`; other objects
    // the tape's own way, or as `["o",id,[key,value,...]]`. `plain`: the object itself may cross as JSON.
    let head: string;
    let names: string[] | undefined;
    let count: number;
    let plain: boolean;
    if (isArray(object)) {
      const length = object.length as unknown;
      // A Proxy of an array answers `length` itself, and the length is spliced into the tape as is: a string
      // there could forge any tape entry (a host promise in a result, a host function in a report).
      if (typeof length !== "number" || length >>> 0 !== length) {
        if (mode === MODE_LOG) return describeAs(object, '"[Array]"');
        throw serializationError("An array whose length is not an array length cannot be cloned");
      }
      names = keys(object);
      plain = names.length === length && (length === 0 || names[length - 1] === "" + (length - 1));
      if (plain) {
        head = '["a",' + id + ",[";
        names = undefined;
        count = length;
        plain = getPrototypeOf(object) === I.ArrayProto;
      } else {
        head = '["A",' + id + "," + length + ",[";
        count = names.length;
      }
    } else {
      const proto = getPrototypeOf(object);
      plain = proto === I.ObjectProto || proto === null;
      if (!plain) {
        const other = encOther(object, id);
        if (other !== undefined) return other;
      }
      head = '["o",' + id + ",[";
      names = keys(object);
      count = names.length;
    }
    let out = json ? undefined : "";
    if (++level > deepest) deepest = level;
    for (let i = 0; i < count; i++) {
      const key = names === undefined ? i : (names[i] as string);
      // The HTML algorithm skips a key an earlier getter deleted.
      if (html && names !== undefined && !hasOwn(object, key)) continue;
      if (json && lookupGetter(object, key) !== undefined) throw TAPE_ONLY;
      const item = object[key];
      // Strings, the most common members, are told first.
      const encoded =
        typeof item === "string"
          ? undefined
          : (typeof item === "object" && item !== null) || typeof item === "function"
            ? encObject(item as Record<string, unknown>)
            : encPrimitive(item);
      // While all members so far are plain, nothing is written: they are written once one is not.
      if (out === undefined) {
        if (encoded === undefined) continue;
        out = plainMembers(object, names, i);
      }
      out += (out === "" ? "" : ",") + (names === undefined ? "" : stringify(key) + ",") + (encoded ?? plainTape(item));
    }
    level--;
    // `JSON.stringify` would call an own `toJSON`, enumerable or not.
    if (out === undefined && plain && !hasOwn(object, "toJSON")) return undefined;
    return head + (out ?? plainMembers(object, names, count)) + "]]";
  };
  /** The tape of an object of another kind, or `undefined` for one copied as a plain object (not by the boundary). */
  const encOther = (object: Record<string, unknown>, id: number): string | undefined => {
    if (is(I.dateGetTime, object)) return '["d",' + id + "," + tape(I.dateGetTime(object)) + "]";
    if (is((m) => I.mapHas(m, undefined), object)) {
      let out = "";
      I.mapForEach(object, (item: unknown, key: unknown) => {
        out += (out === "" ? "" : ",") + tape(key) + "," + tape(item);
      });
      return '["m",' + id + ",[" + out + "]]";
    }
    if (is((s) => I.setHas(s, undefined), object)) {
      let out = "";
      I.setForEach(object, (item: unknown) => {
        out += (out === "" ? "" : ",") + tape(item);
      });
      return '["s",' + id + ",[" + out + "]]";
    }
    if ((object as object) !== I.RegExpProto && is(I.regExpSource, object)) {
      return '["x",' + id + "," + stringify(I.regExpSource(object)) + "," + stringify(I.regExpFlags(object)) + "]";
    }
    if (is(I.bufferByteLength, object)) {
      if (I.bufferDetached(object)) {
        return refuse(object, "[ArrayBuffer (detached)]", "A detached ArrayBuffer cannot be cloned");
      }
      const max = I.bufferResizable(object) ? "," + I.bufferMaxByteLength(object) : "";
      return '["B",' + id + "," + toSide(object) + max + "]";
    }
    const kind = I.typedArrayTag(object) as string | undefined;
    if (kind !== undefined) {
      if (!inBounds(object, false)) {
        const message = "A " + kind + " out of its buffer's bounds cannot be cloned";
        return refuse(object, "[" + kind + " (out of bounds)]", message);
      }
      const buffer = I.typedArrayBuffer(object) as object;
      const element = (I.typedArrays[kind] as unknown as { BYTES_PER_ELEMENT: number }).BYTES_PER_ELEMENT;
      const length = tracksLength(object, buffer, element, false) ? '"auto"' : I.typedArrayLength(object);
      return '["t",' + id + ',"' + kind + '",' + tape(buffer) + "," + I.typedArrayOffset(object) + "," + length + "]";
    }
    if (is(I.viewBuffer, object)) {
      if (!inBounds(object, true)) {
        return refuse(object, "[DataView (out of bounds)]", "A DataView out of its buffer's bounds cannot be cloned");
      }
      const buffer = I.viewBuffer(object) as object;
      const length = tracksLength(object, buffer, 1, true) ? '"auto"' : I.viewLength(object);
      return '["v",' + id + "," + tape(buffer) + "," + I.viewOffset(object) + "," + length + "]";
    }
    // What remains (promises, errors, wrappers, class instances) is read by steps that can run guest code.
    if (json) throw TAPE_ONLY;
    if (isPromise(object)) {
      if (mode === MODE_LOG) return describeAs(object, '"[Promise]"');
      if (mode !== MODE_CALL) throw cannot("A Promise", "await it first");
      const promise = nextPromise++;
      I.promiseThen(
        object,
        (result: unknown) => settle(promise, result, true),
        (reason: unknown) => settle(promise, reason, false),
      );
      return '["p",' + id + "," + promise + "]";
    }
    if (html ? I.errorIsError(object) : I.isError(object)) {
      // As structured clone reads an error: `name` by a get, `message` and `cause` only as own data properties.
      // The HTML algorithm keeps the seven standard names only (and converts the message with ToString); the
      // boundary keeps any name, as text.
      const got = object.name;
      const name = stringify(
        !html ? text(got) : typeof got === "string" && I.errorTypes[got] !== undefined ? got : "Error",
      );
      const message = ownData(object, "message");
      const said =
        message === undefined
          ? "null"
          : stringify(html ? toText(message.value) : message.value === undefined ? "undefined" : text(message.value));
      const stack = stringify(userFrames(text(object.stack)));
      const cause = ownData(object, "cause");
      const caused = cause === undefined ? "" : "," + tape(cause.value);
      return '["e",' + id + "," + name + "," + said + "," + stack + caused + "]";
    }
    if (html) {
      // Boolean, Number, String and BigInt wrappers are cloned; any other object is copied as a plain one (its
      // class is lost).
      const primitive = wrapped(object);
      if (primitive !== undefined) return '["P",' + id + "," + tape(primitive[0]) + "]";
    } else if (mode !== MODE_LOG) {
      throw cannot(
        "An instance of " + className(object),
        "only plain objects, arrays, Map, Set, Date, RegExp, Error, ArrayBuffer and typed arrays cross the sandbox boundary",
      );
    }
    return undefined;
  };

  function settle(promise: number, value: unknown, ok: boolean) {
    let encoded: [string, unknown[]];
    try {
      encoded = encode(value, MODE_CALL);
    } catch (error) {
      encoded = encode(error, MODE_CALL);
      ok = false;
    }
    hostCall(OP_SETTLE, promise, encoded[0], encoded[1], ok ? 1 : 0);
  }

  function hostFunction(id: number, name: string, length: number) {
    const known = mapGet(hostFunctions, id);
    if (known !== undefined) return known;
    // Bound to its number, the host's call function takes the arguments as they are: no guest code runs on the way,
    // and the host reads primitives itself (the rest it has encoded by `encodeArguments`).
    const fn = I.bind(call, id) as (...args: unknown[]) => unknown;
    I.hide(fn, "name", name);
    I.hide(fn, "length", length);
    I.weakSet(hostFunctionIds, fn, id);
    mapSet(hostFunctions, id, fn);
    return fn;
  }

  function decode(tape: string, ...side: unknown[]): unknown {
    return decodeTree(I.parse(tape), side, undefined);
  }

  /**
   * A tape's value. `cloned`: decoding the guest's own clone, whose buffers are copied, except those in the set
   * (transferred, so already the clone's own); otherwise the tape came from the host, whose fixed buffers are new.
   */
  function decodeTree(tree: unknown, side: unknown[], cloned: Set<unknown> | undefined): unknown {
    const refs = new I.Map<number, unknown>();
    // A named function expression: its own name is a binding of its frame. An arrow calling itself through `const dec`
    // captures that binding, a cycle only the engine's cycle collector frees, and with it `refs` and `side`: every
    // value decoded outlived its last reference (48 buffers of 1 MiB from the host, dropped in turn, ran out of 16 MiB).
    const dec = function dec(node: unknown): unknown {
      if (typeof node !== "object" || node === null) return node;
      const n = node as unknown[];
      // Members are read within the node's length: a read past the end (`["u"]`'s id, `["B",id,side]`'s maximum)
      // would go on to Array.prototype and Object.prototype, and run a getter the guest put there for that index.
      const size = n.length;
      const tag = n[0] as string;
      const id = (size > 1 ? n[1] : undefined) as number;
      const list = (size > 2 ? n[2] : undefined) as unknown[];
      let out: unknown;
      switch (tag) {
        case "u":
          return undefined;
        case "n":
          return n[1] === "-0" ? -0 : +(n[1] as string);
        case "b":
          return I.BigInt(n[1] as string);
        case "r":
          return mapGet(refs, id);
        case "j":
          // Plain JSON, parsed into fresh guest objects with the rest of the tape (`__proto__` an own key).
          return n[1];
        case "f":
          return hostFunction(id, n[2] as string, n[3] as number);
        case "p":
          out = side[n[2] as number];
          break;
        case "a": {
          const array: unknown[] = [];
          mapSet(refs, id, array);
          for (let i = 0; i < list.length; i++) define(array, i, dec(list[i]));
          return array;
        }
        case "A": {
          const array: unknown[] = [];
          mapSet(refs, id, array);
          const pairs = n[3] as unknown[];
          for (let i = 0; i < pairs.length; i += 2) define(array, pairs[i] as string, dec(pairs[i + 1]));
          array.length = list as unknown as number;
          return array;
        }
        case "o": {
          const object = {};
          mapSet(refs, id, object);
          for (let i = 0; i < list.length; i += 2) define(object, list[i] as string, dec(list[i + 1]));
          return object;
        }
        case "m": {
          const map = new I.Map();
          mapSet(refs, id, map);
          for (let i = 0; i < list.length; i += 2) mapSet(map, dec(list[i]), dec(list[i + 1]));
          return map;
        }
        case "s": {
          const set = new I.Set();
          mapSet(refs, id, set);
          for (let i = 0; i < list.length; i++) I.setAdd(set, dec(list[i]));
          return set;
        }
        case "d":
          out = new I.Date(dec(n[2]) as number);
          break;
        case "x":
          out = new I.RegExp(n[2] as string, n[3] as string);
          break;
        case "P":
          out = I.Object(dec(n[2]));
          break;
        case "e": {
          const standard = I.errorTypes[n[2] as string];
          const ctor = standard ?? (I.errorTypes.Error as ErrorConstructor);
          const error = n[3] === null ? new ctor() : new ctor(n[3] as string);
          if (standard === undefined) I.hide(error, "name", n[2]);
          // A stack from the host side is never the host's: the error shows the user frames it was made under.
          const made = I.getOwnPropertyDescriptor(error, "stack")?.value;
          I.hide(error, "stack", cloned !== undefined || n[4] !== "" ? n[4] : userFrames(text(made)));
          mapSet(refs, id, error);
          if (n.length > 5) I.hide(error, "cause", dec(n[5]));
          return error;
        }
        case "B": {
          const buffer = side[n[2] as number] as object;
          const max = (size > 3 ? n[3] : undefined) as number | undefined;
          if (cloned === undefined ? max === undefined : I.setHas(cloned, buffer)) {
            out = buffer;
            break;
          }
          // A copy made with intrinsics (`slice` would look up a species constructor the guest can replace).
          const length = I.bufferByteLength(buffer) as number;
          const copy =
            max === undefined
              ? new I.ArrayBuffer(length)
              : new I.ArrayBuffer(length, { __proto__: null, maxByteLength: max } as { maxByteLength: number });
          const Bytes = I.typedArrays.Uint8Array as unknown as new (buffer: unknown) => object;
          I.typedArraySet(new Bytes(copy), new Bytes(buffer));
          out = copy;
          break;
        }
        case "t":
        case "v": {
          const ctor = (tag === "v" ? I.DataView : I.typedArrays[n[2] as string]) as
            | (new (
                buffer: ArrayBuffer,
                byteOffset: number,
                length?: number,
              ) => unknown)
            | undefined;
          const at = tag === "v" ? 2 : 3;
          if (ctor === undefined) throw serializationError("Unknown typed array " + text(n[2]));
          const buffer = dec(n[at]) as ArrayBuffer;
          // `"auto"`: the length tracks a resizable buffer.
          out =
            n[at + 2] === "auto"
              ? new ctor(buffer, n[at + 1] as number)
              : new ctor(buffer, n[at + 1] as number, n[at + 2] as number);
          break;
        }
        default:
          throw serializationError("Malformed value: " + text(tag));
      }
      mapSet(refs, id, out);
      return out;
    };
    return dec(tree);
  }

  /** WebIDL's conversion of `options.transfer` (a sequence of objects), then the HTML algorithm's own checks. */
  const transferList = (options: unknown): object[] => {
    const list: object[] = [];
    if (options === undefined || options === null) return list;
    if (typeof options !== "object" && typeof options !== "function") {
      throw typeError("structuredClone: options must be an object");
    }
    const given = (options as { transfer?: unknown }).transfer;
    if (given === undefined) return list;
    const notIterable = "structuredClone: options.transfer must be an iterable of objects";
    if ((typeof given !== "object" && typeof given !== "function") || given === null) throw typeError(notIterable);
    const method = (given as Record<symbol, unknown>)[I.symbolIterator];
    if (typeof method !== "function") throw typeError(notIterable);
    const iterator = I.apply(method as () => unknown, given, []) as { next?: unknown };
    if ((typeof iterator !== "object" && typeof iterator !== "function") || iterator === null) {
      throw typeError(notIterable);
    }
    const next = iterator.next as () => unknown;
    for (;;) {
      const step = I.apply(next, iterator, []) as { done?: unknown; value?: unknown };
      if ((typeof step !== "object" && typeof step !== "function") || step === null) throw typeError(notIterable);
      if (step.done) break;
      const item = step.value;
      if ((typeof item !== "object" && typeof item !== "function") || item === null) throw typeError(notIterable);
      define(list, list.length, item);
    }
    const seen = new I.Set<object>();
    for (let i = 0; i < list.length; i++) {
      const item = list[i] as object;
      if (!is(I.bufferByteLength, item)) {
        throw dataCloneError(
          "Item " + i + " of the transfer list is not an ArrayBuffer (the only transferable object here)",
        );
      }
      if (I.setHas(seen, item))
        throw dataCloneError("Item " + i + " of the transfer list is an ArrayBuffer listed before");
      I.setAdd(seen, item);
    }
    return list;
  };

  const clone = (value: unknown, options: unknown) => {
    const transfer = transferList(options);
    const encoded = encode(value, MODE_STRUCTURED_CLONE);
    const side = encoded[1];
    // Serialized first, then each transferred buffer is detached, its contents moved to the clone.
    const moved = new I.Map<unknown, unknown>();
    const cloned = new I.Set<unknown>();
    for (let i = 0; i < transfer.length; i++) {
      const buffer = transfer[i] as object;
      if (I.bufferDetached(buffer))
        throw dataCloneError("Item " + i + " of the transfer list is a detached ArrayBuffer");
      const contents = I.bufferTransfer(buffer);
      mapSet(moved, buffer, contents);
      I.setAdd(cloned, contents);
    }
    for (let i = 0; i < side.length; i++) {
      const contents = mapGet(moved, side[i]);
      if (contents !== undefined) define(side, i, contents);
    }
    return decodeTree(I.parse(encoded[0]), side, cloned);
  };

  const encodeArguments = (...args: unknown[]) => encode(args, MODE_CALL);

  return { encode, decode, encodeArguments, clone };
}
