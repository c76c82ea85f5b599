/**
 * The wire format: a lossless JSON encoding of every value a {@link CodeExecutionResult} can hold, for results that
 * cross a network rather than a structured-clone channel. Its spec, the tagged nodes and their cost, is
 * docs/wire-format.md.
 * @module
 */
import { define, type JsonObject, type JsonValue, quotedLength } from "./json.js";
import { ERROR_TYPES, missingTypedArray, TYPED_ARRAY_KINDS, TYPED_ARRAYS } from "./tape.js";
import { MAX_RESERVED_BYTES, trackingView } from "./to-host.js";

/** Options of {@link toWireText} and {@link toWire}. */
export interface WireOptions {
  /** Longest text in UTF-16 code units (characters of JSON text); past it a {@link WireLengthError}. Unlimited by default. */
  maxLength?: number;
}

/** The encoding would be longer than its `maxLength`; thrown before the piece that would pass it is made. */
export class WireLengthError extends RangeError {
  override name = "WireLengthError";
  constructor(readonly maxLength: number) {
    super(`toWire: the encoding is longer than ${maxLength} characters`);
  }
}

const TAG = "$t";

type TypedArray = ArrayBufferView & { length: number; BYTES_PER_ELEMENT: number };
/** ES2024 members of ArrayBuffer (the project's `lib` is ES2023); optional where a platform lacks them. */
type Buffer2024 = ArrayBuffer & { resizable?: boolean; maxByteLength?: number; resize?(length: number): void };
type ResizableBufferConstructor = new (length: number, options: { maxByteLength: number }) => ArrayBuffer;
type ViewConstructor = Parameters<typeof trackingView>[0];

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

/** An own data property's descriptor, as structured clone reads an error's `message` and `cause`; else `undefined`. */
function ownData(object: object, key: string): PropertyDescriptor | undefined {
  const descriptor = Object.getOwnPropertyDescriptor(object, key);
  return descriptor !== undefined && "value" in descriptor ? descriptor : undefined;
}

const typedArrayAt = Object.getPrototypeOf(Int8Array.prototype).at as (this: ArrayBufferView, index: number) => unknown;
/** A view's length: its elements, or a DataView's bytes. */
const sizeOf = (view: ArrayBufferView): number =>
  view instanceof DataView ? view.byteLength : (view as TypedArray).length;

/** `false` for a view out of its buffer's bounds (or over a detached one), which its getters and `at` refuse. */
function inBounds(view: ArrayBufferView): boolean {
  try {
    if (view instanceof DataView) return view.byteLength >= 0;
    typedArrayAt.call(view, 0);
    return true;
  } catch {
    return false;
  }
}

/**
 * Adds to `tracking` those of `views` (all over one resizable buffer) whose length tracks it. JavaScript cannot ask;
 * as in the core's host encoder (`tracksLength` in to-guest.ts), a structured clone keeps the property and is resized:
 * grown by what adds an element to a tracking view, or, at its maximum, shrunk by one byte past the view's last whole
 * element, which puts a fixed-length view out of bounds and leaves a tracking one in. One clone of all the views copies
 * the buffer once, and each probe is undone before the next, so the cost is the buffer's length plus a step per view.
 */
function findTracking(views: readonly ArrayBufferView[], tracking: Set<object>): void {
  const buffer = views[0]?.buffer as Buffer2024;
  const length = buffer.byteLength;
  const room = (buffer.maxByteLength as number) - length;
  const element = (view: ArrayBufferView) => (view instanceof DataView ? 1 : (view as TypedArray).BYTES_PER_ELEMENT);
  // A view that ends before the buffer's last whole element is fixed-length; one out of bounds is refused later.
  const candidates = views.filter(
    (view) =>
      inBounds(view) &&
      view.byteOffset + sizeOf(view) * element(view) === length - ((length - view.byteOffset) % element(view)),
  );
  if (candidates.length === 0) return;
  const clones = structuredClone(candidates) as ArrayBufferView[];
  const copy = clones[0]?.buffer as Buffer2024;
  for (let i = 0; i < candidates.length; i++) {
    const view = candidates[i] as ArrayBufferView;
    const clone = clones[i] as ArrayBufferView;
    const count = sizeOf(view);
    const rest = (length - view.byteOffset) % element(view);
    let tracks: boolean;
    if (room >= element(view) - rest) {
      copy.resize?.(length + element(view) - rest);
      tracks = sizeOf(clone) !== count;
    } else {
      // No size of this buffer tells an empty fixed view from an empty tracking one: they behave the same.
      if (count === 0) continue;
      copy.resize?.(length - rest - 1);
      tracks = inBounds(clone);
    }
    copy.resize?.(length);
    if (tracks) tracking.add(view);
  }
}

