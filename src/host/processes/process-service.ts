/**
 * The process service: the host's side of every process. It assigns pids, keeps the state machine, implements
 * `EnvironmentBindings` (stdout/stderr decoded by one streaming UTF-8 decoder per stream, output merged with
 * `Object.assign` semantics, caps on all three), persists records through the {@link ProcessStore} port and
 * publishes events to subscribers (the SSE endpoint).
 *
 * A running process lives in memory (its record is the freshest view, so it is readable while running); every
 * change is written through to the store, coalesced, and the final write lands before the process counts as idle.
 * @module
 */

import { FUEL_PER_MS } from "../../core/sandbox.js";
import { checkProcessModules } from "../../environment/environment.js";
import {
  type EnvironmentBindings,
  EXECUTION_EXIT_STATES,
  type ExecutionExitState,
  type ExecutionState,
} from "../../environment/types.js";
import { ANONYMOUS_TENANT, ToolError, ToolRegistry, type ToolScope } from "../../tools/registry.js";
import type { InvokeInput, ServiceInfo } from "../../tools/types.js";
import { BudgetError, WorkBudget } from "../../values/budget.js";
import { define, jsonWithin, type SizedJson, utf8Length } from "../../values/json.js";
import type { CpuShares } from "../admission/cpu-budget.js";
import { checkSlots } from "../admission/slots.js";
import { HostError } from "../errors.js";
import { DEFAULT_MAX_ACTIVE_PROCESSES, sourcesTooLarge, timeoutWithin } from "../limits.js";
import { Environments } from "./environments.js";
import { eventStream, type ProcessEvent, type ProcessListener } from "./events.js";
import { STOPPED_BY_HOST } from "./restarts.js";
import { transition } from "./states.js";
import {
  CHUNK_CHARS,
  chunkOf,
  type HostState,
  LARGEST_PID,
  type LargeField,
  matches,
  type ProcessFilter,
  type ProcessPatch,
  type ProcessRecord,
  type ProcessStore,
  type ProcessSummary,
  storedBytesOf,
  summaryBytesOf,
  summaryOf,
  type TextChunk,
  textOf,
} from "./storage.js";

/** Event streams one process may have open at once; more are refused (HTTP 429). */
const DEFAULT_MAX_SUBSCRIBERS = 32;
/**
 * Event streams one tenant's processes may have open at once, together; more are refused (HTTP 429). Each stream
 * holds up to 1 MiB of events its client has not read: by processes alone, a tenant's 32 active processes with 32
 * streams each, none read, held some 1 GiB of the host's memory (25 MB for each process logging 80 KB in short lines).
 */
const DEFAULT_MAX_TENANT_SUBSCRIBERS = 64;
/** Per-process caps (see {@link OutputCaps}). */
const DEFAULT_OUTPUT_CAPS: Readonly<OutputCaps> = Object.freeze({
  stdoutChars: 1_048_576,
  stderrChars: 1_048_576,
  outputBytes: 262_144,
  outputWork: 67_108_864,
});
/** The key a truncated output gets, with a message for a value. */
export const OUTPUT_TRUNCATED_KEY = "$truncated";

/**
 * Caps per process and run. Over a stream cap the text is cut and a marker line is appended once
 * (`[stdout truncated: more than N characters]`); later chunks are dropped. An output patch that would make the
 * merged output's JSON larger than `outputBytes` is dropped and `output.$truncated` says so; so is every patch once
 * the run's patches have spent `outputWork` units converting to JSON (about one per character, each visit of a
 * shared reference counted). A patch costs its own size, never the output's.
 */
export interface OutputCaps {
  stdoutChars: number;
  stderrChars: number;
  outputBytes: number;
  outputWork: number;
}

/** What the current run of an active process has spent, for monitoring and tests. */
export interface ProcessUsage {
  /** Units spent converting output patches, of `limit`. */
  outputWork: { spent: number; limit: number };
  /** Units spent converting and validating tool arguments, of `limit`. */
  toolWork: { spent: number; limit: number };
  /** Bytes of the merged output's JSON text. */
  outputBytes: number;
  /** Open event streams. */
  subscribers: number;
}

export interface ProcessServiceOptions {
  store: ProcessStore;
  /** The tools processes can call. Default: an empty registry. */
  tools?: ToolRegistry;
  maxActiveProcesses?: number;
  /** Processes one tenant may have active at once (HTTP 429 `tenant_too_many_processes`). Default: no own quota. */
  maxActivePerTenant?: number;
  /** The tenants' shares of CPU each run's fuel cap is reserved from (cpu-budget.ts). Default: no shares. */
  cpu?: CpuShares;
  limits?: Partial<OutputCaps>;
  /** Event streams per process. Default {@link DEFAULT_MAX_SUBSCRIBERS}. */
  maxSubscribers?: number;
  /** Event streams of one tenant's processes together. Default {@link DEFAULT_MAX_TENANT_SUBSCRIBERS}. */
  maxSubscribersPerTenant?: number;
  /** Epoch milliseconds for the record's timestamps. Default `Date.now`. */
  now?: () => number;
  /** Called with failures that have no caller to go to (a store write behind a binding). */
  onError?: (error: unknown) => void;
  /**
   * UTF-8 bytes one tenant's records may hold together, their code, modules, stdout, stderr, output and summaries
   * (errors included; counted by the store's `usage`, which it then must have). Default: no quota.
   */
  maxTenantStorageBytes?: number;
}

