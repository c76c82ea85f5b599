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
import {
  type EnvironmentBindings,
  EXECUTION_EXIT_STATES,
  type ExecutionExitState,
  type ExecutionState,
  type InvokeInput,
  type ServiceInfo,
} from "../environment/types.js";
import { Environments } from "./environments.js";
import { HostError } from "./errors.js";
import { define, toJson, toJsonText } from "./json.js";
import { transition } from "./states.js";
import {
  type HostState,
  matches,
  type ProcessFilter,
  type ProcessPatch,
  type ProcessRecord,
  type ProcessStore,
} from "./storage.js";
import { ToolRegistry } from "./tools.js";

/** Timeout of a process that sets none. */
export const DEFAULT_EXECUTION_TIMEOUT_MS = 30_000;
/** Longest timeout a process may ask for. */
export const MAX_EXECUTION_TIMEOUT_MS = 600_000;
/** Largest process code, in UTF-8 bytes. */
export const MAX_CODE_BYTES = 100 * 1024;
/** Processes queued, running or terminating at once; more are refused (HTTP 429). */
export const DEFAULT_MAX_ACTIVE_PROCESSES = 16;
/** Per-process caps (see {@link OutputLimits}). */
export const DEFAULT_OUTPUT_LIMITS: Readonly<OutputLimits> = Object.freeze({
  stdoutChars: 1_048_576,
  stderrChars: 1_048_576,
  outputBytes: 262_144,
});
/** The key a truncated output gets, with a message for a value. */
export const OUTPUT_TRUNCATED_KEY = "$truncated";

/**
 * Caps per process and run. Over a stream cap the text is cut and a marker line is appended once
 * (`[stdout truncated: more than N characters]`); later chunks are dropped. An output patch that would make the
 * merged output's JSON larger than `outputBytes` is dropped and `output.$truncated` says so.
 */
export interface OutputLimits {
  stdoutChars: number;
  stderrChars: number;
  outputBytes: number;
}

export type ProcessEvent =
  | { type: "snapshot"; pid: number; record: ProcessRecord }
  | { type: "state"; pid: number; state: HostState; exitState: ExecutionExitState | null }
  | { type: "stdout" | "stderr"; pid: number; data: string }
  | { type: "output"; pid: number; patch: Record<string, unknown> }
  | { type: "exit"; pid: number; exitState: ExecutionExitState; error: string | null };

export type ProcessListener = (event: ProcessEvent) => void;

export interface ProcessServiceOptions {
  store: ProcessStore;
  /** The tools processes can call. Default: an empty registry. */
  tools?: ToolRegistry;
  defaultTimeoutMs?: number;
  maxTimeoutMs?: number;
  maxActiveProcesses?: number;
  limits?: Partial<OutputLimits>;
  /** Epoch milliseconds for the record's timestamps. Default `Date.now`. */
  now?: () => number;
  /** Called with failures that have no caller to go to (a store write behind a binding). */
  onError?: (error: unknown) => void;
}

export interface CreateProcessInput {
  code: string;
  timeoutMs?: number;
  ref?: string;
}

interface Live {
  record: ProcessRecord;
  decoders: { stdout: TextDecoder; stderr: TextDecoder };
  listeners: Set<ProcessListener>;
  dirty: boolean;
  saving: Promise<void> | undefined;
  done: Promise<ProcessRecord>;
  resolve(record: ProcessRecord): void;
}

