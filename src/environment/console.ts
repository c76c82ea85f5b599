/**
 * The host half of the sandbox's `console`: a call's arguments arrive cloned, with what could not be cloned
 * described by the guest (see `LOG_MARK` in guest.ts); `revive` turns those descriptions into values the formatter
 * shows as the guest's originals, and `formatLine` renders the line.
 * @module
 */
import { LOG_MARK } from "./guest.js";
import { functionLabel, makeInspect, Verbatim } from "./inspect.js";

const { format } = makeInspect();

const define = (target: object, key: PropertyKey, value: unknown) =>
  Object.defineProperty(target, key, { value, writable: true, enumerable: true, configurable: true });

/** A prototype whose constructor is named `name`, so the formatter shows `name { ... }`. */
function namedPrototype(name: string, base: object | null): object {
  const ctor = () => {};
  Object.defineProperty(ctor, "name", { value: name });
  return Object.create(base, { constructor: { value: ctor, writable: true, configurable: true } });
}

type Marker = Record<string, unknown>;
const isMarker = (value: object): value is Marker =>
  Object.getPrototypeOf(value) === Object.prototype && typeof (value as Marker)[LOG_MARK] === "string";

/** Symbol-keyed properties, sent as `[symbol text, value]` pairs. */
function defineSymbols(target: object, pairs: unknown, seen: Map<object, unknown>): void {
  if (!Array.isArray(pairs)) return;
  for (const pair of pairs) {
    if (!Array.isArray(pair)) continue;
    const text = String(pair[0]);
    const description = text.startsWith("Symbol(") && text.endsWith(")") ? text.slice(7, -1) : text;
    define(target, Symbol(description), revive(pair[1], seen));
  }
}

/**
 * A cloned console argument with the guest's descriptions turned into what the formatter shows for the original.
 * Works in place: the clone is the host's own, made for this call.
 */
export function revive(value: unknown, seen = new Map<object, unknown>()): unknown {
  if (typeof value !== "object" || value === null) return value;
  if (seen.has(value)) return seen.get(value);
  if (isMarker(value)) {
    switch (value[LOG_MARK]) {
      case "v":
        return new Verbatim(String(value.t));
      case "f":
        return new Verbatim(functionLabel(String(value.s), String(value.n)));
      case "e": {
        const error = new Error(String(value.m));
        if (value.n !== "Error") Object.defineProperty(error, "name", { value: String(value.n), configurable: true });
        seen.set(value, error);
        const extra = value.v;
        if (typeof extra === "object" && extra !== null) {
          for (const key of Object.keys(extra)) define(error, key, revive((extra as Marker)[key], seen));
        }
        defineSymbols(error, value.s, seen);
        return error;
      }
      case "c": {
        const copy = revive(value.v, seen);
        seen.set(value, copy);
        if (typeof copy !== "object" || copy === null) return copy;
        if (value.n === null) Object.setPrototypeOf(copy, null);
        else if (typeof value.n === "string")
          Object.setPrototypeOf(copy, namedPrototype(value.n, Object.getPrototypeOf(copy)));
        defineSymbols(copy, value.s, seen);
        return copy;
      }
    }
  }
  seen.set(value, value);
  if (value instanceof Map) {
    const entries = [...value];
    value.clear();
    for (const [k, v] of entries) value.set(revive(k, seen), revive(v, seen));
  } else if (value instanceof Set) {
    const items = [...value];
    value.clear();
    for (const item of items) value.add(revive(item, seen));
  } else if (Array.isArray(value) || Object.getPrototypeOf(value) === Object.prototype) {
    const record = value as Record<string, unknown>;
    for (const key of Object.keys(record)) {
      const item = record[key];
      const revived = revive(item, seen);
      if (revived !== item) define(record, key, revived);
    }
  }
  return value;
}

/** The line one console call prints (without its `\n`). */
export function formatLine(args: unknown): string {
  if (!Array.isArray(args)) return String(args);
  try {
    const seen = new Map<object, unknown>();
    return format(args.map((arg) => revive(arg, seen)));
  } catch {
    return "[object that cannot be inspected]";
  }
}
