/**
 * Tape (see `tape.ts`) -> host values. The tape is data made by the guest's encoder: it is parsed, never run, and
 * keys are defined (not assigned), so `__proto__` in guest data stays an ordinary own property.
 * @module
 */
import { SerializationError } from "./errors.js";
import { ERROR_TYPES, missingTypedArray, TYPED_ARRAY_KINDS, TYPED_ARRAYS } from "./tape.js";
import type { HostFunction } from "./to-guest.js";

interface HostDecoding {
  /** The bytes of the `index`-th buffer the guest put beside the tape. */
  buffer(index: number): ArrayBuffer;
  /** A host function the guest handed back (only where the mode allows it). */
  hostFunction(id: number): HostFunction | undefined;
  /** A host promise standing for the guest's promise number `id` (only where the mode allows it). */
  promise(id: number): Promise<unknown>;
}

type Node = null | boolean | number | string | Node[];
type ResizableBufferConstructor = new (length: number, options: { maxByteLength: number }) => ArrayBuffer;
type ViewConstructor = (new (
  buffer: ArrayBuffer,
  byteOffset: number,
  length?: number,
) => ArrayBufferView) & {
  BYTES_PER_ELEMENT?: number;
};
type ResizableBuffer = ArrayBuffer & { maxByteLength: number; resizable: boolean; resize(length: number): void };

/**
 * A view whose length tracks `buffer`. Node 20's V8 refuses one whose buffer does not end on a whole element,
 * which the specification allows (a resized buffer leaves such views behind): there the buffer, made by this
 * decoding, ends on a whole element while the view is made, then gets its length and bytes back.
 */
export function trackingView(Ctor: ViewConstructor, buffer: ArrayBuffer, offset: number): ArrayBufferView {
  try {
    return new Ctor(buffer, offset);
  } catch (error) {
    const resizable = buffer as ResizableBuffer;
    const length = resizable.byteLength;
    const element = Ctor.BYTES_PER_ELEMENT ?? 1;
    const rest = (length - offset) % element;
    if (!(error instanceof RangeError) || resizable.resizable !== true || offset > length || rest === 0) throw error;
    if (resizable.maxByteLength - length >= element - rest) {
      resizable.resize(length + element - rest);
      const view = new Ctor(buffer, offset);
      resizable.resize(length);
      return view;
    }
    const saved = new Uint8Array(buffer.slice(length - rest, length));
    resizable.resize(length - rest);
    const view = new Ctor(buffer, offset);
    resizable.resize(length);
    new Uint8Array(buffer).set(saved, length - rest);
    return view;
  }
}

/**
 * Estimated host heap of decoded values, measured on V8: a slot per value, more for a non-integer number, an
 * object or array, and for the collection, date, regexp and error objects. The tape's own length covers strings.
 * Logs and reports are kept by the host at this size, so they are charged at it, not at their tape's length
 * (which undercounted them up to 11x: an empty `Map` is 11 tape bytes and 190 heap bytes).
 */
const VALUE_BYTES = 16;
const FLOAT_BYTES = 16;
const CONTAINER_BYTES = 48;
const BOXED_BYTES = 200;

/**
 * Address space the resizable buffers of one decoded value may reserve in all: the host's engine reserves a
 * resizable buffer's `maxByteLength` up front, which the guest names at no cost of its own (65,508 buffers of
 * 2 GiB exhausted a Node process's address space, after which no ArrayBuffer could be made).
 */
export const MAX_RESERVED_BYTES = 2 ** 32;

/**
 * The estimated heap of plain JSON data beyond its text, as `decodeFromGuest` counts the same values decoded one by
 * one (the `["j",...]` node itself is one of them). Walked with a stack: the guest's JSON may nest past the host's.
 */
function plainHeap(json: unknown): number {
  let bytes = 0;
  const stack: unknown[] = [json];
  while (stack.length > 0) {
    const value = stack.pop();
    bytes += VALUE_BYTES;
    if (typeof value === "number") {
      if (!Number.isInteger(value)) bytes += FLOAT_BYTES;
    } else if (typeof value === "object" && value !== null) {
      bytes += CONTAINER_BYTES;
      for (const item of Array.isArray(value) ? value : Object.values(value)) stack.push(item);
    }
  }
  return bytes - VALUE_BYTES;
}

/** Counts the host bytes a decoding builds (see {@link decodeFromGuest}). */
export interface HeapMeter {
  bytes: number;
}

/**
 * Decodes a tape; when a `meter` is given, adds an estimate of the host heap the value takes (the tape's length,
 * its buffers' bytes, a resizable buffer at its `maxByteLength`, and a cost per decoded value) so the caller can
 * charge what it keeps. A typed array of a kind this host's platform lacks (a `Float16Array` on Node 20) raises
 * `SerializationError`, except in console arguments (`log`), which never fail: there it is a placeholder text, as
 * the guest's log mode makes for what it cannot clone.
 */