export interface CreateProcessInput {
  code: string;
  /** ES modules the code imports by relative specifier, as `POST /run`'s `modules` option. Default none. */
  modules?: Record<string, string> | undefined;
  timeoutMs?: number | undefined;
  ref?: string | undefined;
  /** Whose process it is. Default {@link ANONYMOUS_TENANT}. */
  tenant?: string;
}

/** A tenant's stored bytes as the service counts them while it holds any (see {@link ProcessService}'s `#storage`). */
interface TenantStorage {
  used: number;
  /** Processes of the tenant active or being created or run again. */
  holders: number;
}

interface Live {
  record: ProcessRecord;
  /** Its tenant's count, with a storage quota. */
  storage: TenantStorage | undefined;
  /** The bytes of the record's summary that count holds ({@link summaryBytesOf}). */
  summaryBytes: number;
  decoders: { stdout: TextDecoder; stderr: TextDecoder };
  listeners: Set<ProcessListener>;
  /** What this run's tool calls may spend. */
  tools: ToolScope;
  /** What this run's output patches may spend. */
  outputWork: WorkBudget;
  /** UTF-8 bytes of each output entry's `"key":value`, and of the whole output's JSON. */
  outputEntries: Map<string, number>;
  outputBytes: number;
  /** The output's JSON text, made for event snapshots until the output changes. */
  outputJson: string | undefined;
  dirty: boolean;
  saving: Promise<void> | undefined;
  /** Ended by {@link ProcessService.stopAll}: it exits `canceled`, its error saying the host stopped. */
  stopped: boolean;
  /** The fuel this run reserved of its tenant's share, and what the environment says it spent. */
  fuel: { reserved: number; used: number | undefined };
  done: Promise<ProcessRecord>;
  resolve(record: ProcessRecord): void;
}

const mutable = (r: ProcessRecord): ProcessPatch => ({
  state: r.state,
  exitState: r.exitState,
  output: r.output,
  stdout: r.stdout,
  stderr: r.stderr,
  error: r.error,
  truncated: r.truncated,
  runs: r.runs,
  timeoutMs: r.timeoutMs,
  startedAt: r.startedAt,
  finishedAt: r.finishedAt,
});
const encoder = new TextEncoder();

/** `text` in chunks of at most {@link CHUNK_CHARS} UTF-16 units. */
async function* chunksOf(text: string): AsyncGenerator<string> {
  for (let at: number | undefined = 0; at !== undefined; ) {
    const chunk = chunkOf(text, at, CHUNK_CHARS);
    if (chunk.text !== "") yield chunk.text;
    at = chunk.next;
  }
}
/** UTF-16 units of the longest start of `text` whose UTF-8 takes at most `bytes` (never half a character). */
const utf8Prefix = (text: string, bytes: number) => encoder.encodeInto(text, new Uint8Array(Math.max(0, bytes))).read;

/**
 * UTF-16 units of the longest start of `text` whose JSON string takes at most `bytes` of UTF-8 inside its quotes
 * (escapes counted as stored; never half a surrogate pair, which JSON would escape as six bytes).
 */
function jsonPrefix(text: string, bytes: number): number {
  const whole = (units: number) =>
    units > 0 && units < text.length && /[\uD800-\uDBFF]/.test(text.charAt(units - 1)) ? units - 1 : units;
  const fits = (units: number) => utf8Length(JSON.stringify(text.slice(0, whole(units)))) - 2 <= bytes;
  if (bytes <= 0) return 0;
  let low = 0;
  let high = text.length;
  while (low < high) {
    const middle = Math.ceil((low + high) / 2);
    if (fits(middle)) low = middle;
    else high = middle - 1;
  }
  return whole(low);
}

/**
 * A process's modules as the environment will take them (`checkProcessModules`), `undefined` for none; else a 400 in
 * the words `runCode` refuses `POST /run`'s with.
 */
export function processModulesOf(modules: unknown): Record<string, string> | undefined {
  if (modules === undefined) return undefined;
  try {
    checkProcessModules(modules);
  } catch (error) {
    throw new HostError("invalid_request", (error as Error).message);
  }
  return Object.keys(modules).length === 0 ? undefined : { ...modules };
}

const fresh = (): Pick<
  ProcessRecord,
  "exitState" | "output" | "stdout" | "stderr" | "error" | "truncated" | "startedAt" | "finishedAt"
> => ({
  exitState: null,
  output: {},
  stdout: "",
  stderr: "",
  error: null,
  truncated: { stdout: false, stderr: false, output: false },
  startedAt: null,
  finishedAt: null,
});

