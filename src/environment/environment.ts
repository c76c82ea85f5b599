/**
 * The QuickJS environment module: runs each process in its own sandbox of the core, enforces `timeoutMs` (a host
 * timer for time spent awaiting the host, the sandbox's safety cap for synchronous guest work, including where
 * clocks stand still, and a deadline checked whenever the guest reaches the host or the run ends, for time the
 * host's own synchronous work kept the timer from firing), queues executions over a concurrency limit, and reports
 * everything through the bindings.
 *
 * Everything the guest hands out is bounded before the host works on it (see {@link EnvironmentBudgets}): console
 * lines are formatted within a budget and cut with a marker; output patches and tool parameters are copied into
 * trees of plain JSON data within a budget, or refused with an error the guest can catch.
 *
 * What this hands to {@link EnvironmentBindings}, and what a host implementing them must still do:
 * - `emitStdout`/`emitStderr`: UTF-8 bytes of whole lines, each at most `budgets.consoleLine` characters plus a
 *   truncation marker, `budgets.console` in all per execution (give or take one line). Cap what you keep per stream.
 * - `emitOutput`: a fresh tree of plain JSON data (plain objects with own data properties only, arrays, strings,
 *   finite numbers, booleans, `null`; no prototypes but `Object.prototype`/`Array.prototype`, no accessors, no
 *   shared references), at most `budgets.data` units (about characters of its JSON text) per patch and
 *   `budgets.dataTotal` per execution. It never has a top-level `__proto__` key, so the spec's
 *   `Object.assign(output, patch)` cannot set the output's prototype; deeper levels may have `__proto__`,
 *   `constructor` and `prototype` keys as ordinary own data: merge with defined properties (never a deep merge that
 *   assigns), and cap the merged output's size.
 * - `invokeTool`: `parameters` is such a tree too (same budgets); ids are strings of at most
 *   {@link MAX_TOOL_ID_LENGTH} characters. Validate the parameters against the tool's schema, budget calls per
 *   execution, and give slow tools their own timeouts: a tool that blocks the event loop delays the timeout.
 * - `setError`: a message of at most a few tens of KB (see `describeFailure`).
 * @module
 */

import { compiledModule } from "../core/engine.js";
import { safetyCapStopOf, safetyCapStopWords } from "../core/limits.js";
import { resolveOptions } from "../core/options.js";
import { createSandbox, DEFAULT_MEMORY_LIMIT_BYTES } from "../core/sandbox.js";
import type {
  CodeExecution,
  CodeExecutionError,
  CodeExecutionResult,
  FetchOptions,
  Sandbox,
  SandboxOptions,
  WasmSource,
} from "../core/types.js";
import { fetchPolicyOf } from "../fetch/policy.js";
import type { ServiceInfo } from "../tools/types.js";
import { BudgetError, WorkBudget } from "../values/budget.js";
import { type JsonValue, toJsonSized } from "../values/json.js";
import { formatLine } from "./console.js";
import { environmentDocs, toolDocs } from "./docs.js";
import { describeFailure } from "./failure.js";
import {
  ENTRY_FILENAME,
  ENTRY_SOURCE,
  type GuestHost,
  type GuestServices,
  PROCESS_MODULE,
  RUNTIME_BOOT_MODULES,
  RUNTIME_MODULE,
  RUNTIME_SOURCE,
} from "./guest.js";
import type {
  EnvironmentBindings,
  EnvironmentModule,
  EnvironmentSetupContext,
  ExecutionExitState,
  ExecutionInput,
  ToolDocsInput,
} from "./types.js";

/** Timeout of an execution whose `options` are undefined. */
export const DEFAULT_TIMEOUT_MS = 30_000;
/**
 * Checks a process's `modules` as `runCode` checks its own (relative specifiers such as `./util.js` to source
 * strings, in the same words) and that none takes the name of a module the environment gives the process's graph
 * (its code's, the runtime's, the entry's); throws a `TypeError` naming the first that is wrong.
 */
export function checkProcessModules(modules: unknown): asserts modules is Record<string, string> {
  resolveOptions("", { modules: modules as Record<string, string>, filename: ENTRY_FILENAME }, 1);
  for (const own of [PROCESS_MODULE, RUNTIME_MODULE]) {
    if (Object.hasOwn(modules as object, own)) {
      throw new TypeError(`modules['${own}'] is the name the environment gives the process's own graph: rename it`);
    }
  }
}

