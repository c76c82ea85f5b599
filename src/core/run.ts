/**
 * One run on a booted instance to its `CodeExecutionResult`: the instance taken from the pool and lent to the run,
 * staged globals and imports, the entry module, the selected export, the result, the instance given back. What
 * stops the run is `core/limits.ts`, what crosses between guest and host `core/guest-bridge.ts`, how it ended `core/outcome.ts`.
 * Nothing the run makes in the instance is disposed piecemeal: the pool restores the instance's booted memory or
 * drops it whole, which also survives the engine states in which disposal aborts (after running out of memory or
 * overflowing the host stack).
 * @module
 */
import type { QuickJSHandle } from "quickjs-emscripten-core";
import type { FetchPolicy } from "../fetch/policy.js";
import { FetchSession } from "../fetch/session.js";
import { MODE_CLONE } from "../values/tape.js";
import { CELL_HELPER_KEY, CELL_HELPER_SOURCE } from "./cell-helper.js";
import { GuestBridge, type Relay } from "./guest-bridge.js";
import { fetchMeter, INSTANCE_BOOT_FUEL } from "./host-fuel.js";
import { ImportStage } from "./import-stage.js";
import { type Boot, type BootedInstance, bindingBoot, globalsScript, type Holder, STAGE_KEY } from "./instance.js";
import type { InstanceFit, InstancePool } from "./instance-pool.js";
import { Limits, runSafetyCap } from "./limits.js";
import { INTERNALS_MODULE, Linker, type ModuleMapping } from "./linker.js";
import { type Ending, GuestFailure, outcomeOf, Stopped } from "./outcome.js";
import type { TranspilerPort } from "./ports.js";
import type { PreparedRun, RunOptions } from "./request.js";
import { Timers } from "./timers.js";
import type { CodeExecutionError, CodeExecutionLog, SafetyCap } from "./types.js";

export { MAX_HOST_CALLS_IN_FLIGHT } from "./guest-bridge.js";

/** What a run needs from its sandbox: the sandbox's settings, checked, with every default applied. */
export interface RunContext {
  wasm: () => Promise<WebAssembly.Module | undefined>;
  pool: InstancePool;
  /** Whether the instance goes back to the pool restored (`false`: booted for this run only). */
  restore: boolean;
  safetyCap: SafetyCap;
  /** Which idle instance the run takes (default: the most grown). */
  fit?: InstanceFit;
  clock: () => number;
  /** An outside stop (see `SandboxOptions.interrupted`). */
  interrupted: () => boolean;
  boot: Boot;
  /** See `SandboxOptions.onLog`. */
  onLog: ((entry: CodeExecutionLog) => void) | undefined;
  transpiler: TranspilerPort | undefined;
  /** See `SandboxOptions.fetch`. */
  fetch: FetchPolicy | undefined;
}

/** What the run shares with its handle. */
export interface RunChannel {
  reports: unknown[];
  /** `true` once the handle settled (terminated by the caller): everything after is ignored. */
  settled(): boolean;
}

/** A run under way, wherever it runs: what its sandbox reads to settle the run's handle. */
export interface StartedRun {
  /** How the run ended; never rejects. */
  readonly ended: Promise<Ending>;
  /** The run's `console` entries so far. */
  readonly logs: readonly CodeExecutionLog[];
  /** What is known so far of the result's `fuelUsed`, `fuelRedone` and `memoryUsedBytes`. */
  readonly fuelUsed: number | undefined;
  readonly fuelRedone?: number | undefined;
  readonly memoryUsedBytes: number | undefined;
  /** Stops the run at its next chance (its handle has settled already). */
  stop(error: CodeExecutionError): void;
}

/**
 * Where a sandbox's runs execute (`SandboxSettings.runner`): starts `request` with the sandbox's `context`. The
 * core's own is {@link inThread}; Node's entry has one for its worker threads.
 */
export type Runner = (context: RunContext, request: PreparedRun, channel: RunChannel) => StartedRun;

/** The core's runner: each run on a booted instance of this thread; with a `relay`, its guest values go there. */
export function inThread(relay?: Relay): Runner {
  return (context, request, channel) => new Run(context, request, channel, relay, undefined);
}