export class ProcessService implements EnvironmentBindings {
  /** Where executions go: activate an environment here. */
  readonly environments: Environments;
  readonly tools: ToolRegistry;
  readonly maxActiveProcesses: number;
  readonly maxActivePerTenant: number;
  readonly limits: Readonly<OutputCaps>;
  readonly maxSubscribers: number;
  readonly maxSubscribersPerTenant: number;
  readonly maxTenantStorageBytes: number | undefined;
  readonly #store: ProcessStore;
  readonly #now: () => number;
  readonly #onError: (error: unknown) => void;
  readonly #cpu: CpuShares | undefined;
  readonly #live = new Map<number, Live>();
  /** Slots held by creations and re-runs between their checks and their launch, by tenant. */
  readonly #reserved = new Map<string, number>();
  /** Pids being run again, from their checks to their launch. */
  readonly #starting = new Set<number>();
  /**
   * Each tenant's stored bytes while it has processes active or starting: the store's running count when the first
   * of them started, plus what they added since (counted as they write, before the store has it), less what the
   * service deleted. Dropped when none is left, so the next start reads the store again.
   */
  readonly #storage = new Map<string, TenantStorage>();
  /** Event streams open per tenant, over all its processes. */
  readonly #subscribersOf = new Map<string, number>();
  /** Tool calls that name no process while several of one tenant are active share this scope until none is. */
  #sharedScope: ToolScope | undefined;