const encoder = new TextEncoder();
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
  readonly defaultTimeoutMs: number;
  readonly maxTimeoutMs: number;
  readonly maxActiveProcesses: number;
  readonly limits: Readonly<OutputLimits>;
  readonly #store: ProcessStore;
  readonly #now: () => number;
  readonly #onError: (error: unknown) => void;
  readonly #live = new Map<number, Live>();
  #reserved = 0;

  constructor(options: ProcessServiceOptions) {
    this.#store = options.store;
    this.tools = options.tools ?? new ToolRegistry();
    this.defaultTimeoutMs = options.defaultTimeoutMs ?? DEFAULT_EXECUTION_TIMEOUT_MS;
    this.maxTimeoutMs = options.maxTimeoutMs ?? MAX_EXECUTION_TIMEOUT_MS;
    this.maxActiveProcesses = options.maxActiveProcesses ?? DEFAULT_MAX_ACTIVE_PROCESSES;
    this.limits = { ...DEFAULT_OUTPUT_LIMITS, ...options.limits };
    this.#now = options.now ?? Date.now;
    this.#onError = options.onError ?? ((error) => console.error("runcode host:", error));
    this.environments = new Environments(this, this.#onError);
  }

  // ---- the API -------------------------------------------------------------------------------------------------

  /** Creates a process and starts it; resolves with the `queued` record before the code runs. */
  async create(input: CreateProcessInput): Promise<ProcessRecord> {
    if (typeof input.code !== "string") throw new HostError("invalid_request", "code must be a string");
    if (encoder.encode(input.code).length > MAX_CODE_BYTES) {
      throw new HostError("payload_too_large", `code is larger than ${MAX_CODE_BYTES} bytes`);
    }
    const timeoutMs = input.timeoutMs ?? this.defaultTimeoutMs;
    if (!Number.isInteger(timeoutMs) || timeoutMs < 1 || timeoutMs > this.maxTimeoutMs) {
      throw new HostError("invalid_request", `timeoutMs must be an integer from 1 to ${this.maxTimeoutMs}`);
    }
    this.#reserve();
    try {
      const now = this.#now();
      const record: ProcessRecord = {
        pid: await this.#store.nextPid(),
        ...(input.ref === undefined ? {} : { ref: input.ref }),
        state: "queued",
        code: input.code,
        timeoutMs,
        ...fresh(),
        runs: 1,
        createdAt: now,
      };
      await this.#store.create(record);
      this.#launch(record);
      return structuredClone(record);
    } finally {
      this.#reserved--;
    }
  }

  /** The record, live while the process runs; `undefined` when there is none. */
  async get(pid: number): Promise<ProcessRecord | undefined> {
    const live = this.#live.get(pid);
    return live !== undefined ? structuredClone(live.record) : this.#store.get(pid);
  }

  /** Matching records, ascending by pid. */
  async list(filter: ProcessFilter = {}): Promise<ProcessRecord[]> {
    const { limit: _limit, ...unlimited } = filter;
    const stored = await this.#store.list(unlimited);
    const out: ProcessRecord[] = [];
    for (const record of stored) {
      const live = this.#live.get(record.pid);
      const current = live === undefined ? record : structuredClone(live.record);
      if (!matches(current, filter)) continue;
      out.push(current);
      if (filter.limit !== undefined && out.length >= filter.limit) break;
    }
    return out;
  }

  /** Runs an idle process again (output, stdout, stderr and error start empty). */
  async run(pid: number): Promise<ProcessRecord> {
    if (this.#live.has(pid)) throw new HostError("process_active", `Process ${pid} is not idle`);
    this.#reserve();
    try {
      const record = await this.#store.get(pid);
      if (record === undefined) throw new HostError("not_found", `No process ${pid}`);
      if (this.#live.has(pid) || record.state !== "idle") {
        throw new HostError("process_active", `Process ${pid} is not idle`);
      }
      const next: ProcessRecord = { ...record, ...fresh(), state: "queued", runs: record.runs + 1 };
      await this.#store.update(pid, mutable(next));
      this.#launch(next);
      return structuredClone(next);
    } finally {
      this.#reserved--;
    }
  }

  /** Asks the environment to stop a queued or running process; a running one becomes `terminating`. */
  async kill(pid: number): Promise<ProcessRecord> {
    const live = this.#live.get(pid);
    if (live === undefined) {
      if ((await this.#store.get(pid)) === undefined) throw new HostError("not_found", `No process ${pid}`);
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
    const record = await this.#store.get(pid);
    if (record === undefined) throw new HostError("not_found", `No process ${pid}`);
    if (this.#live.has(pid)) throw new HostError("process_active", `Process ${pid} is active: kill it first`);
    await this.#store.delete(pid);
  }

  /**
   * Calls `listener` at once with a `snapshot` of the record, then with every event until `exit`. Returns the
   * unsubscribe function, or `undefined` when there is no such process. An idle process gets only its snapshot.
   */
  async watch(pid: number, listener: ProcessListener): Promise<{ unsubscribe(): void; ended: boolean } | undefined> {
    const subscribe = (live: Live) => {
      listener({ type: "snapshot", pid, record: structuredClone(live.record) });
      live.listeners.add(listener);
      return { unsubscribe: () => live.listeners.delete(listener), ended: false };
    };
    const live = this.#live.get(pid);
    if (live !== undefined) return subscribe(live);
    const record = await this.#store.get(pid);
    const now = this.#live.get(pid);
    if (now !== undefined) return subscribe(now);
    if (record === undefined) return undefined;
    listener({ type: "snapshot", pid, record });
    return { unsubscribe: () => {}, ended: true };
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

  /** Processes queued, running or terminating. */
  get activeCount(): number {
    return this.#live.size;
  }

  // ---- EnvironmentBindings ---------------------------------------------------------------------------------------

  invokeTool(input: InvokeInput): Promise<unknown> {
    return this.tools.invoke(input);
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
    live.record.error = String(data).slice(0, 65_536);
    this.#schedule(live);
  }

  emitStdout(eid: number, data: Uint8Array): void {
    this.#emitText(eid, "stdout", data);
  }

  emitStderr(eid: number, data: Uint8Array): void {
    this.#emitText(eid, "stderr", data);
  }

  emitOutput(eid: number, data: Record<string, unknown>): void {
    const live = this.#live.get(eid);
    if (live === undefined || live.record.truncated.output) return;
    let patch: unknown;
    try {
      patch = toJson(data);
    } catch (error) {
      this.#append(
        live,
        "stderr",
        `[output patch dropped: ${error instanceof Error ? error.message : String(error)}]\n`,
      );
      return;
    }
    if (typeof patch !== "object" || patch === null || Array.isArray(patch)) return;
    const merged: Record<string, unknown> = { ...live.record.output };
    for (const [key, value] of Object.entries(patch)) define(merged, key, value);
    const output = live.record.output;
    if (encoder.encode(toJsonText(merged)).length > this.limits.outputBytes) {
      live.record.truncated.output = true;
      define(
        output,
        OUTPUT_TRUNCATED_KEY,
        `output exceeded ${this.limits.outputBytes} bytes: later patches were dropped`,
      );
      this.#publish(live, {
        type: "output",
        pid: eid,
        patch: { [OUTPUT_TRUNCATED_KEY]: output[OUTPUT_TRUNCATED_KEY] },
      });
    } else {
      for (const [key, value] of Object.entries(patch)) define(output, key, value);
      this.#publish(live, { type: "output", pid: eid, patch: patch as Record<string, unknown> });
    }
    this.#schedule(live);
  }

  // ---- internals -----------------------------------------------------------------------------------------------

  #reserve(): void {
    if (this.#live.size + this.#reserved >= this.maxActiveProcesses) {
      throw new HostError(
        "too_many_processes",
        `${this.maxActiveProcesses} processes are active already: wait for one to finish`,
      );
    }
    this.#reserved++;
  }

  #launch(record: ProcessRecord): void {
    let resolve!: (record: ProcessRecord) => void;
    const done = new Promise<ProcessRecord>((r) => {
      resolve = r;
    });
    const live: Live = {
      record,
      decoders: { stdout: new TextDecoder(), stderr: new TextDecoder() },
      listeners: new Set(),
      dirty: false,
      saving: undefined,
      done,
      resolve,
    };
    this.#live.set(record.pid, live);
    const input = { eid: record.pid, code: record.code, options: { timeoutMs: record.timeoutMs } };
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

  #setState(live: Live, state: HostState): void {
    if (transition(live.record.state, state) !== "apply") return;
    live.record.state = state;
    if (state === "running") live.record.startedAt = this.#now();
    this.#publish(live, { type: "state", pid: live.record.pid, state, exitState: live.record.exitState });
    this.#schedule(live);
  }

  #emitText(eid: number, stream: "stdout" | "stderr", data: Uint8Array): void {
    const live = this.#live.get(eid);
    if (live === undefined || !(data instanceof Uint8Array)) return;
    const text = live.decoders[stream].decode(data, { stream: true });
    if (text !== "") this.#append(live, stream, text);
  }

  /** Appends to a stream within its cap (a marker line once, then nothing) and publishes what was appended. */
  #append(live: Live, stream: "stdout" | "stderr", text: string): void {
    const { record } = live;
    if (record.truncated[stream]) return;
    const cap = stream === "stdout" ? this.limits.stdoutChars : this.limits.stderrChars;
    let added = text;
    const room = cap - record[stream].length;
    if (text.length > room) {
      let cut = Math.max(0, room);
      // Never split a surrogate pair.
      if (cut > 0 && /[\uD800-\uDBFF]/.test(text.charAt(cut - 1))) cut--;
      added = `${text.slice(0, cut)}\n[${stream} truncated: more than ${cap} characters]\n`;
      record.truncated[stream] = true;
    }
    record[stream] += added;
    this.#publish(live, { type: stream, pid: record.pid, data: added });
    this.#schedule(live);
  }

  async #exit(live: Live, exit: ExecutionExitState, hostError?: string): Promise<void> {
    const { record } = live;
    for (const stream of ["stdout", "stderr"] as const) {
      const tail = live.decoders[stream].decode();
      if (tail !== "") this.#append(live, stream, tail);
    }
    if (hostError !== undefined) record.error = hostError;
    if (exit === "failed" && record.error === null) record.error = "The process failed without an error message";
    record.state = "idle";
    record.exitState = exit;
    record.finishedAt = this.#now();
    this.#schedule(live);
    await live.saving;
    this.#live.delete(record.pid);
    this.#publish(live, { type: "state", pid: record.pid, state: "idle", exitState: exit });
    this.#publish(live, { type: "exit", pid: record.pid, exitState: exit, error: record.error });
    live.listeners.clear();
    live.resolve(structuredClone(record));
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
        await this.#store.update(live.record.pid, mutable(live.record));
      }
    } catch (error) {
      this.#onError(error);
    } finally {
      live.saving = undefined;
    }
  }
}