/** Executions running at once; more wait in `queued`. */
export const DEFAULT_CONCURRENCY = 4;
/** Longest service or tool id forwarded to `bindings.invokeTool`. */
export const MAX_TOOL_ID_LENGTH = 1000;

/**
 * Work the environment does on what one execution's guest hands out, in units of about one character written or one
 * value visited (every visit of a shared reference counts).
 */
export interface EnvironmentBudgets {
  /** One console call's line; past it the line is cut and ends with `... [console output truncated: ...]`. */
  consoleLine: number;
  /** All console lines of one execution; past it one marker line, then console calls print nothing. */
  console: number;
  /** One `cyrnel.output` patch or one tool call's parameters as a JSON tree; past it the call throws. */
  data: number;
  /** All output patches and tool parameters of one execution; past it those calls throw. */
  dataTotal: number;
}

/** Defaults of {@link EnvironmentBudgets}. */
export const DEFAULT_BUDGETS: Readonly<EnvironmentBudgets> = Object.freeze({
  consoleLine: 1_000_000,
  console: 10_000_000,
  data: 1_000_000,
  dataTotal: 100_000_000,
});

/** Settings of {@link instantiate}. */
export interface EnvironmentOptions {
  /** The QuickJS wasm (compiled once and reused). A compiled `WebAssembly.Module` is required on Workers. */
  wasm?: WasmSource;
  /** Monotonic milliseconds for the safety cap. Default `performance.now`. */
  clock?: () => number;
  /** Timeout when `execute` gets no `options`. Default {@link DEFAULT_TIMEOUT_MS}. */
  defaultTimeoutMs?: number;
  /**
   * Guest CPU milliseconds one run may spend whatever its `timeoutMs` (the safety cap's `cpuTimeMs`). Default none.
   * The edge sets it: under `wrangler dev` one thread serves every process, and a run holding it ~10 s breaks the
   * dev server. It counts only where clocks run during synchronous work, as every CPU-time cap does.
   */
  maxCpuMs?: number;
  /**
   * The name of the host's setting `maxCpuMs` comes from, which a stop by it names: `Timeout: the process was stopped
   * by the host's CPU cap per run (RUN_CPU_MS = 2000 ms) before its timeoutMs (60000 ms)`. Default `"maxCpuMs"`.
   */
  maxCpuMsSetting?: string;
  /** Heap cap of each execution. Default the core's `DEFAULT_MEMORY_LIMIT_BYTES` (64 MiB). */
  memoryLimitBytes?: number;
  /** Executions running at once. Default {@link DEFAULT_CONCURRENCY}. */
  concurrency?: number;
  /** Budgets of the host's work on guest data. Default {@link DEFAULT_BUDGETS}. */
  budgets?: Partial<EnvironmentBudgets>;
  /**
   * Gives processes the Web APIs (`URL`, `TextEncoder`, timers, `crypto.getRandomValues`, ...: the core's
   * `SandboxOptions.webApis`); the documentation says which they have. Default `false`.
   */
  webApis?: boolean;
  /**
   * Gives processes `Intl` and the locale-sensitive `toLocaleString` family (the core's `SandboxOptions.intl`).
   * Default `false`.
   */
  intl?: boolean;
  /**
   * ES modules booted into the executions' sandbox (the core's `SandboxOptions.bootModules`), which process code
   * imports by name: the npm packages a host boots (`runcode serve --packages`, Node's `bundlePackages`). Default none.
   */
  bootModules?: Readonly<Record<string, string>>;
  /**
   * How the executions' sandbox is made: one, with the first execution, for every execution (each run's `timeoutMs`
   * lowers its safety cap). Default the core's `createSandbox`, with no transpiler: elsewhere than in Node, pass one that gives its sandboxes a `transpiler` (process code is
   * TypeScript) and the host's `pool`. Node's `instantiate` passes its threaded one, so `timeoutMs` and `kill` stop
   * any guest work at once.
   */
  createSandbox?: (settings: SandboxOptions) => Sandbox;
  /**
   * Gives process code `fetch` (and the Web APIs with it), reaching only the origins of `allow`, within the limits of
   * {@link FetchOptions} per execution. Default none: no `fetch`.
   */
  fetch?: FetchOptions;
}