/**
 * A session's instance, lent to one cell at a time (core/session.ts): it keeps its memory between cells, so a cell's
 * request evaluates as a script in its realm rather than as a module on a restored instance.
 */
interface CellTarget {
  readonly booted: BootedInstance;
  /** How the session's modules, which stay loaded between cells, map back to their sources. */
  readonly mappings: Map<string, ModuleMapping>;
  /** The session's first cell binds its globals and imports; later ones find them bound. */
  readonly setup: boolean;
  /** The cell is over; `sound`: the instance is fit for another (no host fault, no abort). */
  done(sound: boolean): void;
}

/** Starts a session's cell on its instance, in this thread. */
export function startCell(
  context: RunContext,
  request: PreparedRun,
  channel: RunChannel,
  target: CellTarget,
): StartedRun {
  return new Run(context, request, channel, undefined, target);
}

/** QuickJS's JS_EVAL_TYPE_GLOBAL with JS_EVAL_FLAG_ASYNC: a script with top-level await, whose promise gives `{ value }`. */
const CELL_EVAL_FLAGS = 1 << 7;

/** How a nested run (one started by a host function of another) ends when the run that started it is over. */
export const ORPHANED: CodeExecutionError = {
  name: "TerminatedError",
  message: "Execution terminated: the run that started it has ended",
};

/** A run started by a host function of another: it ends with that one (see {@link ORPHANED}). */
interface NestedRun {
  readonly ended: Promise<Ending>;
  stop(error: CodeExecutionError): void;
}

/**
 * What the runs a host call starts are nested in: the run whose guest made the call, or a host's run made of several
 * (Node's default path: an attempt, then the same run on a worker).
 */
export interface Nesting {
  /** Takes `run` as nested in this, to be stopped when this is over; `false` when this is over already. */
  nest(run: NestedRun): boolean;
}

/**
 * What this thread's host call is made for: a run started meanwhile is nested in it, and ends with it. Only calls
 * the guest makes are seen here, so a run a host function starts after an `await` is not nested.
 */
let calling: Nesting | undefined;

/** Makes `call` (into the host) as `parent`'s: runs started meanwhile are nested in it. */
export function callingAs<T>(parent: Nesting, call: () => T): T {
  const outer = calling;
  calling = parent;
  try {
    return call();
  } finally {
    calling = outer;
  }
}

class Run implements StartedRun, Nesting {
  readonly ended: Promise<Ending>;
  readonly #options: RunOptions;
  readonly #request: PreparedRun;
  readonly #context: RunContext;
  readonly #linker: Linker;
  readonly #channel: RunChannel;
  readonly #relay: Relay | undefined;
  /** The session's instance when the run is a cell of one. */
  readonly #cell: CellTarget | undefined;
  readonly #logs: CodeExecutionLog[] = [];
  readonly #limits: Limits;
  readonly #fetch: FetchSession | undefined;

  /** The booted instance while the run holds it, and the bridge into it. */
  #booted: BootedInstance | undefined;
  #bridge: GuestBridge | undefined;
  /** The imports the guest has yet to load, when they crossed apart (see core/import-stage.ts). */
  #imports: ImportStage | undefined;
  /** The guest's timers, when the sandbox has the Web APIs. */
  #timers: Timers | undefined;
  /** `false` once a step failed in a way that leaves the instance unfit for another run. */
  #sound = true;
  #peakBytes = 0;
  /** Runs started by this one's host functions that are not over: they end with it (see {@link ORPHANED}). */
  readonly #nested = new Set<NestedRun>();
  /** Whether the run is over or stopped: a run its host functions start then never runs. */
  #over = false;

