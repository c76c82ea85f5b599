/**
 * JavaScript implementations of the Array methods the core prelude guards (see "Native work" in core.ts), for the
 * calls whose native loop could run unbounded without polling: array-likes and proxies (reading their `length` runs
 * guest code), lengths past the core's native budget (2 ** 32 - 1 holes, 2 ** 53 - 1 array-likes), and the methods
 * whose native loop reads lengths the core cannot see beforehand (concat, flat, flatMap). Each follows the engine's
 * own C implementation (QuickJS 2025-09-13, quickjs.c) step by step: the same property reads, `has` checks, writes and
 * deletions in the same order, the same conversions and the same error messages, and the engine's sort (rqsort) for
 * the same comparator calls. Being bytecode, their loops poll for interrupts, so terminate() and the safety cap stop
 * them.
 *
 * Compiled on a run's first such call, possibly after user code ran: `guestSlowPaths` reaches nothing global, every
 * intrinsic comes from the core's kit. Shipped as source text: it must not close over anything in this file.
 * @module
 */
import type { Guard, NativeKit } from "./core.js";

type Obj = Record<PropertyKey, unknown>;
type Fn = (...args: never[]) => unknown;
/** One element being sorted: its value, its string (default order, computed on first comparison), its index. */
type Slot = { val: unknown; str: string | undefined; pos: number };