type Phase = "queued" | "running" | "done";
interface Job {
  eid: number;
  code: string;
  /** The modules its code may import by relative specifier. */
  modules: Readonly<Record<string, string>>;
  timeoutMs: number;
  tenant: string | undefined;
  phase: Phase;
  stop: "timeout" | "canceled" | undefined;
  run: CodeExecution | undefined;
  timer: ReturnType<typeof setTimeout> | undefined;
  /** When the timeout is due, on the environment's clock. */
  deadline: number;
  /** What console lines may still spend. */
  console: WorkBudget;
  /** What output patches and tool parameters may still take. */
  data: WorkBudget;
  /** What its code may import: its modules, the services discovered as it started, and the packages. */
  importable: readonly string[];
  /** The stop's message when a limit other than `timeoutMs` fired. */
  limit: string | undefined;
  resolve(exit: ExecutionExitState): void;
  done: Promise<ExecutionExitState>;
}

const positive = (name: string, value: number | undefined, fallback: number): number => {
  const resolved = value ?? fallback;
  if (!(Number.isFinite(resolved) && resolved > 0)) throw new TypeError(`${name} must be a positive number`);
  return resolved;
};
const timeoutStop = (timeoutMs: number) =>
  `Timeout: the process ran longer than its timeoutMs (${timeoutMs} ms) and was stopped`;
const identifier = /^[A-Za-z_$][\w$]*$/;
/** `cyrnel.services.kv.tools.get.invoke(parameters)`, as the guest wrote it (ids are short by then). */
const invokeName = (serviceId: string, toolId: string) => {
  const access = (id: string) => (identifier.test(id) ? `.${id}` : `[${JSON.stringify(id)}]`);
  return `cyrnel.services${access(serviceId)}.tools${access(toolId)}.invoke(parameters)`;
};
const isPlainRecord = (value: unknown): value is Record<string, unknown> => {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
};

class QuickJSEnvironment implements EnvironmentModule {
  readonly #clock: (() => number) | undefined;
  /** The clock of deadlines: the one given for the safety cap, else `performance.now`. */
  readonly #now: () => number;
  readonly #budgets: Readonly<EnvironmentBudgets>;
  readonly #defaultTimeoutMs: number;
  readonly #maxCpuMs: number;
  /** The name its stops give `maxCpuMs`. */
  readonly #maxCpuMsSetting: string;
  readonly #memoryLimitBytes: number;
  readonly #concurrency: number;
  readonly #webApis: boolean;
  readonly #intl: boolean;
  readonly #bootModules: Readonly<Record<string, string>>;
  /** The names of the booted modules process code may import (its packages). */
  readonly #packages: readonly string[];
  readonly #jobs = new Map<number, Job>();
  readonly #queue: Job[] = [];
  /** The tenants with executions waiting, in the order their turns come (`undefined`: executions of no tenant). */
  readonly #turns: (string | undefined)[] = [];
  readonly #encoder = new TextEncoder();
  /** The wasm, compiled once for every execution's sandbox (see `compiledModule`). */
  readonly #wasm: () => Promise<WebAssembly.Module | undefined>;
  readonly #createSandbox: (settings: SandboxOptions) => Sandbox;
  /** The sandbox of every execution, made with the first (each run's `timeoutMs` lowers its safety cap). */
  #sandbox: Sandbox | undefined;
  readonly #fetch: FetchOptions | undefined;
  /** The origins `fetch` reaches, as normalized (none without a fetch setting). */
  readonly #fetchAllow: readonly string[];
  #bindings: EnvironmentBindings | undefined;
  #running = 0;
  #tornDown = false;

