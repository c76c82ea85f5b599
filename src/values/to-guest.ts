/**
 * Host values -> tape (see `tape.ts`). Runs on the host over the caller's own values; everything that is not
 * structured-cloneable data, a function or a promise raises `SerializationError`.
 * @module
 */
import { SerializationError } from "./errors.js";
import { type SideItem, Tape } from "./tape.js";

/** A function of the caller's, callable from the guest. */
export type HostFunction = (...args: unknown[]) => unknown;

/** Host functions handed to one run, numbered so the guest's stand-ins can call them back. */
export class FunctionTable {
  readonly #ids = new Map<HostFunction, number>();
  readonly #functions: HostFunction[] = [];

  idOf(fn: HostFunction): number {
    let id = this.#ids.get(fn);
    if (id === undefined) {
      id = this.#functions.push(fn) - 1;
      this.#ids.set(fn, id);
    }
    return id;
  }

  get(id: number): HostFunction | undefined {
    return this.#functions[id];
  }

  /** What the guest's call of function number `id` calls: the function, unless a table calls it through another. */
  callee(id: number): HostFunction | undefined {
    return this.get(id);
  }

  /**
   * Told what a call of a function of the table answered the guest, as it crossed (a table that records its calls
   * keeps it: see node/threads/host-call-record.ts).
   */
  answered(_answer: Tape): void {}

  /**
   * Told that a call of a function of the table answered the guest with an error instead (it threw, or what it returned
   * could not cross), as the error crossed (a table that records its calls keeps it: see node/threads/host-call-record.ts).
   */
  threw(_error: Tape): void {}

  /** How many functions are numbered. */
  get size(): number {
    return this.#functions.length;
  }

