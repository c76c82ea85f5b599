/**
 * Storage is a port: the process service and the `kv` service see only these small async, record-oriented
 * interfaces. The in-memory implementations here serve Node and tests; the Worker implements the same interfaces on
 * Durable Objects with SQLite. Records cross the port by value (implementations copy in and out).
 * @module
 */
import type { ExecutionExitState } from "../../environment/types.js";

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
