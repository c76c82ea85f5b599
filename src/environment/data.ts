/**
 * Guest data handed to the host's bindings (`cyrnel.output` patches, tool parameters) as what the contract promises
 * them: a tree of plain JSON data. Values arrive from the sandbox structured-cloned, shared references and cycles
 * kept, so they are copied here into fresh plain objects and arrays, every visit of a shared reference charged to a
 * {@link WorkBudget} before its copy is made: a DAG either fits the budget as the tree it stands for, or the copy
 * stops with a {@link BudgetError} (a `SerializationError`) that the guest can catch.
 * @module
 */
import { BudgetError, MAX_WALK_DEPTH, type WorkBudget } from "../values/budget.js";

/** A JSON value as {@link jsonTree} makes it. */
export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

const define = (target: object, key: string, value: unknown) =>
  Object.defineProperty(target, key, { value, writable: true, enumerable: true, configurable: true });
const objectToString = Object.prototype.toString;
const dateToString = Date.prototype.toString;
const dateGetTime = Date.prototype.getTime;
const dateToISOString = Date.prototype.toISOString;

/** The copy of one container, still being filled. */
interface Frame {
  source: object;
  target: JsonValue[] | Record<string, JsonValue>;
  /** Keys of an object, or `undefined` for a list (`items`). */
  keys: string[] | undefined;
  items: unknown[] | undefined;
  index: number;
}

/**
 * `value` (as the sandbox's marshaling decodes it) as a tree of fresh JSON data: plain objects whose keys are
 * defined, never assigned (`__proto__` stays an own key), arrays, strings, finite numbers, booleans and `null`.
 * Converts as the host's JSON storage does: `Date` -> ISO string (`null` when invalid), `bigint` -> decimal string,
 * `Map` -> object (keys as strings), `Set` -> array, typed arrays and `ArrayBuffer` -> arrays of numbers, other
 * objects (errors, regexps...) -> their own enumerable keys; `undefined`, functions and symbols are left out of
 * objects and `null` in arrays, as are `NaN` and infinities. Never calls anything of the value (no `toJSON`).
 *
 * Spends about one unit per character of the JSON text the tree stands for, each visit of a shared reference
 * counted, before that part is copied; throws {@link BudgetError} past the budget or {@link MAX_WALK_DEPTH} levels,
 * and a `TypeError` on a cycle. `what` names the value in those messages.
 */
export function jsonTree(value: unknown, budget: WorkBudget, what: string): JsonValue {
  const path = new Set<object>();
  const stack: Frame[] = [];
  /** The JSON of a leaf, or a frame for a container (pushed); `undefined` when the value has no JSON. */
  const convert = (item: unknown): JsonValue | undefined => {
    switch (typeof item) {
      case "string":
        budget.spend(item.length + 2);
        return item;
      case "number":
        budget.spend(8);
        return Number.isFinite(item) ? (item === 0 ? 0 : item) : null;
      case "boolean":
        budget.spend(5);
        return item;
      case "bigint": {
        const text = item.toString();
        budget.spend(text.length + 2);
        return text;
      }
      case "undefined":
      case "function":
      case "symbol":
        return undefined;
    }
    if (item === null) {
      budget.spend(4);
      return null;
    }
    const object = item as object;
    if (object instanceof Date) {
      const time = Reflect.apply(dateGetTime, object, []) as number;
      budget.spend(26);
      return Number.isNaN(time) ? null : (Reflect.apply(dateToISOString, object, []) as string);
    }
    if (path.has(object)) throw new TypeError(`${what} is circular: only trees of data cross to the host`);
    if (stack.length >= MAX_WALK_DEPTH) throw new BudgetError(`${what} is nested deeper than ${MAX_WALK_DEPTH} levels`);
    budget.spend(2);
    let frame: Frame;
    if (Array.isArray(object)) {
      // Every index up to `length` is written, holes as `null`: a huge sparse length is paid for in full.
      budget.spend(object.length);
      frame = { source: object, target: [], keys: undefined, items: object, index: 0 };
    } else if (object instanceof Set) {
      budget.spend(object.size);
      frame = { source: object, target: [], keys: undefined, items: [...object], index: 0 };
    } else if (ArrayBuffer.isView(object) && !(object instanceof DataView)) {
      const length = (object as unknown as ArrayLike<unknown>).length;
      budget.spend(length * 2);
      frame = {
        source: object,
        target: [],
        keys: undefined,
        items: Array.from(object as unknown as ArrayLike<unknown>),
        index: 0,
      };
    } else if (object instanceof ArrayBuffer) {
      budget.spend(object.byteLength * 2);
      frame = { source: object, target: [], keys: undefined, items: Array.from(new Uint8Array(object)), index: 0 };
    } else if (object instanceof Map) {
      budget.spend(object.size);
      const keys: string[] = [];
      const items: unknown[] = [];
      for (const [k, v] of object) {
        const key =
          (typeof k === "object" && k !== null) || typeof k === "function"
            ? (Reflect.apply(k instanceof Date ? dateToString : objectToString, k, []) as string)
            : String(k);
        keys.push(key);
        items.push(v);
      }
      frame = { source: object, target: {}, keys, items, index: 0 };
    } else {
      const keys = Object.keys(object);
      budget.spend(keys.length);
      frame = { source: object, target: {}, keys, items: undefined, index: 0 };
    }
    path.add(object);
    stack.push(frame);
    return frame.target;
  };

  const root = convert(value);
  if (root === undefined) return null;
  while (stack.length > 0) {
    const frame = stack[stack.length - 1] as Frame;
    const { keys, items } = frame;
    const count = keys === undefined ? (items as unknown[]).length : keys.length;
    if (frame.index >= count) {
      path.delete(frame.source);
      stack.pop();
      continue;
    }
    const i = frame.index++;
    if (keys === undefined) {
      // Through `convert`, children are pushed above this frame and filled before its next item is read.
      (frame.target as JsonValue[]).push(convert((items as unknown[])[i]) ?? null);
    } else {
      const key = keys[i] as string;
      const source = items === undefined ? (frame.source as Record<string, unknown>)[key] : items[i];
      budget.spend(key.length + 3);
      const copy = convert(source);
      if (copy !== undefined) define(frame.target, key, copy);
    }
  }
  return root;
}
