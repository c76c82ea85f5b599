/**
 * The QuickJS environment module: runs each process in its own sandbox of the core, enforces `timeoutMs` (a host
 * timer for time spent awaiting the host, the sandbox's safety cap for synchronous guest work, including where
 * clocks stand still), queues executions over a concurrency limit, and reports everything through the bindings.
 * @module
 */

import { compiledModule } from "../engine.js";
import { type CodeExecution, type CodeExecutionResult, createSandbox, DEFAULT_MEMORY_LIMIT_BYTES } from "../index.js";
import type { WasmSource } from "../types.js";
import { formatLine } from "./console.js";
import { environmentDocs, toolDocs } from "./docs.js";
import { describeFailure } from "./failure.js";
import {
  ENTRY_FILENAME,
  ENTRY_SOURCE,
  type GuestHost,
  type GuestServices,
  PROCESS_MODULE,
  RUNTIME_MODULE,
  RUNTIME_SOURCE,
} from "./guest.js";
import type {
  EnvironmentBindings,
  EnvironmentModule,
  EnvironmentSetupContext,
  ExecutionExitState,
  ExecutionInput,
  ServiceInfo,
  ToolDocsInput,
} from "./types.js";

/** Timeout of an execution whose `options` are undefined. */
export const DEFAULT_TIMEOUT_MS = 30_000;
/** Executions running at once; more wait in `queued`. */
export const DEFAULT_CONCURRENCY = 4;
/**
 * Interrupt polls allowed per millisecond of `timeoutMs`: the backstop where clocks stand still during synchronous
 * work (deployed Workers). QuickJS polls ~1-12 times per ms of guest work: `while(true){}` (~11.5/ms) stops within
 * ~2x its timeout when no clock moves, slower-polling loops later (a loop at 1 poll/ms after 20x). Where clocks
 * move (Node, the browser) the CPU-time cap and the host timer stop everything at `timeoutMs`.
 */
export const INTERRUPT_POLLS_PER_MS = 20;

/** Settings of {@link instantiate}. */
export interface EnvironmentOptions {
  /** The QuickJS wasm (compiled once and reused). A compiled `WebAssembly.Module` is required on Workers. */
  wasm?: WasmSource;
  /** Monotonic milliseconds for the safety cap. Default `performance.now`. */
  clock?: () => number;
  /** Timeout when `execute` gets no `options`. Default {@link DEFAULT_TIMEOUT_MS}. */
  defaultTimeoutMs?: number;
  /** Heap cap of each execution. Default the core's `DEFAULT_MEMORY_LIMIT_BYTES` (64 MiB). */
  memoryLimitBytes?: number;
  /** Executions running at once. Default {@link DEFAULT_CONCURRENCY}. */
  concurrency?: number;
}

type Phase = "queued" | "running" | "done";
interface Job {
  eid: number;
  code: string;
  timeoutMs: number;
  phase: Phase;
  stop: "timeout" | "canceled" | undefined;
  run: CodeExecution | undefined;
  timer: ReturnType<typeof setTimeout> | undefined;
  resolve(exit: ExecutionExitState): void;
  done: Promise<ExecutionExitState>;
}

const positive = (name: string, value: number | undefined, fallback: number): number => {
  const resolved = value ?? fallback;
  if (!(Number.isFinite(resolved) && resolved > 0)) throw new TypeError(`${name} must be a positive number`);
  return resolved;
};
const isPlainRecord = (value: unknown): value is Record<string, unknown> => {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
};

class QuickJSEnvironment implements EnvironmentModule {
  readonly #clock: (() => number) | undefined;
  readonly #defaultTimeoutMs: number;
  readonly #memoryLimitBytes: number;
  readonly #concurrency: number;
  readonly #jobs = new Map<number, Job>();
  readonly #queue: Job[] = [];
  readonly #encoder = new TextEncoder();
  /** The wasm, compiled once for every execution's sandbox (see `compiledModule`). */
  readonly #wasm: () => Promise<WebAssembly.Module | undefined>;
  #bindings: EnvironmentBindings | undefined;
  #running = 0;
  #tornDown = false;

