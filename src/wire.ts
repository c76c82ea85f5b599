/**
 * A lossless JSON encoding of every value a {@link CodeExecutionResult} can hold, for results that cross a
 * network (the Worker's `POST /run`) rather than a structured-clone channel.
 *
 * The format, in one paragraph: `null`, booleans, strings and finite numbers other than `-0` are themselves.
 * Dense arrays with no extra properties are JSON arrays. Plain objects are JSON objects whose keys starting with
 * `$` get one more `$` in front (`{"$t": 1}` travels as `{"$$t": 1}`), so an encoded plain object never has the key
 * `$t`. Every other value is a *tagged node*: an object with a `$t` key naming its type:
 *
 * | value | node |
 * |---|---|
 * | `undefined` | `{"$t":"undefined"}` |
 * | `NaN`, `Infinity`, `-Infinity`, `-0` | `{"$t":"number","v":"NaN"}` (`"Infinity"`, `"-Infinity"`, `"-0"`) |
 * | bigint | `{"$t":"bigint","v":"-12"}` (decimal) |
 * | sparse array or array with extra keys | `{"$t":"array","length":5,"v":{"0":…,"name":…}}` (escaped keys) |
 * | `Map` | `{"$t":"map","v":[[key, value], …]}` |
 * | `Set` | `{"$t":"set","v":[item, …]}` |
 * | `Date` | `{"$t":"date","v":<time value, encoded as a number>}` |
 * | `RegExp` | `{"$t":"regexp","source":"a+","flags":"gi"}` |
 * | `Error` | `{"$t":"error","name":"TypeError","message":"…","stack"?:"…","cause"?:…}` |
 * | `ArrayBuffer` | `{"$t":"arraybuffer","v":"<base64>"}` |
 * | typed array | `{"$t":"typedarray","kind":"Uint8Array","buffer":<node>,"byteOffset":0,"length":3}` |
 * | `DataView` | `{"$t":"dataview","buffer":<node>,"byteOffset":0,"byteLength":8}` |
 * | boxed primitive | `{"$t":"boxed","v":<encoded primitive>}` |
 * | second sighting of an object | `{"$t":"ref","id":3}` |
 *
 * Objects seen more than once (shared references and cycles) carry an `"id"` on their first occurrence, in
 * depth-first order; plain objects and dense arrays that need an id are wrapped as `{"$t":"object","id":n,"v":{…}}`
 * and `{"$t":"array","id":n,"length":n,"v":{…}}`. Data that needs none of this (the common case) is plain JSON, so
 * `curl` users read it as is. Views over one buffer share that buffer after decoding.
 *
 * Functions, symbols, and class instances other than the types above are not result values: `toWire` throws a
 * `TypeError` for the first two and encodes the own enumerable keys of the last as a plain object.
 * @module
 */
import { ERROR_TYPES, TYPED_ARRAYS } from "./marshal/tape.js";

/** A value `JSON.stringify` writes and `JSON.parse` reads back unchanged. */
export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };
type JsonObject = { [key: string]: JsonValue };

const TAG = "$t";

type TypedArray = ArrayBufferView & { length: number };

const escapeKey = (key: string): string => (key.startsWith("$") ? `$${key}` : key);
const unescapeKey = (key: string): string => (key.startsWith("$") ? key.slice(1) : key);

function typedArrayKind(value: object): string | undefined {
  if (!ArrayBuffer.isView(value) || value instanceof DataView) return undefined;
  const name = Object.prototype.toString.call(value).slice(8, -1);
  return Object.hasOwn(TYPED_ARRAYS, name) ? name : undefined;
}

/** `true` for an array whose every index is an own property and which has no other own enumerable keys. */
function isDense(array: unknown[]): boolean {
  const keys = Object.keys(array);
  if (keys.length !== array.length) return false;
  for (let i = 0; i < keys.length; i++) if (keys[i] !== String(i)) return false;
  return true;
}

function encodeNumber(n: number): JsonValue {
  if (Number.isFinite(n) && !Object.is(n, -0)) return n;
  return { [TAG]: "number", v: Object.is(n, -0) ? "-0" : String(n) };
}

