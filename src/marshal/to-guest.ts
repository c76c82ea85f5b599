/**
 * Host values -> tape (see `tape.ts`). Runs on the host over the caller's own values; everything that is not
 * structured-cloneable data, a function or a promise raises `SerializationError`.
 * @module
 */
import { SerializationError } from "../errors.js";

/** A binary buffer or a host promise the tape refers to by index. */
export type SideItem = { kind: "buffer"; bytes: Uint8Array } | { kind: "promise"; promise: Promise<unknown> };

export interface Encoded {
  tape: string;
  side: SideItem[];
}

/** A function of the caller's, callable from the guest. */
export type HostFunction = (...args: unknown[]) => unknown;

/** Host functions handed to one run, numbered so the guest's stand-ins can call them back. */
export class FunctionTable {
  readonly #ids = new Map<HostFunction, number>();
  readonly #functions: HostFunction[] = [];

  idOf(fn: HostFunction): number {
    let id = this.#ids.get(fn);
    if (id === undefined) {
      id = this.#functions.push(fn) - 1;
      this.#ids.set(fn, id);
    }
    return id;
  }

  get(id: number): HostFunction | undefined {
    return this.#functions[id];
  }
}

/** Deeper host data is refused rather than risking the host's own stack. */
export const MAX_DEPTH = 1000;

export function encodeForGuest(value: unknown, functions: FunctionTable): Encoded {
  const ids = new Map<object, number>();
  const side: SideItem[] = [];
  let depth = 0;
  const toSide = (item: SideItem) => side.push(item) - 1;
  const pairs = (list: [unknown, unknown][]) => list.map(([k, v]) => `${enc(k)},${enc(v)}`).join(",");

  const enc = (v: unknown): string => {
    switch (typeof v) {
      case "string":
        return JSON.stringify(v);
      case "number":
        if (Number.isNaN(v)) return '["n","NaN"]';
        if (v === Number.POSITIVE_INFINITY) return '["n","Infinity"]';
        if (v === Number.NEGATIVE_INFINITY) return '["n","-Infinity"]';
        return Object.is(v, -0) ? '["n","-0"]' : String(v);
      case "boolean":
        return v ? "true" : "false";
      case "undefined":
        return '["u"]';
      case "bigint":
        return `["b","${v}"]`;
      case "symbol":
        throw new SerializationError(`${String(v)} cannot be cloned: symbols do not cross the sandbox boundary`);
      case "function":
        return `["f",${functions.idOf(v as HostFunction)},${JSON.stringify(v.name)},${v.length}]`;
    }
    if (v === null) return "null";
    const seen = ids.get(v as object);
    if (seen !== undefined) return `["r",${seen}]`;
    const id = ids.size;
    ids.set(v as object, id);
    if (++depth > MAX_DEPTH) throw new SerializationError(`Value is nested deeper than ${MAX_DEPTH} levels`);
    try {
      return object(v as object, id);
    } finally {
      depth--;
    }
  };

  const object = (v: object, id: number): string => {
    if (Array.isArray(v)) {
      const keys = Object.keys(v);
      if (keys.length === v.length && (v.length === 0 || keys[v.length - 1] === String(v.length - 1))) {
        return `["a",${id},[${v.map(enc).join(",")}]]`;
      }
      return `["A",${id},${v.length},[${pairs(keys.map((k) => [k, (v as unknown as Record<string, unknown>)[k]]))}]]`;
    }
    const proto = Object.getPrototypeOf(v);
    if (proto === Object.prototype || proto === null) {
      return `["o",${id},[${pairs(Object.entries(v))}]]`;
    }
    if (v instanceof Date) return `["d",${id},${enc(v.getTime())}]`;
    if (v instanceof Map) return `["m",${id},[${pairs([...v])}]]`;
    if (v instanceof Set) return `["s",${id},[${[...v].map(enc).join(",")}]]`;
    if (v instanceof RegExp) return `["x",${id},${JSON.stringify(v.source)},${JSON.stringify(v.flags)}]`;
    if (v instanceof ArrayBuffer) return `["B",${id},${toSide({ kind: "buffer", bytes: new Uint8Array(v.slice(0)) })}]`;
    if (v instanceof DataView) return `["v",${id},${enc(v.buffer)},${v.byteOffset},${v.byteLength}]`;
    if (ArrayBuffer.isView(v)) {
      const view = v as ArrayBufferView & { length: number };
      return `["t",${id},"${Object.prototype.toString.call(v).slice(8, -1)}",${enc(view.buffer)},${view.byteOffset},${view.length}]`;
    }
    if (v instanceof Promise) return `["p",${id},${toSide({ kind: "promise", promise: v })}]`;
    if (v instanceof Error) return `["e",${id},${JSON.stringify(v.name)},${JSON.stringify(v.message)},""]`;
    const name = (proto as { constructor?: { name?: string } }).constructor?.name || "Object";
    throw new SerializationError(
      `An instance of ${name} cannot be cloned: only plain objects, arrays, Map, Set, Date, RegExp, Error, ArrayBuffer, typed arrays, functions and promises cross into the sandbox`,
    );
  };

  return { tape: enc(value), side };
}
