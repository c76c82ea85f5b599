/**
 * Values from the sandbox arrive structured-cloned (Map, Set, Date, bigint...); storage keeps JSON. This is the
 * one conversion, documented for `output` and `kv`: Date -> ISO string, bigint -> decimal string, Map -> object,
 * Set -> array, undefined/functions dropped, typed arrays -> arrays of numbers.
 * @module
 */

const replacer = (_key: string, value: unknown): unknown => {
  if (typeof value === "bigint") return value.toString();
  if (value instanceof Map) {
    const out: Record<string, unknown> = {};
    for (const [k, v] of value) define(out, String(k), v);
    return out;
  }
  if (value instanceof Set) return [...value];
  if (ArrayBuffer.isView(value) && !(value instanceof DataView))
    return Array.from(value as unknown as ArrayLike<number>);
  if (value instanceof ArrayBuffer) return Array.from(new Uint8Array(value));
  return value;
};

/** Own data property, `__proto__` included as an ordinary key (never the prototype setter). */
export function define(target: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(target, key, { value, writable: true, enumerable: true, configurable: true });
}

/** The JSON text of `value` as storage keeps it; throws a `TypeError` for cycles. */
export function toJsonText(value: unknown): string | undefined {
  return JSON.stringify(value, replacer);
}

/** `value` as the JSON value storage keeps (`undefined` when it has none). */
export function toJson(value: unknown): unknown {
  const text = toJsonText(value);
  return text === undefined ? undefined : JSON.parse(text);
}
