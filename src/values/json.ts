/**
 * The one conversion of values to plain JSON data, for `cyrnel.output` patches, tool arguments and `kv` values, in
 * the environment and in the host alike. Values arrive structured-cloned (Map, Set, Date, bigint..., shared
 * references and cycles kept); they leave as fresh trees of JSON data, sized in UTF-8 bytes of their JSON text as
 * they are built, so nothing is stringified to be measured or parsed back to be used.
 *
 * Cloned values keep shared references, so every conversion walks within a {@link WorkBudget} (see `budget.ts`),
 * each visit of a shared reference charged before its copy is made: a value of a few hundred bytes that expands to
 * 2^40 nodes costs the budget, never the host.
 * @module
 */
import { BudgetError, MAX_WALK_DEPTH, WorkBudget } from "./budget.js";

/** A value `JSON.stringify` writes and `JSON.parse` reads back unchanged. */
export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };
/** A JSON object. */
export type JsonObject = { [key: string]: JsonValue };

/**
 * Units of work a conversion may spend per byte of JSON it is allowed to produce. The conversion spends at most 5.4
 * units per byte it writes (an array of invalid dates: 27 units for each `null,`), keys whose values it leaves out
 * aside, so 16 units per byte let every value within a byte cap through.
 */
export const UNITS_PER_JSON_BYTE = 16;

/** What {@link toJson} may spend without a budget of its own: about 1 MiB of JSON. */
export const DEFAULT_JSON_UNITS = UNITS_PER_JSON_BYTE * 1_048_576;

const objectToString = Object.prototype.toString;
const dateGetTime = Date.prototype.getTime;
const dateToISOString = Date.prototype.toISOString;

/** Own data property, `__proto__` included as an ordinary key (never the prototype setter). */
export function define(target: object, key: string, value: unknown): void {
  Object.defineProperty(target, key, { value, writable: true, enumerable: true, configurable: true });
}

/** Bytes of `text` in UTF-8 (a lone surrogate counts 3, as `TextEncoder` writes U+FFFD), without encoding it. */
export function utf8Length(text: string): number {
  let bytes = text.length;
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    if (unit < 0x80) continue;
    if (unit < 0x800) bytes += 1;
    else if (unit >= 0xd800 && unit <= 0xdbff && (text.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      bytes += 2; // The pair: 4 bytes for 2 units.
      i++;
    } else bytes += 2;
  }
  return bytes;
}

/**
 * The length of `JSON.stringify(text)` without making it: in UTF-8 bytes, or with `utf16` in code units. Quotes and
 * backslashes and `\b\t\n\f\r` take two characters, other control characters and lone surrogates six (`\u001f`).
 */
export function quotedLength(text: string, utf16 = false): number {
  let length = text.length + 2;
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    if (unit < 0x80) {
      if (unit === 0x22 || unit === 0x5c) length += 1;
      else if (unit < 0x20) length += unit >= 0x08 && unit <= 0x0d && unit !== 0x0b ? 1 : 5;
    } else if (unit < 0xd800 || unit > 0xdfff) {
      if (!utf16) length += unit < 0x800 ? 1 : 2;
    } else if (unit <= 0xdbff && (text.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      if (!utf16) length += 2; // The pair: 4 bytes for 2 units.
      i++;
    } else length += 5;
  }
  return length;
}

/**
 * `String(key)` for a Map key, within the budget. `String` of an array joins its items recursively, so an array of
 * shared references as a key expanded exponentially; this walks the same way, paying for every item.
 */
function keyText(key: unknown, budget: WorkBudget, path: Set<object>): string {
  if (typeof key !== "object" || key === null) return String(key);
  if (Array.isArray(key) || (ArrayBuffer.isView(key) && !(key instanceof DataView))) {
    const items = key as ArrayLike<unknown>;
    budget.spend(items.length + 1);
    if (path.has(key)) return ""; // What `join` makes of a cycle.
    path.add(key);
    let text = "";
    for (let i = 0; i < items.length; i++) {
      const item = items[i];
      const part = item === undefined || item === null ? "" : keyText(item, budget, path);
      budget.spend(part.length);
      text += i === 0 ? part : `,${part}`;
    }
    path.delete(key);
    return text;
  }
  // Dates, errors and plain objects print in bounded time (`[object Object]`, a date, `name: message`).
  return key instanceof Date || key instanceof Error ? String(key) : objectToString.call(key);
}

/** What a conversion made: the JSON data and the size of its text. */
export interface SizedJson {
  /** The JSON value; `undefined` when the value has none (`undefined`, a function, a symbol). */
  json: JsonValue | undefined;
  /** UTF-8 bytes of its JSON text (`JSON.stringify(json)`); 0 when it has none. */
  bytes: number;
  /** Levels of arrays and objects: 0 for a primitive, 1 for a flat array or object. */
  depth: number;
  /** When `json` is an object: the UTF-8 bytes of each of its entries, `"key":value`, by key. */
  entries: Map<string, number>;
}