  /** A table numbering the same functions, which goes on apart (a forked session's). */
  copy(): FunctionTable {
    const copy = new FunctionTable();
    for (const fn of this.#functions) copy.idOf(fn);
    return copy;
  }
}

/** Deeper host data is refused rather than risking the host's own stack. */
const MAX_DEPTH = 1000;

/** ES2024 members of ArrayBuffer (the project's `lib` is ES2023); all optional where a platform lacks them. */
type Buffer2024 = ArrayBuffer & { resizable?: boolean; maxByteLength?: number; resize?(length: number): void };
type View = ArrayBufferView & { length?: number; BYTES_PER_ELEMENT?: number };

const detachedGetter = Object.getOwnPropertyDescriptor(ArrayBuffer.prototype, "detached")?.get;
const typedArrayAt = Object.getPrototypeOf(Uint8Array.prototype).at as (this: ArrayBufferView, i: number) => unknown;

function throws(fn: () => unknown): boolean {
  try {
    fn();
    return false;
  } catch {
    return true;
  }
}

/** Node 20 has no `detached`: there only a detached buffer refuses to be viewed. */
function isDetached(buffer: ArrayBuffer): boolean {
  if (detachedGetter !== undefined) return detachedGetter.call(buffer) === true;
  return buffer.byteLength === 0 && throws(() => new Uint8Array(buffer));
}

/** A view out of its buffer's bounds (or over a detached one) is what structured clone refuses. */
function inBounds(view: View): boolean {
  return !throws(() =>
    view instanceof DataView ? view.byteLength : typedArrayAt.call(view, Number.NEGATIVE_INFINITY),
  );
}

/**
 * Whether a view's length tracks its resizable buffer. JavaScript has no way to ask; the platform's structured
 * clone keeps the property, so a clone of the view (never the caller's buffer) is resized: grown by what adds one
 * element to a tracking view, or, at its maximum, shrunk by one byte past the view's last whole element, which
 * puts a fixed-length view out of bounds and leaves a tracking one in.
 */
function tracksLength(view: View, probeBudget: { bytes: number }): boolean {
  const buffer = view.buffer as Buffer2024;
  if (buffer.resizable !== true) return false;
  const dataView = view instanceof DataView;
  const element = dataView ? 1 : (view.BYTES_PER_ELEMENT as number);
  const size = (v: View) => (v instanceof DataView ? v.byteLength : (v.length as number));
  const count = size(view);
  const length = buffer.byteLength;
  const rest = (length - view.byteOffset) % element;
  // A view that ends before the buffer's last whole element is fixed-length.
  if (view.byteOffset + count * element !== length - rest) return false;
  // Each probe copies the whole buffer: many views of one big buffer would copy it once per view.
  probeBudget.bytes -= length;
  if (probeBudget.bytes < 0) {
    throw new SerializationError(
      `Telling whether views track their resizable buffers would copy more than ${MAX_PROBE_BYTES} bytes: too many views of large resizable buffers`,
    );
  }
  const probe = structuredClone(view) as View;
  const copy = probe.buffer as Buffer2024;
  const grow = element - rest;
  if ((buffer.maxByteLength as number) - length >= grow) {
    copy.resize?.(length + grow);
    return size(probe) !== count;
  }
  // No size of this buffer tells an empty fixed view from an empty tracking one: they behave the same.
  if (count === 0) return false;
  copy.resize?.(length - rest - 1);
  return inBounds(probe);
}

/** Bytes the resize probes of one value may copy (see `tracksLength`). */
const MAX_PROBE_BYTES = 256 * 1024 * 1024;

/**
 * The objects of `value` that cross as JSON text (`["j",json]`, parsed by the engine's own parser): plain objects
 * and dense arrays of the standard prototypes whose own enumerable properties are all data properties holding
 * strings, booleans, null, finite numbers other than -0 and such objects. Values are read through descriptors, so
 * no getter runs here and what `JSON.stringify` reads later is what was checked. None when an object is reached
 * twice (JSON would expand a shared reference) or when a prototype has a `toJSON` for `JSON.stringify` to call.
 * `once`: no object is reached twice, nor may be through what the walk does not enter.
 */
function jsonPlain(value: unknown): { plain: Set<object>; once: boolean } {
  const plain = new Set<object>();
  const seen = new Set<object>();
  let shared = false;
  // Buffers, and views' buffers, which the walk does not enter but the encoder reaches too.
  const buffers = new Set<object>();
  let buffersShared = false;
  const scan = (v: unknown, depth: number): boolean => {
    switch (typeof v) {
      case "string":
      case "boolean":
        return true;
      case "number":
        return Number.isFinite(v) && !Object.is(v, -0);
      case "object":
        break;
      default:
        return false;
    }
    if (v === null) return true;
    // Deeper than the encoder goes is refused by the encoder; the walk stops there, so it never overflows the stack.
    if (depth >= MAX_DEPTH) return false;
    if (seen.has(v)) {
      shared = true;
      return false;
    }
    seen.add(v);
    const proto = Object.getPrototypeOf(v);
    const isArray = Array.isArray(v);
    // Not plain, and of what they hold only bytes, a time or a pattern cross: their keys (a typed array has one per
    // element) are not walked.
    if (holdsNoObjects(v)) {
      const buffer = ArrayBuffer.isView(v) ? v.buffer : v;
      if (!(buffer instanceof Date || buffer instanceof RegExp)) {
        buffersShared ||= buffers.has(buffer);
        buffers.add(buffer);
      }
      return false;
    }
    if (!isArray && proto !== Object.prototype && proto !== null) {
      // A Map, Set, Error, class instance... reaches objects this walk does not see, which a plain subtree may share.
      shared = true;
      return false;
    }
    const keys = Object.keys(v);
    let ok = true;
    if (isArray) {
      const dense = keys.length === v.length && (v.length === 0 || keys[v.length - 1] === String(v.length - 1));
      ok &&= proto === Array.prototype && dense;
    } else ok &&= proto === Object.prototype || proto === null;
    for (const key of keys) {
      const descriptor = Object.getOwnPropertyDescriptor(v, key);
      if (descriptor !== undefined && !("value" in descriptor)) {
        // The encoder calls a getter, whose object may be shared with a plain subtree.
        shared = true;
        return false;
      }
      // Walked whatever the object is, so every shared reference below it is found.
      const child = descriptor !== undefined && "value" in descriptor && scan(descriptor.value, depth + 1);
      ok &&= child;
      if (shared) return false;
    }
    if (ok) plain.add(v);
    return ok;
  };
  const toJSON = (o: object) => "toJSON" in o;
  if (toJSON(Object.prototype) || toJSON(Array.prototype)) return { plain, once: false };
  scan(value, 0);
  if (shared) plain.clear();
  return { plain, once: !shared && !buffersShared };
}

/** Values that cross without any object inside them. */
function holdsNoObjects(value: object): boolean {
  return ArrayBuffer.isView(value) || value instanceof ArrayBuffer || value instanceof Date || value instanceof RegExp;
}

const NOTHING_PLAIN: ReadonlySet<object> = new Set();

/**
 * The tape of a string, number, boolean, bigint, `undefined` or `null`, which is the same in both directions;
 * `undefined` for anything else.
 */
export function encodePrimitive(v: unknown): string | undefined {
  switch (typeof v) {
    case "string":
      return JSON.stringify(v);
    case "number":
      if (Number.isNaN(v)) return '["n","NaN"]';
      if (v === Number.POSITIVE_INFINITY) return '["n","Infinity"]';
      if (v === Number.NEGATIVE_INFINITY) return '["n","-Infinity"]';
      return Object.is(v, -0) ? '["n","-0"]' : String(v);
    case "boolean":
      return v ? "true" : "false";
    case "undefined":
      return '["u"]';
    case "bigint":
      return `["b","${v}"]`;
  }
  return v === null ? "null" : undefined;
}

/** `value` as a tape for the guest. */
export function encodeForGuest(value: unknown, functions: FunctionTable): Tape {
  if (value instanceof Tape) return value;
  const primitive = encodePrimitive(value);
  if (primitive !== undefined) return new Tape(primitive, []);
  const plain = typeof value === "object" && value !== null ? jsonPlain(value).plain : NOTHING_PLAIN;
  return encodeWith(value, functions, plain, { bytes: MAX_PROBE_BYTES }, 0);
}

/** Where a part of a value is: the value itself, and how many objects of the whole hold it. */
interface Part {
  value: unknown;
  depth: number;
}

/**
 * The parts of `whole` (all it holds beside them are the objects around them), each as a tape of its own, in order,
 * when no object is reached twice in `whole`: each part then decodes apart to what decoding `whole` gives it (a
 * shared object keeps its identity within one tape only); else `whole` as one tape. Either way the getters called,
 * the functions numbered and the errors are those of encoding `whole`.
 */
export function encodeParts(whole: object, parts: readonly Part[], functions: FunctionTable): Tape | Tape[] {
  const { plain, once } = jsonPlain(whole);
  const probeBudget = { bytes: MAX_PROBE_BYTES };
  if (!once) return encodeWith(whole, functions, plain, probeBudget, 0);
  return parts.map((part) => encodeWith(part.value, functions, plain, probeBudget, part.depth));
}

/** `value`, `depth` objects deep in what is encoded, as a tape: `plain` its JSON subtrees (see `jsonPlain`). */
function encodeWith(
  value: unknown,
  functions: FunctionTable,
  plain: ReadonlySet<object>,
  probeBudget: { bytes: number },
  depth: number,
): Tape {
  const ids = new Map<object, number>();
  const side: SideItem[] = [];
  const toSide = (item: SideItem) => side.push(item) - 1;
  const pairs = (list: [unknown, unknown][]) => list.map(([k, v]) => `${enc(k)},${enc(v)}`).join(",");

  const enc = (v: unknown): string => {
    const primitive = encodePrimitive(v);
    if (primitive !== undefined) return primitive;
    switch (typeof v) {
      case "symbol":
        throw new SerializationError(`${String(v)} cannot be cloned: symbols do not cross the sandbox boundary`);
      case "function":
        return `["f",${functions.idOf(v as HostFunction)},${JSON.stringify(v.name)},${v.length}]`;
    }
    if (plain.has(v as object)) return `["j",${JSON.stringify(v)}]`;
    const seen = ids.get(v as object);
    if (seen !== undefined) return `["r",${seen}]`;
    const id = ids.size;
    ids.set(v as object, id);
    if (++depth > MAX_DEPTH) throw new SerializationError(`Value is nested deeper than ${MAX_DEPTH} levels`);
    try {
      return object(v as object, id);
    } finally {
      depth--;
    }
  };

  const object = (v: object, id: number): string => {
    if (Array.isArray(v)) {
      const keys = Object.keys(v);
      if (keys.length === v.length && (v.length === 0 || keys[v.length - 1] === String(v.length - 1))) {
        return `["a",${id},[${v.map(enc).join(",")}]]`;
      }
      return `["A",${id},${v.length},[${pairs(keys.map((k) => [k, (v as unknown as Record<string, unknown>)[k]]))}]]`;
    }
    const proto = Object.getPrototypeOf(v);
    if (proto === Object.prototype || proto === null) {
      return `["o",${id},[${pairs(Object.entries(v))}]]`;
    }
    if (v instanceof Date) return `["d",${id},${enc(v.getTime())}]`;
    if (v instanceof Map) return `["m",${id},[${pairs([...v])}]]`;
    if (v instanceof Set) return `["s",${id},[${[...v].map(enc).join(",")}]]`;
    if (v instanceof RegExp) return `["x",${id},${JSON.stringify(v.source)},${JSON.stringify(v.flags)}]`;
    if (v instanceof ArrayBuffer) {
      if (isDetached(v)) throw new SerializationError("A detached ArrayBuffer cannot be cloned");
      const buffer = v as Buffer2024;
      const side = toSide({ kind: "buffer", bytes: new Uint8Array(v.slice(0)) });
      return buffer.resizable === true ? `["B",${id},${side},${buffer.maxByteLength}]` : `["B",${id},${side}]`;
    }
    if (ArrayBuffer.isView(v)) {
      const view = v as View;
      const kind = v instanceof DataView ? "DataView" : Object.prototype.toString.call(v).slice(8, -1);
      if (!inBounds(view)) throw new SerializationError(`A ${kind} out of its buffer's bounds cannot be cloned`);
      const length = tracksLength(view, probeBudget)
        ? '"auto"'
        : view instanceof DataView
          ? view.byteLength
          : view.length;
      if (v instanceof DataView) return `["v",${id},${enc(v.buffer)},${v.byteOffset},${length}]`;
      return `["t",${id},"${kind}",${enc(view.buffer)},${view.byteOffset},${length}]`;
    }
    if (v instanceof Promise) return `["p",${id},${toSide({ kind: "promise", promise: v })}]`;
    if (v instanceof Error) {
      // As structured clone reads an error: `name` by a get, `message` and `cause` only as own data properties.
      // The host's stack never crosses.
      const message = Object.getOwnPropertyDescriptor(v, "message");
      const cause = Object.getOwnPropertyDescriptor(v, "cause");
      const said = message !== undefined && "value" in message ? JSON.stringify(String(message.value)) : "null";
      const caused = cause !== undefined && "value" in cause ? `,${enc(cause.value)}` : "";
      return `["e",${id},${JSON.stringify(String(v.name))},${said},""${caused}]`;
    }
    const name = (proto as { constructor?: { name?: string } }).constructor?.name || "Object";
    throw new SerializationError(
      `An instance of ${name} cannot be cloned: only plain objects, arrays, Map, Set, Date, RegExp, Error, ArrayBuffer, typed arrays, functions and promises cross into the sandbox`,
    );
  };

  return new Tape(enc(value), side);
}