/** Encodes `value` as JSON data that {@link fromWire} turns back into an equal value. */
export function toWire(value: unknown): JsonValue {
  // Pass 1: find objects reached more than once; only they get ids.
  const seen = new Set<object>();
  const shared = new Set<object>();
  const children = (object: object): unknown[] => {
    if (object instanceof Map) return [...object].flat();
    if (object instanceof Set) return [...object];
    if (ArrayBuffer.isView(object)) return [object.buffer];
    if (object instanceof Error) return "cause" in object ? [object.cause] : [];
    if (object instanceof Date || object instanceof RegExp || object instanceof ArrayBuffer) return [];
    return Object.values(object);
  };
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const item = stack.pop();
    if (typeof item !== "object" || item === null) continue;
    if (seen.has(item)) {
      shared.add(item);
      continue;
    }
    seen.add(item);
    stack.push(...children(item));
  }

  // Pass 2: encode, depth first, numbering shared objects in the order they are first written.
  const ids = new Map<object, number>();
  const entries = (object: object): JsonObject => {
    const out: JsonObject = {};
    // Defined, not assigned: a `__proto__` key stays an own property.
    for (const key of Object.keys(object))
      Object.defineProperty(out, escapeKey(key), {
        value: enc((object as Record<string, unknown>)[key]),
        writable: true,
        enumerable: true,
        configurable: true,
      });
    return out;
  };
  const enc = (item: unknown): JsonValue => {
    switch (typeof item) {
      case "string":
      case "boolean":
        return item;
      case "number":
        return encodeNumber(item);
      case "bigint":
        return { [TAG]: "bigint", v: item.toString() };
      case "undefined":
        return { [TAG]: "undefined" };
      case "symbol":
      case "function":
        throw new TypeError(`toWire: a ${typeof item} is not a result value`);
    }
    if (item === null) return null;
    const object = item as object;
    const known = ids.get(object);
    if (known !== undefined) return { [TAG]: "ref", id: known };
    const id: JsonObject = {};
    if (shared.has(object)) {
      ids.set(object, ids.size);
      id.id = ids.size - 1;
    }
    const node = (tag: string, fields: JsonObject): JsonObject => ({ [TAG]: tag, ...id, ...fields });

    if (Array.isArray(object)) {
      if (id.id === undefined && isDense(object)) return object.map(enc);
      return node("array", { length: object.length, v: entries(object) });
    }
    if (object instanceof Map) return node("map", { v: [...object].map(([k, v]) => [enc(k), enc(v)]) });
    if (object instanceof Set) return node("set", { v: [...object].map(enc) });
    if (object instanceof Date) return node("date", { v: encodeNumber(object.getTime()) });
    if (object instanceof RegExp) return node("regexp", { source: object.source, flags: object.flags });
    if (object instanceof Error) {
      const fields: JsonObject = { name: String(object.name), message: String(object.message) };
      if (typeof object.stack === "string") fields.stack = object.stack;
      if ("cause" in object) fields.cause = enc(object.cause);
      return node("error", fields);
    }
    if (object instanceof ArrayBuffer) return node("arraybuffer", { v: toBase64(new Uint8Array(object)) });
    if (object instanceof DataView)
      return node("dataview", {
        buffer: enc(object.buffer),
        byteOffset: object.byteOffset,
        byteLength: object.byteLength,
      });
    const kind = typedArrayKind(object);
    if (kind !== undefined) {
      const view = object as TypedArray;
      return node("typedarray", { kind, buffer: enc(view.buffer), byteOffset: view.byteOffset, length: view.length });
    }
    if (object instanceof Number || object instanceof String || object instanceof Boolean || object instanceof BigInt)
      return node("boxed", { v: enc(object.valueOf()) });
    if (id.id !== undefined) return node("object", { v: entries(object) });
    return entries(object);
  };
  return enc(value);
}

function malformed(what: string): never {
  throw new TypeError(`fromWire: malformed value (${what})`);
}

const isObject = (json: JsonValue | undefined): json is JsonObject =>
  typeof json === "object" && json !== null && !Array.isArray(json);

function decodeNumber(json: JsonValue | undefined): number {
  if (typeof json === "number") return json;
  if (isObject(json) && json[TAG] === "number") {
    const v = json.v;
    if (v === "NaN") return Number.NaN;
    if (v === "Infinity") return Number.POSITIVE_INFINITY;
    if (v === "-Infinity") return Number.NEGATIVE_INFINITY;
    if (v === "-0") return -0;
  }
  return malformed("number");
}

const int = (json: JsonValue | undefined, what: string): number =>
  typeof json === "number" && Number.isSafeInteger(json) && json >= 0 ? json : malformed(what);
const str = (json: JsonValue | undefined, what: string): string => (typeof json === "string" ? json : malformed(what));

