/**
 * Storage is a port: the process service and the `kv` service see only these small async, record-oriented
 * interfaces. The in-memory implementations here serve Node and tests; the Worker implements the same interfaces on
 * Durable Objects with SQLite. Records cross the port by value (implementations copy in and out).
 * @module
 */
import type { ExecutionExitState } from "../../environment/types.js";
import { utf8Length } from "../../values/json.js";

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
  /** The ES modules its code imports by relative specifier (`./util.js`), when it was given any. */
  modules?: Record<string, string>;
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

/**
 * The fields of a record that can be large: the code, the streams (each up to its cap), the output and the modules.
 * Listings and event snapshots never carry them; routes that return them read them a chunk at a time
 * ({@link ProcessStore.read}).
 */
export const LARGE_FIELDS = ["code", "stdout", "stderr", "output", "modules"] as const;
export type LargeField = (typeof LARGE_FIELDS)[number];

/** A record without its large fields: what a listing returns. */
export type ProcessSummary = Omit<ProcessRecord, LargeField>;

/** `record` without its large fields (a copy). */
export function summaryOf(record: ProcessRecord | ProcessSummary): ProcessSummary {
  const { code: _c, stdout: _s, stderr: _e, output: _o, modules: _m, ...summary } = record as ProcessRecord;
  return { ...summary, truncated: { ...summary.truncated } };
}

/**
 * Characters a chunk of a large field holds at most: what one read of a route holds of it. A database reads the
 * whole column to cut a chunk of it, so fewer, larger chunks cost less: a 1 MiB stream is four.
 */
export const CHUNK_CHARS = 262_144;

/** A chunk of a large field's text, and where the next one starts (`undefined`: this was the last). */
export interface TextChunk {
  text: string;
  next: number | undefined;
}

/** The text of a large field: `output` as its JSON text, `modules` too (empty when there are none), the others as they are. */
export const textOf = (record: ProcessRecord, field: LargeField): string =>
  field === "output"
    ? JSON.stringify(record.output)
    : field === "modules"
      ? record.modules === undefined
        ? ""
        : JSON.stringify(record.modules)
      : record[field];

/** UTF-8 bytes of a record's summary as stores keep it: its JSON text, the error's included. */
export const summaryBytesOf = (record: ProcessRecord | ProcessSummary): number =>
  utf8Length(JSON.stringify(summaryOf(record)));

/**
 * UTF-8 bytes a record keeps: its large fields and its summary's JSON. What the per-tenant storage quota counts: a
 * summary is about 500 bytes, and its error (guest-chosen text) up to tens of KB.
 */
export const storedBytesOf = (record: ProcessRecord): number =>
  LARGE_FIELDS.reduce((bytes, field) => bytes + utf8Length(textOf(record, field)), summaryBytesOf(record));

/** The chunk of `text` from UTF-16 unit `at`, at most `size` units, never ending inside a surrogate pair. */
export function chunkOf(text: string, at: number, size: number): TextChunk {
  let end = Math.min(text.length, at + size);
  if (end < text.length && end > at + 1 && /[\uD800-\uDBFF]/.test(text.charAt(end - 1))) end--;
  return { text: text.slice(at, end), next: end < text.length ? end : undefined };
}

/**
 * The record as JSON, everything but the tenant: the summary, then each large field from `read` a chunk at a time
 * (the streams as JSON strings, the output and the modules, when it has any, as their JSON text).
 */
export async function* recordJson(
  summary: ProcessSummary,
  read: (field: LargeField) => AsyncIterable<string>,
): AsyncGenerator<string> {
  const { tenant: _n, ...visible } = summary;
  yield JSON.stringify(visible).slice(0, -1);
  const string = async function* (field: "code" | "stdout" | "stderr") {
    yield `,"${field}":"`;
    for await (const chunk of read(field)) yield JSON.stringify(chunk).slice(1, -1);
    yield '"';
  };
  yield* string("code");
  let modules = false;
  for await (const chunk of read("modules")) {
    if (!modules) yield ',"modules":';
    modules = true;
    yield chunk;
  }
  yield* string("stdout");
  yield* string("stderr");
  yield ',"output":';
  let empty = true;
  for await (const chunk of read("output")) {
    empty = false;
    yield chunk;
  }
  // Deleted while it was read: the output is gone with it.
  yield empty ? "{}}" : "}";
}