export function guestSlowPaths(K: NativeKit): Record<string, Guard> {
  // biome-ignore lint/suspicious/noRedundantUseStrict: shipped as source text and evaluated as a sloppy script.
  "use strict";
  const { apply, isArray, trunc, sign, define, toLength, ArrayCtor, ObjectCtor, TypeErrorCtor } = K;
  const { min: minOf, max: maxOf } = K;
  const { symbolSpecies, symbolSpreadable } = K;
  const MAX_LENGTH = 2 ** 53 - 1;

  /** The argument at `index`, read within the arguments (past their end a read would run the guest's getters). */
  const arg = (args: unknown[], index: number) => (index < args.length ? args[index] : undefined);
  const toObject = (value: unknown) => ObjectCtor(value) as Obj;
  const lengthOf = (o: Obj) => toLength(o.length);
  const isObject = (value: unknown) => (typeof value === "object" && value !== null) || typeof value === "function";
  const fail = (message: string) => {
    throw new TypeErrorCtor(message);
  };
  const callable = (f: unknown) => {
    if (typeof f !== "function") fail("not a function");
  };
  /** JS_ToInt64Clamp: ToIntegerOrInfinity, plus `offset` when negative, clamped to [min, max]. */
  const clamp = (value: unknown, min: number, max: number, offset: number) => {
    let n = trunc(value as number);
    // biome-ignore lint/suspicious/noSelfCompare: NaN without the guest's Number.isNaN.
    if (n !== n) n = 0;
    if (n < 0) n += offset;
    return n < min ? min : n > max ? max : n + 0;
  };
  /** ArraySpeciesCreate, as JS_ArraySpeciesCreate (one realm: no cross-realm Array check). */
  const speciesCreate = (o: Obj, length: number): Obj => {
    if (!isArray(o)) return new ArrayCtor(length) as unknown as Obj;
    let C = o.constructor as unknown as Obj | undefined | null;
    if (isObject(C)) {
      C = (C as unknown as Obj)[symbolSpecies] as Obj | undefined | null;
      if (C === null) C = undefined;
    }
    if (C === undefined) return new ArrayCtor(length) as unknown as Obj;
    return new (C as unknown as new (n: number) => Obj)(length);
  };
  /** JS_CopySubArray, generic path: moves `count` elements, deleting where the source has none. */
  const copySub = (o: Obj, to: number, from: number, count: number, dir: number) => {
    for (let i = 0; i < count; i++) {
      const f = dir < 0 ? from + count - i - 1 : from + i;
      const t = dir < 0 ? to + count - i - 1 : to + i;
      if (f in o) o[t] = o[f];
      else delete o[t];
    }
  };

  const EVERY = 0;
  const SOME = 1;
  const FOR_EACH = 2;
  const MAP = 3;
  const FILTER = 4;
  const iterate =
    (mode: number): Guard =>
    (self, args) => {
      const o = toObject(self);
      const length = lengthOf(o);
      const f = arg(args, 0) as Fn;
      const thisArg = args.length > 1 ? args[1] : undefined;
      callable(f);
      const out = mode === MAP ? speciesCreate(o, length) : mode === FILTER ? speciesCreate(o, 0) : undefined;
      let n = 0;
      for (let k = 0; k < length; k++) {
        if (!(k in o)) continue;
        const value = o[k];
        const r = apply(f, thisArg, [value, k, o]);
        if (mode === EVERY) {
          if (!r) return false;
        } else if (mode === SOME) {
          if (r) return true;
        } else if (mode === MAP) define(out as Obj, k, r);
        else if (mode === FILTER && r) define(out as Obj, n++, value);
      }
      return mode === EVERY ? true : mode === SOME ? false : out;
    };

  const reduce =
    (right: boolean): Guard =>
    (self, args) => {
      const o = toObject(self);
      const length = lengthOf(o);
      const f = arg(args, 0) as Fn;
      callable(f);
      let k = 0;
      let acc: unknown;
      if (args.length > 1) acc = args[1];
      else {
        for (;;) {
          if (k >= length) fail("empty array");
          const at = right ? length - k - 1 : k;
          k++;
          if (at in o) {
            acc = o[at];
            break;
          }
        }
      }
      for (; k < length; k++) {
        const at = right ? length - k - 1 : k;
        if (at in o) acc = apply(f, undefined, [acc, o[at], at, o]);
      }
      return acc;
    };

  const search =
    (mode: number): Guard =>
    (self, args) => {
      const o = toObject(self);
      const length = lengthOf(o);
      const x = arg(args, 0);
      if (length <= 0) return mode === 2 ? false : -1;
      if (mode === 1) {
        let n = args.length > 1 ? clamp(args[1], -1, length - 1, length) : length - 1;
        for (; n >= 0; n--) if (n in o && o[n] === x) return n;
        return -1;
      }
      let n = args.length > 1 ? clamp(args[1], 0, length, length) : 0;
      for (; n < length; n++) {
        if (mode === 2) {
          const v = o[n];
          // biome-ignore lint/suspicious/noSelfCompare: SameValueZero without the guest's Number.isNaN.
          if (v === x || (v !== v && x !== x)) return true;
        } else if (n in o && o[n] === x) return n;
      }
      return mode === 2 ? false : -1;
    };

  const join =
    (locale: boolean): Guard =>
    (self, args) => {
      const o = toObject(self);
      const length = lengthOf(o);
      let separator = ",";
      if (!locale && args.length > 0 && args[0] !== undefined) separator = `${args[0]}`;
      let out = "";
      for (let i = 0; i < length; i++) {
        if (i > 0) out += separator;
        let element = o[i] as { toLocaleString(): unknown } | null | undefined;
        if (element !== null && element !== undefined) {
          if (locale) element = element.toLocaleString() as typeof element;
          out += `${element}`;
        }
      }
      return out;
    };

  const slice =
    (splice: boolean): Guard =>
    (self, args) => {
      const o = toObject(self);
      const length = lengthOf(o);
      const start = clamp(arg(args, 0), 0, length, length);
      let count: number;
      let items = 0;
      let deleted = 0;
      if (splice) {
        if (args.length === 1) deleted = length - start;
        else if (args.length > 1) {
          items = args.length - 2;
          deleted = clamp(arg(args, 1), 0, length - start, 0);
        }
        if (items - deleted > MAX_LENGTH - length) fail("Array loo long");
        count = deleted;
      } else {
        const end = arg(args, 1) === undefined ? length : clamp(arg(args, 1), 0, length, length);
        count = maxOf(end - start, 0);
      }
      const out = speciesCreate(o, count);
      const end = start + count;
      let n = 0;
      for (let k = start; k < end; k++, n++) if (k in o) define(out, n, o[k]);
      out.length = n;
      if (splice) {
        const newLength = length + items - deleted;
        if (items !== deleted) {
          copySub(o, start + items, start + deleted, length - (start + deleted), items <= deleted ? 1 : -1);
          for (let k = length; k-- > newLength; ) delete o[k];
        }
        for (let i = 0; i < items; i++) o[start + i] = args[i + 2];
        o.length = newLength;
      }
      return out;
    };

  // QuickJS's rqsort (cutils.c): introsort with a median of three, three-way partitioning, heapsort past depth 50
  // and insertion sort below 7 elements, so the comparator sees the same pairs in the same order.
  const rqsort = (a: Slot[], count: number, cmp: (x: Slot, y: Slot) => number) => {
    const swap = (i: number, j: number) => {
      const t = a[i] as Slot;
      a[i] = a[j] as Slot;
      a[j] = t;
    };
    const swapBlock = (i: number, j: number, n: number) => {
      for (let k = 0; k < n; k++) swap(i + k, j + k);
    };
    const c = (i: number, j: number) => cmp(a[i] as Slot, a[j] as Slot);
    /** heapsortx's inner loop: moves element `r` down the heap of `n` elements at `base`. */
    const sift = (base: number, from: number, n: number) => {
      for (let r = from; ; ) {
        let ch = r * 2 + 1;
        if (ch >= n) break;
        if (ch < n - 1 && c(base + ch, base + ch + 1) <= 0) ch++;
        if (c(base + r, base + ch) > 0) break;
        swap(base + r, base + ch);
        r = ch;
      }
    };
    const heapsort = (base: number, n: number) => {
      if (n <= 1) return;
      for (let i = n >> 1; i > 0; ) {
        i--;
        sift(base, i, n);
      }
      for (let i = n - 1; i > 0; i--) {
        swap(base, base + i);
        sift(base, 0, i);
      }
    };
    if (count < 2) return;
    const stack: number[] = [];
    let sp = 0;
    const push = (base: number, n: number, depth: number) => {
      define(stack, sp++, base);
      define(stack, sp++, n);
      define(stack, sp++, depth);
    };
    push(0, count, 0);
    while (sp > 0) {
      let depth = stack[--sp] as number;
      let n = stack[--sp] as number;
      let ptr = stack[--sp] as number;
      while (n > 6) {
        if (++depth > 50) {
          heapsort(ptr, n);
          n = 0;
          break;
        }
        const m4 = n >> 2;
        const p1 = ptr + m4;
        const p2 = ptr + 2 * m4;
        const p3 = ptr + 3 * m4;
        const m =
          c(p1, p2) < 0 ? (c(p2, p3) < 0 ? p2 : c(p1, p3) < 0 ? p3 : p1) : c(p2, p3) > 0 ? p2 : c(p1, p3) < 0 ? p1 : p3;
        swap(ptr, m);
        let i = 1;
        let lt = 1;
        let pi = ptr + 1;
        let plt = pi;
        let gt = n;
        const top = ptr + n;
        let pj = top;
        let pgt = top;
        let r: number;
        for (;;) {
          while (pi < pj) {
            r = c(ptr, pi);
            if (r < 0) break;
            if (r === 0) {
              swap(plt, pi);
              lt++;
              plt++;
            }
            i++;
            pi++;
          }
          for (;;) {
            pj--;
            if (pi >= pj) break;
            r = c(ptr, pj);
            if (r > 0) break;
            if (r === 0) {
              gt--;
              pgt--;
              swap(pgt, pj);
            }
          }
          if (pi >= pj) break;
          swap(pi, pj);
          i++;
          pi++;
        }
        let span = plt - ptr;
        let span2 = pi - plt;
        lt = i - lt;
        if (span > span2) span = span2;
        swapBlock(ptr, pi - span, span);
        span = top - pgt;
        span2 = pgt - pi;
        pgt = top - span2;
        gt = n - (gt - i);
        if (span > span2) span = span2;
        swapBlock(pi, top - span, span);
        if (lt > n - gt) {
          push(ptr, lt, depth);
          ptr = pgt;
          n -= gt;
        } else {
          push(pgt, n - gt, depth);
          n = lt;
        }
      }
      for (let pi = ptr + 1, top = ptr + n; pi < top; pi++) {
        for (let pj = pi; pj > ptr && c(pj - 1, pj) > 0; pj--) swap(pj, pj - 1);
      }
    }
  };
  /** The engine's test for "the same value" before calling a comparator (a bitwise JSValue comparison). */
  const same = (x: unknown, y: unknown) =>
    // biome-ignore lint/suspicious/noSelfCompare: NaN is the same value as NaN here.
    x === y ? x !== 0 || 1 / (x as number) === 1 / (y as number) : x !== x && y !== y;
  /** js_array_cmp_generic: the comparator's sign or the strings' order, then the original positions. */
  const comparing = (compare: unknown) => (x: Slot, y: Slot) => {
    let r = 0;
    if (compare !== undefined) {
      if (!same(x.val, y.val)) {
        const s = sign(apply(compare as Fn, undefined, [x.val, y.val]) as number);
        r = s > 0 ? 1 : s < 0 ? -1 : 0;
      }
    } else {
      if (x.str === undefined) x.str = `${x.val}`;
      if (y.str === undefined) y.str = `${y.val}`;
      r = x.str < y.str ? -1 : x.str > y.str ? 1 : 0;
    }
    return r !== 0 ? r : x.pos > y.pos ? 1 : x.pos < y.pos ? -1 : 0;
  };
  /** js_array_sort from its ToObject on. */
  const sortObject = (o: Obj, compare: unknown) => {
    const length = lengthOf(o);
    const slots: Slot[] = [];
    let count = 0;
    let undefinedCount = 0;
    for (let i = 0; i < length; i++) {
      if (!(i in o)) continue;
      const val = o[i];
      if (val === undefined) undefinedCount++;
      else define(slots, count++, { __proto__: null, val, str: undefined, pos: i });
    }
    rqsort(slots, count, comparing(compare));
    let n = 0;
    for (; n < count; n++) {
      const slot = slots[n] as Slot;
      if (slot.pos !== n) o[n] = slot.val;
    }
    let i = n;
    for (; undefinedCount-- > 0; i++) o[i] = undefined;
    for (; i < length; i++) delete o[i];
    return o;
  };
  const comparator = (compare: unknown) => {
    if (compare !== undefined) callable(compare);
  };

  const isSpreadable = (e: unknown) => {
    if (!isObject(e)) return false;
    const spreadable = (e as Obj)[symbolSpreadable];
    return spreadable !== undefined ? !!spreadable : isArray(e);
  };
  const flatten = (
    target: Obj,
    source: Obj,
    sourceLength: number,
    start: number,
    depth: number,
    mapper: Fn | undefined,
    thisArg: unknown,
  ): number => {
    let t = start;
    for (let s = 0; s < sourceLength; s++) {
      if (!(s in source)) continue;
      let element = source[s];
      if (mapper !== undefined) element = apply(mapper, thisArg, [element, s, source]);
      if (depth > 0 && isArray(element)) {
        const inner = element as unknown as Obj;
        t = flatten(target, inner, lengthOf(inner), t, depth - 1, undefined, undefined);
        continue;
      }
      if (t >= MAX_LENGTH) fail("Array too long");
      define(target, t++, element);
    }
    return t;
  };

  return {
    __proto__: null,
    every: iterate(EVERY),
    some: iterate(SOME),
    forEach: iterate(FOR_EACH),
    map: iterate(MAP),
    filter: iterate(FILTER),
    reduce: reduce(false),
    reduceRight: reduce(true),
    indexOf: search(0),
    lastIndexOf: search(1),
    includes: search(2),
    join: join(false),
    toLocaleString: join(true),
    slice: slice(false),
    splice: slice(true),
    fill(self: unknown, args: unknown[]) {
      const o = toObject(self);
      const length = lengthOf(o);
      let start = args.length > 1 && args[1] !== undefined ? clamp(args[1], 0, length, length) : 0;
      const end = args.length > 2 && args[2] !== undefined ? clamp(args[2], 0, length, length) : length;
      const value = arg(args, 0);
      for (; start < end; start++) o[start] = value;
      return o;
    },
    shift(self: unknown) {
      const o = toObject(self);
      const length = lengthOf(o);
      let newLength = 0;
      let first: unknown;
      if (length > 0) {
        newLength = length - 1;
        first = o[0];
        copySub(o, 0, 1, length - 1, 1);
        delete o[newLength];
      }
      o.length = newLength;
      return first;
    },
    unshift(self: unknown, args: unknown[]) {
      const o = toObject(self);
      const length = lengthOf(o);
      const newLength = length + args.length;
      if (args.length > MAX_LENGTH - length) fail("Array loo long");
      if (args.length > 0) copySub(o, args.length, 0, length, -1);
      for (let i = 0; i < args.length; i++) o[i] = args[i];
      o.length = newLength;
      return newLength;
    },
    reverse(self: unknown) {
      const o = toObject(self);
      const length = lengthOf(o);
      for (let l = 0, h = length - 1; l < h; l++, h--) {
        const lowPresent = l in o;
        const low = lowPresent ? o[l] : undefined;
        const highPresent = h in o;
        const high = highPresent ? o[h] : undefined;
        if (highPresent) {
          o[l] = high;
          if (lowPresent) o[h] = low;
          else delete o[h];
        } else if (lowPresent) {
          delete o[l];
          o[h] = low;
        }
      }
      return o;
    },
    copyWithin(self: unknown, args: unknown[]) {
      const o = toObject(self);
      const length = lengthOf(o);
      const to = clamp(arg(args, 0), 0, length, length);
      const from = clamp(arg(args, 1), 0, length, length);
      const end = args.length > 2 && args[2] !== undefined ? clamp(args[2], 0, length, length) : length;
      const count = minOf(end - from, length - to);
      copySub(o, to, from, count, from < to && to < from + count ? -1 : 1);
      return o;
    },
    sort(self: unknown, args: unknown[]) {
      comparator(arg(args, 0));
      return sortObject(toObject(self), arg(args, 0));
    },
    toSorted(self: unknown, args: unknown[]) {
      comparator(arg(args, 0));
      // toSpliced() reads and copies exactly as toSorted does (holes become undefined) into a fresh array.
      const copy = apply(K.originals.toSpliced as Fn, self, []) as Obj;
      K.charge((copy.length as number) * 10);
      return sortObject(copy, arg(args, 0));
    },
    concat(self: unknown, args: unknown[]) {
      const o = toObject(self);
      const out = speciesCreate(o, 0);
      let n = 0;
      for (let i = -1; i < args.length; i++) {
        const e = i < 0 ? o : args[i];
        if (isSpreadable(e)) {
          const length = lengthOf(e as Obj);
          if (length > MAX_LENGTH - n) fail("Array loo long");
          for (let k = 0; k < length; k++, n++) if (k in (e as object)) define(out, n, (e as Obj)[k]);
        } else {
          if (n >= MAX_LENGTH) fail("Array loo long");
          define(out, n++, e);
        }
      }
      out.length = n;
      return out;
    },
    flat(self: unknown, args: unknown[]) {
      const o = toObject(self);
      const length = lengthOf(o);
      let depth = 1;
      if (args.length > 0 && args[0] !== undefined) {
        depth = trunc(arg(args, 0) as number);
        // biome-ignore lint/suspicious/noSelfCompare: NaN without the guest's Number.isNaN.
        depth = depth !== depth ? 0 : minOf(maxOf(depth, -2147483648), 2147483647);
      }
      const out = speciesCreate(o, 0);
      flatten(out, o, length, 0, depth, undefined, undefined);
      return out;
    },
    flatMap(self: unknown, args: unknown[]) {
      const o = toObject(self);
      const length = lengthOf(o);
      const mapper = arg(args, 0) as Fn;
      const thisArg = args.length > 1 ? args[1] : undefined;
      callable(mapper);
      const out = speciesCreate(o, 0);
      flatten(out, o, length, 0, 1, mapper, thisArg);
      return out;
    },
  } as unknown as Record<string, Guard>;
}