/** A container being copied: `count` children of `source`, by `keys` for an object, into `target`. */
interface Frame {
  source: object;
  target: JsonValue[] | JsonObject;
  /** Keys of an object, or `undefined` for a list. */
  keys: readonly string[] | undefined;
  /** A list's items, or a Map's values by key; `undefined` when an object's are read from `source`. */
  items: ArrayLike<unknown> | undefined;
  count: number;
  index: number;
  /** An object has written an entry (the next one takes a comma). */
  written: boolean;
}

const hasJson = (value: unknown): boolean =>
  value !== undefined && typeof value !== "function" && typeof value !== "symbol";

/**
 * `value` as a fresh tree of JSON data: plain objects whose keys are defined, never assigned (`__proto__` stays an
 * own key), arrays, strings, finite numbers, booleans and `null`. `Date` -> ISO string (`null` when invalid),
 * `bigint` -> decimal string, `Map` -> object (keys as `String` writes them, a later key that reads the same taking
 * the place of the earlier), `Set` -> array, typed arrays and `ArrayBuffer` -> arrays of numbers, other objects
 * (errors, regexps, class instances) -> their own enumerable keys; `undefined`, functions and symbols are left out of
 * objects and `null` in arrays, as are `NaN` and infinities. Never calls a method of the value (no `toJSON`).
 *
 * Spends from `budget` about one unit per character of JSON, each visit of a shared reference counted, before that
 * part is copied; throws {@link BudgetError} past the budget or {@link MAX_WALK_DEPTH} levels, and a `TypeError` on
 * a cycle, each naming `budget.what`. Counts the bytes of the text as it goes: past `maxBytes` the copy stops
 * growing, and once the walk is done a {@link JsonTooLargeError} says how large the text would have been.
 */
export function toJsonSized(value: unknown, budget: WorkBudget, maxBytes = Number.POSITIVE_INFINITY): SizedJson {
  const { what } = budget;
  const path = new Set<object>();
  const joining = new Set<object>();
  const stack: Frame[] = [];
  let bytes = 0;
  let depth = 0;
  const list = (source: object, items: ArrayLike<unknown>): Frame => ({
    source,
    target: [],
    keys: undefined,
    items,
    count: items.length,
    index: 0,
    written: false,
  });
  const record = (source: object, keys: readonly string[], items?: unknown[]): Frame => ({
    source,
    target: {},
    keys,
    items,
    count: keys.length,
    index: 0,
    written: false,
  });

  /** The JSON of a leaf, or the copy of a container with its frame pushed; `undefined` when it has none. */
  const convert = (item: unknown): JsonValue | undefined => {
    switch (typeof item) {
      case "string":
        budget.spend(item.length + 2);
        bytes += quotedLength(item);
        return item;
      case "number":
        budget.spend(8);
        if (!Number.isFinite(item)) {
          bytes += 4;
          return null;
        }
        bytes += String(item).length;
        return item === 0 ? 0 : item;
      case "boolean":
        budget.spend(5);
        bytes += item ? 4 : 5;
        return item;
      case "bigint": {
        const text = item.toString();
        budget.spend(text.length + 2);
        bytes += text.length + 2;
        return text;
      }
      case "undefined":
      case "function":
      case "symbol":
        return undefined;
    }
    if (item === null) {
      budget.spend(4);
      bytes += 4;
      return null;
    }
    const object = item as object;
    if (object instanceof Date) {
      const time = Reflect.apply(dateGetTime, object, []) as number;
      budget.spend(26);
      if (Number.isNaN(time)) {
        bytes += 4;
        return null;
      }
      const text = Reflect.apply(dateToISOString, object, []) as string;
      bytes += text.length + 2;
      return text;
    }
    if (path.has(object)) throw new TypeError(`${what} is circular: only trees of data cross to the host`);
    if (stack.length >= MAX_WALK_DEPTH) throw new BudgetError(`${what} is nested deeper than ${MAX_WALK_DEPTH} levels`);
    budget.spend(2);
    bytes += 2;
    let frame: Frame;
    if (Array.isArray(object)) {
      // Every index up to `length` is written, holes as `null`: a huge sparse length is paid for in full.
      budget.spend(object.length);
      frame = list(object, object);
    } else if (object instanceof Set) {
      budget.spend(object.size);
      frame = list(object, [...object]);
    } else if (ArrayBuffer.isView(object) && !(object instanceof DataView)) {
      const items = object as unknown as ArrayLike<unknown>;
      budget.spend(items.length * 2);
      frame = list(object, items);
    } else if (object instanceof ArrayBuffer) {
      budget.spend(object.byteLength * 2);
      frame = list(object, new Uint8Array(object));
    } else if (object instanceof Map) {
      budget.spend(object.size);
      const at = new Map<string, number>();
      const keys: string[] = [];
      const items: unknown[] = [];
      for (const [k, v] of object) {
        const key = keyText(k, budget, joining);
        const i = at.get(key);
        if (i !== undefined) items[i] = v;
        else {
          at.set(key, keys.length);
          keys.push(key);
          items.push(v);
        }
      }
      frame = record(object, keys, items);
    } else {
      const keys = Object.keys(object);
      budget.spend(keys.length);
      frame = record(object, keys);
    }
    path.add(object);
    stack.push(frame);
    depth = Math.max(depth, stack.length);
    return frame.target;
  };

  const json = convert(value);
  const entries = new Map<string, number>();
  let entry: string | undefined;
  let entryStart = 0;
  while (stack.length > 0) {
    const frame = stack[stack.length - 1] as Frame;
    if (stack.length === 1 && entry !== undefined) {
      entries.set(entry, bytes - entryStart);
      entry = undefined;
    }
    if (frame.index >= frame.count) {
      path.delete(frame.source);
      stack.pop();
      continue;
    }
    // Through `convert`, children are pushed above this frame and filled before its next item is read.
    const i = frame.index++;
    const { keys, items } = frame;
    if (keys === undefined) {
      if (i > 0) bytes += 1;
      let copy = convert((items as ArrayLike<unknown>)[i]);
      if (copy === undefined) {
        bytes += 4;
        copy = null;
      }
      if (bytes <= maxBytes) (frame.target as JsonValue[]).push(copy);
      continue;
    }
    const key = keys[i] as string;
    const source = items === undefined ? (frame.source as Record<string, unknown>)[key] : items[i];
    budget.spend(key.length + 3);
    if (!hasJson(source)) continue;
    if (frame.written) bytes += 1;
    frame.written = true;
    if (stack.length === 1) {
      entry = key;
      entryStart = bytes;
    }
    bytes += quotedLength(key) + 1;
    const copy = convert(source) as JsonValue;
    if (bytes <= maxBytes) define(frame.target, key, copy);
  }
  if (bytes > maxBytes) throw new JsonTooLargeError(what, maxBytes, bytes);
  return { json, bytes, depth, entries };
}

