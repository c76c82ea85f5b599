/**
 * Whether a guest value is plain data, read from the engine's objects in linear memory: no guest code runs and the
 * engine is not called. Plain data is what the engine's `JSON.stringify` writes exactly as the boundary's structured
 * clone copies it (plain objects and dense arrays of the standard prototypes, holding strings, booleans, null,
 * finite numbers other than -0, and such objects, each reached once): such a value crosses as one `["j",json]` node
 * without the guest's own walk, which costs the engine several times what `JSON.stringify` does.
 *
 * The objects are read as QuickJS 2025-09-13 lays them out on wasm32 (quickjs.c: `JSObject`, `JSShape`,
 * `JSShapeProperty`, `JSProperty`; quickjs.h: the NaN-boxed `JSValue`). Whether an engine does is checked once per
 * compiled module, on a throwaway instance, against values of every kind: an engine that does not is never read
 * this way, and its values take the guest's walk. Every answer here may only be too cautious: "not plain" costs the
 * guest's walk, which decides as it always did.
 * @module
 */
import type { QuickJSContext, QuickJSHandle, QuickJSWASMModule } from "quickjs-emscripten-core";
import { TAG_BOOL, TAG_FIRST, TAG_FLOAT64, TAG_INT, TAG_NULL, TAG_STRING } from "./value-bits.js";

// Tags of the upper word of a value besides value-bits.ts's (quickjs.h).
const TAG_STRING_ROPE = -6;
const TAG_OBJECT = -1;
/** What the engine subtracts from a float's upper word to box it (`JS_FLOAT64_TAG_ADDEND`). */
const FLOAT_ADDEND = 0x7ff80000 - TAG_FIRST + 1;
const EXPONENT = 0x7ff00000;
const NEGATIVE_ZERO_HIGH = 0x80000000 | 0;

// Word offsets. JSObject: header (16 bytes; class_id in the upper half of its second word, the flag `fast_array` at
// bit 11), weakref_count, shape, prop, then the 8-aligned union whose array part is size, values, count.
const OBJECT_HEAD = 1;
const OBJECT_SHAPE = 5;
const OBJECT_PROPS = 6;
const ARRAY_VALUES = 9;
const ARRAY_COUNT = 10;
const FAST_ARRAY = 1 << 11;
const CLASS_OBJECT = 1;
const CLASS_ARRAY = 2;
// JSShape: header (16 bytes), is_hashed, hash, prop_hash_mask, prop_size, prop_count, deleted_prop_count,
// shape_hash_next, proto, then its properties, two words each: `hash_next:26, flags:6` and the atom.
const SHAPE_COUNT = 8;
const SHAPE_PROTO = 11;
const SHAPE_PROPERTIES = 12;
const FLAGS_SHIFT = 26;
const PROP_ENUMERABLE = 1 << 2;
const PROP_LENGTH = 1 << 3;
/** `JS_PROP_TMASK`: a property that is not an ordinary data property (an accessor, a variable, a lazy one). */
const PROP_KIND = 3 << 4;
/** An atom of a deleted property. */
const ATOM_NULL = 0;

/**
 * Levels past which the guest's walk decides: deeper values are rare, and the engine's own stack bounds how deep
 * its walk and `JSON.stringify` go, which a value read here must not decide differently.
 */
export const MAX_PLAIN_LEVELS = 200;

/** What a read found. */
interface PlainReading {
  /** Levels of objects and arrays of a plain object or array (the outermost is 1); 0: not plain. */
  levels: number;
  /** Values read, what the read cost. */
  visits: number;
}

/** What a compiled module's engine keeps the same in every instance: the atom of `toJSON`, which is predefined. */
export interface PlainFacts {
  toJSON: number;
}

export class PlainData {
  readonly #memory: WebAssembly.Memory;
  readonly #toJSON: number;
  readonly #objectProto: number;
  readonly #arrayProto: number;
  #words = new Int32Array(0);

  private constructor(memory: WebAssembly.Memory, toJSON: number, objectProto: number, arrayProto: number) {
    this.#memory = memory;
    this.#toJSON = toJSON;
    this.#objectProto = objectProto;
    this.#arrayProto = arrayProto;
  }