  constructor(options: EnvironmentOptions) {
    this.#wasm = compiledModule(options.wasm);
    this.#clock = options.clock;
    this.#defaultTimeoutMs = positive("defaultTimeoutMs", options.defaultTimeoutMs, DEFAULT_TIMEOUT_MS);
    this.#memoryLimitBytes = positive("memoryLimitBytes", options.memoryLimitBytes, DEFAULT_MEMORY_LIMIT_BYTES);
    this.#concurrency = Math.floor(positive("concurrency", options.concurrency, DEFAULT_CONCURRENCY));
  }

  async setup({ bindings }: EnvironmentSetupContext): Promise<void> {
    this.#bindings = bindings;
    this.#tornDown = false;
  }

  async teardown(): Promise<void> {
    this.#tornDown = true;
    const pending = [...this.#jobs.values()];
    for (const job of pending) this.#stop(job, "canceled");
    await Promise.all(pending.map((job) => job.done));
  }

  execute(input: ExecutionInput): Promise<ExecutionExitState> {
    const bindings = this.#bindings;
    if (bindings === undefined) return Promise.reject(new Error("The environment is not set up: call setup() first"));
    if (this.#tornDown) return Promise.reject(new Error("The environment is torn down"));
    const { eid, code } = input;
    if (!Number.isSafeInteger(eid)) return Promise.reject(new TypeError("execute: eid must be an integer"));
    if (typeof code !== "string") return Promise.reject(new TypeError("execute: code must be a string"));
    if (this.#jobs.has(eid)) return Promise.reject(new Error(`execute: execution ${eid} is already in flight`));
    let timeoutMs: number;
    try {
      timeoutMs = positive("execute: options.timeoutMs", input.options?.timeoutMs, this.#defaultTimeoutMs);
    } catch (error) {
      return Promise.reject(error);
    }
    let resolve!: (exit: ExecutionExitState) => void;
    const done = new Promise<ExecutionExitState>((r) => {
      resolve = r;
    });
    const job: Job = {
      eid,
      code,
      timeoutMs,
      phase: "queued",
      stop: undefined,
      run: undefined,
      timer: undefined,
      resolve,
      done,
    };
    this.#jobs.set(eid, job);
    this.#report(job, () => bindings.setState(eid, "queued"));
    this.#queue.push(job);
    this.#pump();
    return done;
  }

  async kill(eid: number): Promise<void> {
    const job = this.#jobs.get(eid);
    if (job !== undefined) this.#stop(job, "canceled");
  }

  async generateDocs(): Promise<string> {
    return environmentDocs({
      defaultTimeoutMs: this.#defaultTimeoutMs,
      memoryLimitBytes: this.#memoryLimitBytes,
      concurrency: this.#concurrency,
    });
  }

  async generateToolDocs(input: ToolDocsInput): Promise<string> {
    return toolDocs(input);
  }

  #pump(): void {
    while (this.#running < this.#concurrency && this.#queue.length > 0) {
      const job = this.#queue.shift() as Job;
      this.#running++;
      void this.#start(job);
    }
  }

  /** Stops a job: a queued one never runs; a running one is terminated where it stands. */
  #stop(job: Job, reason: "timeout" | "canceled"): void {
    if (job.phase === "done" || job.stop !== undefined) return;
    job.stop = reason;
    if (job.phase === "queued") {
      this.#queue.splice(this.#queue.indexOf(job), 1);
      this.#finish(job, "canceled");
      return;
    }
    job.run?.terminate(reason === "timeout" ? `Timed out after ${job.timeoutMs} ms` : "Killed");
  }

  async #start(job: Job): Promise<void> {
    const bindings = this.#bindings as EnvironmentBindings;
    job.phase = "running";
    job.timer = setTimeout(() => this.#stop(job, "timeout"), job.timeoutMs);
    this.#report(job, () => bindings.setState(job.eid, "running"));
    let exit: ExecutionExitState;
    try {
      const services = bindings.listServices === undefined ? null : guestServices(await bindings.listServices());
      const wasm = job.stop === undefined ? await this.#wasm() : undefined;
      exit = job.stop === undefined ? this.#exitOf(job, await this.#run(job, bindings, services, wasm)) : job.stop;
    } catch (error) {
      exit = job.stop ?? "failed";
      if (exit === "failed") {
        const message = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
        this.#report(job, () => bindings.setError(job.eid, `The environment could not run the process: ${message}`));
      }
    }
    if (exit === "timeout") {
      this.#report(job, () =>
        bindings.setError(
          job.eid,
          `Timeout: the process ran longer than its timeoutMs (${job.timeoutMs} ms) and was stopped`,
        ),
      );
    }
    this.#finish(job, exit);
  }

  #run(
    job: Job,
    bindings: EnvironmentBindings,
    services: GuestServices,
    wasm: WebAssembly.Module | undefined,
  ): CodeExecution {
    const { eid, timeoutMs } = job;
    const sandbox = createSandbox({
      ...(wasm === undefined ? {} : { wasm }),
      ...(this.#clock === undefined ? {} : { clock: this.#clock }),
      defaultMemoryLimitBytes: this.#memoryLimitBytes,
      safetyCap: { cpuTimeMs: timeoutMs, interruptPolls: timeoutMs * INTERRUPT_POLLS_PER_MS },
    });
    const host: GuestHost = {
      write: (stream, args) => {
        const bytes = this.#encoder.encode(`${formatLine(args)}\n`);
        this.#report(job, () => (stream === 2 ? bindings.emitStderr(eid, bytes) : bindings.emitStdout(eid, bytes)));
      },
      output: (patch) => {
        if (!isPlainRecord(patch)) throw new TypeError("cyrnel.output(value) expects a plain object");
        this.#report(job, () => bindings.emitOutput(eid, patch));
      },
      invoke: (serviceId, toolId, parameters) => {
        if (job.phase === "done") return Promise.reject(new Error("The process has ended"));
        try {
          return bindings.invokeTool({ serviceId, toolId, parameters });
        } catch (error) {
          return Promise.reject(error);
        }
      },
    };
    job.run = sandbox.runCode(ENTRY_SOURCE, {
      filename: ENTRY_FILENAME,
      modules: { [RUNTIME_MODULE]: RUNTIME_SOURCE, [PROCESS_MODULE]: job.code },
      // `report: undefined` hides the core's own `report`: the documented surface is all the guest gets.
      globals: { console: {}, cyrnel: { services, __host: host }, report: undefined },
    });
    return job.run;
  }

  #exitOf(job: Job, result: CodeExecutionResult): ExecutionExitState {
    if (result.status === "success") return "success";
    if (job.stop !== undefined) return job.stop;
    if (result.status === "terminated" && result.error?.message.includes("safety cap")) return "timeout";
    const bindings = this.#bindings as EnvironmentBindings;
    this.#report(job, () => bindings.setError(job.eid, describeFailure(result.error, job.code, PROCESS_MODULE)));
    return "failed";
  }

