/**
 * The host half of the sandbox's `console`: a call's arguments arrive cloned, with what could not be cloned
 * described by the guest (see `LOG_MARK` in guest.ts); `revive` turns those descriptions into values the formatter
 * shows as the guest's originals, and `formatLine` renders the line within a formatting budget.
 *
 * `revive` visits every object of the clone once (its work is linear in the tape the guest built), whatever the
 * descriptions say: they are guest data, so a forged one can make a cycle or share its parts, but never make the
 * host walk a part twice. The formatter's own work, which shared references multiply, is what the budget bounds.
 * @module
 */
import { MAX_WALK_DEPTH, type WorkBudget } from "../values/budget.js";
import { LOG_MARK } from "./guest.js";
import { functionLabel, MAX_STRING, makeInspect, Verbatim } from "./inspect.js";

const { format } = makeInspect();

const define = (target: object, key: PropertyKey, value: unknown) =>
  Object.defineProperty(target, key, { value, writable: true, enumerable: true, configurable: true });
const clip = (text: string) => (text.length > MAX_STRING ? text.slice(0, MAX_STRING) : text);
/** A description's text field: its string, or the text of a primitive (never a method of guest data). */
const textOf = (value: unknown): string =>
  typeof value === "string" ? value : typeof value === "object" || typeof value === "function" ? "" : String(value);

/** A prototype whose constructor is named `name`, so the formatter shows `name { ... }`. */
function namedPrototype(name: string, base: object | null): object {
  const ctor = () => {};
  Object.defineProperty(ctor, "name", { value: clip(name) });
  return Object.create(base, { constructor: { value: ctor, writable: true, configurable: true } });
}

type Marker = Record<string, unknown>;
const isMarker = (value: object): value is Marker =>
  Object.getPrototypeOf(value) === Object.prototype && typeof (value as Marker)[LOG_MARK] === "string";
const isPlainObject = (value: object): boolean => {
  const proto = Object.getPrototypeOf(value);
  return !Array.isArray(value) && (proto === Object.prototype || proto === null);
};

class Reviver {
  /** Revived value of every object met; parts of descriptions (`v`, `s`) are marked with themselves. */
  readonly #seen = new Map<object, unknown>();

  /** `value` with descriptions turned into what they describe; `raw`: `value` itself is data, not a description. */
  revive(value: unknown, depth: number, raw = false): unknown {
    if (typeof value !== "object" || value === null) return value;
    if (this.#seen.has(value)) return this.#seen.get(value);
    // Deeper than any clone the guest's console makes: shown as it came.
    if (depth > MAX_WALK_DEPTH) return value;
    if (!raw && isMarker(value)) return this.#describe(value, depth);
    this.#seen.set(value, value);
    if (value instanceof Map) {
      const entries = [...value];
      value.clear();
      for (const [k, v] of entries) value.set(this.revive(k, depth + 1), this.revive(v, depth + 1));
    } else if (value instanceof Set) {
      const items = [...value];
      value.clear();
      for (const item of items) value.add(this.revive(item, depth + 1));
    } else if (Array.isArray(value) || Object.getPrototypeOf(value) === Object.prototype) {
      const record = value as Record<string, unknown>;
      for (const key of Object.keys(record)) {
        const item = record[key];
        const revived = this.revive(item, depth + 1);
        if (revived !== item) define(record, key, revived);
      }
    }
    return value;
  }

  #describe(marker: Marker, depth: number): unknown {
    switch (marker[LOG_MARK]) {
      case "v":
        return new Verbatim(textOf(marker.t));
      case "f":
        return new Verbatim(functionLabel(clip(textOf(marker.s)), clip(textOf(marker.n))));
      case "e": {
        const error = new Error(textOf(marker.m));
        if (marker.n !== "Error") Object.defineProperty(error, "name", { value: textOf(marker.n), configurable: true });
        this.#seen.set(marker, error);
        const extra = marker.v;
        if (this.#first(extra)) {
          for (const key of Object.keys(extra)) define(error, key, this.revive((extra as Marker)[key], depth + 1));
        }
        this.#symbols(error, marker.s, depth);
        return error;
      }
      case "c": {
        const copy = marker.v;
        if (typeof copy !== "object" || copy === null) return copy;
        // Set before the copy is revived, so a copy that contains its own description is a cycle, not a loop.
        this.#seen.set(marker, copy);
        const first = !this.#seen.has(copy);
        this.revive(copy, depth + 1, true);
        if (!first) return copy;
        if (marker.n === null) {
          // No prototype: shown as `[Object: null prototype]`; a Map, Set or array keeps its own to stay one.
          if (isPlainObject(copy)) Object.setPrototypeOf(copy, null);
        } else if (typeof marker.n === "string") {
          Object.setPrototypeOf(copy, namedPrototype(marker.n, Object.getPrototypeOf(copy)));
        }
        this.#symbols(copy, marker.s, depth);
        return copy;
      }
    }
    // An object that only looks like a description: data.
    return this.revive(marker, depth, true);
  }

  /** `true` the first time an object part of a description is met (parts are walked once, even when shared). */
  #first(part: unknown): part is object {
    if (typeof part !== "object" || part === null || this.#seen.has(part)) return false;
    this.#seen.set(part, part);
    return true;
  }

  /** Symbol-keyed properties, sent as `[symbol text, value]` pairs. */
  #symbols(target: object, pairs: unknown, depth: number): void {
    if (!Array.isArray(pairs) || !this.#first(pairs)) return;
    for (const pair of pairs) {
      if (!Array.isArray(pair) || !this.#first(pair)) continue;
      const text = clip(textOf(pair[0]));
      const description = text.startsWith("Symbol(") && text.endsWith(")") ? text.slice(7, -1) : text;
      define(target, Symbol(description), this.revive(pair[1], depth + 1));
    }
  }
}

/**
 * The line one console call prints (without its `\n`), at most `budget.limit` characters plus the truncation
 * marker (see `truncationMarker` in inspect.ts) when the budget runs out.
 */
export function formatLine(args: unknown, budget: WorkBudget): string {
  if (!Array.isArray(args)) return format([textOf(args)], budget);
  try {
    const reviver = new Reviver();
    return format(
      args.map((arg) => reviver.revive(arg, 1)),
      budget,
    );
  } catch {
    return "[object that cannot be inspected]";
  }
}