  /** Starts the run. */
  constructor(
    context: RunContext,
    request: PreparedRun,
    channel: RunChannel,
    relay: Relay | undefined,
    cell: CellTarget | undefined,
  ) {
    this.#options = request.options;
    this.#request = request;
    this.#context = context;
    this.#cell = cell;
    this.#linker = new Linker(request.options, context.boot.modules, context.transpiler, cell?.mappings);
    this.#channel = channel;
    this.#relay = relay;
    this.#limits = new Limits({
      safetyCap: runSafetyCap(context.safetyCap, request.options.timeoutMs),
      clock: context.clock,
      interrupted: context.interrupted,
      settled: () => channel.settled(),
      memoryLimitBytes: request.options.memoryLimitBytes,
    });
    this.#fetch =
      context.fetch && new FetchSession(context.fetch, request.options.memoryLimitBytes, fetchMeter(this.#limits));
    const caller = calling;
    this.ended = this.#run();
    if (caller !== undefined && !caller.nest(this)) this.stop(ORPHANED);
  }

  nest(run: NestedRun): boolean {
    if (this.#over) return false;
    this.#nested.add(run);
    void run.ended.then(() => this.#nested.delete(run));
    return true;
  }

  /** Stops the run at its next chance (the handle has settled already), and the runs nested in it. */
  stop(error: CodeExecutionError): void {
    this.#orphanNested();
    this.#limits.terminate(error);
    this.#fetch?.end();
    this.#bridge?.wake();
  }

  #orphanNested(): void {
    this.#over = true;
    for (const run of this.#nested) run.stop(ORPHANED);
  }

  get logs(): readonly CodeExecutionLog[] {
    return this.#logs;
  }

  /** The engine's work so far (see `SafetyCap.fuel`). */
  get fuelUsed(): number {
    return this.#limits.fuelUsed;
  }

  get memoryUsedBytes(): number | undefined {
    return this.#peakBytes === 0 ? undefined : this.#peakBytes;
  }

  /** Runs to the end; never throws. */
  async #run(): Promise<Ending> {
    try {
      return await this.#evaluate(this.#request.source);
    } finally {
      this.#orphanNested();
      this.#fetch?.end();
      this.#limits.release();
      const booted = this.#booted;
      this.#booted = undefined;
      const sound = this.#sound && !this.#limits.faulted;
      if (this.#cell !== undefined) {
        // A cell that leaves its session's instance unfit has the session take another, given its state before the
        // cell: that boot is the cell's work, as a run's is.
        if (!sound) this.#limits.spend(INSTANCE_BOOT_FUEL);
        this.#cell.done(sound);
      } else if (booted !== undefined) {
        // An instance the run left unfit for another is booted again for the next run: that work is this run's (its
        // heap's reach read before the restore puts the break back).
        if (!sound || booted.instance.growthRefused || booted.mayOutgrowKeeping())
          this.#limits.spend(INSTANCE_BOOT_FUEL);
        this.#context.pool.give(booted, sound);
      }
    }
  }

  async #evaluate(source: string): Promise<Ending> {
    try {
      await this.#linker.prepare(this.#cell !== undefined);
      // Transpiling is the run's work: a stopped run skips it, and its time counts against the safety cap (on a
      // worker thread, the check starts the slice the watchdog counts).
      this.#limits.check();
      if (this.#cell !== undefined) return await this.#evaluateCell(source, this.#cell);
      const entry = this.#limits.enter(() => this.#linker.entry(source, this.#limits));
      this.#limits.checkSpent();
      if (typeof entry !== "string") return { status: "link_error", error: entry };
      const { wasm, pool, restore, boot } = this.#context;
      const module = await wasm();
      this.#limits.check();
      this.#booted = await pool.take(
        module,
        this.#options.memoryLimitBytes,
        restore,
        this.#bootFor(boot),
        this.#context.fit,
      );
      this.#limits.check();
      const { ctx, core } = this.#booted;
      const bridge = this.#lend(this.#booted);
      const namespace = await this.#settle(
        bridge.guard(() => ctx.evalCode(entry, this.#linker.entryName, { type: "module" })),
      );
      const fn = ctx.newString(this.#options.fn);
      const exported = bridge.guard(() => ctx.callFunction(core.hasExport, ctx.undefined, [namespace, fn]));
      // A script without a default export goes on as if it ended with `export default undefined`: the same jobs
      // run before the result is taken.
      if (ctx.typeof(exported) === "boolean" && !ctx.eq(exported, ctx.true) && !this.#options.script) {
        const message = `The module does not export '${this.#options.fn}'`;
        return { status: "link_error", error: { name: "LinkError", message, code: "missing_export" } };
      }
      const args = bridge.toGuest(this.#request.args);
      const selected = bridge.guard(() => ctx.callFunction(core.runExport, ctx.undefined, [namespace, fn, args]));
      const value = await this.#settle(selected);
      await this.#drain();
      const result = this.#relay === undefined ? bridge.toHost(value, MODE_CLONE) : bridge.toTape(value);
      this.#sample();
      return { status: "success", result };
    } catch (caught) {
      if (!(caught instanceof GuestFailure || caught instanceof Stopped)) this.#sound = false;
      const outcome = this.#outcome(caught);
      if (outcome.status === "error" || outcome.status === "link_error") this.#sample();
      return outcome;
    }
  }

  /**
   * A session's cell: its script evaluated in the session's realm, its completion value the result once its promise
   * settled and its timers ran (see core/cell-source.ts).
   */
  async #evaluateCell(source: string, target: CellTarget): Promise<Ending> {
    const cell = this.#limits.enter(() => this.#linker.cell(source, this.#limits));
    this.#limits.checkSpent();
    if (!("script" in cell)) return { status: "link_error", error: cell };
    const { booted } = target;
    this.#booted = booted;
    const { ctx } = booted;
    const bridge = this.#lend(booted, target.setup ? "session" : "reseed");
    const evaluated = bridge.guard(() => ctx.evalCode(cell.script, this.#linker.entryName, CELL_EVAL_FLAGS));
    const completion = await this.#settle(evaluated);
    await this.#drain();
    const result = bridge.toHost(ctx.getProp(completion, "value"), MODE_CLONE);
    this.#sample();
    return { status: "success", result };
  }

  /**
   * The instance a run takes: one with `console` and `report` bound in its image, unless the run's globals name them
   * (see `bindingBoot`).
   */
  #bootFor(boot: Boot): Boot {
    const { globals } = this.#options;
    return globals.includes("console") || globals.includes("report") ? boot : bindingBoot(boot);
  }

  /**
   * Lends the instance to this run: its hooks, meter, cap, `Math.random` seed, staged values and global bindings.
   * `bindings`: a run's are lexical; a session's first cell makes them properties of the global object, which later
   * cells may declare again, and later cells only reseed.
   */
  #lend(booted: BootedInstance, bindings: "run" | "session" | "reseed" = "run"): GuestBridge {
    const { meter } = booted.instance;
    if (meter !== undefined) this.#limits.meter(meter);
    const bridge = new GuestBridge(booted, this.#holder, this.#limits, {
      functions: this.#request.functions,
      report: this.#request.report,
      reports: this.#channel.reports,
      logs: this.#logs,
      logListeners: [this.#context.onLog, this.#request.onLog].filter((listener) => listener !== undefined),
      relay: this.#relay,
      fetch: this.#fetch,
      now: () => this.#timers?.now() ?? 0,
      recording: this.#request.recording,
    });
    this.#bridge = bridge;
    if (booted.timers !== undefined) {
      const { clock } = this.#context;
      this.#timers = new Timers(booted.timers, booted.ctx, bridge, this.#limits, clock, this.#request.recording);
    }
    booted.lend(this.#holder, this.#options.memoryLimitBytes);
    const { ctx, core } = booted;
    const staged = bindings === "reseed" ? [ctx.undefined, ctx.undefined] : this.#staged(booted, bridge);
    // As int32: every seed then takes the engine's same path, so the run's fuel does not depend on it.
    const words = this.#request.recording?.read("seed", seedWords) ?? seedWords();
    const seed = words.map((word) => ctx.newNumber(word | 0));
    // The names a script binds: none when the image bound `console` and `report` and the run has no other globals.
    const { globals } = this.#options;
    const names = booted.boot.bindings ? globals : [...new Set(["console", "report", ...globals])];
    const script = bindings === "run" && names.length === 0 ? undefined : bindings;
    const stageKey = script === undefined ? ctx.undefined : ctx.newString(STAGE_KEY);
    const stage = [...staged, stageKey, ...seed, meter === undefined ? ctx.false : ctx.true];
    const gathered = bridge.guard(() => ctx.callFunction(core.stage, ctx.undefined, stage));
    const key = JSON.stringify(STAGE_KEY);
    if (bindings === "reseed") {
      bridge.guard(() => ctx.evalCode(`delete globalThis[${key}];`, `${INTERNALS_MODULE}/reseed`, { type: "global" }));
      return bridge;
    }
    // The internals module, evaluated at boot, takes this run's imports and phase mark.
    bridge.guard(() => ctx.callFunction(booted.takeInternals, ctx.undefined, [gathered]));
    // A session's later cells, which may import what its first did not, run with other requests.
    if (bindings === "session") this.#imports?.loadAll(bridge);
    if (script === undefined) return bridge;
    const source = script === "run" ? globalsScript(names) : sessionBindings(key);
    bridge.guard(() => ctx.evalCode(source, `${INTERNALS_MODULE}/globals`, { type: "global" }));
    return bridge;
  }

  /**
   * The run's globals and imports in the guest, as `stage` takes them. Imports that crossed apart wait for their
   * modules to load (see core/import-stage.ts). With no globals and no imports there is nothing to decode: the run
   * may never need the marshaling half.
   */
  #staged(booted: BootedInstance, bridge: GuestBridge): QuickJSHandle[] {
    const { ctx } = booted;
    const { values, imports } = this.#request;
    const specifiers = Object.keys(this.#options.imports);
    if (this.#options.globals.length === 0 && specifiers.length === 0) return [ctx.undefined, ctx.undefined];
    if (imports === undefined) {
      const decoded = bridge.toGuest(values);
      return [0, 1].map((i) => ctx.getProp(decoded, i));
    }
    const globals = this.#options.globals.length === 0 ? ctx.undefined : bridge.toGuest(values);
    if (specifiers.length > 0) this.#imports = new ImportStage(ctx, booted.provideImport, specifiers, imports);
    return [globals, ctx.undefined];
  }

  /** What the booted instance asks of the run holding it. */
  readonly #holder: Holder = {
    poll: () => this.#limits.poll(),
    dateNow: () => this.#request.recording?.read("date", Date.now) ?? Date.now(),
    hostCall: (...args) => this.#calling(() => this.#bridge?.hostCall(...args)),
    call: (id, args) => this.#calling(() => this.#bridge?.call(id, args)),
    normalize: (base, specifier) => this.#linker.normalize(base, specifier, this.#limits),
    load: (name) => {
      const loaded = this.#linker.load(name, this.#limits);
      const specifier = this.#linker.importOf(name);
      if (typeof loaded !== "string" || specifier === undefined || this.#imports === undefined) return loaded;
      return this.#imports.load(specifier, this.#bridge as GuestBridge, this.#limits) ?? loaded;
    },
  };

  /** Makes `call` (into the host) as this run's: runs started meanwhile are nested in it. */
  #calling<T>(call: () => T): T {
    return callingAs(this, call);
  }

  /** Pumps jobs until `handle` settles; waits for the host or a timer when only they can move it on. */
  async #settle(handle: QuickJSHandle): Promise<QuickJSHandle> {
    const { ctx } = this.#booted as BootedInstance;
    const bridge = this.#bridge as GuestBridge;
    for (;;) {
      this.#turn();
      const state = ctx.getPromiseState(handle);
      if (state.type === "fulfilled") return state.value;
      if (state.type === "rejected") throw new GuestFailure(bridge.describe(state.error));
      if (this.#runJobs() > 0) continue;
      await this.#idle();
    }
  }

  /**
   * After the export settled: the timers that keep the run going (contract.md §13.4) fire as they come due, until
   * none is left.
   */
  async #drain(): Promise<void> {
    const timers = this.#timers;
    if (timers === undefined) return;
    for (;;) {
      this.#turn();
      if (this.#runJobs() > 0) continue;
      if (timers.next(true) < 0) return;
      await this.#idle();
    }
  }

  /** Where the run stands between two steps: stopped, or failed by an exception nobody could catch. */
  #turn(): void {
    this.#limits.check();
    const uncaught = this.#bridge?.uncaught;
    if (uncaught !== undefined) throw new GuestFailure(uncaught);
  }

  /** Delivers what host promises settled to, then runs the guest's queued jobs; how many ran. */
  #runJobs(): number {
    const bridge = this.#bridge as GuestBridge;
    const { runtime } = this.#booted as BootedInstance;
    bridge.deliver();
    if (!runtime.hasPendingJob()) return 0;
    const ran = this.#limits.enter(() => runtime.executePendingJobs());
    if (ran.error !== undefined) throw new GuestFailure(bridge.describe(ran.error));
    return ran.value;
  }

  /**
   * Waits for what can move the run on: host work, or the earliest timer, which then fires with every other timer
   * due by then (their jobs run after each, as the event loop of a browser runs microtasks between tasks).
   */
  async #idle(): Promise<void> {
    const bridge = this.#bridge as GuestBridge;
    // An attempt waits for nothing the host settles: which settles first, and so what the guest does next, its re-run
    // could not repeat (core/recording.ts).
    if (bridge.inflight > 0 && this.#request.recording?.refuse()) throw new Stopped();
    const timers = this.#timers;
    const due = timers === undefined ? -1 : timers.next(false);
    if (due < 0) {
      if (bridge.inflight === 0) {
        throw new GuestFailure({
          name: "DeadlockError",
          message: "The run awaits a promise that nothing can settle: no job is queued and no host call is pending",
        });
      }
      await bridge.hostWork();
      return;
    }
    if (!(await (timers as Timers).wait(due))) return;
    this.#turn();
    while ((timers as Timers).fire(due)) {
      this.#runJobs();
      this.#turn();
    }
  }

  /** Records the heap's high-water mark for `memoryUsedBytes` (see `BootedInstance#heapBytes`). */
  #sample(): void {
    if (this.#booted === undefined || this.#limits.faulted) return;
    this.#peakBytes = Math.max(this.#peakBytes, this.#booted.heapBytes() ?? 0);
  }

  /** Classifies how the run ended (core/outcome.ts). */
  #outcome(caught: unknown): Ending {
    return outcomeOf(
      {
        stop: this.#limits.stop,
        hostFault: this.#limits.faulted ? this.#limits.hostFault : undefined,
        instance: this.#booted?.instance,
        memoryLimitBytes: this.#options.memoryLimitBytes,
        linker: this.#linker,
        // A cell's link failures are found before it evaluates (see Linker.cell).
        evaluating: () => this.#cell !== undefined || this.#evaluating(),
        notePeak: (bytes) => {
          this.#peakBytes = Math.max(this.#peakBytes, bytes);
        },
      },
      caught,
    );
  }

  /** Whether user code started evaluating (see the phase module in core/linker.ts). */
  #evaluating(): boolean {
    const booted = this.#booted;
    if (booted === undefined || this.#bridge === undefined) return false;
    const { ctx, core } = booted;
    const started = this.#limits.enter(() => ctx.callFunction(core.evaluating, ctx.undefined, []));
    const value =
      started.error === undefined && ctx.typeof(started.value) === "boolean" && ctx.eq(started.value, ctx.true);
    (started.error ?? started.value).dispose();
    return value;
  }
}

