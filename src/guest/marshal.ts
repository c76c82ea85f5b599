/**
 * The guest's marshaling half: guest values <-> tapes (see `../marshal/tape.ts`). Compiled on a run's first
 * object crossing, possibly after user code has run, so it reaches nothing global: every intrinsic comes from the
 * core prelude's capture (`Intrinsics`). Guest getters, proxies and `toJSON` run here, inside the guest, never on
 * the host; `toJSON` is never called at all.
 *
 * Shipped as source text: `guestMarshal` must not close over anything in this file.
 * The constants it repeats from `../marshal/tape.ts` are checked against it by `test/guest-constants.test.ts`.
 * @module
 */
import type { HostCall, Intrinsics } from "./core.js";

/** What the marshaling half hands back. */
export interface MarshalInternals {
  /** Value -> `[tape, side]` in the given mode; throws `SerializationError` for what cannot cross. */
  encode(value: unknown, mode: number): [string, unknown[]];
  /** `tape` + side values -> a guest value. */
  decode(tape: string, ...side: unknown[]): unknown;
  /** The guest's `structuredClone`. */
  clone(value: unknown): unknown;
}

export function guestMarshal(I: Intrinsics, hostCall: HostCall): MarshalInternals {
  const MODE_CLONE = 0;
  const MODE_CALL = 1;
  const MODE_LOG = 2;
  const OP_CALL = 0;
  const OP_SETTLE = 3;
  const { define, text, stringify, mapGet, mapSet, getPrototypeOf } = I;

  const serializationError = (message: string) =>
    I.makeError(I.errorTypes.TypeError as ErrorConstructor, "SerializationError", message);
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
      return typeof name === "string" && name !== "" ? `[${kind}: ${name}]` : `[${kind} (anonymous)]`;
    } catch {
      return "[Function]";
    }
  };

  // Guest promises handed to the host are numbered here and settled through OP_SETTLE.
  let nextPromise = 0;
  // Guest stand-ins of host functions, so a host function handed back arrives as itself.
  const hostFunctionIds = new I.WeakMap<object, number>();
  const hostFunctions = new I.Map<number, unknown>();

  function encode(value: unknown, mode: number): [string, unknown[]] {
    const ids = new I.Map<object, number | string>();
    const side: unknown[] = [];
    let nextId = 0;
    const toSide = (item: unknown) => {
      const index = side.length;
      define(side, index, item);
      return index;
    };
    const entries = (list: string[], source: Record<string, unknown>) => {
      let out = "";
      for (let i = 0; i < list.length; i++) {
        const key = list[i] as string;
        out += `${i === 0 ? "" : ","}${stringify(key)},${enc(source[key])}`;
      }
      return out;
    };
    // The id of an object logged as a placeholder string stands for that string: a second reference to it must not
    // become `["r",id]`, which the host cannot resolve (it fails the whole run).
    const describeAs = (object: object, placeholder: string) => {
      mapSet(ids, object, placeholder);
      return placeholder;
    };
    const enc = (v: unknown): string => {
      switch (typeof v) {
        case "string":
          return stringify(v);
        case "number":
          // biome-ignore lint/suspicious/noSelfCompare: Number.isNaN is the guest's to replace.
          if (v !== v) return '["n","NaN"]';
          if (v === 1 / 0) return '["n","Infinity"]';
          if (v === -1 / 0) return '["n","-Infinity"]';
          if (v === 0 && 1 / v < 0) return '["n","-0"]';
          return `${v}`;
        case "boolean":
          return v ? "true" : "false";
        case "undefined":
          return '["u"]';
        case "bigint":
          return `["b","${I.bigIntToString(v)}"]`;
        case "symbol":
          if (mode === MODE_LOG) return stringify(text(v));
          throw serializationError(`${text(v)} cannot be cloned: symbols do not cross the sandbox boundary`);
      }
      if (v === null) return "null";
      const object = v as Record<string, unknown>;
      const seen = mapGet(ids, object) as number | string | undefined;
      // A string is the placeholder of a value the log mode describes instead of encoding (see `describeAs`).
      if (seen !== undefined) return typeof seen === "string" ? seen : `["r",${seen}]`;
      if (typeof object === "function") {
        const hostId = I.weakGet(hostFunctionIds, object);
        if (hostId !== undefined && mode === MODE_CALL) return `["f",${hostId},"",0]`;
        if (mode === MODE_LOG) return stringify(functionLabel(object));
        throw serializationError(`${functionLabel(object)} cannot be cloned: functions do not leave the sandbox`);
      }
      const id = nextId++;
      mapSet(ids, object, id);
      if (I.isArray(object)) {
        const length = object.length as unknown;
        // A Proxy of an array answers `length` itself, and the length is spliced into the tape as is: a string
        // there could forge any tape entry (a host promise in a result, a host function in a report).
        if (typeof length !== "number" || length >>> 0 !== length) {
          if (mode === MODE_LOG) return describeAs(object, '"[Array]"');
          throw serializationError("An array whose length is not an array length cannot be cloned");
        }
        const list = I.keys(object);
        if (list.length === length && (length === 0 || list[length - 1] === `${length - 1}`)) {
          let out = "";
          for (let i = 0; i < length; i++) out += (i === 0 ? "" : ",") + enc(object[i]);
          return `["a",${id},[${out}]]`;
        }
        return `["A",${id},${length},[${entries(list, object)}]]`;
      }
      const proto = getPrototypeOf(object);
      if (proto === I.ObjectProto || proto === null) return `["o",${id},[${entries(I.keys(object), object)}]]`;
      if (is(I.dateGetTime, object)) return `["d",${id},${enc(I.dateGetTime(object))}]`;
      if (is((m) => I.mapHas(m, undefined), object)) {
        let out = "";
        I.mapForEach(object, (item: unknown, key: unknown) => {
          out += `${out === "" ? "" : ","}${enc(key)},${enc(item)}`;
        });
        return `["m",${id},[${out}]]`;
      }
      if (is((s) => I.setHas(s, undefined), object)) {
        let out = "";
        I.setForEach(object, (item: unknown) => {
          out += (out === "" ? "" : ",") + enc(item);
        });
        return `["s",${id},[${out}]]`;
      }
      if ((object as object) !== I.RegExpProto && is(I.regExpSource, object)) {
        return `["x",${id},${stringify(I.regExpSource(object))},${stringify(I.regExpFlags(object))}]`;
      }
      if (is(I.bufferByteLength, object)) return `["B",${id},${toSide(object)}]`;
      const kind = I.typedArrayTag(object);
      if (kind !== undefined) {
        const buffer = enc(I.typedArrayBuffer(object));
        return `["t",${id},"${kind}",${buffer},${I.typedArrayOffset(object)},${I.typedArrayLength(object)}]`;
      }
      if (is(I.viewBuffer, object)) {
        return `["v",${id},${enc(I.viewBuffer(object))},${I.viewOffset(object)},${I.viewLength(object)}]`;
      }
      if (isPromise(object)) {
        if (mode === MODE_LOG) return describeAs(object, '"[Promise]"');
        if (mode !== MODE_CALL) throw serializationError("A Promise cannot be cloned: await it first");
        const promise = nextPromise++;
        I.promiseThen(
          object,
          (result: unknown) => settle(promise, result, true),
          (reason: unknown) => settle(promise, reason, false),
        );
        return `["p",${id},${promise}]`;
      }
      if (I.isError(object)) {
        const name = stringify(text(object.name));
        return `["e",${id},${name},${stringify(text(object.message))},${stringify(text(object.stack))}]`;
      }
      if (mode !== MODE_LOG) {
        throw serializationError(
          `An instance of ${className(object)} cannot be cloned: only plain objects, arrays, Map, Set, Date, RegExp, Error, ArrayBuffer and typed arrays cross the sandbox boundary`,
        );
      }
      return `["o",${id},[${entries(I.keys(object), object)}]]`;
    };
    const tape = enc(value);
    return [tape, side];
  }

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
    const fn = (...args: unknown[]) => {
      const encoded = encode(args, MODE_CALL);
      return hostCall(OP_CALL, id, encoded[0], encoded[1]);
    };
    I.hide(fn, "name", name);
    I.hide(fn, "length", length);
    I.weakSet(hostFunctionIds, fn, id);
    mapSet(hostFunctions, id, fn);
    return fn;
  }

  function decode(tape: string, ...side: unknown[]): unknown {
    return decodeTree(I.parse(tape), side, false);
  }

  function decodeTree(tree: unknown, side: unknown[], copyBuffers: boolean): unknown {
    const refs = new I.Map<number, unknown>();
    const dec = (node: unknown): unknown => {
      if (typeof node !== "object" || node === null) return node;
      const n = node as unknown[];
      const tag = n[0] as string;
      const id = n[1] as number;
      const list = n[2] as unknown[];
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
        case "e": {
          const ctor = I.errorTypes[n[2] as string] ?? (I.errorTypes.Error as ErrorConstructor);
          const error = I.makeError(ctor, n[2] as string, n[3] as string);
          if (n[4] !== "") I.hide(error, "stack", n[4]);
          out = error;
          break;
        }
        case "B": {
          const buffer = side[n[2] as number];
          out = copyBuffers ? I.bufferSlice(buffer, 0) : buffer;
          break;
        }
        case "t":
        case "v": {
          const ctor = tag === "v" ? I.DataView : I.typedArrays[n[2] as string];
          const at = tag === "v" ? 2 : 3;
          if (ctor === undefined) throw serializationError(`Unknown typed array ${text(n[2])}`);
          const buffer = dec(n[at]) as ArrayBuffer;
          out = new ctor(buffer, n[at + 1] as number, n[at + 2] as number);
          break;
        }
        default:
          throw serializationError(`Malformed value: ${text(tag)}`);
      }
      mapSet(refs, id, out);
      return out;
    };
    return dec(tree);
  }

  const clone = (value: unknown) => {
    const encoded = encode(value, MODE_CLONE);
    return decodeTree(I.parse(encoded[0]), encoded[1], true);
  };

  return { encode, decode, clone };
}

/** The marshaling half as an expression evaluating to the function, ready for `evalCode`. */
export const guestMarshalSource = `(${guestMarshal.toString()})`;
