/**
 * Budgets for the host's work on values that came out of the sandbox. A guest value crosses as a tape that keeps
 * shared references, so forty `x = [x, x]` steps are a few hundred bytes that expand to 2^40 nodes when the host
 * walks them as a tree (`JSON.stringify`, a formatter, a schema validator). Every such walk spends from a
 * {@link WorkBudget} that counts each visit, shared or not, and stops with a {@link BudgetError} once it is spent:
 * the work is bounded before it starts, never measured after.
 * @module
 */
import { SerializationError } from "./errors.js";

/** Deepest nesting a host walk follows (as deep as values passed into a run may be, see `MAX_DEPTH`). */
export const MAX_WALK_DEPTH = 1000;

/** A walk over guest data went past its budget. */
export class BudgetError extends SerializationError {
  override name = "SerializationError";
}

/** Units of work a walk may spend; one budget may be shared by several walks of one run or one call. */
export class WorkBudget {
  #left: number;

  /** @param what names the walk in the error ("formatting console arguments", "the kv value"...). */
  constructor(
    readonly limit: number,
    readonly what: string,
  ) {
    this.#left = limit;
  }

  /** Units spent so far (at most `limit` plus the last, refused, spend). */
  get spent(): number {
    return this.limit - this.#left;
  }

  /** Units still available. */
  get left(): number {
    return Math.max(0, this.#left);
  }

  /** `true` once a spend went past the limit. */
  get exhausted(): boolean {
    return this.#left < 0;
  }

  /**
   * Spends `units` like {@link spend} but answers instead of throwing: `false` when that went past the limit, and
   * for every later call (for walks that stop softly, such as a formatter that truncates its text).
   */
  trySpend(units: number): boolean {
    this.#left -= units;
    return this.#left >= 0;
  }

  /** Spends `units`; throws {@link BudgetError} when that goes past the limit. */
  spend(units: number): void {
    this.#left -= units;
    if (this.#left < 0) {
      throw new BudgetError(
        `${this.what} needs more than ${this.limit} units of work (shared references count each time they are reached)`,
      );
    }
  }
}

type Replacer = (this: unknown, key: string, value: unknown) => unknown;
type Frame = { holder: object; keys: readonly string[]; index: number };

/** Characters a JSON number, boolean or null can take at most (`-1.2345678901234567e-308`). */
const SCALAR_UNITS = 24;

/**
 * `JSON.stringify(value, replacer)`, spending about one unit per character of the text it would write before
 * any of it is written, so a shared-reference bomb or a 2^32-long sparse array costs the budget, not the host.
 * Visits exactly what `JSON.stringify` visits (`toJSON`, the replacer, holes as `null`), without recursion;
 * cycles throw the `TypeError` `JSON.stringify` throws, and nesting deeper than {@link MAX_WALK_DEPTH} a
 * {@link BudgetError}.
 */
export function stringifyWithin(value: unknown, budget: WorkBudget, replacer?: Replacer): string | undefined {
  const resolve = (holder: object, key: string): unknown => {
    let item = (holder as Record<string, unknown>)[key];
    const toJSON = (item as { toJSON?: unknown } | null | undefined)?.toJSON;
    if (typeof toJSON === "function" && typeof item === "object") item = Reflect.apply(toJSON, item, [key]);
    return replacer === undefined ? item : Reflect.apply(replacer, holder, [key, item]);
  };
  const path = new Set<object>();
  const stack: Frame[] = [];
  const enter = (item: unknown, keyUnits: number): void => {
    budget.spend(keyUnits);
    if (typeof item === "bigint") throw new TypeError("Do not know how to serialize a BigInt");
    if (typeof item !== "object" || item === null) {
      budget.spend(typeof item === "string" ? item.length + 2 : SCALAR_UNITS);
      return;
    }
    if (path.has(item)) throw new TypeError("Converting circular structure to JSON");
    if (stack.length >= MAX_WALK_DEPTH) {
      throw new BudgetError(`${budget.what} is nested deeper than ${MAX_WALK_DEPTH} levels`);
    }
    budget.spend(2);
    if (Array.isArray(item)) {
      // Every index up to `length` is written, holes as `null`: a huge sparse length is paid for in full.
      budget.spend(item.length);
      stack.push({ holder: item, keys: [], index: -item.length });
    } else {
      const keys = Object.keys(item);
      budget.spend(keys.length);
      stack.push({ holder: item, keys, index: 0 });
    }
    path.add(item);
  };
  const root = resolve({ "": value }, "");
  if (root === undefined || typeof root === "function" || typeof root === "symbol") return undefined;
  enter(root, 0);
  while (stack.length > 0) {
    const frame = stack[stack.length - 1] as Frame;
    // Arrays count their index up from -length to 0; objects walk their keys.
    if (frame.index < 0) {
      const index = (frame.holder as unknown[]).length + frame.index++;
      enter(resolve(frame.holder, String(index)), 0);
    } else if (frame.index < frame.keys.length) {
      const key = frame.keys[frame.index++] as string;
      const item = resolve(frame.holder, key);
      if (item !== undefined && typeof item !== "function" && typeof item !== "symbol") enter(item, key.length + 3);
    } else {
      path.delete(frame.holder);
      stack.pop();
    }
  }
  return JSON.stringify(value, replacer);
}