/** A finite number other than `-0` as itself; the others as a tagged node. */
function numberNode(n: number): JsonValue {
  if (Number.isFinite(n) && !Object.is(n, -0)) return n;
  return { [TAG]: "number", v: Object.is(n, -0) ? "-0" : String(n) };
}

function primitiveNode(item: unknown): JsonValue {
  switch (typeof item) {
    case "string":
    case "boolean":
      return item;
    case "number":
      return numberNode(item);
    case "bigint":
      return { [TAG]: "bigint", v: item.toString() };
    case "undefined":
      return { [TAG]: "undefined" };
    case "symbol":
    case "function":
      throw new TypeError(`toWire: a ${typeof item} is not a result value`);
  }
  return null;
}

/**
 * Characters of `JSON.stringify(node)`, but for `paid`, a part of it counted already. For the nodes the encoder
 * makes, which are shallow: containers are counted empty and their children as they are added.
 */
function textLength(node: JsonValue, paid?: JsonValue): number {
  if (node === paid) return 0;
  switch (typeof node) {
    case "string":
      return quotedLength(node, true);
    case "number":
      return String(node).length;
    case "boolean":
      return node ? 4 : 5;
  }
  if (node === null) return 4;
  let length = 2;
  if (Array.isArray(node)) {
    for (let i = 0; i < node.length; i++) length += (i === 0 ? 0 : 1) + textLength(node[i] as JsonValue, paid);
    return length;
  }
  const keys = Object.keys(node);
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i] as string;
    length += (i === 0 ? 1 : 2) + quotedLength(key, true) + textLength(node[key] as JsonValue, paid);
  }
  return length;
}

/** Sets `key` as an own data property (`__proto__` included, never the prototype setter). */
function setKey(target: JsonObject, key: string, node: JsonValue): void {
  if (key === "__proto__") define(target, key, node);
  else target[key] = node;
}

/**
 * The objects `value` reaches more than once (shared references and cycles): only they get ids. Also fills `views`
 * with the views of each resizable buffer reached, whose length may track it.
 */
function sharedObjects(value: unknown, views: Map<ArrayBuffer, ArrayBufferView[]>): Set<object> {
  const seen = new Set<object>();
  const shared = new Set<object>();
  const stack: object[] = [];
  const visit = (item: unknown) => {
    if (typeof item === "object" && item !== null) stack.push(item);
  };
  visit(value);
  while (stack.length > 0) {
    const object = stack.pop() as object;
    if (seen.has(object)) {
      shared.add(object);
      continue;
    }
    seen.add(object);
    if (object instanceof Map) {
      for (const [key, item] of object) {
        visit(key);
        visit(item);
      }
    } else if (object instanceof Set) {
      for (const item of object) visit(item);
    } else if (ArrayBuffer.isView(object)) {
      const buffer = object.buffer as Buffer2024;
      visit(buffer);
      if (buffer instanceof ArrayBuffer && buffer.resizable === true) {
        const list = views.get(buffer);
        if (list === undefined) views.set(buffer, [object]);
        else list.push(object);
      }
    } else if (object instanceof Error) {
      const cause = ownData(object, "cause");
      if (cause !== undefined) visit(cause.value);
    } else if (!(object instanceof Date || object instanceof RegExp || object instanceof ArrayBuffer)) {
      // Own values only: a sparse array's length costs nothing.
      for (const item of Object.values(object)) visit(item);
    }
  }
  return shared;
}

const LIST = 0;
const PAIRS = 1;
const ENTRIES = 2;
const ERROR_CAUSE = 3;
/**
 * A container being filled, one child node at a time: `LIST` pushes its items' nodes; `PAIRS` pushes a Map's flat
 * `[k0, v0, k1, v1…]` as pairs `[k0,v0]`; `ENTRIES` sets the own enumerable keys of `source`, escaped; `ERROR_CAUSE` sets an
 * error's `cause`.
 */