  constructor(options: ProcessServiceOptions) {
    this.#store = options.store;
    this.tools = options.tools ?? new ToolRegistry();
    this.maxActiveProcesses = options.maxActiveProcesses ?? DEFAULT_MAX_ACTIVE_PROCESSES;
    this.maxActivePerTenant = options.maxActivePerTenant ?? this.maxActiveProcesses;
    this.limits = { ...DEFAULT_OUTPUT_CAPS, ...options.limits };
    this.maxSubscribers = options.maxSubscribers ?? DEFAULT_MAX_SUBSCRIBERS;
    this.maxSubscribersPerTenant = options.maxSubscribersPerTenant ?? DEFAULT_MAX_TENANT_SUBSCRIBERS;
    this.#now = options.now ?? Date.now;
    this.#cpu = options.cpu;
    this.#onError = options.onError ?? ((error) => console.error("runcode host:", error));
    this.maxTenantStorageBytes = options.maxTenantStorageBytes;
    if (this.maxTenantStorageBytes !== undefined && this.#store.usage === undefined) {
      throw new TypeError("maxTenantStorageBytes needs a store that counts its usage");
    }
    this.environments = new Environments(this, this.#onError);
  }

  // ---- the API -------------------------------------------------------------------------------------------------

  /** Creates a process and starts it; resolves with the `queued` record before the code runs. */
  async create(input: CreateProcessInput): Promise<ProcessRecord> {
    if (typeof input.code !== "string") throw new HostError("invalid_request", "code must be a string");
    const modules = processModulesOf(input.modules);
    const tooLarge = sourcesTooLarge(input.code, modules);
    if (tooLarge !== undefined) throw tooLarge;
    const timeoutMs = timeoutWithin(input.timeoutMs);
    const tenant = input.tenant ?? ANONYMOUS_TENANT;
    const release = this.#reserve(tenant);
    let storage: TenantStorage | undefined;
    // The new record, counted at the widest pid until its own is drawn (a refused creation draws none).
    const draft: ProcessRecord = {
      pid: LARGEST_PID,
      tenant,
      ...(input.ref === undefined ? {} : { ref: input.ref }),
      state: "queued",
      code: input.code,
      ...(modules === undefined ? {} : { modules }),
      timeoutMs,
      ...fresh(),
      runs: 1,
      createdAt: this.#now(),
    };
    let bytes = storedBytesOf(draft);
    let counted = false;
    let launched = false;
    let reserved: number | undefined;
    try {
      storage = await this.#holdStorage(tenant);
      if (storage !== undefined) {
        this.#checkRoom(storage, bytes);
        // Counted before the writes: creations at once cannot all fit in the same room.
        storage.used += bytes;
        counted = true;
      }
      reserved = await this.#reserveFuel(tenant, timeoutMs);
      const record: ProcessRecord = { ...draft, pid: await this.#store.nextPid(tenant), createdAt: this.#now() };
      if (storage !== undefined) {
        const exact = bytes - summaryBytesOf(draft) + summaryBytesOf(record);
        storage.used += exact - bytes;
        bytes = exact;
      }
      await this.#store.create(record);
      this.#launch(record, storage, reserved);
      launched = true;
      reserved = undefined;
      return structuredClone(record);
    } finally {
      if (!launched && storage !== undefined) {
        if (counted) storage.used -= bytes;
        this.#releaseStorage(tenant, storage);
      }
      release();
      if (reserved !== undefined) this.#settleFuel(tenant, reserved, 0);
    }
  }

  /** The record, live while the process runs; `undefined` when there is none. */
  async get(pid: number): Promise<ProcessRecord | undefined> {
    const live = this.#live.get(pid);
    return live !== undefined ? structuredClone(live.record) : this.#store.get(pid);
  }

  /** The record without its large fields, live while the process runs; `undefined` when there is none. */
  async summary(pid: number): Promise<ProcessSummary | undefined> {
    const live = this.#live.get(pid);
    return live !== undefined ? summaryOf(live.record) : this.#store.summary(pid);
  }

  /**
   * A chunk of a large field from `at`, as {@link ProcessStore.read} gives it, or of an active process's field as it
   * is now (counted in UTF-16 units); `undefined` for an unknown process.
   */
  async chunk(pid: number, field: LargeField, at: number, size: number): Promise<TextChunk | undefined> {
    const live = this.#live.get(pid);
    return live !== undefined ? chunkOf(textOf(live.record, field), at, size) : this.#store.read(pid, field, at, size);
  }

  /**
   * A large field's text (`output` as JSON) in chunks of at most {@link CHUNK_CHARS} characters, each read when the
   * one before has been taken; nothing for an unknown process. An active process's field as it was at the start.
   */
  async *read(pid: number, field: LargeField): AsyncGenerator<string> {
    const live = this.#live.get(pid);
    if (live !== undefined) {
      yield* chunksOf(textOf(live.record, field));
      return;
    }
    for (let at: number | undefined = 0; at !== undefined; ) {
      const chunk = await this.#store.read(pid, field, at, CHUNK_CHARS);
      if (chunk === undefined) return;
      if (chunk.text !== "") yield chunk.text;
      at = chunk.next;
    }
  }

  /**
   * Summaries of the matching records, ascending by pid, as the store and the active processes show them. Costs what
   * it returns: the store is asked for `limit` summaries plus one per active process (whose stored copy may lag and
   * match no longer), never for all of them, and no large field is read.
   */
  async list(filter: ProcessFilter = {}): Promise<ProcessSummary[]> {
    const { limit } = filter;
    const asked = limit === undefined ? undefined : limit + this.#live.size;
    const stored = await this.#store.list(asked === undefined ? filter : { ...filter, limit: asked });
    // With a full page, records past its last pid are unknown here: active ones beyond it must wait for a page.
    const last = asked !== undefined && stored.length >= asked ? (stored.at(-1) as ProcessSummary).pid : Infinity;
    const found = new Map<number, ProcessSummary>();
    for (const record of stored) {
      const live = this.#live.get(record.pid);
      const current = live === undefined ? record : summaryOf(live.record);
      if (matches(current, filter)) found.set(record.pid, current);
    }
    for (const [pid, live] of this.#live) {
      if (!found.has(pid) && pid <= last && matches(live.record, filter)) found.set(pid, summaryOf(live.record));
    }
    const out = [...found.values()].sort((a, b) => a.pid - b.pid);
    return limit === undefined ? out : out.slice(0, limit);
  }

  /** Runs an idle process again (output, stdout, stderr and error start empty). */
  async run(pid: number): Promise<ProcessRecord> {
    if (this.#live.has(pid)) throw new HostError("process_active", `Process ${pid} is not idle`);
    const record = await this.#store.get(pid);
    if (record === undefined) throw new HostError("not_found", `No process ${pid}`);
    if (this.#live.has(pid) || this.#starting.has(pid) || record.state !== "idle") {
      throw new HostError("process_active", `Process ${pid} is not idle`);
    }
    const release = this.#reserve(record.tenant);
    // Until the launch, a second `run` of this pid finds it starting (the store still says idle).
    this.#starting.add(pid);
    let storage: TenantStorage | undefined;
    let launched = false;
    let reserved: number | undefined;
    try {
      storage = await this.#holdStorage(record.tenant);
      reserved = await this.#reserveFuel(record.tenant, record.timeoutMs);
      const next: ProcessRecord = { ...record, ...fresh(), state: "queued", runs: record.runs + 1 };
      await this.#store.update(pid, mutable(next));
      // The last run's streams and output are gone.
      if (storage !== undefined) storage.used -= storedBytesOf(record) - storedBytesOf(next);
      this.#launch(next, storage, reserved);
      launched = true;
      reserved = undefined;
      return structuredClone(next);
    } finally {
      if (!launched) this.#releaseStorage(record.tenant, storage);
      this.#starting.delete(pid);
      release();
      if (reserved !== undefined) this.#settleFuel(record.tenant, reserved, 0);
    }
  }

  /** Asks the environment to stop a queued or running process; a running one becomes `terminating`. */
  async kill(pid: number): Promise<ProcessRecord> {
    const live = this.#live.get(pid);
    if (live === undefined) {
      if ((await this.#store.summary(pid)) === undefined) throw new HostError("not_found", `No process ${pid}`);
      throw new HostError("process_not_active", `Process ${pid} is idle`);
    }
    if (live.record.state === "running") this.#setState(live, "terminating");
    try {
      await this.environments.kill(pid);
    } catch (error) {
      this.#onError(error);
    }
    return structuredClone(live.record);
  }

  /** Deletes an idle process. */
  async delete(pid: number): Promise<void> {
    if (this.#live.has(pid)) throw new HostError("process_active", `Process ${pid} is active: kill it first`);
    const record = await this.#store.summary(pid);
    if (record === undefined) throw new HostError("not_found", `No process ${pid}`);
    if (this.#live.has(pid)) throw new HostError("process_active", `Process ${pid} is active: kill it first`);
    const freed = await this.#store.delete(pid);
    const storage = this.#storage.get(record.tenant);
    if (storage !== undefined && freed !== undefined) storage.used -= freed;
  }

  /**
   * Calls `listener` at once with a `snapshot` of the record, then with every event until `exit`. Returns the
   * unsubscribe function, or `undefined` when there is no such process. An idle process gets only its snapshot.
   * Throws `too_many_subscribers` when the process has {@link maxSubscribers} listeners already, or its tenant's
   * processes {@link maxSubscribersPerTenant}.
   */
  async watch(pid: number, listener: ProcessListener): Promise<{ unsubscribe(): void; ended: boolean } | undefined> {
    const subscribe = (live: Live) => {
      if (live.listeners.size >= this.maxSubscribers) {
        throw new HostError(
          "too_many_subscribers",
          `Process ${pid} has ${this.maxSubscribers} event streams open already: close one first`,
        );
      }
      const { tenant } = live.record;
      const streams = this.#subscribersOf.get(tenant) ?? 0;
      if (streams >= this.maxSubscribersPerTenant) {
        throw new HostError(
          "too_many_subscribers",
          `This tenant's processes have ${this.maxSubscribersPerTenant} event streams open already: close one first`,
        );
      }
      // The large fields as they are now: strings are shared, never copied, and the output's JSON is made once.
      const { record } = live;
      live.outputJson ??= JSON.stringify(record.output);
      const texts: Record<LargeField, string> = {
        ...record,
        output: live.outputJson,
        modules: textOf(record, "modules"),
      };
      listener({ type: "snapshot", pid, record: summaryOf(record), read: (field) => chunksOf(texts[field]) });
      live.listeners.add(listener);
      this.#subscribersOf.set(tenant, streams + 1);
      return { unsubscribe: () => this.#unsubscribe(live, listener), ended: false };
    };
    const live = this.#live.get(pid);
    if (live !== undefined) return subscribe(live);
    const record = await this.#store.summary(pid);
    const now = this.#live.get(pid);
    if (now !== undefined) return subscribe(now);
    if (record === undefined) return undefined;
    listener({ type: "snapshot", pid, record, read: (field) => this.read(pid, field) });
    return { unsubscribe: () => {}, ended: true };
  }

  /** {@link watch} as a stream of Server-Sent Events; `undefined` when there is no such process. */
  events(pid: number): Promise<ReadableStream<Uint8Array> | undefined> {
    return eventStream(this, pid);
  }

  /** The record once the process is idle (at once for an idle one). */
  async wait(pid: number): Promise<ProcessRecord | undefined> {
    const live = this.#live.get(pid);
    return live === undefined ? this.#store.get(pid) : live.done;
  }

  /** Resolves when no process is active. */
  async idle(): Promise<void> {
    while (this.#live.size > 0) await Promise.all([...this.#live.values()].map((l) => l.done));
  }

  /**
   * Ends every active process, for a host that is stopping: each is killed and exits `canceled` with
   * {@link STOPPED_BY_HOST} for its error, its final record stored. Resolves when none is active.
   */
  async stopAll(): Promise<void> {
    for (const live of this.#live.values()) live.stopped = true;
    await Promise.all([...this.#live.keys()].map((pid) => this.environments.kill(pid).catch(this.#onError)));
    await this.idle();
  }

  /** What the current run of an active process has spent; `undefined` for an idle or unknown one. */
  usage(pid: number): ProcessUsage | undefined {
    const live = this.#live.get(pid);
    if (live === undefined) return undefined;
    const { outputWork, tools } = live;
    return {
      outputWork: { spent: Math.min(outputWork.spent, outputWork.limit), limit: outputWork.limit },
      toolWork: { spent: Math.min(tools.work.spent, tools.work.limit), limit: tools.work.limit },
      outputBytes: live.outputBytes,
      subscribers: live.listeners.size,
    };
  }

  /** Processes queued, running or terminating. */
  get activeCount(): number {
    return this.#live.size;
  }

  // ---- EnvironmentBindings ---------------------------------------------------------------------------------------

  /**
   * Runs a tool call, charged to its process's run: the one `input.eid` names when the environment passes it, else
   * the only active process; with several active and no `eid`, they share one scope until none is active, and only
   * while they all belong to one tenant (a call nobody can attribute never reaches a tenant's data).
   */
  invokeTool(input: InvokeInput): Promise<unknown> {
    const { eid } = input;
    let live = eid === undefined ? undefined : this.#live.get(eid);
    if (live === undefined && eid === undefined && this.#live.size === 1) live = this.#live.values().next().value;
    if (live !== undefined) return this.tools.invoke(input, live.tools);
    const tenants = new Set([...this.#live.values()].map((l) => l.record.tenant));
    const [tenant] = tenants;
    if (tenants.size !== 1 || tenant === undefined) {
      return Promise.reject(
        new ToolError(
          "tool_failed",
          "The tool call names no active process, and no single tenant owns the active ones",
        ),
      );
    }
    if (this.#sharedScope?.tenant !== tenant) this.#sharedScope = this.tools.scope(tenant);
    return this.tools.invoke(input, this.#sharedScope);
  }

  async listServices(): Promise<ServiceInfo[]> {
    return this.tools.list();
  }

  setState(eid: number, data: ExecutionState): void {
    const live = this.#live.get(eid);
    if (live === undefined || (data !== "queued" && data !== "running")) return;
    this.#setState(live, data);
  }

  setError(eid: number, data: string): void {
    const live = this.#live.get(eid);
    if (live === undefined) return;
    this.#setError(live, String(data).slice(0, 65_536));
    this.#schedule(live);
  }

  emitStdout(eid: number, data: Uint8Array): void {
    this.#emitText(eid, "stdout", data);
  }

  emitStderr(eid: number, data: Uint8Array): void {
    this.#emitText(eid, "stderr", data);
  }

  setFuelUsed(eid: number, fuel: number): void {
    const live = this.#live.get(eid);
    if (live !== undefined && Number.isFinite(fuel) && fuel >= 0) live.fuel.used = fuel;
  }

  /**
   * Merges a patch into the output. The patch is converted within the run's `outputWork` and the output cap (a patch
   * of shared references stops there, unexpanded), and the merged size is reckoned from the sizes of the entries it
   * replaces: a patch costs its own size, never the whole output's. Keys are defined, never assigned.
   */
  emitOutput(eid: number, data: Record<string, unknown>): void {
    const live = this.#live.get(eid);
    if (live === undefined || live.record.truncated.output) return;
    const cap = this.limits.outputBytes;
    let converted: SizedJson;
    try {
      converted = jsonWithin(data, cap, "the output patch", live.outputWork);
    } catch (error) {
      if (error instanceof BudgetError) {
        this.#truncateOutput(
          live,
          live.outputWork.left === 0
            ? `output patches needed more than ${live.outputWork.limit} units of work: later patches were dropped`
            : `output exceeded ${cap} bytes: later patches were dropped`,
        );
      } else {
        const message = error instanceof Error ? error.message : String(error);
        this.#append(live, "stderr", `[output patch dropped: ${message}]\n`);
      }
      return;
    }
    const { json: patch, entries: sizes } = converted;
    if (typeof patch !== "object" || patch === null || Array.isArray(patch)) return;
    // The output's JSON is `{` + entries `"key":value` joined by commas + `}`.
    let entries = live.outputEntries.size;
    let bytes = live.outputBytes;
    for (const [key, size] of sizes) {
      const old = live.outputEntries.get(key);
      bytes += old === undefined ? size + (entries++ === 0 ? 0 : 1) : size - old;
    }
    if (bytes > cap) {
      this.#truncateOutput(live, `output exceeded ${cap} bytes: later patches were dropped`);
      return;
    }
    const { storage } = live;
    if (storage !== undefined) {
      const quota = this.maxTenantStorageBytes as number;
      if (storage.used + bytes - live.outputBytes > quota) {
        this.#truncateOutput(live, `the tenant's storage quota of ${quota} bytes is full: later patches were dropped`);
        return;
      }
      storage.used += bytes - live.outputBytes;
    }
    const output = live.record.output;
    live.outputJson = undefined;
    for (const [key, size] of sizes) {
      define(output, key, patch[key]);
      live.outputEntries.set(key, size);
    }
    live.outputBytes = bytes;
    this.#publish(live, { type: "output", pid: eid, patch });
    this.#schedule(live);
  }

  // ---- internals -----------------------------------------------------------------------------------------------

  /** Holds a slot for `tenant` until the returned release (by then the process is live or was refused). */
  #reserve(tenant: string): () => void {
    let reserved = 0;
    for (const count of this.#reserved.values()) reserved += count;
    let tenantActive = this.#reserved.get(tenant) ?? 0;
    for (const live of this.#live.values()) if (live.record.tenant === tenant) tenantActive++;
    checkSlots(this.#live.size + reserved, tenantActive, {
      maxActive: this.maxActiveProcesses,
      tenantMaxActive: this.maxActivePerTenant,
    });
    this.#reserved.set(tenant, (this.#reserved.get(tenant) ?? 0) + 1);
    return () => {
      const left = (this.#reserved.get(tenant) ?? 1) - 1;
      if (left === 0) this.#reserved.delete(tenant);
      else this.#reserved.set(tenant, left);
    };
  }

  /** `tenant`'s count of stored bytes, held until {@link #releaseStorage}; `undefined` without a storage quota. */
  async #holdStorage(tenant: string): Promise<TenantStorage | undefined> {
    const usage = this.#store.usage;
    if (this.maxTenantStorageBytes === undefined || usage === undefined) return undefined;
    if (!this.#storage.has(tenant)) {
      const used = await usage.call(this.#store, tenant);
      // Another start of the tenant's may have read it meanwhile, and counted since.
      if (!this.#storage.has(tenant)) this.#storage.set(tenant, { used, holders: 0 });
    }
    const storage = this.#storage.get(tenant) as TenantStorage;
    storage.holders++;
    return storage;
  }

  #releaseStorage(tenant: string, storage: TenantStorage | undefined): void {
    if (storage !== undefined && --storage.holders === 0) this.#storage.delete(tenant);
  }

  /** Refuses a new record of `bytes` that the tenant's quota cannot hold: 413 if it never could, 507 if it is full. */
  #checkRoom(storage: TenantStorage, bytes: number): void {
    const quota = this.maxTenantStorageBytes as number;
    if (bytes > quota) {
      throw new HostError(
        "payload_too_large",
        `This process's record would hold ${bytes} bytes of code and summary, more than the tenant's whole storage quota of ${quota} bytes`,
      );
    }
    if (storage.used + bytes > quota) {
      throw new HostError(
        "storage_full",
        `The tenant's storage quota is full: its processes hold ${storage.used} of ${quota} bytes (code, stdout, stderr, output, records) and this one needs ${bytes}: delete processes to make room`,
      );
    }
  }

  /** Reserves the fuel cap of a run of `timeoutMs` from `tenant`'s share: what was reserved (429 when it cannot). */
  async #reserveFuel(tenant: string, timeoutMs: number): Promise<number> {
    return this.#cpu === undefined ? 0 : this.#cpu.budget.reserve(tenant, this.#cpu.fuelOf(timeoutMs));
  }

  /** Settles a reservation; a lost settlement leaves it spent (the tenant waits longer, nobody else does). */
  #settleFuel(tenant: string, reserved: number, used: number): void {
    this.#cpu?.budget.settle(tenant, reserved, used).catch(this.#onError);
  }

  /** Drops this and every later patch of the run; `output.$truncated` says why. */
  #truncateOutput(live: Live, message: string): void {
    const { output, truncated } = live.record;
    truncated.output = true;
    define(output, OUTPUT_TRUNCATED_KEY, message);
    live.outputJson = undefined;
    // The stored output gains the entry `"$truncated":"..."` (the run's count of output bytes leaves it out).
    if (live.storage !== undefined) {
      const size = utf8Length(`${JSON.stringify(OUTPUT_TRUNCATED_KEY)}:${JSON.stringify(message)}`);
      const old = live.outputEntries.get(OUTPUT_TRUNCATED_KEY);
      live.storage.used += old === undefined ? size + (live.outputEntries.size === 0 ? 0 : 1) : size - old;
    }
    this.#publish(live, { type: "output", pid: live.record.pid, patch: { [OUTPUT_TRUNCATED_KEY]: message } });
    this.#schedule(live);
  }

  #launch(record: ProcessRecord, storage: TenantStorage | undefined, reserved: number): void {
    let resolve!: (record: ProcessRecord) => void;
    const done = new Promise<ProcessRecord>((r) => {
      resolve = r;
    });
    const live: Live = {
      record,
      storage,
      summaryBytes: summaryBytesOf(record),
      decoders: { stdout: new TextDecoder(), stderr: new TextDecoder() },
      listeners: new Set(),
      tools: this.tools.scope(record.tenant),
      outputWork: new WorkBudget(this.limits.outputWork, "output patches"),
      outputEntries: new Map(),
      outputBytes: 2,
      outputJson: undefined,
      dirty: false,
      saving: undefined,
      stopped: false,
      fuel: { reserved, used: undefined },
      done,
      resolve,
    };
    this.#live.set(record.pid, live);
    const input = {
      eid: record.pid,
      code: record.code,
      ...(record.modules === undefined ? {} : { modules: record.modules }),
      options: { timeoutMs: record.timeoutMs },
      tenant: record.tenant,
    };
    Promise.resolve()
      .then(() => this.environments.execute(input))
      .then(
        (exit) =>
          (EXECUTION_EXIT_STATES as readonly unknown[]).includes(exit)
            ? this.#exit(live, exit)
            : this.#exit(live, "failed", `The environment returned an invalid exit state: ${String(exit)}`),
        (error: unknown) => this.#exit(live, "failed", error instanceof Error ? error.message : String(error)),
      )
      .catch(this.#onError);
  }

  /**
   * Sets the record's error within its tenant's storage quota: an error the room left cannot hold is cut to what it
   * can (as its JSON text is stored), and a marker line says so, by which alone the quota is passed.
   */
  #setError(live: Live, text: string): void {
    const { record, storage } = live;
    if (storage === undefined) {
      record.error = text;
      return;
    }
    const quota = this.maxTenantStorageBytes as number;
    record.error = "";
    const room = quota - (storage.used - live.summaryBytes + summaryBytesOf(record));
    const kept = jsonPrefix(text, room);
    record.error =
      kept === text.length
        ? text
        : `${text.slice(0, kept)}\n[error truncated: the tenant's storage quota of ${quota} bytes is full]`;
    this.#countSummary(live);
  }

  /**
   * Counts the record's summary as it is now (its state, times, flags and error change it) in its tenant's stored
   * bytes, before the write that stores it. Only the error is guest-chosen, and checked ({@link #setError}); the rest
   * grows by a few bytes a run at most.
   */
  #countSummary(live: Live): void {
    if (live.storage === undefined) return;
    const bytes = summaryBytesOf(live.record);
    live.storage.used += bytes - live.summaryBytes;
    live.summaryBytes = bytes;
  }

  #setState(live: Live, state: HostState): void {
    if (transition(live.record.state, state) !== "apply") return;
    live.record.state = state;
    if (state === "running") live.record.startedAt = this.#now();
    this.#publish(live, { type: "state", pid: live.record.pid, state, exitState: live.record.exitState });
    this.#schedule(live);
  }

  #emitText(eid: number, stream: "stdout" | "stderr", data: Uint8Array): void {
    const live = this.#live.get(eid);
    if (live === undefined || !(data instanceof Uint8Array) || live.record.truncated[stream]) return;
    // Decode no more than can land: a UTF-16 unit takes at most 3 bytes, and one unit past the room cuts the stream.
    const cap = stream === "stdout" ? this.limits.stdoutChars : this.limits.stderrChars;
    const most = 3 * (Math.max(0, cap - live.record[stream].length) + 2);
    const text = live.decoders[stream].decode(data.length > most ? data.subarray(0, most) : data, { stream: true });
    if (text !== "") this.#append(live, stream, text);
  }

  /** Appends to a stream within its cap (a marker line once, then nothing) and publishes what was appended. */
  #append(live: Live, stream: "stdout" | "stderr", text: string): void {
    const { record } = live;
    if (record.truncated[stream]) return;
    const cap = stream === "stdout" ? this.limits.stdoutChars : this.limits.stderrChars;
    let added = text;
    let cutBecause: string | undefined;
    const room = cap - record[stream].length;
    if (text.length > room) {
      let cut = Math.max(0, room);
      // Never split a surrogate pair.
      if (cut > 0 && /[\uD800-\uDBFF]/.test(text.charAt(cut - 1))) cut--;
      added = text.slice(0, cut);
      cutBecause = `more than ${cap} characters`;
    }
    const { storage } = live;
    if (storage !== undefined) {
      const quota = this.maxTenantStorageBytes as number;
      const left = quota - storage.used;
      if (utf8Length(added) > left) {
        added = added.slice(0, utf8Prefix(added, left));
        cutBecause = `the tenant's storage quota of ${quota} bytes is full`;
      }
    }
    if (cutBecause !== undefined) {
      added = `${added}\n[${stream} truncated: ${cutBecause}]\n`;
      record.truncated[stream] = true;
    }
    if (storage !== undefined) storage.used += utf8Length(added);
    record[stream] += added;
    this.#publish(live, { type: stream, pid: record.pid, data: added });
    this.#schedule(live);
  }

  async #exit(live: Live, ended: ExecutionExitState, endedBy?: string): Promise<void> {
    const { record } = live;
    const [exit, hostError] = live.stopped ? (["canceled", STOPPED_BY_HOST] as const) : [ended, endedBy];
    for (const stream of ["stdout", "stderr"] as const) {
      const tail = live.decoders[stream].decode();
      if (tail !== "") this.#append(live, stream, tail);
    }
    if (hostError !== undefined) this.#setError(live, hostError);
    if (exit === "failed" && record.error === null) this.#setError(live, "The process failed without an error message");
    record.state = "idle";
    record.exitState = exit;
    record.finishedAt = this.#now();
    // A run that told no fuel was stopped from outside its thread, where clocks run: it is charged the time it ran.
    const { reserved, used } = live.fuel;
    const ran = record.startedAt === null ? 0 : (record.finishedAt - record.startedAt) * FUEL_PER_MS;
    this.#settleFuel(record.tenant, reserved, used ?? Math.min(reserved, ran));
    this.#schedule(live);
    await live.saving;
    this.#live.delete(record.pid);
    this.#releaseStorage(record.tenant, live.storage);
    if (this.#live.size === 0) this.#sharedScope = undefined;
    this.#publish(live, { type: "state", pid: record.pid, state: "idle", exitState: exit });
    this.#publish(live, { type: "exit", pid: record.pid, exitState: exit, error: record.error });
    for (const listener of [...live.listeners]) this.#unsubscribe(live, listener);
    live.resolve(structuredClone(record));
  }

  /** Forgets `listener` of `live`, and counts it out of its tenant's streams; a second call does nothing. */
  #unsubscribe(live: Live, listener: ProcessListener): void {
    if (!live.listeners.delete(listener)) return;
    const { tenant } = live.record;
    const streams = (this.#subscribersOf.get(tenant) ?? 1) - 1;
    if (streams === 0) this.#subscribersOf.delete(tenant);
    else this.#subscribersOf.set(tenant, streams);
  }

  #publish(live: Live, event: ProcessEvent): void {
    for (const listener of [...live.listeners]) {
      try {
        listener(event);
      } catch (error) {
        this.#onError(error);
      }
    }
  }

  /** Writes the record through to the store, coalescing changes made while a write is in flight. */
  #schedule(live: Live): void {
    live.dirty = true;
    live.saving ??= this.#save(live);
  }

  async #save(live: Live): Promise<void> {
    // First let the caller keep the promise (and more changes pile up): the loop's end and `finally` stay atomic.
    await null;
    try {
      while (live.dirty) {
        live.dirty = false;
        this.#countSummary(live);
        await this.#store.update(live.record.pid, mutable(live.record));
      }
    } catch (error) {
      this.#onError(error);
    } finally {
      live.saving = undefined;
    }
  }
}