export function decodeFromGuest(tape: string, side: HostDecoding, meter?: HeapMeter, log = false): unknown {
  let bytes = tape.length;
  let reserved = 0;
  const refs = new Map<number, unknown>();
  const define = (target: object, key: string, value: unknown) =>
    Object.defineProperty(target, key, { value, writable: true, enumerable: true, configurable: true });
  const hide = (target: object, key: string, value: unknown) =>
    Object.defineProperty(target, key, { value, writable: true, enumerable: false, configurable: true });
  const isIndex = (n: unknown): n is number => typeof n === "number" && Number.isSafeInteger(n) && n >= 0;
  const keep = <T>(id: Node | undefined, value: T): T => {
    refs.set(id as number, value);
    return value;
  };

  const dec = (node: Node | undefined): unknown => {
    bytes += VALUE_BYTES;
    if (!Array.isArray(node)) {
      if (typeof node === "number" && !Number.isInteger(node)) bytes += FLOAT_BYTES;
      return node;
    }
    const [tag, id, a, b, c] = node;
    if (tag === "a" || tag === "A" || tag === "o") bytes += CONTAINER_BYTES;
    else if (tag !== "u" && tag !== "n" && tag !== "b" && tag !== "r" && tag !== "f" && tag !== "p" && tag !== "j")
      bytes += BOXED_BYTES;
    const list = (Array.isArray(a) ? a : []) as Node[];
    switch (tag) {
      case "j":
        // Plain JSON, already parsed with the rest of the tape; counted only when the caller keeps it.
        if (meter !== undefined) bytes += plainHeap(id);
        return id;
      case "u":
        return undefined;
      case "n":
        return id === "-0" ? -0 : Number(id);
      case "b":
        return BigInt(id as string);
      case "r":
        if (!refs.has(id as number)) break;
        return refs.get(id as number);
      case "a": {
        const array = keep(id, [] as unknown[]);
        for (const item of list) array.push(dec(item));
        return array;
      }
      case "A": {
        const array = keep(id, [] as unknown[]);
        const entries = (Array.isArray(b) ? b : []) as Node[];
        for (let i = 0; i < entries.length; i += 2) define(array, String(entries[i]), dec(entries[i + 1]));
        array.length = a as number;
        return array;
      }
      case "o": {
        const object = keep(id, {});
        for (let i = 0; i < list.length; i += 2) define(object, String(list[i]), dec(list[i + 1]));
        return object;
      }
      case "m": {
        const map = keep(id, new Map());
        for (let i = 0; i < list.length; i += 2) map.set(dec(list[i]), dec(list[i + 1]));
        return map;
      }
      case "s": {
        const set = keep(id, new Set());
        for (const item of list) set.add(dec(item));
        return set;
      }
      case "d":
        return keep(id, new Date(dec(a) as number));
      case "x":
        return keep(id, new RegExp(a as string, b as string));
      case "e": {
        // `["e",id,name,message|null,stack(,cause)]`: no own message for null, an own cause when there is a sixth.
        if (typeof a !== "string" || (typeof b !== "string" && b !== null) || typeof c !== "string") break;
        const Ctor = ERROR_TYPES[a];
        const error = b === null ? new (Ctor ?? Error)() : new (Ctor ?? Error)(b);
        if (Ctor === undefined) hide(error, "name", a);
        hide(error, "stack", c);
        keep(id, error);
        if (node.length > 5) hide(error, "cause", dec(node[5]));
        return error;
      }
      case "B": {
        // `["B",id,side(,maxByteLength)]`: a resizable buffer when there is a fourth.
        const fixed = side.buffer(a as number);
        if (b === undefined) {
          bytes += fixed.byteLength;
          return keep(id, fixed);
        }
        if (!isIndex(b) || b < fixed.byteLength) break;
        reserved += b;
        if (reserved > MAX_RESERVED_BYTES) {
          throw new SerializationError(
            `Resizable ArrayBuffers may reserve at most ${MAX_RESERVED_BYTES} bytes (their maxByteLength) in one value`,
          );
        }
        let buffer: ArrayBuffer;
        try {
          buffer = new (ArrayBuffer as ResizableBufferConstructor)(fixed.byteLength, { maxByteLength: b });
        } catch {
          throw new SerializationError(`A resizable ArrayBuffer of maxByteLength ${b} cannot be made on this host`);
        }
        new Uint8Array(buffer).set(new Uint8Array(fixed));
        bytes += b;
        return keep(id, buffer);
      }
      case "t":
      case "v": {
        // `"auto"` as the length: a view whose length tracks its resizable buffer.
        const at = tag === "t" ? 3 : 2;
        const Ctor = tag === "t" ? TYPED_ARRAYS[a as string] : DataView;
        const [buffer, offset, length] = [dec(node[at]), node[at + 1], node[at + 2]];
        if (Ctor === undefined && TYPED_ARRAY_KINDS.includes(a as string)) {
          if (log) return keep(id, `[${a} (not on this host)]`);
          throw new SerializationError(missingTypedArray(a as string));
        }
        if (Ctor === undefined || !(buffer instanceof ArrayBuffer) || !isIndex(offset)) break;
        if (length === "auto") return keep(id, trackingView(Ctor as ViewConstructor, buffer, offset));
        if (!isIndex(length)) break;
        return keep(id, new Ctor(buffer, offset, length));
      }
      case "f": {
        const fn = side.hostFunction(id as number);
        if (fn === undefined) break;
        return fn;
      }
      case "p":
        return keep(id, side.promise(a as number));
    }
    throw new SerializationError(`Malformed value from the sandbox (tag ${JSON.stringify(tag)})`);
  };

  try {
    const value = dec(JSON.parse(tape) as Node);
    if (meter !== undefined) meter.bytes += bytes;
    return value;
  } catch (error) {
    if (error instanceof SerializationError) throw error;
    throw new SerializationError(`Malformed value from the sandbox: ${(error as Error).message}`);
  }
}