type FillFrame =
  | { kind: typeof LIST; items: readonly unknown[]; next: number; into: JsonValue[] }
  | { kind: typeof PAIRS; items: readonly unknown[]; next: number; into: JsonValue[]; pair: JsonValue[] }
  | { kind: typeof ENTRIES; source: object; keys: readonly string[]; next: number; into: JsonObject }
  | { kind: typeof ERROR_CAUSE; cause: unknown; next: number; into: JsonObject };

/**
 * Encodes `value` as JSON data that {@link fromWire} turns back into an equal value, with an explicit stack rather
 * than recursion, so any depth is fine. Counts the characters of its JSON text as the nodes are made, and throws a
 * {@link WireLengthError} before that text would grow past `options.maxLength`.
 */
export function toWire(value: unknown, options: WireOptions = {}): JsonValue {
  return encode(value, options).json;
}

/** {@link toWire}'s encoding, and the most containers it had open at once (its JSON nests at most 3 levels each). */
function encode(value: unknown, options: WireOptions): { json: JsonValue; open: number } {
  const maxLength = options.maxLength ?? Number.POSITIVE_INFINITY;
  const resizableViews = new Map<ArrayBuffer, ArrayBufferView[]>();
  const shared = sharedObjects(value, resizableViews);
  const tracking = new Set<object>();
  const ids = new Map<object, number>();
  const frames: FillFrame[] = [];
  let length = 0;
  const add = (units: number) => {
    if (length + units > maxLength) throw new WireLengthError(maxLength);
    length += units;
  };
  /** `node` once its text is counted (but for `paid`, counted already). */
  const counted = <T extends JsonValue>(node: T, paid?: JsonValue): T => {
    add(textLength(node, paid));
    return node;
  };
  // Keys repeat (every log entry has `level` and `args`): each distinct one is escaped and measured once.
  const keyNames = new Map<string, { name: string; length: number }>();
  const keyOf = (key: string) => {
    let known = keyNames.get(key);
    if (known === undefined) {
      const name = escapeKey(key);
      known = { name, length: quotedLength(name, true) + 1 };
      keyNames.set(key, known);
    }
    return known;
  };
  const list = (into: JsonValue[], items: readonly unknown[]) => frames.push({ kind: LIST, items, next: 0, into });
  const entries = (into: JsonObject, source: object) =>
    frames.push({ kind: ENTRIES, source, keys: Object.keys(source), next: 0, into });

  /** The node of a primitive or a leaf, whole; of a container, counted empty, with its frame pushed to fill it. */
  const nodeOf = (item: unknown): JsonValue => {
    if (typeof item !== "object" || item === null) return counted(primitiveNode(item));
    const known = ids.get(item);
    if (known !== undefined) return counted({ [TAG]: "ref", id: known });
    // Ids are numbered in the order objects are first met: depth first, as the frames run.
    let id: number | undefined;
    if (shared.has(item)) {
      id = ids.size;
      ids.set(item, id);
    }
    const tagged = (tag: string, fields: JsonObject): JsonObject =>
      Object.assign(id === undefined ? { [TAG]: tag } : { [TAG]: tag, id }, fields);

    const proto = Object.getPrototypeOf(item);
    if (proto === Object.prototype || proto === null) return plain(item, id);
    if (Array.isArray(item)) {
      if (id === undefined && isDense(item)) {
        const node: JsonValue[] = [];
        add(2);
        list(node, item);
        return node;
      }
      const v: JsonObject = {};
      entries(v, item);
      return counted(tagged("array", { length: item.length, v }));
    }
    if (item instanceof Map) {
      const items: unknown[] = [];
      for (const [key, entry] of item) items.push(key, entry);
      const v: JsonValue[] = [];
      frames.push({ kind: PAIRS, items, next: 0, into: v, pair: [] });
      return counted(tagged("map", { v }));
    }
    if (item instanceof Set) {
      const v: JsonValue[] = [];
      list(v, [...item]);
      return counted(tagged("set", { v }));
    }
    if (item instanceof Date) return counted(tagged("date", { v: numberNode(item.getTime()) }));
    if (item instanceof RegExp) return counted(tagged("regexp", { source: item.source, flags: item.flags }));
    if (item instanceof Error) {
      // As structured clone reads an error: `name` by a get, `message` and `cause` only as own data properties.
      const message = ownData(item, "message");
      const cause = ownData(item, "cause");
      const node = tagged("error", { name: String(item.name) });
      if (message !== undefined) node.message = String(message.value);
      if (typeof item.stack === "string") node.stack = item.stack;
      if (cause !== undefined) frames.push({ kind: ERROR_CAUSE, cause: cause.value, next: 0, into: node });
      return counted(node);
    }
    if (item instanceof ArrayBuffer) {
      const buffer = item as Buffer2024;
      const node = tagged("arraybuffer", { v: "" });
      if (buffer.resizable === true) node.maxByteLength = buffer.maxByteLength as number;
      // The whole node is paid for before any of its base64 is made.
      add(textLength(node) + base64Length(item.byteLength));
      node.v = toBase64(new Uint8Array(item));
      return node;
    }
    if (item instanceof DataView) {
      const buffer = viewBuffer(item);
      const byteLength = tracking.has(item) ? "auto" : item.byteLength;
      return counted(tagged("dataview", { buffer, byteOffset: item.byteOffset, byteLength }), buffer);
    }
    const kind = typedArrayKind(item);
    if (kind !== undefined) {
      const view = item as TypedArray;
      const buffer = viewBuffer(view);
      const length = tracking.has(view) ? "auto" : view.length;
      return counted(tagged("typedarray", { kind, buffer, byteOffset: view.byteOffset, length }), buffer);
    }
    if (item instanceof Number || item instanceof String || item instanceof Boolean || item instanceof BigInt) {
      return counted(tagged("boxed", { v: primitiveNode(item.valueOf()) }));
    }
    return plain(item, id);
  };
  /** A plain object (or an instance of another class, by its own enumerable keys). */
  const plain = (item: object, id: number | undefined): JsonObject => {
    const v: JsonObject = {};
    entries(v, item);
    if (id === undefined) {
      add(2);
      return v;
    }
    return counted({ [TAG]: "object", id, v });
  };
  /**
   * A view's buffer: a leaf (an `ArrayBuffer` node or a ref), never a container, so this never nests. Once the buffer
   * is paid for, finds which of its views track its length (see {@link findTracking}).
   */
  const viewBuffer = (view: ArrayBufferView): JsonValue => {
    const buffer = view.buffer;
    if (!(buffer instanceof ArrayBuffer))
      throw new TypeError("toWire: a view of a SharedArrayBuffer is not a result value");
    if (!inBounds(view)) throw new TypeError("toWire: a view out of its buffer's bounds is not a result value");
    const node = nodeOf(buffer);
    const views = resizableViews.get(buffer);
    if (views !== undefined) {
      resizableViews.delete(buffer);
      findTracking(views, tracking);
    }
    return node;
  };

  const json = nodeOf(value);
  let open = 0;
  while (frames.length > 0) {
    open = Math.max(open, frames.length);
    const frame = frames[frames.length - 1] as FillFrame;
    const i = frame.next++;
    switch (frame.kind) {
      case LIST:
        if (i === frame.items.length) break;
        if (i > 0) add(1);
        frame.into.push(nodeOf(frame.items[i]));
        continue;
      case PAIRS:
        if (i === frame.items.length) break;
        // `[k,v]` after a comma but for the first pair; the comma inside.
        if (i % 2 === 0) {
          add(i === 0 ? 2 : 3);
          frame.pair = [];
          frame.into.push(frame.pair);
        } else add(1);
        frame.pair.push(nodeOf(frame.items[i]));
        continue;
      case ENTRIES: {
        const key = frame.keys[i];
        if (key === undefined) break;
        const { name, length } = keyOf(key);
        add(i === 0 ? length : length + 1);
        setKey(frame.into, name, nodeOf((frame.source as Record<string, unknown>)[key]));
        continue;
      }
      case ERROR_CAUSE:
        if (i === 1) break;
        add(9); // `,"cause":`
        frame.into.cause = nodeOf(frame.cause);
        continue;
    }
    frames.pop();
  }
  return { json, open };
}

