/**
 * Storage is a port: the process service and the `kv` service see only these small async, record-oriented
 * interfaces. The in-memory implementations here serve Node and tests; the Worker implements the same interfaces on
 * Durable Objects with SQLite. Records cross the port by value (implementations copy in and out).
 * @module
 */
import type { ExecutionExitState } from "../environment/types.js";
import { utf8Length as utf8Bytes } from "./json.js";

/** The four host-side states (docs/environment.md, "The host's states"). */
export const HOST_STATES = ["idle", "queued", "running", "terminating"] as const;
export type HostState = (typeof HOST_STATES)[number];

/** One process as the host keeps it. */
export interface ProcessRecord {
  pid: number;
  /** Who created it: the tenant of the API key (`anonymous` without keys). Only that tenant sees the process. */
  tenant: string;
  ref?: string;
  state: HostState;
  /** `null` until the first run ends. */
  exitState: ExecutionExitState | null;
  code: string;
  timeoutMs: number;
  /** The merged output patches (JSON). */
  output: Record<string, unknown>;
  stdout: string;
  stderr: string;
  error: string | null;
  /** Which of stdout, stderr, output hit its cap in the current run. */
  truncated: { stdout: boolean; stderr: boolean; output: boolean };
  /** How many runs were started (1 after creation). */
  runs: number;
  /** Epoch milliseconds. */
  createdAt: number;
  startedAt: number | null;
  finishedAt: number | null;
}

/** Fields that change after creation. */
export type ProcessPatch = Partial<Omit<ProcessRecord, "pid" | "tenant" | "code" | "createdAt" | "ref">>;

export interface ProcessFilter {
  tenant?: string | undefined;
  /** Only pids above this one: the cursor of the next page. */
  after?: number | undefined;
  state?: HostState | undefined;
  exitState?: ExecutionExitState | undefined;
  ref?: string | undefined;
  /** At most this many records, lowest pid first. */
  limit?: number;
}

/** Process records by pid. */
export interface ProcessStore {
  /**
   * A new pid for `tenant`: never handed out twice, even after a delete, and ascending within the tenant; it tells
   * nothing of other tenants' processes ({@link pidOf}).
   */
  nextPid(tenant: string): Promise<number>;
  /** Stores a new record; rejects if the pid exists. */
  create(record: ProcessRecord): Promise<void>;
  get(pid: number): Promise<ProcessRecord | undefined>;
  /** Applies `patch`; `undefined` when there is no such record. */
  update(pid: number, patch: ProcessPatch): Promise<ProcessRecord | undefined>;
  /** Matching records, ascending by pid. */
  list(filter?: ProcessFilter): Promise<ProcessRecord[]>;
  /** `true` when a record was deleted. */
  delete(pid: number): Promise<boolean>;
}

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

/** Pids one tag spans. */
const PID_COUNTS = 2 ** 32;
/** Tags: 2^21 of them keep every pid below 2^53. */
const PID_TAGS = 2 ** 21;

/**
 * A pid is a tenant's tag times 2^32 plus the tenant's own count of processes: unique across tenants (one environment
 * serves them all in Node, and its `eid` is the pid), ascending within a tenant so its listings keep their order, a
 * safe integer of at most 16 digits, and no count of anyone else's processes (a single sequence told every tenant how
 * many the others made). Tag 0 holds the pids of that older sequence, so none is ever handed out again.
 */
export function pidOf(tag: number, count: number): number {
  if (count >= PID_COUNTS) throw new Error(`This tenant has used all ${PID_COUNTS - 1} of its pids`);
  return tag * PID_COUNTS + count;
}

/** A new tenant's tag: random in 1..2^21-1, so tags tell nothing of how many tenants came before; not `taken`. */
export function newPidTag(taken: (tag: number) => boolean): number {
  for (;;) {
    const tag = 1 + Math.floor(Math.random() * (PID_TAGS - 1));
    if (!taken(tag)) return tag;
  }
}

export function matches(record: ProcessRecord, filter: ProcessFilter): boolean {
  return (
    (filter.tenant === undefined || record.tenant === filter.tenant) &&
    (filter.after === undefined || record.pid > filter.after) &&
    (filter.state === undefined || record.state === filter.state) &&
    (filter.exitState === undefined || record.exitState === filter.exitState) &&
    (filter.ref === undefined || record.ref === filter.ref)
  );
}

/** One tenant's part of a {@link MemoryProcessStore}. */
interface TenantRecords {
  tag: number;
  count: number;
  /** In ascending pid order, so a listing walks the caller's records only and stops at its limit. */
  records: Map<number, ProcessRecord>;
  /** The highest pid in `records`. */
  highest: number;
}

/** {@link ProcessStore} in memory. */
export class MemoryProcessStore implements ProcessStore {
  readonly #records = new Map<number, ProcessRecord>();
  readonly #tenants = new Map<string, TenantRecords>();
  readonly #tags = new Set<number>();

  async nextPid(tenant: string): Promise<number> {
    const own = this.#tenant(tenant);
    return pidOf(own.tag, ++own.count);
  }

  async create(record: ProcessRecord): Promise<void> {
    if (this.#records.has(record.pid)) throw new Error(`Process ${record.pid} exists`);
    const stored = structuredClone(record);
    this.#records.set(record.pid, stored);
    const own = this.#tenant(record.tenant);
    own.records.set(record.pid, stored);
    // Creations finish in pid order unless their awaits interleave: then restore the order once.
    if (record.pid < own.highest) own.records = new Map([...own.records].sort(([a], [b]) => a - b));
    else own.highest = record.pid;
  }

  async get(pid: number): Promise<ProcessRecord | undefined> {
    const record = this.#records.get(pid);
    return record === undefined ? undefined : structuredClone(record);
  }

  async update(pid: number, patch: ProcessPatch): Promise<ProcessRecord | undefined> {
    const record = this.#records.get(pid);
    if (record === undefined) return undefined;
    Object.assign(record, structuredClone(patch));
    return structuredClone(record);
  }

  /** Compares the tenant's records (every record without one) with the filter but copies only those it returns. */
  async list(filter: ProcessFilter = {}): Promise<ProcessRecord[]> {
    const out: ProcessRecord[] = [];
    if (filter.limit !== undefined && filter.limit <= 0) return out;
    const records =
      filter.tenant === undefined
        ? [...this.#records.values()].sort((a, b) => a.pid - b.pid)
        : (this.#tenants.get(filter.tenant)?.records.values() ?? []);
    for (const record of records) {
      if (!matches(record, filter)) continue;
      out.push(structuredClone(record));
      if (filter.limit !== undefined && out.length >= filter.limit) break;
    }
    return out;
  }

  async delete(pid: number): Promise<boolean> {
    const record = this.#records.get(pid);
    if (record === undefined) return false;
    this.#records.delete(pid);
    this.#tenants.get(record.tenant)?.records.delete(pid);
    return true;
  }

  #tenant(tenant: string): TenantRecords {
    let own = this.#tenants.get(tenant);
    if (own === undefined) {
      const tag = newPidTag((taken) => this.#tags.has(taken));
      this.#tags.add(tag);
      own = { tag, count: 0, records: new Map(), highest: 0 };
      this.#tenants.set(tenant, own);
    }
    return own;
  }
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