/** `value` as JSON data (`undefined` when it has none), within `budget` (default {@link DEFAULT_JSON_UNITS}). */
export function toJson(
  value: unknown,
  budget = new WorkBudget(DEFAULT_JSON_UNITS, "the value"),
): JsonValue | undefined {
  return toJsonSized(value, budget).json;
}

/** A value whose JSON text is over a byte cap: `bytes` is its size, or `undefined` when the walk stopped first. */
export class JsonTooLargeError extends BudgetError {
  constructor(
    readonly what: string,
    readonly maxBytes: number,
    readonly bytes: number | undefined,
  ) {
    super(
      bytes === undefined
        ? `${what} is more than ${maxBytes} bytes of JSON (shared references count each time they are reached)`
        : `${what} is ${bytes} bytes of JSON, over ${maxBytes}`,
    );
  }
}

/**
 * Converts `value` to JSON of at most `maxBytes` bytes of text, in work bounded before it starts: at most
 * `maxBytes * UNITS_PER_JSON_BYTE` units, and no more than `pool` (a run's budget, charged with what was spent) has
 * left. Throws a {@link JsonTooLargeError} naming `what` when the walk passed the cap's budget or the text came
 * out too large, `pool`'s own `BudgetError` when the pool ran dry (then `pool.left` is 0), a `BudgetError` for
 * nesting deeper than `MAX_WALK_DEPTH`, and a `TypeError` for cycles.
 */
export function jsonWithin(value: unknown, maxBytes: number, what: string, pool?: WorkBudget): SizedJson {
  const cap = maxBytes * UNITS_PER_JSON_BYTE;
  const fromPool = pool !== undefined && pool.left < cap;
  const budget = new WorkBudget(fromPool ? pool.left : cap, what);
  let sized: SizedJson | undefined;
  let failure: unknown;
  try {
    sized = toJsonSized(value, budget, maxBytes);
  } catch (error) {
    failure = error;
  }
  // A walk stops at most one spend past its limit: the pool is charged what it had, then refuses more.
  const over = budget.exhausted;
  if (pool !== undefined) {
    // Charged with the work done, not the spend that was refused.
    pool.spend(Math.min(budget.spent, budget.limit, pool.left));
    if (over && fromPool) pool.spend(1);
  }
  if (sized === undefined) throw over ? new JsonTooLargeError(what, maxBytes, undefined) : failure;
  return sized;
}
