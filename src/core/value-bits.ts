/**
 * The kind of a guest value read from its bits in linear memory, without a call into the engine. QuickJS's 32-bit
 * builds keep a value NaN-boxed in eight bytes (quickjs.h, `JS_NAN_BOXING`): the upper word is its tag, and any
 * upper word outside the tags' range belongs to a float. Asking the engine instead (`typeof`) allocates and frees a
 * C string per value, most of what the host's side of a call with primitive arguments cost. Whether an engine keeps
 * its values so is checked once, on values of every kind: an engine that does not is always asked.
 * @module
 */
import type { QuickJSContext, QuickJSHandle } from "quickjs-emscripten-core";

/** The kinds told from bits: those of `typeof`, with `null` apart. */
type BitKind = "number" | "boolean" | "string" | "undefined" | "null";

// The tags of the upper word (quickjs.h), shared with plain-data.ts.
export const TAG_INT = 0;
export const TAG_BOOL = 1;
export const TAG_NULL = 2;
const TAG_UNDEFINED = 3;
export const TAG_STRING = -7;
/** The engine's tags run from `JS_TAG_FIRST` to `JS_TAG_FLOAT64` (excluded); any other upper word is a float's. */
export const TAG_FIRST = -9;
export const TAG_FLOAT64 = 8;

export class ValueBits {
  readonly #memory: WebAssembly.Memory;
  #words = new Int32Array(0);

  private constructor(memory: WebAssembly.Memory) {
    this.#memory = memory;
  }

  /** A reader of `ctx`'s values in `memory`, if the engine keeps them as this module reads them. */
  static of(ctx: QuickJSContext, memory: WebAssembly.Memory): ValueBits | undefined {
    const bits = new ValueBits(memory);
    const samples: [QuickJSHandle, BitKind | undefined][] = [
      [ctx.newNumber(1), "number"],
      [ctx.newNumber(-1.5), "number"],
      [ctx.newNumber(Number.NaN), "number"],
      [ctx.newNumber(Number.NEGATIVE_INFINITY), "number"],
      [ctx.newString("s"), "string"],
      [ctx.newObject(), undefined],
      [ctx.newBigInt(1n), undefined],
      [ctx.newBigInt(2n ** 100n), undefined],
      [ctx.newSymbolFor("s"), undefined],
      [ctx.true, "boolean"],
      [ctx.false, "boolean"],
      [ctx.null, "null"],
      [ctx.undefined, "undefined"],
    ];
    const agree = samples.every(([handle, kind]) => bits.kind(handle) === kind);
    for (const [handle] of samples) handle.dispose();
    return agree ? bits : undefined;
  }

  /** The kind of the value `handle` points to; `undefined` for the others (objects, symbols, bigints). */
  kind(handle: QuickJSHandle): BitKind | undefined {
    const { buffer } = this.#memory;
    // The memory's buffer is replaced whenever the memory grows.
    if (this.#words.buffer !== buffer) this.#words = new Int32Array(buffer);
    const tag = this.#words[((handle.value as unknown as number) >>> 2) + 1] as number;
    switch (tag) {
      case TAG_INT:
        return "number";
      case TAG_BOOL:
        return "boolean";
      case TAG_NULL:
        return "null";
      case TAG_UNDEFINED:
        return "undefined";
      case TAG_STRING:
        return "string";
    }
    return (tag - TAG_FIRST) >>> 0 >= TAG_FLOAT64 - TAG_FIRST ? "number" : undefined;
  }
}
