/**
 * Values from the sandbox arrive structured-cloned (Map, Set, Date, bigint...); storage keeps JSON. This is the
 * one conversion, documented for `output`, tool arguments and `kv`: Date -> ISO string, bigint -> decimal string,
 * Map -> object, Set -> array, undefined/functions dropped, typed arrays -> arrays of numbers.
 *
 * Cloned values keep shared references, so every conversion walks within a {@link WorkBudget} (see `src/values/budget.ts`):
 * a value of a few hundred bytes that expands to 2^40 nodes costs the budget, never the host.
 * @module
 */
import { BudgetError, stringifyWithin, WorkBudget } from "./budget.js";

/**
 * Units of work a conversion may spend per byte of JSON it is allowed to produce. `stringifyWithin` charges about a
 * unit per character but 24 for every number, boolean or null, so its estimate is at most 12.5 times the text
 * (an array of one-digit numbers); 16 units per byte let every value within a byte cap through.
 */
export const UNITS_PER_JSON_BYTE = 16;

/** What {@link toJson} and {@link toJsonText} may spend without a budget of their own: about 1 MiB of JSON. */
export const DEFAULT_JSON_UNITS = UNITS_PER_JSON_BYTE * 1_048_576;

const objectToString = Object.prototype.toString;

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

/** Refuses a conversion whose result alone would take more than the budget has left, before allocating it. */
function afford(budget: WorkBudget, units: number): void {
  if (units > budget.left) budget.spend(units);
}

/** The documented conversion as a `JSON.stringify` replacer that pays for what it builds before building it. */
function replacerWithin(budget: WorkBudget): (key: string, value: unknown) => unknown {
  return (_key, value) => {
    if (typeof value === "bigint") return value.toString();
    if (typeof value !== "object" || value === null) return value;
    if (value instanceof Map) {
      afford(budget, value.size);
      const out: Record<string, unknown> = {};
      for (const [k, v] of value) define(out, keyText(k, budget, new Set()), v);
      return out;
    }
    if (value instanceof Set) {
      afford(budget, value.size);
      return [...value];
    }
    if (ArrayBuffer.isView(value) && !(value instanceof DataView)) {
      const items = value as unknown as ArrayLike<number>;
      afford(budget, items.length);
      return Array.from(items);
    }
    if (value instanceof ArrayBuffer) {
      afford(budget, value.byteLength);
      return Array.from(new Uint8Array(value));
    }
    return value;
  };
}

/** Own data property, `__proto__` included as an ordinary key (never the prototype setter). */
export function define(target: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(target, key, { value, writable: true, enumerable: true, configurable: true });
}

/**
 * The JSON text of `value` as storage keeps it, spending from `budget` (default {@link DEFAULT_JSON_UNITS}); throws a
 * `TypeError` for cycles and a `BudgetError` past the budget.
 */
export function toJsonText(
  value: unknown,
  budget = new WorkBudget(DEFAULT_JSON_UNITS, "the value"),
): string | undefined {
  return stringifyWithin(value, budget, replacerWithin(budget));
}

/** `value` as the JSON value storage keeps (`undefined` when it has none), within `budget` like {@link toJsonText}. */
export function toJson(value: unknown, budget?: WorkBudget): unknown {
  const text = toJsonText(value, budget);
  return text === undefined ? undefined : JSON.parse(text);
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

/** A conversion within a byte cap: its text (`undefined` when the value has none) and the text's UTF-8 bytes. */
export interface JsonWithin {
  text: string | undefined;
  bytes: number;
}

/**
 * Converts `value` to JSON text of at most `maxBytes` bytes, in work bounded before it starts: at most
 * `maxBytes * UNITS_PER_JSON_BYTE` units, and no more than `pool` (a run's budget, charged with what was spent) has
 * left. Throws a {@link JsonTooLargeError} naming `what` when the walk passed the cap's budget or the text came
 * out too large, `pool`'s own `BudgetError` when the pool ran dry (then `pool.left` is 0), a `BudgetError` for
 * nesting deeper than `MAX_WALK_DEPTH`, and a `TypeError` for cycles.
 */
export function jsonWithin(value: unknown, maxBytes: number, what: string, pool?: WorkBudget): JsonWithin {
  const cap = maxBytes * UNITS_PER_JSON_BYTE;
  const fromPool = pool !== undefined && pool.left < cap;
  const budget = new WorkBudget(fromPool ? pool.left : cap, what);
  let text: string | undefined;
  let failure: unknown;
  try {
    text = toJsonText(value, budget);
  } catch (error) {
    failure = error;
  }
  // A walk stops at most one spend past its limit: the pool is charged what it had, then refuses more.
  const over = budget.spent > budget.limit;
  if (pool !== undefined) {
    // Charged with the work done, not the spend that was refused.
    pool.spend(Math.min(budget.spent, budget.limit, pool.left));
    if (over && fromPool) pool.spend(1);
  }
  if (failure !== undefined) {
    if (over) throw new JsonTooLargeError(what, maxBytes, undefined);
    throw failure;
  }
  const bytes = text === undefined ? 0 : utf8Length(text);
  if (bytes > maxBytes) throw new JsonTooLargeError(what, maxBytes, bytes);
  return { text, bytes };
}