  constructor(options: EnvironmentOptions) {
    this.#wasm = compiledModule(options.wasm);
    this.#createSandbox = options.createSandbox ?? createSandbox;
    this.#clock = options.clock;
    this.#now = options.clock ?? (() => performance.now());
    const budgets = { ...DEFAULT_BUDGETS, ...options.budgets };
    for (const key of Object.keys(DEFAULT_BUDGETS) as (keyof EnvironmentBudgets)[]) {
      budgets[key] = positive(`budgets.${key}`, budgets[key], DEFAULT_BUDGETS[key]);
    }
    this.#budgets = Object.freeze(budgets);
    this.#defaultTimeoutMs = positive("defaultTimeoutMs", options.defaultTimeoutMs, DEFAULT_TIMEOUT_MS);
    this.#maxCpuMs =
      options.maxCpuMs === undefined ? Number.POSITIVE_INFINITY : positive("maxCpuMs", options.maxCpuMs, 0);
    const { maxCpuMsSetting = "maxCpuMs" } = options;
    if (typeof maxCpuMsSetting !== "string") throw new TypeError("maxCpuMsSetting must be a string");
    this.#maxCpuMsSetting = maxCpuMsSetting;
    this.#memoryLimitBytes = positive("memoryLimitBytes", options.memoryLimitBytes, DEFAULT_MEMORY_LIMIT_BYTES);
    this.#concurrency = Math.floor(positive("concurrency", options.concurrency, DEFAULT_CONCURRENCY));
    this.#fetch = options.fetch;
    this.#fetchAllow =
      options.fetch === undefined ? [] : fetchPolicyOf(options.fetch, "instantiate: fetch").allow.entries;
    const { webApis = false } = options;
    if (typeof webApis !== "boolean") throw new TypeError("webApis must be a boolean");
    // `fetch` needs the Web APIs' Request, Response and Headers.
    this.#webApis = webApis || options.fetch !== undefined;
    const { intl = false } = options;
    if (typeof intl !== "boolean") throw new TypeError("intl must be a boolean");
    this.#intl = intl;
    this.#bootModules = { ...options.bootModules, ...RUNTIME_BOOT_MODULES };
    this.#packages = Object.keys(options.bootModules ?? {});
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
    const { eid, code, tenant, modules = {} } = input;
    if (!Number.isSafeInteger(eid)) return Promise.reject(new TypeError("execute: eid must be an integer"));
    if (typeof code !== "string") return Promise.reject(new TypeError("execute: code must be a string"));
    try {
      checkProcessModules(modules);
    } catch (error) {
      return Promise.reject(error);
    }
    if (tenant !== undefined && typeof tenant !== "string") {
      return Promise.reject(new TypeError("execute: tenant must be a string"));
    }
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
      modules: { ...modules },
      timeoutMs,
      tenant,
      phase: "queued",
      stop: undefined,
      run: undefined,
      timer: undefined,
      deadline: Number.POSITIVE_INFINITY,
      console: new WorkBudget(this.#budgets.console, "console output"),
      data: new WorkBudget(this.#budgets.dataTotal, "output patches and tool parameters"),
      limit: undefined,
      importable: this.#packages,
      resolve,
      done,
    };
    this.#jobs.set(eid, job);
    this.#report(job, () => bindings.setState(eid, "queued"));
    this.#queue.push(job);
    if (!this.#turns.includes(tenant)) this.#turns.push(tenant);
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
      consoleLine: this.#budgets.consoleLine,
      data: this.#budgets.data,
      webApis: this.#webApis,
      fetchAllow: this.#fetchAllow,
      maxCpuMs: this.#maxCpuMs,
      intl: this.#intl,
      packages: this.#packages,
    });
  }

  async generateToolDocs(input: ToolDocsInput): Promise<string> {
    return toolDocs(input);
  }

