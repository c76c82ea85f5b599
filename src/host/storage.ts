/**
 * Storage is a port: the process service and the `kv` service see only these small async, record-oriented
 * interfaces. The in-memory implementations here serve Node and tests; the Worker implements the same interfaces on
 * Durable Objects with SQLite. Records cross the port by value (implementations copy in and out).
 * @module
 */
import type { ExecutionExitState } from "../environment/types.js";

/** The four host-side states (environment-execution.md). */
export const HOST_STATES = ["idle", "queued", "running", "terminating"] as const;
export type HostState = (typeof HOST_STATES)[number];

/** One process as the host keeps it. */
export interface ProcessRecord {
  pid: number;
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
export type ProcessPatch = Partial<Omit<ProcessRecord, "pid" | "code" | "createdAt" | "ref">>;

export interface ProcessFilter {
  state?: HostState;
  exitState?: ExecutionExitState;
  ref?: string;
  /** At most this many records, lowest pid first. */
  limit?: number;
}

/** Process records by pid. */
export interface ProcessStore {
  /** A new pid: monotonic, never handed out twice, even after a delete. */
  nextPid(): Promise<number>;
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

/** JSON values by string key (the `kv` service's storage). */
export interface KeyValueStore {
  /** The value, or `undefined` when the key is absent. */
  get(key: string): Promise<unknown>;
  set(key: string, value: unknown): Promise<void>;
  /** `true` when the key existed. */
  delete(key: string): Promise<boolean>;
  /** Keys in ascending order. */
  list(options?: { prefix?: string; limit?: number }): Promise<string[]>;
}

export function matches(record: ProcessRecord, filter: ProcessFilter): boolean {
  return (
    (filter.state === undefined || record.state === filter.state) &&
    (filter.exitState === undefined || record.exitState === filter.exitState) &&
    (filter.ref === undefined || record.ref === filter.ref)
  );
}

/** {@link ProcessStore} in memory. */
export class MemoryProcessStore implements ProcessStore {
  readonly #records = new Map<number, ProcessRecord>();
  #lastPid = 0;

  async nextPid(): Promise<number> {
    return ++this.#lastPid;
  }

  async create(record: ProcessRecord): Promise<void> {
    if (this.#records.has(record.pid)) throw new Error(`Process ${record.pid} exists`);
    this.#records.set(record.pid, structuredClone(record));
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

  async list(filter: ProcessFilter = {}): Promise<ProcessRecord[]> {
    const out: ProcessRecord[] = [];
    for (const pid of [...this.#records.keys()].sort((a, b) => a - b)) {
      const record = this.#records.get(pid) as ProcessRecord;
      if (!matches(record, filter)) continue;
      out.push(structuredClone(record));
      if (filter.limit !== undefined && out.length >= filter.limit) break;
    }
    return out;
  }

  async delete(pid: number): Promise<boolean> {
    return this.#records.delete(pid);
  }
}

/** {@link KeyValueStore} in memory; values are kept as JSON text, as a database would. */
export class MemoryKeyValueStore implements KeyValueStore {
  readonly #values = new Map<string, string>();

  async get(key: string): Promise<unknown> {
    const text = this.#values.get(key);
    return text === undefined ? undefined : JSON.parse(text);
  }

  async set(key: string, value: unknown): Promise<void> {
    const text = JSON.stringify(value);
    if (text === undefined) throw new TypeError("kv values must be JSON values");
    this.#values.set(key, text);
  }

  async delete(key: string): Promise<boolean> {
    return this.#values.delete(key);
  }

  async list(options: { prefix?: string; limit?: number } = {}): Promise<string[]> {
    const prefix = options.prefix ?? "";
    const keys = [...this.#values.keys()].filter((k) => k.startsWith(prefix)).sort();
    return options.limit === undefined ? keys : keys.slice(0, options.limit);
  }
}
