/**
 * One run on a booted instance to its `CodeExecutionResult`: staged globals and imports, the entry module, the
 * selected export, the result. Nothing the run makes in the instance is disposed piecemeal: when the run ends the
 * pool restores the instance's booted memory or drops it whole, which also survives the engine states in which
 * disposal aborts (after running out of memory or overflowing the host stack).
 * @module
 */
import type { QuickJSContext, QuickJSHandle, QuickJSRuntime, VmCallResult } from "quickjs-emscripten-core";
import { SerializationError } from "./errors.js";
import { guestSlowPathsSource } from "./guest/slow-paths.js";
import type { BootedInstance, CoreHandles, MarshalHandles, Tenant } from "./instance.js";
import type { InstancePool } from "./instance-pool.js";
import { INTERNALS_MODULE, type Linker } from "./linker.js";
import {
  LOG_LEVELS,
  MODE_CLONE,
  OP_CALL,
  OP_CHARGE,
  OP_LOG,
  OP_MARSHAL,
  OP_REPORT,
  OP_SETTLE,
} from "./marshal/tape.js";
import { type Encoded, encodeForGuest, type FunctionTable } from "./marshal/to-guest.js";
import { decodeFromGuest, type HeapMeter } from "./marshal/to-host.js";
import type { ResolvedOptions } from "./options.js";
import { type Described, GuestFailure, outcomeOf, type Stop, Stopped } from "./outcome.js";
import type { CodeExecutionError, CodeExecutionLog, CodeExecutionResult, SafetyCap } from "./types.js";

/** What a run needs from its sandbox. */
export interface RunContext {
  wasm: () => Promise<WebAssembly.Module | undefined>;
  instances: InstancePool;
  /** Whether the instance goes back to the pool restored (`false`: booted for this run only). */
  restore: boolean;
  safetyCap: SafetyCap;
  clock: () => number;
  /** An outside stop (see `SandboxOptions.interrupted`). */
  interrupted: () => boolean;
}

/** What the run shares with its handle. */
export interface RunChannel {
  reports: unknown[];
  /** `true` once the handle settled (terminated by the caller): everything after is ignored. */
  settled(): boolean;
}

/** Property of the global object that hands staged values to the runtime's scripts, then is deleted. */
const STAGE_KEY = "runcode:stage";

/** A guest promise and its resolvers (see `deferred` in the prelude). */
type Deferred = Record<"promise" | "resolve" | "reject", QuickJSHandle>;

/**
 * Bookkeeping the host adds to each log entry and report it keeps, on top of its tape's length. Logs and reports
 * live in host memory, out of reach of the run's capped linear memory: without a budget a guest printing the same
 * 1 MB string in a loop made the host hold 800 MB in two seconds of guest time.
 */
const RETAINED_ENTRY_BYTES = 64;
/**
 * Most host promises one run may wait on at once. Each holds a guest promise and its resolvers on the host, so a guest
 * loop that calls an async bridge without awaiting would otherwise queue host work without end; past it a call throws
 * in the guest without reaching the bridge.
 */
export const MAX_HOST_CALLS_IN_FLIGHT = 10_000;

export class Run {
  readonly #options: ResolvedOptions;
  readonly #context: RunContext;
  readonly #linker: Linker;
  readonly #functions: FunctionTable;
  readonly #values: Encoded;
  readonly #args: Encoded;
  readonly #channel: RunChannel;
  readonly #logs: CodeExecutionLog[] = [];
  readonly #guestPromises = new Map<number, { resolve(v: unknown): void; reject(e: unknown): void }>();

  /** The booted instance while the run holds it. */
  #booted: BootedInstance | undefined;
  #runtime: QuickJSRuntime | undefined;
  #ctx: QuickJSContext | undefined;
  #core: CoreHandles | undefined;
  /** `false` once a step failed in a way that leaves the instance unfit for another run. */
  #sound = true;
  #stop: Stop | undefined;
  #hostFault: unknown;
  #polls = 0;
  #cpuMs = 0;
  #sliceStart = 0;
  #depth = 0;
  #inflight = 0;
  #wake: (() => void) | undefined;
  #peakBytes = 0;
  /** Bytes of logs and reports the host keeps for this run, counted against `memoryLimitBytes`. */
  #retained = 0;