  /**
   * Starts queued executions while slots are free, in turns by tenant: the tenant first in the rotation starts its
   * oldest and, if it has more waiting, goes to the back; so one tenant's backlog never holds another's behind it.
   */
  #pump(): void {
    while (this.#running < this.#concurrency && this.#turns.length > 0) {
      const tenant = this.#turns.shift();
      const index = this.#queue.findIndex((queued) => queued.tenant === tenant);
      // Its executions were canceled while they waited.
      if (index === -1) continue;
      const job = this.#queue.splice(index, 1)[0] as Job;
      if (this.#queue.some((queued) => queued.tenant === tenant)) this.#turns.push(tenant);
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

  /**
   * Stops a running job whose deadline has passed; `true` when the job is stopped. The timer does that on time
   * unless the host's own synchronous work (a tool that blocks, say) kept it from firing, so this is checked each
   * time the guest reaches the host, a tool call returns or the run ends.
   */
  #overdue(job: Job): boolean {
    if (job.stop === undefined && job.phase === "running" && this.#now() >= job.deadline) this.#stop(job, "timeout");
    return job.stop !== undefined;
  }

  /** `value` as a JSON tree within one call's budget and what the execution has left (see values/json.ts). */
  #data(job: Job, value: unknown, what: string): JsonValue {
    if (job.data.exhausted) {
      throw new BudgetError(
        `${what}: the process has spent its budget of ${job.data.limit} units for output patches and tool parameters`,
      );
    }
    const budget = new WorkBudget(this.#budgets.data, what);
    try {
      return toJsonSized(value, budget).json ?? null;
    } finally {
      job.data.trySpend(budget.spent);
    }
  }

  /** One console line, within its budget and the execution's; nothing once the execution's is spent. */
  #line(job: Job, args: unknown): string | undefined {
    if (job.console.exhausted) return undefined;
    const budget = new WorkBudget(this.#budgets.consoleLine, "formatting console arguments");
    const line = formatLine(args, budget);
    if (job.console.trySpend(budget.spent)) return `${line}\n`;
    return `${line}\n[console output truncated: the process's console budget of ${job.console.limit} units is spent; later console calls print nothing]\n`;
  }

  async #start(job: Job): Promise<void> {
    const bindings = this.#bindings as EnvironmentBindings;
    job.phase = "running";
    job.deadline = this.#now() + job.timeoutMs;
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
    if (exit === "timeout")
      this.#report(job, () => bindings.setError(job.eid, job.limit ?? timeoutStop(job.timeoutMs)));
    this.#finish(job, exit);
  }

  #run(
    job: Job,
    bindings: EnvironmentBindings,
    services: GuestServices,
    wasm: WebAssembly.Module | undefined,
  ): CodeExecution {
    const { eid } = job;
    job.importable = [...Object.keys(job.modules), ...Object.keys(services ?? {}), ...this.#packages];
    this.#sandbox ??= this.#createSandbox({
      ...(wasm === undefined ? {} : { wasm }),
      ...(this.#clock === undefined ? {} : { clock: this.#clock }),
      defaultMemoryLimitBytes: this.#memoryLimitBytes,
      bootModules: this.#bootModules,
      webApis: this.#webApis,
      intl: this.#intl,
      ...(this.#fetch === undefined ? {} : { fetch: this.#fetch }),
      // Each run's `timeoutMs` bounds both; the host's `maxCpuMs` bounds its CPU whatever its timeout.
      safetyCap: { cpuTimeMs: this.#maxCpuMs, fuel: Number.POSITIVE_INFINITY },
    });
    const host: GuestHost = {
      write: (stream, args) => {
        if (this.#overdue(job)) return false;
        const line = this.#line(job, args);
        if (line !== undefined) {
          const bytes = this.#encoder.encode(line);
          this.#report(job, () => (stream === 2 ? bindings.emitStderr(eid, bytes) : bindings.emitStdout(eid, bytes)));
        }
        return !job.console.exhausted;
      },
      output: (patch) => {
        if (this.#overdue(job)) return;
        if (!isPlainRecord(patch)) throw new TypeError("cyrnel.output(value) expects a plain object");
        const tree = this.#data(job, patch, "cyrnel.output(patch)") as Record<string, JsonValue>;
        if (Object.hasOwn(tree, "__proto__")) {
          throw new TypeError(
            'cyrnel.output(patch) cannot have a "__proto__" key: the host merges patches with Object.assign, which would take it for the output\'s prototype',
          );
        }
        this.#report(job, () => bindings.emitOutput(eid, tree));
      },
      invoke: (serviceId, toolId, parameters) =>
        this.#invoke(job, bindings, serviceId, toolId, parameters, invokeName(serviceId, toolId)),
    };
    job.run = this.#sandbox.runCode(ENTRY_SOURCE, {
      filename: ENTRY_FILENAME,
      timeoutMs: job.timeoutMs,
      modules: { ...job.modules, [RUNTIME_MODULE]: RUNTIME_SOURCE, [PROCESS_MODULE]: job.code },
      imports: toolModules(services, (serviceId, toolId, parameters) =>
        this.#invoke(job, bindings, serviceId, toolId, parameters ?? {}, `${toolId}(parameters) from "${serviceId}"`),
      ),
      // `report: undefined` hides the core's own `report`: the documented surface is all the guest gets.
      globals: { console: {}, cyrnel: { services, __host: host }, report: undefined },
      ...(job.tenant === undefined ? {} : { tenant: job.tenant }),
    });
    return job.run;
  }

  /**
   * A tool call of `job`'s guest, through `cyrnel.services...invoke` or a tool's import (`name` is how the guest
   * wrote it): the ids and parameters checked and bounded, then `bindings.invokeTool`.
   */
  #invoke(
    job: Job,
    bindings: EnvironmentBindings,
    serviceId: string,
    toolId: string,
    parameters: unknown,
    name: string,
  ): Promise<unknown> {
    if (job.phase === "done" || this.#overdue(job)) return Promise.reject(new Error("The process has ended"));
    try {
      for (const id of [serviceId, toolId]) {
        if (typeof id !== "string" || id.length > MAX_TOOL_ID_LENGTH) {
          throw new TypeError(`Service and tool ids are strings of at most ${MAX_TOOL_ID_LENGTH} characters`);
        }
      }
      if (!isPlainRecord(parameters)) throw new TypeError(`${name} expects a plain object`);
      const tree = this.#data(job, parameters, name) as Record<string, JsonValue>;
      const pending = Promise.resolve(bindings.invokeTool({ serviceId, toolId, parameters: tree, eid: job.eid }));
      // A tool that blocked the event loop past the deadline (the timer could not fire meanwhile), now or later.
      const check = () => this.#overdue(job);
      check();
      return pending.then(
        (value) => {
          check();
          return value;
        },
        (error: unknown) => {
          check();
          throw error;
        },
      );
    } catch (error) {
      return Promise.reject(error);
    }
  }

  #exitOf(job: Job, result: CodeExecutionResult): ExecutionExitState {
    const bindings = this.#bindings as EnvironmentBindings;
    const { fuelUsed } = result;
    if (fuelUsed !== undefined) this.#report(job, () => bindings.setFuelUsed?.(job.eid, fuelUsed));
    // A run that ends past its deadline was still running when it was due: the timer only came late.
    this.#overdue(job);
    if (job.stop !== undefined) return job.stop;
    if (result.status === "success") return "success";
    // Nothing but the environment, the run's `timeoutMs` and the safety cap it lowers (and `maxCpuMs`) terminates a run.
    if (result.status === "terminated") {
      job.limit = this.#limitStop(job, result.error);
      return "timeout";
    }
    this.#report(job, () =>
      bindings.setError(job.eid, describeFailure(result.error, job.code, PROCESS_MODULE, job.importable)),
    );
    return "failed";
  }