/** Fields that change after creation. */
export type ProcessPatch = Partial<Omit<ProcessRecord, "pid" | "tenant" | "code" | "modules" | "createdAt" | "ref">>;

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
  /** The record without its large fields, which are not read. */
  summary(pid: number): Promise<ProcessSummary | undefined>;
  /**
   * At most `size` characters of a large field from `at` (0 for the first chunk, then the `next` of the one before;
   * characters as the store counts them), reading no more of it than that; `undefined` when there is no record.
   */
  read(pid: number, field: LargeField, at: number, size: number): Promise<TextChunk | undefined>;
  /** Applies `patch`; `false` when there is no such record. */
  update(pid: number, patch: ProcessPatch): Promise<boolean>;
  /** Summaries of the matching records, ascending by pid: no large field is read. */
  list(filter?: ProcessFilter): Promise<ProcessSummary[]>;
  /** The bytes it freed ({@link storedBytesOf}); `undefined` when there was no record. */
  delete(pid: number): Promise<number | undefined>;
  /**
   * UTF-8 bytes of `tenant`'s records, large fields and summaries ({@link storedBytesOf}), as a running count kept with every
   * write (never a scan). A store without it has no per-tenant storage quota.
   */
  usage?(tenant: string): Promise<number>;
}

/** Pids one tag spans. */
const PID_COUNTS = 2 ** 32;
/** Tags: 2^21 of them keep every pid below 2^53. */
const PID_TAGS = 2 ** 21;
/** The largest pid {@link pidOf} makes (2^53 - 1): the widest a record's summary holds. */
export const LARGEST_PID = PID_TAGS * PID_COUNTS - 1;

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

export function matches(record: ProcessSummary, filter: ProcessFilter): boolean {
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
  /** {@link ProcessStore.usage}. */
  bytes: number;
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
    own.bytes += storedBytesOf(stored);
    // Creations finish in pid order unless their awaits interleave: then restore the order once.
    if (record.pid < own.highest) own.records = new Map([...own.records].sort(([a], [b]) => a - b));
    else own.highest = record.pid;
  }

  async get(pid: number): Promise<ProcessRecord | undefined> {
    const record = this.#records.get(pid);
    return record === undefined ? undefined : structuredClone(record);
  }

  async summary(pid: number): Promise<ProcessSummary | undefined> {
    const record = this.#records.get(pid);
    return record === undefined ? undefined : structuredClone(summaryOf(record));
  }

  async read(pid: number, field: LargeField, at: number, size: number): Promise<TextChunk | undefined> {
    const record = this.#records.get(pid);
    return record === undefined ? undefined : chunkOf(textOf(record, field), at, size);
  }

  async update(pid: number, patch: ProcessPatch): Promise<boolean> {
    const record = this.#records.get(pid);
    if (record === undefined) return false;
    const own = this.#tenant(record.tenant);
    own.bytes -= storedBytesOf(record);
    Object.assign(record, structuredClone(patch));
    own.bytes += storedBytesOf(record);
    return true;
  }

  /** Compares the tenant's records (every record without one) with the filter but copies only those it returns. */
  async list(filter: ProcessFilter = {}): Promise<ProcessSummary[]> {
    const out: ProcessSummary[] = [];
    if (filter.limit !== undefined && filter.limit <= 0) return out;
    const records =
      filter.tenant === undefined
        ? [...this.#records.values()].sort((a, b) => a.pid - b.pid)
        : (this.#tenants.get(filter.tenant)?.records.values() ?? []);
    for (const record of records) {
      if (!matches(record, filter)) continue;
      out.push(structuredClone(summaryOf(record)));
      if (filter.limit !== undefined && out.length >= filter.limit) break;
    }
    return out;
  }

  async delete(pid: number): Promise<number | undefined> {
    const record = this.#records.get(pid);
    if (record === undefined) return undefined;
    this.#records.delete(pid);
    const own = this.#tenant(record.tenant);
    own.records.delete(pid);
    const freed = storedBytesOf(record);
    own.bytes -= freed;
    return freed;
  }

  async usage(tenant: string): Promise<number> {
    return this.#tenants.get(tenant)?.bytes ?? 0;
  }

  #tenant(tenant: string): TenantRecords {
    let own = this.#tenants.get(tenant);
    if (own === undefined) {
      const tag = newPidTag((taken) => this.#tags.has(taken));
      this.#tags.add(tag);
      own = { tag, count: 0, records: new Map(), highest: 0, bytes: 0 };
      this.#tenants.set(tenant, own);
    }
    return own;
  }
}