/** Containers open at once up to which {@link toWireText} trusts `JSON.stringify` (some 300 levels of JSON). */
const SHALLOW_CONTAINERS = 100;

/**
 * The JSON text of the wire encoding of `value` (`JSON.stringify(toWire(value))`); deep data is written with an
 * explicit stack rather than the platform's recursive `JSON.stringify`, so any depth is fine. Throws a
 * {@link WireLengthError} before the encoding would grow past `options.maxLength`.
 */
export function toWireText(value: unknown, options: WireOptions = {}): string {
  const { json, open } = encode(value, options);
  // The platform's JSON.stringify is several times faster than the loop below, but recursive: only for shallow data.
  if (open <= SHALLOW_CONTAINERS) return JSON.stringify(json);
  const stack: { node: JsonValue[] | JsonObject; keys: readonly string[] | undefined; next: number }[] = [];
  const keyTexts = new Map<string, string>();
  // One string built by appending: the engine keeps it as a rope and flattens it once (an array of pieces joined at
  // the end took 20x JSON.stringify's time on 200,000 log entries).
  let text = "";
  const write = (node: JsonValue | undefined) => {
    if (typeof node !== "object" || node === null) text += JSON.stringify(node);
    else if (Array.isArray(node)) {
      text += "[";
      stack.push({ node, keys: undefined, next: 0 });
    } else {
      text += "{";
      stack.push({ node, keys: Object.keys(node), next: 0 });
    }
  };
  write(json);
  while (stack.length > 0) {
    const frame = stack[stack.length - 1] as (typeof stack)[number];
    const i = frame.next++;
    if (frame.keys === undefined) {
      const items = frame.node as JsonValue[];
      if (i === items.length) {
        text += "]";
        stack.pop();
        continue;
      }
      if (i > 0) text += ",";
      write(items[i]);
      continue;
    }
    const key = frame.keys[i];
    if (key === undefined) {
      text += "}";
      stack.pop();
      continue;
    }
    let keyText = keyTexts.get(key);
    if (keyText === undefined) {
      keyText = `${JSON.stringify(key)}:`;
      keyTexts.set(key, keyText);
    }
    text += i === 0 ? keyText : `,${keyText}`;
    write((frame.node as JsonObject)[key]);
  }
  return text;
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

const ITEMS = 0;
const FIELDS = 1;
const ENTRY = 2;
const CAUSE = 3;
/**
 * A container being filled, one decoded child at a time: `ITEMS` pushes to an array or adds to a Set, `FIELDS`
 * defines the (unescaped) keys of `fields` and then sets `length` on an array, `ENTRY` sets a Map's pairs, `CAUSE`
 * defines an error's cause.
 */
type ReadFrame =
  | { kind: typeof ITEMS; items: readonly JsonValue[]; next: number; into: unknown[] | Set<unknown> }
  | { kind: typeof FIELDS; fields: JsonObject; keys: readonly string[]; next: number; into: object; length?: number }
  | { kind: typeof ENTRY; pairs: readonly JsonValue[]; next: number; into: Map<unknown, unknown>; key: unknown }
  | { kind: typeof CAUSE; cause: JsonValue; next: number; into: Error };

/**
 * Decodes what {@link toWire} wrote, with an explicit stack rather than recursion (a client controls the depth).
 * Throws a `TypeError` on data that is not in this format.
 */
export function fromWire(json: JsonValue): unknown {
  const refs = new Map<number, unknown>();
  let reserved = 0;
  const frames: ReadFrame[] = [];
  const keep = <T>(node: JsonObject, value: T): T => {
    if (node.id !== undefined) refs.set(int(node.id, "id"), value);
    return value;
  };
  const fill = (into: object, fields: JsonValue | undefined, length?: number): void => {
    if (!isObject(fields)) malformed("fields");
    const frame: ReadFrame = { kind: FIELDS, fields, keys: Object.keys(fields), next: 0, into };
    if (length !== undefined) frame.length = length;
    frames.push(frame);
  };
  /** A resizable buffer holding `bytes`, within what one decoded value may reserve in all. */
  const resizableBuffer = (bytes: Uint8Array, maxByteLength: number): ArrayBuffer => {
    if (maxByteLength < bytes.length) malformed("maxByteLength");
    reserved += maxByteLength;
    if (reserved > MAX_RESERVED_BYTES) {
      throw new RangeError(
        `fromWire: resizable ArrayBuffers may reserve at most ${MAX_RESERVED_BYTES} bytes (their maxByteLength) in one value`,
      );
    }
    let buffer: ArrayBuffer;
    try {
      buffer = new (ArrayBuffer as ResizableBufferConstructor)(bytes.length, { maxByteLength });
    } catch {
      throw new RangeError(`fromWire: a resizable ArrayBuffer of maxByteLength ${maxByteLength} cannot be made here`);
    }
    new Uint8Array(buffer).set(bytes);
    return buffer;
  };
  /** A view's buffer: only an `ArrayBuffer` node or a ref to one (leaves, so this never nests). */
  const bufferOf = (node: JsonValue | undefined, what: string): ArrayBuffer => {
    const tag = isObject(node) ? node[TAG] : undefined;
    const buffer = tag === "arraybuffer" || tag === "ref" ? open(node) : undefined;
    return buffer instanceof ArrayBuffer ? buffer : malformed(what);
  };

  /** Decodes a leaf whole; makes a container, pushes the frame that fills it, and returns it (for refs inside). */
  const open = (node: JsonValue | undefined): unknown => {
    if (typeof node !== "object" || node === null) return node;
    if (Array.isArray(node)) {
      const array: unknown[] = [];
      frames.push({ kind: ITEMS, items: node, next: 0, into: array });
      return array;
    }
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
        // Set once the keys are in, as a length shorter than an index given would cut it.
        fill(array, node.v, int(node.length, "array length"));
        return array;
      }
      case "map": {
        const map = keep(node, new Map());
        if (!Array.isArray(node.v)) return malformed("map");
        frames.push({ kind: ENTRY, pairs: node.v, next: 0, into: map, key: undefined });
        return map;
      }
      case "set": {
        const set = keep(node, new Set());
        if (!Array.isArray(node.v)) return malformed("set");
        frames.push({ kind: ITEMS, items: node.v, next: 0, into: set });
        return set;
      }
      case "date":
        return keep(node, new Date(decodeNumber(node.v)));
      case "regexp":
        return keep(node, new RegExp(str(node.source, "regexp source"), str(node.flags, "regexp flags")));
      case "error": {
        const name = str(node.name, "error name");
        const Standard = ERROR_TYPES[name];
        const Ctor = Standard ?? Error;
        // No `message` key: an error with no own message (older nodes always have one).
        const error = keep(
          node,
          node.message === undefined ? new Ctor() : new Ctor(str(node.message, "error message")),
        );
        if (Standard === undefined)
          Object.defineProperty(error, "name", { value: name, writable: true, configurable: true });
        if (node.stack === undefined) delete error.stack;
        else
          Object.defineProperty(error, "stack", {
            value: str(node.stack, "stack"),
            writable: true,
            configurable: true,
          });
        if ("cause" in node) frames.push({ kind: CAUSE, cause: node.cause as JsonValue, next: 0, into: error });
        return error;
      }
      case "arraybuffer": {
        const bytes = fromBase64(str(node.v, "arraybuffer"));
        if (node.maxByteLength === undefined) return keep(node, bytes.buffer);
        return keep(node, resizableBuffer(bytes, int(node.maxByteLength, "maxByteLength")));
      }
      case "typedarray": {
        const kind = str(node.kind, "typed array kind");
        const Ctor = TYPED_ARRAYS[kind];
        if (Ctor === undefined) {
          if (TYPED_ARRAY_KINDS.includes(kind)) throw new TypeError(`fromWire: ${missingTypedArray(kind)}`);
          return malformed(`typed array kind ${kind}`);
        }
        const buffer = bufferOf(node.buffer, "typed array buffer");
        const offset = int(node.byteOffset, "byteOffset");
        if (node.length === "auto") return keep(node, trackingView(Ctor as ViewConstructor, buffer, offset));
        return keep(node, new Ctor(buffer, offset, int(node.length, "length")));
      }
      case "dataview": {
        const buffer = bufferOf(node.buffer, "data view buffer");
        const offset = int(node.byteOffset, "byteOffset");
        if (node.byteLength === "auto") return keep(node, trackingView(DataView, buffer, offset));
        return keep(node, new DataView(buffer, offset, int(node.byteLength, "byteLength")));
      }
      case "boxed": {
        // Only a primitive, plain or tagged: never a container, so this never nests.
        const v = node.v;
        const inner = isObject(v) && (v[TAG] === "number" || v[TAG] === "bigint") ? open(v) : v;
        if (typeof inner === "object" || typeof inner === "function" || inner === undefined || inner === null)
          return malformed("boxed");
        return keep(node, Object(inner));
      }
    }
    // Only a string tag is quoted: a client's tag may be a value nested too deep to stringify.
    return malformed(`tag ${typeof tag === "string" ? JSON.stringify(tag) : typeof tag}`);
  };

  const root = open(json);
  while (frames.length > 0) {
    const frame = frames[frames.length - 1] as ReadFrame;
    const i = frame.next++;
    switch (frame.kind) {
      case ITEMS:
        if (i === frame.items.length) break;
        if (Array.isArray(frame.into)) frame.into.push(open(frame.items[i]));
        else frame.into.add(open(frame.items[i]));
        continue;
      case FIELDS: {
        const key = frame.keys[i];
        if (key === undefined) {
          if (frame.length !== undefined) (frame.into as unknown[]).length = frame.length;
          break;
        }
        define(frame.into, unescapeKey(key), open(frame.fields[key]));
        continue;
      }
      case ENTRY: {
        if (i === frame.pairs.length * 2) break;
        const pair = frame.pairs[i >> 1];
        if (!Array.isArray(pair) || pair.length !== 2) return malformed("map entry");
        const value = open(pair[i & 1]);
        if ((i & 1) === 0) frame.key = value;
        else frame.into.set(frame.key, value);
        continue;
      }
      case CAUSE:
        if (i === 1) break;
        Object.defineProperty(frame.into, "cause", { value: open(frame.cause), writable: true, configurable: true });
        continue;
    }
    frames.pop();
  }
  return root;
}

const ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
/** Character codes of the alphabet, and the reverse table (255: not in the alphabet). */
const CODES = Uint8Array.from(ALPHABET, (c) => c.charCodeAt(0));
const VALUES = new Uint8Array(128).fill(255);
for (let i = 0; i < CODES.length; i++) VALUES[CODES[i] as number] = i;
const PAD = 61;
const ascii = new TextDecoder();

const base64Length = (bytes: number): number => Math.ceil(bytes / 3) * 4;

/**
 * Standard base64 with padding (no platform `btoa`/`Buffer`, so the core stays neutral). Table-driven into a byte
 * array decoded once: a 24 MiB buffer took 6.6 s with string concatenation per character, ~0.1 s this way.
 */
function toBase64(bytes: Uint8Array): string {
  const out = new Uint8Array(base64Length(bytes.length));
  const whole = bytes.length - (bytes.length % 3);
  let o = 0;
  let i = 0;
  for (; i < whole; i += 3) {
    const n = ((bytes[i] as number) << 16) | ((bytes[i + 1] as number) << 8) | (bytes[i + 2] as number);
    out[o++] = CODES[n >> 18] as number;
    out[o++] = CODES[(n >> 12) & 63] as number;
    out[o++] = CODES[(n >> 6) & 63] as number;
    out[o++] = CODES[n & 63] as number;
  }
  if (i < bytes.length) {
    const n = ((bytes[i] as number) << 16) | ((bytes[i + 1] ?? 0) << 8);
    out[o++] = CODES[n >> 18] as number;
    out[o++] = CODES[(n >> 12) & 63] as number;
    out[o++] = i + 1 < bytes.length ? (CODES[(n >> 6) & 63] as number) : PAD;
    out[o++] = PAD;
  }
  return ascii.decode(out);
}

function fromBase64(text: string): Uint8Array {
  if (text.length % 4 !== 0 || !/^[A-Za-z0-9+/]*={0,2}$/.test(text)) malformed("base64");
  const padding = text.endsWith("==") ? 2 : text.endsWith("=") ? 1 : 0;
  const bytes = new Uint8Array((text.length / 4) * 3 - padding);
  const value = (i: number) => (VALUES[text.charCodeAt(i)] as number) & 63;
  const whole = bytes.length - (bytes.length % 3);
  let o = 0;
  let i = 0;
  for (; o < whole; i += 4) {
    const n = (value(i) << 18) | (value(i + 1) << 12) | (value(i + 2) << 6) | value(i + 3);
    bytes[o++] = n >> 16;
    bytes[o++] = (n >> 8) & 255;
    bytes[o++] = n & 255;
  }
  if (o < bytes.length) {
    const n = (value(i) << 18) | (value(i + 1) << 12) | (value(i + 2) << 6);
    bytes[o++] = n >> 16;
    if (o < bytes.length) bytes[o++] = (n >> 8) & 255;
  }
  return bytes;
}