  /**
   * What a run's safety cap stopped it at, when that is not its `timeoutMs`'s own clock: the host's CPU cap, or its
   * fuel cap (`timeoutMs` at `FUEL_PER_MS`: the run's stop where clocks stand still), in `safetyCapStopWords`' words.
   */
  #limitStop(job: Job, error: CodeExecutionError | undefined): string | undefined {
    const stop = safetyCapStopOf(error);
    if (stop === undefined || (stop.limit === "cpuTimeMs" && stop.value >= job.timeoutMs)) return undefined;
    const words = safetyCapStopWords(stop, job.timeoutMs, { cpuTimeMs: this.#maxCpuMsSetting, fuel: "fuel" });
    return stop.limit === "cpuTimeMs"
      ? `Timeout: the process was stopped by ${words} before its timeoutMs (${job.timeoutMs} ms)`
      : `Timeout: the process was stopped by ${words}`;
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

/**
 * The services as modules of their tools (`import { get } from "kv"`), each tool a function of its parameters that
 * `call` runs; none without discovery.
 */
function toolModules(
  services: GuestServices,
  call: (serviceId: string, toolId: string, parameters: unknown) => Promise<unknown>,
): Record<string, Record<string, (parameters?: unknown) => Promise<unknown>>> {
  return Object.fromEntries(
    Object.keys(services ?? {}).map((serviceId) => [
      serviceId,
      Object.fromEntries(
        Object.keys(services?.[serviceId]?.tools ?? {}).map((toolId) => [
          toolId,
          (parameters?: unknown) => call(serviceId, toolId, parameters),
        ]),
      ),
    ]),
  );
}

/** Creates the QuickJS environment module (docs/environment.md, "The contract between a host and an environment module"). */
export function instantiate(options: EnvironmentOptions = {}): EnvironmentModule {
  return new QuickJSEnvironment(options);
}