/** Decodes what {@link toWire} wrote. Throws a `TypeError` on data that is not in this format. */
export function fromWire(json: JsonValue): unknown {
  const refs = new Map<number, unknown>();
  const define = (target: object, key: string, value: unknown) =>
    Object.defineProperty(target, key, { value, writable: true, enumerable: true, configurable: true });
  const keep = <T>(node: JsonObject, value: T): T => {
    if (node.id !== undefined) refs.set(int(node.id, "id"), value);
    return value;
  };
  const fill = (target: object, fields: JsonValue | undefined): void => {
    if (!isObject(fields)) malformed("fields");
    for (const key of Object.keys(fields)) define(target, unescapeKey(key), dec(fields[key] as JsonValue));
  };

  const dec = (node: JsonValue): unknown => {
    if (typeof node !== "object" || node === null) return node;
    if (Array.isArray(node)) return node.map(dec);
    const tag = node[TAG];
    if (tag === undefined) {
      const object = {};
      fill(object, node);
      return object;
    }
    switch (tag) {
      case "undefined":
        return undefined;
      case "number":
        return decodeNumber(node);
      case "bigint":
        return BigInt(str(node.v, "bigint"));
      case "ref": {
        const id = int(node.id, "ref");
        return refs.has(id) ? refs.get(id) : malformed(`ref ${id} before its object`);
      }
      case "object": {
        const object = keep(node, {});
        fill(object, node.v);
        return object;
      }
      case "array": {
        const array = keep(node, [] as unknown[]);
        fill(array, node.v);
        array.length = int(node.length, "array length");
        return array;
      }
      case "map": {
        const map = keep(node, new Map());
        if (!Array.isArray(node.v)) malformed("map");
        for (const pair of node.v) {
          if (!Array.isArray(pair) || pair.length !== 2) malformed("map entry");
          map.set(dec(pair[0] as JsonValue), dec(pair[1] as JsonValue));
        }
        return map;
      }
      case "set": {
        const set = keep(node, new Set());
        if (!Array.isArray(node.v)) malformed("set");
        for (const item of node.v) set.add(dec(item));
        return set;
      }
      case "date":
        return keep(node, new Date(decodeNumber(node.v)));
      case "regexp":
        return keep(node, new RegExp(str(node.source, "regexp source"), str(node.flags, "regexp flags")));
      case "error": {
        const name = str(node.name, "error name");
        const Ctor = ERROR_TYPES[name] ?? Error;
        const error = keep(node, new Ctor(str(node.message, "error message")));
        if (error.name !== name) define(error, "name", name);
        if (node.stack === undefined) delete error.stack;
        else
          Object.defineProperty(error, "stack", {
            value: str(node.stack, "stack"),
            writable: true,
            configurable: true,
          });
        if ("cause" in node)
          Object.defineProperty(error, "cause", {
            value: dec(node.cause as JsonValue),
            writable: true,
            configurable: true,
          });
        return error;
      }
      case "arraybuffer":
        return keep(node, fromBase64(str(node.v, "arraybuffer")).buffer);
      case "typedarray": {
        const kind = str(node.kind, "typed array kind");
        const Ctor = Object.hasOwn(TYPED_ARRAYS, kind) ? TYPED_ARRAYS[kind] : undefined;
        if (Ctor === undefined) return malformed(`typed array kind ${kind}`);
        const buffer = dec(node.buffer as JsonValue);
        if (!(buffer instanceof ArrayBuffer)) return malformed("typed array buffer");
        return keep(node, new Ctor(buffer, int(node.byteOffset, "byteOffset"), int(node.length, "length")));
      }
      case "dataview": {
        const buffer = dec(node.buffer as JsonValue);
        if (!(buffer instanceof ArrayBuffer)) return malformed("data view buffer");
        return keep(node, new DataView(buffer, int(node.byteOffset, "byteOffset"), int(node.byteLength, "byteLength")));
      }
      case "boxed": {
        const inner = dec(node.v as JsonValue);
        if (typeof inner === "object" || typeof inner === "function" || inner === undefined || inner === null)
          return malformed("boxed");
        return keep(node, Object(inner));
      }
    }
    return malformed(`tag ${JSON.stringify(tag)}`);
  };
  return dec(json);
}

const ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/** Standard base64 with padding (no platform `btoa`/`Buffer`, so the core stays neutral). */
function toBase64(bytes: Uint8Array): string {
  let out = "";
  for (let i = 0; i < bytes.length; i += 3) {
    const n = ((bytes[i] ?? 0) << 16) | ((bytes[i + 1] ?? 0) << 8) | (bytes[i + 2] ?? 0);
    out += ALPHABET.charAt(n >> 18) + ALPHABET.charAt((n >> 12) & 63);
    out += i + 1 < bytes.length ? ALPHABET.charAt((n >> 6) & 63) : "=";
    out += i + 2 < bytes.length ? ALPHABET.charAt(n & 63) : "=";
  }
  return out;
}

function fromBase64(text: string): Uint8Array {
  if (text.length % 4 !== 0 || !/^[A-Za-z0-9+/]*={0,2}$/.test(text)) malformed("base64");
  const padding = text.endsWith("==") ? 2 : text.endsWith("=") ? 1 : 0;
  const bytes = new Uint8Array((text.length / 4) * 3 - padding);
  let o = 0;
  for (let i = 0; i < text.length; i += 4) {
    const n =
      (ALPHABET.indexOf(text.charAt(i)) << 18) |
      (ALPHABET.indexOf(text.charAt(i + 1)) << 12) |
      (Math.max(0, ALPHABET.indexOf(text.charAt(i + 2))) << 6) |
      Math.max(0, ALPHABET.indexOf(text.charAt(i + 3)));
    if (o < bytes.length) bytes[o++] = n >> 16;
    if (o < bytes.length) bytes[o++] = (n >> 8) & 255;
    if (o < bytes.length) bytes[o++] = n & 255;
  }
  return bytes;
}