  constructor(
    options: ResolvedOptions,
    context: RunContext,
    linker: Linker,
    functions: FunctionTable,
    channel: RunChannel,
  ) {
    this.#options = options;
    this.#context = context;
    this.#linker = linker;
    this.#functions = functions;
    this.#channel = channel;
    // Encoded now, so a value that cannot cross makes runCode throw before anything runs.
    this.#values = encodeForGuest([options.globals, options.imports], functions);
    this.#args = encodeForGuest(options.args, functions);
  }

  /** Stops the run at its next chance (the handle has settled already). */
  stop(error: CodeExecutionError): void {
    this.#stop ??= { kind: "terminated", error };
    this.#wake?.();
  }

  get logs(): CodeExecutionLog[] {
    return this.#logs;
  }

  get peakBytes(): number | undefined {
    return this.#peakBytes === 0 ? undefined : this.#peakBytes;
  }

  /** Runs to the end; never throws. */
  async execute(source: string): Promise<Pick<CodeExecutionResult, "status" | "result" | "error">> {
    try {
      return await this.#execute(source);
    } finally {
      const booted = this.#booted;
      this.#booted = undefined;
      if (booted !== undefined) this.#context.instances.give(booted, this.#sound && this.#hostFault === undefined);
    }
  }

  async #execute(source: string): Promise<Pick<CodeExecutionResult, "status" | "result" | "error">> {
    try {
      await this.#linker.prepare(source);
      const entry = this.#linker.entry(source);
      if (typeof entry !== "string") return { status: "link_error", error: entry };
      const { wasm, instances, restore } = this.#context;
      const module = await wasm();
      this.#checkStop();
      this.#booted = await instances.take(module, this.#options.memoryLimitBytes, restore);
      this.#checkStop();
      const ctx = this.#boot();
      const namespace = await this.#settle(
        this.#guard(() => ctx.evalCode(entry, this.#linker.entryName, { type: "module" })),
      );
      const { runExport, hasExport } = this.#coreOf();
      const fn = ctx.newString(this.#options.fn);
      const exported = this.#guard(() => ctx.callFunction(hasExport, ctx.undefined, [namespace, fn]));
      if (ctx.typeof(exported) === "boolean" && !ctx.eq(exported, ctx.true)) {
        const message = `The module does not export '${this.#options.fn}'`;
        return { status: "link_error", error: { name: "LinkError", message } };
      }
      const args = this.#toGuest(this.#args);
      const selected = this.#guard(() => ctx.callFunction(runExport, ctx.undefined, [namespace, fn, args]));
      const value = await this.#settle(selected);
      const result = this.#toHost(value, MODE_CLONE);
      this.#sample();
      return { status: "success", result };
    } catch (caught) {
      if (!(caught instanceof GuestFailure || caught instanceof Stopped)) this.#sound = false;
      const outcome = this.#outcome(caught);
      if (outcome.status === "error" || outcome.status === "link_error") this.#sample();
      return outcome;
    }
  }

  /** The run's side of the booted instance: its hooks, cap, `Math.random` seed, staged values and global bindings. */
  #boot(): QuickJSContext {
    const booted = this.#booted as BootedInstance;
    booted.lend(this.#tenant, this.#options.memoryLimitBytes);
    this.#runtime = booted.runtime;
    const ctx = booted.ctx;
    this.#ctx = ctx;
    this.#core = booted.core;

    // With no globals and no imports there is nothing to decode: the run may never need the marshaling half.
    const empty = Object.keys(this.#options.globals).length === 0 && Object.keys(this.#options.imports).length === 0;
    const values = empty ? undefined : this.#toGuest(this.#values);
    const staged = values === undefined ? [ctx.undefined, ctx.undefined] : [0, 1].map((i) => ctx.getProp(values, i));
    const seed = seedWords().map((word) => ctx.newNumber(word));
    const stage = [...staged, ctx.newString(STAGE_KEY), ...seed];
    this.#guard(() => ctx.callFunction(this.#coreOf().stage, ctx.undefined, stage));
    const key = JSON.stringify(STAGE_KEY);
    const internalsModule = `const staged = globalThis[${key}];\nexport default staged.imports;\nexport const phase = staged.phase;`;
    this.#guard(() => ctx.evalCode(internalsModule, INTERNALS_MODULE, { type: "module" }));
    const names = [...new Set(["console", "report", ...Object.keys(this.#options.globals)])];
    const bindings = `const { ${names.join(", ")} } = globalThis[${key}].globals;\ndelete globalThis[${key}];`;
    this.#guard(() => ctx.evalCode(bindings, `${INTERNALS_MODULE}/globals`, { type: "global" }));
    return ctx;
  }

  #coreOf(): CoreHandles {
    return this.#core as CoreHandles;
  }

  /** The marshaling half, booted with the instance (see guest/marshal.ts). */
  #marshalOf(): MarshalHandles {
    return (this.#booted as BootedInstance).marshal;
  }

  /** What the booted instance asks of the run holding it. */
  readonly #tenant: Tenant = {
    poll: () => this.#poll(),
    hostCall: (...args) => this.#hostCall(...args),
    normalize: (base, specifier) => this.#linker.normalize(base, specifier),
    load: (name) => this.#linker.load(name),
  };

  /** Enters the VM: accounts guest time for the safety cap, turns guest errors and host faults into exceptions. */
  #guard(call: () => VmCallResult<QuickJSHandle>): QuickJSHandle {
    const result = this.#enter(call);
    if (result.error !== undefined) throw new GuestFailure(this.#describe(result.error));
    return result.value;
  }

  #enter<T>(call: () => T): T {
    if (this.#depth++ === 0) this.#sliceStart = this.#context.clock();
    let result: T | undefined;
    try {
      result = call();
    } catch (fault) {
      this.#hostFault ??= fault;
    } finally {
      if (--this.#depth === 0) this.#cpuMs += this.#context.clock() - this.#sliceStart;
    }
    // A fault inside a nested host call leaves the instance untrustworthy even when the VM returned normally.
    if (this.#hostFault !== undefined) throw this.#hostFault;
    return result as T;
  }

  /** Pumps jobs until `handle` settles; waits for the host when only host work can move it on. */
  async #settle(handle: QuickJSHandle): Promise<QuickJSHandle> {
    const ctx = this.#ctx as QuickJSContext;
    for (;;) {
      this.#checkStop();
      const state = ctx.getPromiseState(handle);
      if (state.type === "fulfilled") return state.value;
      if (state.type === "rejected") throw new GuestFailure(this.#describe(state.error));
      const ran = this.#enter(() => (this.#runtime as QuickJSRuntime).executePendingJobs());
      if (ran.error !== undefined) throw new GuestFailure(this.#describe(ran.error));
      if (ran.value > 0) continue;
      if (this.#inflight === 0) {
        throw new GuestFailure({
          name: "DeadlockError",
          message: "The run awaits a promise that nothing can settle: no job is queued and no host call is pending",
        });
      }
      await new Promise<void>((resolve) => {
        this.#wake = resolve;
      });
      this.#wake = undefined;
    }
  }

  #checkStop(): void {
    if (this.#interrupted() || this.#channel.settled()) throw new Stopped();
  }

  /** Takes an outside stop (see `SandboxOptions.interrupted`) as the caller's terminate. */
  #interrupted(): boolean {
    if (this.#stop === undefined && this.#context.interrupted()) {
      this.#stop = {
        kind: "terminated",
        error: { name: "TerminatedError", message: "Execution terminated by the caller" },
      };
    }
    return this.#stop !== undefined;
  }

  /** The interrupt handler: polled about every 10,000 guest calls or loop iterations. */
  #poll = (): boolean => {
    this.#polls++;
    if (this.#interrupted() || this.#hostFault !== undefined || this.#channel.settled()) return true;
    const { interruptPolls, cpuTimeMs } = this.#context.safetyCap;
    const cpuMs = this.#cpuMs + this.#context.clock() - this.#sliceStart;
    if (this.#polls > interruptPolls || cpuMs > cpuTimeMs) {
      const spent = this.#polls > interruptPolls ? `${interruptPolls} interrupt polls` : `${cpuTimeMs} ms of CPU time`;
      this.#stop = {
        kind: "terminated",
        error: { name: "TerminatedError", message: `Execution stopped by the safety cap after ${spent}` },
      };
      return true;
    }
    return false;
  };

  /** Records the heap's high-water mark for `memoryUsedBytes` (see `BootedInstance#heapBytes`). */
  #sample(): void {
    if (this.#booted === undefined || this.#hostFault !== undefined) return;
    this.#peakBytes = Math.max(this.#peakBytes, this.#booted.heapBytes() ?? 0);
  }

  /** The single host function of the guest; see OP_* in marshal/tape.ts. */
  #hostCall = (
    opHandle: QuickJSHandle,
    aHandle: QuickJSHandle,
    tapeHandle: QuickJSHandle,
    sideHandle: QuickJSHandle,
    okHandle: QuickJSHandle,
  ): QuickJSHandle | VmCallResult<QuickJSHandle> | undefined => {
    const ctx = this.#ctx as QuickJSContext;
    try {
      const op = ctx.getNumber(opHandle);
      const a = ctx.getNumber(aHandle);
      const retained = op === OP_LOG || op === OP_REPORT;
      if (retained && this.#stop !== undefined) return { error: this.#guestError(new Error(this.#stop.error.message)) };
      const tape = op === OP_MARSHAL ? "" : ctx.getString(tapeHandle);
      const kept: HeapMeter = { bytes: 0 };
      const value = op === OP_MARSHAL ? undefined : this.#decode(tape, sideHandle, kept);
      if (retained && !this.#retain(kept.bytes)) {
        return { error: this.#guestError(new Error((this.#stop as Stop).error.message)) };
      }
      switch (op) {
        case OP_CALL:
          return this.#callHost(a, value as unknown[]);
        case OP_REPORT: {
          this.#channel.reports.push(value);
          return this.#callHost(-1, [value]);
        }
        case OP_LOG:
          this.#logs.push({ level: LOG_LEVELS[a] ?? "log", args: value as unknown[], timestamp: Date.now() });
          return undefined;
        case OP_MARSHAL:
          return this.#marshalOf().object.dup();
        case OP_CHARGE:
          // `a` polls' worth of native work (the guest's estimate, see guest/core.ts); this check is one more.
          if (a >= 0) {
            this.#polls += Math.max(0, a - 1);
            return this.#poll() ? ctx.true : ctx.false;
          }
          return this.#guard(() =>
            ctx.evalCode(guestSlowPathsSource, `${INTERNALS_MODULE}/slow-paths`, { type: "global" }),
          );
        case OP_SETTLE: {
          const pending = this.#guestPromises.get(a);
          this.#guestPromises.delete(a);
          if (ctx.getNumber(okHandle) === 1) pending?.resolve(value);
          else pending?.reject(value);
          return undefined;
        }
      }
      return undefined;
    } catch (fault) {
      if (fault instanceof GuestFailure) return { error: this.#guestError(new Error(fault.described.message)) };
      // Our own VM calls failed (stack or memory exhausted mid-call): the instance is no longer trustworthy.
      this.#hostFault ??= fault;
      return undefined;
    }
  };

  /**
   * Counts a log entry or report the host is about to keep; past `memoryLimitBytes` the run ends with `memory`
   * (the entry is dropped, and so is every later one: the guest's call throws until the interrupt stops it).
   */
  #retain(bytes: number): boolean {
    this.#retained += bytes + RETAINED_ENTRY_BYTES;
    if (this.#retained <= this.#options.memoryLimitBytes) return true;
    this.#stop ??= {
      kind: "memory",
      error: {
        name: "MemoryError",
        message: `The run's logs and reports exceeded memoryLimitBytes (${this.#options.memoryLimitBytes}): the host keeps them for the run`,
      },
    };
    return false;
  }

  /** Calls a host function (`-1`: the report sink) with cloned arguments; its outcome goes back to the guest. */
  #callHost(id: number, args: unknown[]): QuickJSHandle | VmCallResult<QuickJSHandle> | undefined {
    const fn = id === -1 ? this.#options.report : this.#functions.get(id);
    if (fn === undefined) return undefined;
    if (this.#inflight >= MAX_HOST_CALLS_IN_FLIGHT) {
      const message = `${MAX_HOST_CALLS_IN_FLIGHT} host calls are in flight: await some before making more`;
      return { error: this.#guestError(new RangeError(message)) };
    }
    let returned: unknown;
    try {
      returned = Reflect.apply(fn, undefined, args);
    } catch (error) {
      return { error: this.#guestError(error) };
    }
    if (id === -1 && !(returned instanceof Promise)) return undefined;
    let encoded: Encoded;
    try {
      encoded = encodeForGuest(returned, this.#functions);
    } catch (error) {
      return { error: this.#guestError(error) };
    }
    return this.#toGuestResult(encoded);
  }

  /** Host value that was thrown -> the guest error the guest sees: name and message, never the host stack. */
  #guestError(error: unknown): QuickJSHandle {
    let encoded: Encoded;
    try {
      // An Error crosses as name and message only (see marshal/to-guest.ts).
      encoded = encodeForGuest(error, this.#functions);
    } catch {
      encoded = encodeForGuest(String(error), this.#functions);
    }
    return this.#toGuest(encoded);
  }

  /** Encoded host value -> guest value (host promises become guest promises the host settles later). */
  #toGuest(encoded: Encoded): QuickJSHandle {
    const result = this.#toGuestResult(encoded);
    if (result.error !== undefined) throw new GuestFailure(this.#describe(result.error));
    return result.value;
  }

  /** As `#toGuest`, leaving a guest error (the decoder ran out of stack or memory) to the caller. */
  #toGuestResult(encoded: Encoded): VmCallResult<QuickJSHandle> {
    const ctx = this.#ctx as QuickJSContext;
    const primitive = encoded.side.length === 0 ? primitiveHandle(ctx, encoded.tape) : undefined;
    if (primitive !== undefined) return { value: primitive };
    const { decode } = this.#marshalOf();
    const side = encoded.side.map((item) => {
      if (item.kind === "buffer") return ctx.newArrayBuffer(item.bytes.buffer as ArrayBuffer);
      const deferred = this.#newDeferred();
      this.#inflight++;
      item.promise.then(
        (value) => this.#deliver(deferred, value, true),
        (reason) => this.#deliver(deferred, reason, false),
      );
      return deferred.promise;
    });
    const tape = ctx.newString(encoded.tape);
    try {
      return this.#enter(() => ctx.callFunction(decode, ctx.undefined, [tape, ...side]));
    } finally {
      tape.dispose();
      for (const handle of side) handle.dispose();
    }
  }

  /** A guest promise and its resolvers, made by the prelude (the library's `newPromise` breaks when memory grows). */
  #newDeferred(): Deferred {
    const ctx = this.#ctx as QuickJSContext;
    const made = this.#guard(() => ctx.callFunction(this.#coreOf().deferred, ctx.undefined, []));
    const deferred = {
      promise: ctx.getProp(made, "promise"),
      resolve: ctx.getProp(made, "resolve"),
      reject: ctx.getProp(made, "reject"),
    };
    made.dispose();
    return deferred;
  }

  /** A host promise settled: settle its guest promise and let the pump go on. */
  #deliver(deferred: Deferred, value: unknown, ok: boolean): void {
    this.#inflight--;
    // The run may have ended and its instance gone to another run: its handles point into memory that is not its own.
    const held = this.#booted?.heldBy(this.#tenant) === true && deferred.resolve.alive;
    if (this.#stop !== undefined || this.#hostFault !== undefined || this.#channel.settled() || !held) return;
    const ctx = this.#ctx as QuickJSContext;
    try {
      let result: VmCallResult<QuickJSHandle>;
      try {
        result = ok ? this.#toGuestResult(encodeForGuest(value, this.#functions)) : { error: this.#guestError(value) };
      } catch (error) {
        if (!(error instanceof SerializationError)) throw error;
        result = { error: this.#guestError(error) };
      }
      const handle = result.error ?? result.value;
      const settle = result.error === undefined ? deferred.resolve : deferred.reject;
      const settled = this.#enter(() => ctx.callFunction(settle, ctx.undefined, [handle]));
      (settled.error ?? settled.value).dispose();
      for (const h of [handle, deferred.resolve, deferred.reject]) h.dispose();
    } catch (fault) {
      if (!(fault instanceof GuestFailure)) this.#hostFault ??= fault;
    }
    this.#wake?.();
  }

  /** Guest value -> host value by the guest's encoder. */
  #toHost(handle: QuickJSHandle, mode: number): unknown {
    const ctx = this.#ctx as QuickJSContext;
    switch (ctx.typeof(handle)) {
      case "undefined":
        return undefined;
      case "number":
        return ctx.getNumber(handle);
      case "string": {
        // Strings cross the FFI as UTF-8 C strings: NUL cuts them, lone surrogates turn into U+FFFD. Only a string
        // that provably survived is taken; others go through the guest's encoder (JSON-escaped).
        const text = ctx.getString(handle);
        if (text.length === ctx.getLength(handle) && !text.includes("\uFFFD")) return text;
        break;
      }
      case "bigint":
        return ctx.getBigInt(handle);
      case "boolean":
        return ctx.eq(handle, ctx.true);
      case "object":
        if (ctx.eq(handle, ctx.null)) return null;
    }
    const modeHandle = ctx.newNumber(mode);
    const { encode } = this.#marshalOf();
    const pair = this.#guard(() => ctx.callFunction(encode, ctx.undefined, [handle, modeHandle]));
    const tape = ctx.getProp(pair, 0);
    const side = ctx.getProp(pair, 1);
    try {
      return this.#decode(ctx.getString(tape), side);
    } finally {
      for (const h of [modeHandle, pair, tape, side]) h.dispose();
    }
  }

  #decode(tape: string, sideHandle: QuickJSHandle, meter?: HeapMeter): unknown {
    const ctx = this.#ctx as QuickJSContext;
    return decodeFromGuest(
      tape,
      {
        buffer: (index) => {
          const item = ctx.getProp(sideHandle, index);
          const bytes = ctx.getArrayBuffer(item);
          const copy = bytes.value.slice().buffer;
          bytes.dispose();
          item.dispose();
          return copy;
        },
        hostFunction: (id) => this.#functions.get(id),
        promise: (id) =>
          new Promise((resolve, reject) => {
            this.#guestPromises.set(id, { resolve, reject });
          }),
      },
      meter,
    );
  }

  /** Reads a guest error through the guest's own describer (no guest code runs on the host). */
  #describe(errorHandle: QuickJSHandle): Described {
    const ctx = this.#ctx as QuickJSContext;
    if (this.#core === undefined) return { name: "Error", message: String(ctx.dump(errorHandle)) };
    try {
      const json = this.#enter(() => ctx.callFunction(this.#coreOf().describeError, ctx.undefined, [errorHandle]));
      if (json.error !== undefined) {
        json.error.dispose();
        return { thrown: null };
      }
      const text = ctx.getString(json.value);
      json.value.dispose();
      const parsed = JSON.parse(text) as Described;
      if ("thrown" in parsed) parsed.thrown = decodeFromGuest(JSON.stringify(parsed.thrown), noSide);
      return parsed;
    } catch (fault) {
      if (this.#hostFault !== undefined) throw fault;
      return { thrown: null };
    }
  }

  /** Classifies how the run ended (outcome.ts). */
  #outcome(caught: unknown): Pick<CodeExecutionResult, "status" | "error"> {
    return outcomeOf(
      {
        stop: this.#stop,
        hostFault: this.#hostFault,
        instance: this.#booted?.instance,
        memoryLimitBytes: this.#options.memoryLimitBytes,
        linker: this.#linker,
        evaluating: () => this.#evaluating(),
        notePeak: (bytes) => {
          this.#peakBytes = Math.max(this.#peakBytes, bytes);
        },
      },
      caught,
    );
  }

  /** Whether user code started evaluating (see the phase module in linker.ts). */
  #evaluating(): boolean {
    const ctx = this.#ctx;
    if (ctx === undefined || this.#core === undefined) return false;
    const started = this.#enter(() => ctx.callFunction(this.#coreOf().evaluating, ctx.undefined, []));
    const value =
      started.error === undefined && ctx.typeof(started.value) === "boolean" && ctx.eq(started.value, ctx.true);
    (started.error ?? started.value).dispose();
    return value;
  }
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

const noSide = {
  buffer: () => new ArrayBuffer(0),
  hostFunction: () => undefined,
  promise: () => Promise.resolve(),
};

/** NUL and lone surrogates do not survive the FFI's UTF-8 C strings (see `#toHost`). */
const UNSAFE_FOR_C_STRINGS = /[\0\uD800-\uDFFF]/;

/** The tapes of primitives (see marshal/tape.ts) become handles without the guest's decoder. */
function primitiveHandle(ctx: QuickJSContext, tape: string): QuickJSHandle | undefined {
  if (tape === '["a",0,[]]') return ctx.newArray();
  if (tape.startsWith("[")) {
    if (tape === '["u"]') return ctx.undefined;
    if (tape.startsWith('["b",')) return ctx.newBigInt(BigInt(JSON.parse(tape)[1] as string));
    if (tape.startsWith('["n",')) return ctx.newNumber(Number(JSON.parse(tape)[1] === "-0" ? -0 : JSON.parse(tape)[1]));
    return undefined;
  }
  const value = JSON.parse(tape) as string | number | boolean | null;
  if (typeof value === "string") return UNSAFE_FOR_C_STRINGS.test(value) ? undefined : ctx.newString(value);
  if (typeof value === "number") return ctx.newNumber(value);
  return value === null ? ctx.null : value ? ctx.true : ctx.false;
}