  /** A reader of `ctx`'s values, the standard prototypes of its realm read from a new object and array. */
  static forRealm({ toJSON }: PlainFacts, ctx: QuickJSContext, memory: WebAssembly.Memory): PlainData {
    const object = ctx.newObject();
    const array = ctx.newArray();
    const words = new Int32Array(memory.buffer);
    const [objectProto, arrayProto] = [object, array].map((handle) => {
      const object = words[pointer(handle) >>> 2] as number;
      const shape = (words[(object >>> 2) + OBJECT_SHAPE] as number) >>> 2;
      return words[shape + SHAPE_PROTO] as number;
    });
    object.dispose();
    array.dispose();
    return new PlainData(memory, toJSON, objectProto as number, arrayProto as number);
  }

  #view(): Int32Array {
    const { buffer } = this.#memory;
    // The memory's buffer is replaced whenever the memory grows.
    if (this.#words.buffer !== buffer) this.#words = new Int32Array(buffer);
    return this.#words;
  }

  /**
   * Reads the value `handle` points to (see {@link PlainReading}): linear in the values read, each read once, and
   * not plain past `maxVisits` of them (what the run can still pay for).
   */
  read(handle: QuickJSHandle, maxVisits = Number.POSITIVE_INFINITY): PlainReading {
    const words = this.#view();
    const at = pointer(handle) >>> 2;
    if (words[at + 1] !== TAG_OBJECT) return { levels: 0, visits: 1 };
    // Objects to read, with their levels; an object met twice is shared (or a cycle), which JSON cannot carry.
    const pending: number[] = [words[at] as number, 1];
    const seen = new Set<number>();
    let deepest = 0;
    let visits = 0;
    // Every value read is within memory: addresses past its end (no engine makes one) read as not plain.
    const end = words.length - SHAPE_PROPERTIES;
    const value = (low: number, high: number, level: number): boolean => {
      if (++visits > maxVisits) return false;
      switch (high) {
        case TAG_OBJECT:
          pending.push(low, level);
          return true;
        case TAG_INT:
        case TAG_BOOL:
        case TAG_NULL:
        case TAG_STRING:
        case TAG_STRING_ROPE:
          return true;
      }
      // Another tag: undefined, a bigint, a symbol, an engine-internal value.
      if ((high - TAG_FIRST) >>> 0 < TAG_FLOAT64 - TAG_FIRST) return false;
      const bits = (high + FLOAT_ADDEND) | 0;
      return (bits & EXPONENT) !== EXPONENT && !(bits === NEGATIVE_ZERO_HIGH && low === 0);
    };
    while (pending.length > 0) {
      const level = pending.pop() as number;
      const object = (pending.pop() as number) >>> 2;
      if (seen.has(object) || object > end) return { levels: 0, visits };
      seen.add(object);
      if (level > deepest) {
        if (level > MAX_PLAIN_LEVELS) return { levels: 0, visits };
        deepest = level;
      }
      const head = words[object + OBJECT_HEAD] as number;
      const shape = (words[object + OBJECT_SHAPE] as number) >>> 2;
      const props = (words[object + OBJECT_PROPS] as number) >>> 2;
      const count = words[shape + SHAPE_COUNT] as number;
      const proto = words[shape + SHAPE_PROTO] as number;
      const isArray = head >>> 16 === CLASS_ARRAY;
      if (shape > end || count < 0 || shape + SHAPE_PROPERTIES + 2 * count > words.length) return { levels: 0, visits };
      if (isArray ? (head & FAST_ARRAY) === 0 || proto !== this.#arrayProto : head >>> 16 !== CLASS_OBJECT)
        return { levels: 0, visits };
      if (!isArray && proto !== this.#objectProto && proto !== 0) return { levels: 0, visits };
      const length = isArray ? (words[object + ARRAY_COUNT] as number) : 0;
      for (let i = 0; i < count; i++) {
        const entry = shape + SHAPE_PROPERTIES + 2 * i;
        const atom = words[entry + 1] as number;
        if (atom === ATOM_NULL) continue;
        const flags = (words[entry] as number) >>> FLAGS_SHIFT;
        const slot = props + 2 * i;
        // An array's only property is its length, which must count its values: no holes past them, no other key.
        if (isArray) {
          if ((flags & PROP_LENGTH) === 0 || words[slot + 1] !== TAG_INT || words[slot] !== length)
            return { levels: 0, visits };
          continue;
        }
        // `JSON.stringify` calls an own `toJSON`, enumerable or not; JSON and clone skip other non-enumerable keys.
        if (atom === this.#toJSON) return { levels: 0, visits };
        if ((flags & PROP_ENUMERABLE) === 0) continue;
        if ((flags & PROP_KIND) !== 0 || !value(words[slot] as number, words[slot + 1] as number, level + 1))
          return { levels: 0, visits };
      }
      if (!isArray) continue;
      const values = (words[object + ARRAY_VALUES] as number) >>> 2;
      if (length < 0 || values + 2 * length > words.length) return { levels: 0, visits };
      for (let i = 0; i < length; i++) {
        if (!value(words[values + 2 * i] as number, words[values + 2 * i + 1] as number, level + 1))
          return { levels: 0, visits };
      }
    }
    return { levels: deepest, visits };
  }
}

/**
 * Values of every kind and the levels {@link PlainData.read} must find in each (0: not plain). Each kind that is not
 * plain is here because reading it as plain would change what crosses.
 */
const SAMPLES: [source: string, levels: number][] = [
  ["({})", 1],
  ["[]", 1],
  ['({ a: 1, b: "s", c: [1, 2.5, { d: null, e: true, f: false }], g: "x".repeat(9) + "y".repeat(9) })', 3],
  ['(() => { const o = Object.create(null); o.k = -1.5e300; o[7] = "seven"; return [o]; })()', 2],
  ["(() => { const o = { a: 1, b: [2] }; delete o.a; return o; })()", 2],
  ['Object.defineProperty({ a: 1 }, "hidden", { value: undefined, enumerable: false })', 1],
  ["[[[[[]]]]]", 5],
  [`[${"0,".repeat(300)}1]`, 1],
  ["({ a: undefined })", 0],
  ["[1, undefined]", 0],
  ["({ a: -0 })", 0],
  ["[NaN]", 0],
  ["({ a: Infinity })", 0],
  ["[-Infinity]", 0],
  ["({ a: 1n })", 0],
  ["[2n ** 100n]", 0],
  ["({ a: Symbol() })", 0],
  ["({ a() {} })", 0],
  ["({ get a() { return 1; } })", 0],
  ['Object.defineProperty({}, "toJSON", { value: 1, enumerable: false })', 0],
  ["({ toJSON: 1 })", 0],
  ["[1, , 3]", 0],
  ["new Array(3)", 0],
  ["(() => { const a = [1]; a.length = 2; return a; })()", 0],
  ['Object.assign([1], { x: "y" })', 0],
  ["(() => { const a = [1]; a.toJSON = 1; return a; })()", 0],
  ["(() => { const o = {}; return { a: o, b: o }; })()", 0],
  ["(() => { const a = []; a.push(a); return a; })()", 0],
  ["new Proxy({}, {})", 0],
  ["new Proxy([], {})", 0],
  ["new (class A {})()", 0],
  ["Object.setPrototypeOf([], Object.prototype)", 0],
  ["[new Date(0)]", 0],
  ["[new Map()]", 0],
  ["[new Uint8Array(1)]", 0],
  ["[new Error('e')]", 0],
  ["[/r/]", 0],
  ["[new Number(1)]", 0],
  ["(function () { return arguments; })(1)", 0],
];

/** Where the value `handle` stands for is kept in linear memory. */
const pointer = (handle: QuickJSHandle) => handle.value as unknown as number;

/**
 * What {@link PlainData} needs of an engine, once it read values of every kind on a throwaway instance (`quickjs`,
 * with its `memory`) as they are; `undefined` for an engine it does not read right.
 */
export function plainFactsOf(quickjs: QuickJSWASMModule, memory: WebAssembly.Memory): PlainFacts | undefined {
  // A throwaway instance: an engine that fails here is not read, and what the probe left is dropped with it.
  try {
    const ctx = quickjs.newRuntime().newContext();
    const samples = ctx.unwrapResult(
      ctx.evalCode(`[({ toJSON: 1 }), ${SAMPLES.map(([source]) => source).join(", ")}]`),
    );
    // The atom of the one property of `{ toJSON: 1 }`: the second word of its shape's first property.
    const withToJSON = ctx.getProp(samples, 0);
    const words = new Int32Array(memory.buffer);
    const shape = (words[((words[pointer(withToJSON) >>> 2] as number) >>> 2) + OBJECT_SHAPE] as number) >>> 2;
    const toJSON = words[shape + SHAPE_PROPERTIES + 1] as number;
    const reader = PlainData.forRealm({ toJSON }, ctx, memory);
    const agree = SAMPLES.every(([, levels], i) => reader.read(ctx.getProp(samples, i + 1)).levels === levels);
    return agree ? { toJSON } : undefined;
  } catch {
    return undefined;
  }
}
