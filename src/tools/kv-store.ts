/**
 * The `kv` service's storage port: JSON values by string key, with quotas checked in the same step as the write.
 * The in-memory store here serves Node and tests; the Worker implements the same interface on Durable Objects.
 * @module
 */
import { utf8Length as utf8Bytes } from "../values/json.js";

/** Most keys and bytes a key-value store may hold after a write (see {@link KeyValueStore.set}). */
export interface KeyValueQuota {
  maxKeys: number;
  /** UTF-8 bytes of every key plus its value's JSON text. */
  maxBytes: number;
}

/** What a key-value store holds: keys, and UTF-8 bytes of every key plus its value's JSON text. */
export interface KeyValueUsage {
  keys: number;
  bytes: number;
}

/** A write refused because it would take the store past a {@link KeyValueQuota}; nothing was written. */
export class KeyValueQuotaError extends Error {
  override name = "KeyValueQuotaError";
  constructor(
    readonly quota: "keys" | "bytes",
    readonly limit: number,
    /** The usage the write would have made. */
    readonly wouldBe: number,
  ) {
    super(
      quota === "keys"
        ? `quota exceeded: the store may hold at most ${limit} keys`
        : `quota exceeded: the store may hold at most ${limit} bytes of keys and values (this write would make it ${wouldBe})`,
    );
  }
}

/** Compared by name as well as class: the error may come from another realm or over RPC. */
export function isKeyValueQuotaError(value: unknown): value is KeyValueQuotaError {
  return (
    value instanceof KeyValueQuotaError ||
    (typeof value === "object" && value !== null && (value as { name?: unknown }).name === "KeyValueQuotaError")
  );
}

/**
 * The check a store makes before a write: `current` usage, the key's `old` size (0 when absent), the `next` size
 * (key bytes plus value text bytes). Returns the refusal, or `undefined` when the write fits.
 */
export function overQuota(
  current: KeyValueUsage,
  old: number | undefined,
  next: number,
  quota: KeyValueQuota | undefined,
): KeyValueQuotaError | undefined {
  if (quota === undefined) return undefined;
  const keys = current.keys + (old === undefined ? 1 : 0);
  if (keys > quota.maxKeys) return new KeyValueQuotaError("keys", quota.maxKeys, keys);
  const bytes = current.bytes - (old ?? 0) + next;
  // A write that shrinks the store is always allowed (a store over a lowered quota can still be cleaned up).
  if (bytes > quota.maxBytes && next > (old ?? 0)) return new KeyValueQuotaError("bytes", quota.maxBytes, bytes);
  return undefined;
}

/** JSON values by string key (the `kv` service's storage). */
export interface KeyValueStore {
  /** The value, or `undefined` when the key is absent. */
  get(key: string): Promise<unknown>;
  /**
   * Stores `value`. With a `quota`, refuses (rejects with a {@link KeyValueQuotaError}, writing nothing) a write
   * that would leave more keys or bytes than it allows; the check and the write are one step, so concurrent writers
   * cannot overshoot it. A store that ignores `quota` enforces none.
   */
  set(key: string, value: unknown, quota?: KeyValueQuota): Promise<void>;
  /** `true` when the key existed. */
  delete(key: string): Promise<boolean>;
  /** Keys in ascending code point order (UTF-8's, SQLite's); at most `limit`, in work proportional to what is returned. */
  list(options?: { prefix?: string; limit?: number }): Promise<string[]>;
  /** What the store holds (optional). */
  usage?(): Promise<KeyValueUsage>;
}

/** A UTF-16 unit's place in code point order: surrogates (U+10000 and above) after U+E000-U+FFFF. */
const codePointRank = (unit: number) => (unit >= 0xe000 ? unit - 0x800 : unit >= 0xd800 ? unit + 0x2000 : unit);

/** Whether `a` sorts below `b` by code points, as UTF-8 bytes and SQLite do (`<` compares UTF-16 units). */
function codePointBelow(a: string, b: string): boolean {
  const common = Math.min(a.length, b.length);
  for (let i = 0; i < common; i++) {
    const [x, y] = [a.charCodeAt(i), b.charCodeAt(i)];
    if (x !== y) return codePointRank(x) < codePointRank(y);
  }
  return a.length < b.length;
}

/** Index of the first key in sorted `keys` that is not below `key`. */
function lowerBound(keys: readonly string[], key: string): number {
  let low = 0;
  let high = keys.length;
  while (low < high) {
    const mid = (low + high) >>> 1;
    if (codePointBelow(keys[mid] as string, key)) low = mid + 1;
    else high = mid;
  }
  return low;
}

/**
 * {@link KeyValueStore} in memory; values are kept as JSON text, as a database would. Keys are kept sorted by code
 * point, as SQLite sorts them, so a listing costs what it returns, and usage is counted as it changes.
 */
export class MemoryKeyValueStore implements KeyValueStore {
  readonly #values = new Map<string, string>();
  readonly #sorted: string[] = [];
  #bytes = 0;

  async get(key: string): Promise<unknown> {
    const text = this.#values.get(key);
    return text === undefined ? undefined : JSON.parse(text);
  }

  async set(key: string, value: unknown, quota?: KeyValueQuota): Promise<void> {
    const text = JSON.stringify(value);
    if (text === undefined) throw new TypeError("kv values must be JSON values");
    const old = this.#values.get(key);
    const oldSize = old === undefined ? undefined : utf8Bytes(key) + utf8Bytes(old);
    const size = utf8Bytes(key) + utf8Bytes(text);
    const refusal = overQuota({ keys: this.#values.size, bytes: this.#bytes }, oldSize, size, quota);
    if (refusal !== undefined) throw refusal;
    if (old === undefined) this.#sorted.splice(lowerBound(this.#sorted, key), 0, key);
    this.#values.set(key, text);
    this.#bytes += size - (oldSize ?? 0);
  }

  async delete(key: string): Promise<boolean> {
    const old = this.#values.get(key);
    if (old === undefined) return false;
    this.#values.delete(key);
    this.#sorted.splice(lowerBound(this.#sorted, key), 1);
    this.#bytes -= utf8Bytes(key) + utf8Bytes(old);
    return true;
  }

  async list(options: { prefix?: string; limit?: number } = {}): Promise<string[]> {
    const prefix = options.prefix ?? "";
    const out: string[] = [];
    const limit = options.limit ?? Number.POSITIVE_INFINITY;
    for (let i = lowerBound(this.#sorted, prefix); i < this.#sorted.length && out.length < limit; i++) {
      const key = this.#sorted[i] as string;
      if (!key.startsWith(prefix)) break;
      out.push(key);
    }
    return out;
  }

  async usage(): Promise<KeyValueUsage> {
    return { keys: this.#values.size, bytes: this.#bytes };
  }
}