/**
 * The global bindings of a session's first cell: its staged globals, `console` and `report` as writable,
 * non-enumerable properties of the global object (a later cell may declare the names again), and the cell helper
 * its scripts use (core/cell-source.ts), which no cell can replace.
 */
function sessionBindings(key: string): string {
  const helper = JSON.stringify(CELL_HELPER_KEY);
  return `(() => {
const staged = globalThis[${key}];
delete globalThis[${key}];
const names = Object.keys(staged.globals);
for (let i = 0; i < names.length; i++)
  Object.defineProperty(globalThis, names[i], { value: staged.globals[names[i]], writable: true, enumerable: false, configurable: true });
Object.defineProperty(globalThis, ${helper}, { value: ${CELL_HELPER_SOURCE}, writable: false, enumerable: false, configurable: false });
})();`;
}

/** Seeds of Math.random, drawn from the platform's cryptographic source (never the clock: see guest/core.ts) in batches. */
const seeds = new Uint32Array(256);
let seedsUsed = seeds.length;

/** Four fresh words of seed, never handed out twice. */
function seedWords(): number[] {
  if (seedsUsed === seeds.length) {
    crypto.getRandomValues(seeds);
    seedsUsed = 0;
  }
  seedsUsed += 4;
  return Array.from(seeds.subarray(seedsUsed - 4, seedsUsed));
}
