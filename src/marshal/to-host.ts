/**
 * Tape (see `tape.ts`) -> host values. The tape is data made by the guest's encoder: it is parsed, never run, and
 * keys are defined (not assigned), so `__proto__` in guest data stays an ordinary own property.
 * @module
 */
import { SerializationError } from "../errors.js";
import { ERROR_TYPES, TYPED_ARRAYS } from "./tape.js";
import type { HostFunction } from "./to-guest.js";

export interface HostDecoding {
  /** The bytes of the `index`-th buffer the guest put beside the tape. */
  buffer(index: number): ArrayBuffer;
  /** A host function the guest handed back (only where the mode allows it). */
  hostFunction(id: number): HostFunction | undefined;
  /** A host promise standing for the guest's promise number `id` (only where the mode allows it). */
  promise(id: number): Promise<unknown>;
}

type Node = null | boolean | number | string | Node[];

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

/** Counts the host bytes a decoding builds (see {@link decodeFromGuest}). */
export interface HeapMeter {
  bytes: number;
}

/**
 * Decodes a tape; when a `meter` is given, adds an estimate of the host heap the value takes (the tape's length,
 * its buffers' bytes and a cost per decoded value) so the caller can charge what it keeps.
 */
export function decodeFromGuest(tape: string, side: HostDecoding, meter?: HeapMeter): unknown {
  let bytes = tape.length;
  const refs = new Map<number, unknown>();
  const define = (target: object, key: string, value: unknown) =>
    Object.defineProperty(target, key, { value, writable: true, enumerable: true, configurable: true });
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
    else if (tag !== "u" && tag !== "n" && tag !== "b" && tag !== "r" && tag !== "f" && tag !== "p")
      bytes += BOXED_BYTES;
    const list = (Array.isArray(a) ? a : []) as Node[];
    switch (tag) {
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
        const Ctor = ERROR_TYPES[a as string] ?? Error;
        const error = new Ctor(b as string);
        if (error.name !== a) define(error, "name", a);
        Object.defineProperty(error, "stack", { value: c, writable: true, configurable: true });
        return keep(id, error);
      }
      case "B": {
        const buffer = side.buffer(a as number);
        bytes += buffer.byteLength;
        return keep(id, buffer);
      }
      case "t": {
        const Ctor = TYPED_ARRAYS[a as string];
        if (Ctor === undefined) break;
        return keep(id, new Ctor(dec(b) as ArrayBuffer, c as number, node[5] as number));
      }
      case "v":
        return keep(id, new DataView(dec(a) as ArrayBuffer, b as number, c as number));
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