  #finish(job: Job, exit: ExecutionExitState): void {
    if (job.phase === "done") return;
    const wasRunning = job.phase === "running";
    job.phase = "done";
    if (job.timer !== undefined) clearTimeout(job.timer);
    this.#jobs.delete(job.eid);
    if (wasRunning) this.#running--;
    job.resolve(exit);
    this.#pump();
  }

  /** Calls a binding for a live job; bindings are advisory, so a throwing one never breaks the run. */
  #report(job: Job, call: () => void): void {
    if (job.phase === "done") return;
    try {
      call();
    } catch {
      // The host's problem; the execution goes on.
    }
  }
}

/** Discovery's services as the guest sees them: ids, names and descriptions keyed by id. */
function guestServices(list: ServiceInfo[]): GuestServices {
  const out: NonNullable<GuestServices> = {};
  for (const service of list) {
    const tools: NonNullable<GuestServices>[string]["tools"] = {};
    for (const tool of service.tools) tools[tool.id] = { id: tool.id, name: tool.name, description: tool.description };
    out[service.id] = { id: service.id, name: service.name, description: service.description, tools };
  }
  return out;
}

/** Creates the QuickJS environment module (environment-module.md). */
export function instantiate(options: EnvironmentOptions = {}): EnvironmentModule {
  return new QuickJSEnvironment(options);
}
