/**
 * The guest bridge, where values cross between one run's guest and the host: the guest's calls of host functions,
 * its requests (reports, logs, settled guest promises, native-work charges, the Web APIs' random bytes, `crypto.subtle`'s
 * work, `performance.now()` and uncaught exceptions), host values into the guest (host promises become guest promises settled later), guest values out to
 * the host by the guest's own encoder, and guest errors as the guest describes them. Nothing of the guest runs on the
 * host: both sides parse the other's tapes as data (values/tape.ts). What the host does for each crossing is charged to
 * the run's fuel at the rates of host-fuel.ts, before it is done where its size is known then (a call, a tape read
 * in, random bytes): a run that cannot pay gets the stop's message thrown instead.
 *
 * Lifetimes: a handle made for one crossing is disposed when the crossing ends; handles the run keeps (staged values,
 * pending deferreds) point into memory the restore rewrites and go with it, and a late host promise never reaches
 * the instance once the run no longer holds it.
 * @module
 */
import type { QuickJSContext, QuickJSHandle, VmCallResult } from "quickjs-emscripten-core";
import type { FetchSession, GuestResponse } from "../fetch/session.js";
import { isBridged, SerializationError, Thrown } from "../values/errors.js";
import {
  LOG_LEVELS,
  MODE_CLONE,
  OP_CHARGE,
  OP_FETCH,
  OP_FETCH_ABORT,
  OP_INTL,
  OP_LOG,
  OP_MARSHAL,
  OP_NOW,
  OP_PLAIN,
  OP_RANDOM,
  OP_REPORT,
  OP_SETTLE,
  OP_SUBTLE,
  OP_UNCAUGHT,
  type Tape,
} from "../values/tape.js";
import { encodeForGuest, encodePrimitive, type FunctionTable, type HostFunction } from "../values/to-guest.js";
import { decodeFromGuest, type HeapMeter } from "../values/to-host.js";
import {
  bufferFuel,
  charFuel,
  HOST_CALL_FUEL,
  HOST_PROMISE_FUEL,
  intlFuel,
  LOG_ENTRY_FUEL,
  NOW_FUEL,
  PLAIN_READ_FUEL,
  randomFuel,
  subtleFuel,
  tapeFuel,
  wideTextFuel,
} from "./host-fuel.js";
import type { Answer, BootedInstance, CoreHandles, Holder, MarshalHandles } from "./instance.js";
import { type IntlFormatters, intlAnswer, intlWork } from "./intl.js";
import type { Limits } from "./limits.js";
import { type Described, GuestFailure, type Stop } from "./outcome.js";
import type { Recording } from "./recording.js";
import { subtleBytes, subtleWork } from "./subtle.js";
import type { CodeExecutionLog } from "./types.js";
import { randomBytes } from "./web-apis.js";

/**
 * Most host promises one run may wait on at once. Each holds a guest promise and its resolvers on the host, so a guest
 * loop that calls an async bridge without awaiting would otherwise queue host work without end; past it a call throws
 * in the guest without reaching the bridge.
 */
export const MAX_HOST_CALLS_IN_FLIGHT = 10_000;

/**
 * A host promise that settled, for its guest promise (see `deferred` in the prelude): its value encoded, or the
 * response a guest's `fetch` was answered with, which crosses as it is (see `responseResult` in `GuestBridge`).
 */
type Delivery = { id: number; ok: boolean; value: Tape } | { id: number; ok: true; response: GuestResponse };

/** How a host promise's value crosses: encoded as a tape, or as a fetch's response. */
type Crossing = "tape" | "response";

/**
 * Where the guest's values go when the host that takes them is on another thread: as the guest's own tapes, decoded
 * there rather than here (logs and reports are decoded here too, to charge them). `call` and `report` are stand-ins
 * of the far host's functions, marked by `bridged`: they return a value encoded there (a `Tape`) and throw what
 * the far function threw as a `Thrown`. Anything else any of them throws is a fault of the host.
 */
export interface Relay {
  /** A call of host function number `id` (`args` is the tape of the arguments' array). */
  call(id: number, args: Tape<ArrayBuffer>): unknown;
  /** A reported value: the far host keeps it and hands it to the caller's sink. */
  report(value: Tape<ArrayBuffer>): unknown;
  /** The guest settled its promise number `promise`, which it handed to the host. */
  settle(promise: number, ok: boolean, value: Tape<ArrayBuffer>): void;
  /** A `console` entry; what it throws (a run's listener on the far host), the console call throws. */
  log(level: CodeExecutionLog["level"], timestamp: number, args: Tape<ArrayBuffer>): void;
}

/** What the bridge of one run reports to and takes from the run. */
interface RunSide {
  functions: FunctionTable;
  /** The caller's report sink, if any. */
  report: HostFunction | undefined;
  reports: unknown[];
  logs: CodeExecutionLog[];
  /** The callers' log listeners, in order: the sandbox's, then the run's (`onLog` of each). */
  logListeners: ((entry: CodeExecutionLog) => void)[];
  /** Where the guest's values go instead, when the host is on another thread. */
  relay: Relay | undefined;
  /** The run's `fetch`, when the sandbox has one. */
  fetch: FetchSession | undefined;
  /** The run's time for `performance.now()` (see core/timers.ts). */
  now(): number;
  /** What the run reads that a re-run could read differently, when it is recorded or replayed (core/recording.ts). */
  recording: Recording | undefined;
}

export class GuestBridge {
  readonly #booted: BootedInstance;
  readonly #ctx: QuickJSContext;
  readonly #core: CoreHandles;
  readonly #holder: Holder;
  readonly #limits: Limits;
  readonly #run: RunSide;
  readonly #guestPromises = new Map<number, { resolve(v: unknown): void; reject(e: unknown): void }>();
  #inflight = 0;
  /** The number of the next host promise handed to the guest. */
  #nextPromise = 0;
  /** Host promises that settled since the guest last ran, in the order they settled. */
  #deliveries: Delivery[] = [];
  #wake: (() => void) | undefined;
  #uncaught: Described | undefined;
  /** Bytes of `crypto.subtle` operations the platform is working on. */
  #subtleBytes = 0;
  /** The host's `Intl` formatters the run made (see core/intl.ts). */
  readonly #formatters: IntlFormatters = new Map();

  /** The bridge of the run that holds `booted` as `holder`. */
  constructor(booted: BootedInstance, holder: Holder, limits: Limits, run: RunSide) {
    this.#booted = booted;
    this.#ctx = booted.ctx;
    this.#core = booted.core;
    this.#holder = holder;
    this.#limits = limits;
    this.#run = run;
  }

  /** Host promises the guest waits on. */
  get inflight(): number {
    return this.#inflight;
  }

  /** The first exception the guest reported as nobody's to catch (a timer callback's, an event listener's). */
  get uncaught(): Described | undefined {
    return this.#uncaught;
  }

  /**
   * Resolves `true` when a host promise was delivered or at {@link wake}, `false` when `ms` milliseconds passed first
   * (on the platform's timer).
   */
  hostWork(ms = Number.POSITIVE_INFINITY): Promise<boolean> {
    return new Promise<boolean>((resolve) => {
      const timer =
        ms === Number.POSITIVE_INFINITY
          ? undefined
          : setTimeout(() => {
              this.#wake = undefined;
              resolve(false);
            }, ms);
      this.#wake = () => {
        if (timer !== undefined) clearTimeout(timer);
        resolve(true);
      };
    });
  }

  /** Lets a run waiting on {@link hostWork} look again (it was stopped). */
  wake(): void {
    const wake = this.#wake;
    this.#wake = undefined;
    wake?.();
  }

  /** Enters the VM (see `Limits.enter`); a guest error becomes a {@link GuestFailure}. */
  guard(call: () => VmCallResult<QuickJSHandle>): QuickJSHandle {
    const result = this.#limits.enter(call);
    if (result.error !== undefined) throw new GuestFailure(this.describe(result.error));
    return result.value;
  }

  /** The single host function of the guest; see OP_* in values/tape.ts. */
  readonly hostCall = (
    opHandle: QuickJSHandle,
    aHandle: QuickJSHandle,
    tapeHandle: QuickJSHandle,
    sideHandle: QuickJSHandle,
    okHandle: QuickJSHandle,
  ): Answer => {
    const ctx = this.#ctx;
    try {
      const op = ctx.getNumber(opHandle);
      const a = ctx.getNumber(aHandle);
      if (op === OP_RANDOM) {
        const unpaid = this.#unpaid(randomFuel(a));
        if (unpaid !== false) return unpaid;
        const bytes = this.#run.recording?.read(`random:${a}`, () => randomBytes(a)) ?? randomBytes(a);
        return ctx.newArrayBuffer(bytes.buffer as ArrayBuffer);
      }
      if (op === OP_NOW) {
        const unpaid = this.#unpaid(NOW_FUEL);
        return unpaid === false ? ctx.newNumber(this.#run.now()) : unpaid;
      }
      if (op === OP_PLAIN) return ctx.newNumber(this.#plainLevels(sideHandle));
      if (op === OP_INTL) return this.#intl(ctx.getString(tapeHandle));
      if (op === OP_UNCAUGHT) {
        this.#uncaught ??= this.describe(sideHandle);
        return undefined;
      }
      const retained = op === OP_LOG || op === OP_REPORT;
      if (retained && this.#limits.stop !== undefined) return this.#stopped();
      const tape = op === OP_MARSHAL ? "" : ctx.getString(tapeHandle);
      if (retained || op === OP_FETCH || op === OP_SETTLE || op === OP_SUBTLE) {
        const unpaid = this.#unpaid((retained ? LOG_ENTRY_FUEL : 0) + tapeFuel(tape));
        if (unpaid !== false) return unpaid;
      }
      const { relay } = this.#run;
      const relayed = relay !== undefined && (op === OP_SETTLE || retained);
      const guest = relayed ? this.#guestTape(tape, sideHandle) : undefined;
      const buffers = guest === undefined ? this.#buffersOf(sideHandle) : (i: number) => guest.side[i] as ArrayBuffer;
      const kept: HeapMeter = { bytes: 0 };
      const undecoded = op === OP_MARSHAL || (relayed && !retained);
      const value = undecoded ? undefined : this.#decode(tape, buffers, kept, op === OP_LOG);
      if (retained && !this.#limits.retain(kept.bytes)) return this.#stopped();
      switch (op) {
        case OP_REPORT:
          this.#run.reports.push(value);
          if (relayed) return this.#callHost(relay.report as HostFunction, [guest], true);
          return this.#callHost(this.#run.report, [value], true);
        case OP_LOG: {
          const entry: CodeExecutionLog = {
            level: LOG_LEVELS[a] ?? "log",
            args: value as unknown[],
            timestamp: Date.now(),
          };
          this.#run.logs.push(entry);
          if (relayed) {
            const logged = this.#apply(relay.log as HostFunction, [entry.level, entry.timestamp, guest]);
            return "error" in logged ? logged : undefined;
          }
          for (const listener of this.#run.logListeners) {
            const listened = this.#apply(listener as HostFunction, [entry]);
            if ("error" in listened) return listened;
          }
          return undefined;
        }
        case OP_MARSHAL:
          return this.#marshal().object.dup();
        case OP_CHARGE:
          // `a` polls' worth of native work (the guest's estimate, see guest/core.ts).
          if (a >= 0) return this.#limits.charge(a) ? ctx.true : ctx.false;
          // Their factory, compiled at boot (see `BootedInstance.slowPaths`).
          return this.#booted.slowPaths.dup();
        case OP_FETCH:
          return this.#callHost(this.#run.fetch?.request, [a, value], false, "response");
        case OP_SUBTLE:
          return this.#subtle(value);
        case OP_FETCH_ABORT:
          this.#run.fetch?.abort(a);
          return undefined;
        case OP_SETTLE: {
          const ok = ctx.getNumber(okHandle) === 1;
          if (relayed) {
            relay.settle(a, ok, guest as Tape<ArrayBuffer>);
            return undefined;
          }
          const pending = this.#guestPromises.get(a);
          this.#guestPromises.delete(a);
          if (ok) pending?.resolve(value);
          else pending?.reject(value);
          return undefined;
        }
      }
      return undefined;
    } catch (fault) {
      return this.#failed(fault);
    }
  };

  /**
   * An operation of the guest's `crypto.subtle`, paid before it is done. The bytes of the operations the platform is
   * still working on are held by the host, so they are bounded by the run's `memoryLimitBytes`: past it the call
   * throws a `RangeError` in the guest.
   */
  #subtle(record: unknown): Answer {
    const bytes = subtleBytes(record);
    if (this.#subtleBytes + bytes > this.#limits.memoryLimitBytes) {
      const message = `crypto.subtle: ${this.#subtleBytes} bytes are being worked on and ${bytes} more would exceed memoryLimitBytes (${this.#limits.memoryLimitBytes}): await some before starting more`;
      return { error: this.#guestError(new RangeError(message)) };
    }
    const unpaid = this.#unpaid(subtleFuel(bytes));
    if (unpaid !== false) return unpaid;
    const release = () => {
      this.#subtleBytes -= bytes;
    };
    return this.#callHost(() => {
      this.#subtleBytes += bytes;
      const work = subtleWork(record);
      work.then(release, release);
      return work;
    }, []);
  }

  /**
   * The guest called the caller's function number `id` with `args`. Primitives are read as they are; when any
   * argument is more, the guest's encoder makes the tape of them all (what it throws, the call throws).
   */
  readonly call = (idHandle: QuickJSHandle, args: QuickJSHandle[]): Answer => {
    const ctx = this.#ctx;
    try {
      // An attempt's calls are the caller's thread's work wherever the run is: its slice does not count its first ones.
      const { recording } = this.#run;
      const paid = recording?.beyondSlice()
        ? this.#limits.payBeyondCap(HOST_CALL_FUEL, recording.fuelCap)
        : this.#limits.pay(HOST_CALL_FUEL);
      if (!paid) return this.#limits.stop === undefined ? undefined : this.#stopped();
      const id = ctx.getNumber(idHandle);
      const values: unknown[] = [];
      for (const handle of args) {
        const value = this.#primitive(handle);
        if (value === NOT_PRIMITIVE) return this.#callEncoded(id, args);
        values.push(value);
      }
      const { relay } = this.#run;
      if (relay === undefined) return this.#callHost(this.#run.functions.callee(id), values);
      const tape = `["a",0,[${values.map(encodePrimitive).join(",")}]]`;
      return this.#callHost(relay.call as HostFunction, [id, { tape, side: [] } satisfies Tape<ArrayBuffer>]);
    } catch (fault) {
      return this.#failed(fault);
    }
  };

  /** As {@link call}, the arguments encoded by the guest. */
  #callEncoded(id: number, args: QuickJSHandle[]): Answer {
    const ctx = this.#ctx;
    const { encodeArguments } = this.#marshal();
    const encoded = this.#limits.enter(() => ctx.callFunction(encodeArguments, ctx.undefined, args));
    if (encoded.error !== undefined) return encoded;
    const { relay } = this.#run;
    if (relay !== undefined) {
      const tape = this.#read(encoded.value, (text, side) => this.#guestTape(text, side));
      return this.#callHost(relay.call as HostFunction, [id, tape]);
    }
    const values = this.#read(encoded.value, (text, side) => this.#decode(text, this.#buffersOf(side)));
    return this.#callHost(this.#run.functions.callee(id), values as unknown[]);
  }

  /** The guest's `Intl` request (see core/intl.ts), paid before the host's `Intl` answers; what it throws, thrown. */
  #intl(request: string): Answer {
    const unpaid = this.#unpaid(intlFuel(request, intlWork(request, this.#formatters)));
    if (unpaid !== false) return unpaid;
    let answer: string;
    try {
      answer = intlAnswer(request, this.#formatters);
    } catch (error) {
      return { error: this.#guestError(error) };
    }
    this.#limits.spend(charFuel(answer.length));
    return this.#ctx.newString(answer);
  }

  /** What a call from the guest that failed on the host answers. */
  #failed(fault: unknown): Answer {
    if (fault instanceof GuestFailure) return { error: this.#guestError(new Error(fault.described.message)) };
    // Our own VM calls failed (stack or memory exhausted mid-call): the instance is no longer trustworthy.
    this.#limits.fault(fault);
    return undefined;
  }

  /**
   * Charges host work for the guest before it is done (see host-fuel.ts): `false` when the run paid, else what the
   * guest's call answers instead (the stop's message thrown, or nothing for a run that ended or faulted).
   */
  #unpaid(units: number): Answer | false {
    if (this.#limits.pay(units)) return false;
    return this.#limits.stop === undefined ? undefined : this.#stopped();
  }

  /** What a log or report of a stopped run gets: the stop's message, thrown in the guest. */
  #stopped(): VmCallResult<QuickJSHandle> {
    return { error: this.#guestError(new Error((this.#limits.stop as Stop).error.message)) };
  }

  /**
   * Calls a host function with cloned arguments; its outcome goes back to the guest. A sink's (`report`, `onLog`)
   * plain return is ignored (only a promise is awaited by the guest).
   */
  #callHost(fn: HostFunction | undefined, args: unknown[], sink = false, crossing: Crossing = "tape"): Answer {
    if (fn === undefined) return undefined;
    if (this.#inflight >= MAX_HOST_CALLS_IN_FLIGHT) {
      const message = `${MAX_HOST_CALLS_IN_FLIGHT} host calls are in flight: await some before making more`;
      return { error: this.#guestError(new RangeError(message)) };
    }
    const applied = this.#apply(fn, args);
    if ("error" in applied) return applied;
    const { returned } = applied;
    if (returned instanceof Promise) return this.#guestPromise(returned, crossing);
    // A far host (the relay's) answers a sink with nothing for a plain return and with the tape of its promise.
    if (sink && (returned === undefined || this.#run.relay === undefined)) return undefined;
    const primitive = primitiveHandle(this.#ctx, returned);
    if (primitive !== undefined) {
      if (typeof returned === "string") this.#limits.spend(charFuel(returned.length));
      return primitive;
    }
    let encoded: Tape;
    try {
      encoded = encodeForGuest(returned, this.#run.functions);
    } catch (error) {
      return { error: this.#answeredError(error) };
    }
    this.#run.functions.answered(encoded);
    return this.toGuestResult(encoded);
  }

  /** Calls the caller's `fn`: what it throws is the guest's error; what a bridge's crossing throws, a fault. */
  #apply(fn: HostFunction, args: unknown[]): { returned: unknown } | { error: QuickJSHandle } {
    try {
      return { returned: Reflect.apply(fn, undefined, args) };
    } catch (error) {
      if (!isBridged(fn)) return { error: this.#answeredError(error) };
      if (error instanceof Thrown) return { error: this.#answeredError(error.value) };
      throw error;
    }
  }

  /**
   * {@link #guestError} of a host function's call that threw `error`, or whose answer could not cross; the run's table
   * is told the error as it crossed.
   */
  #answeredError(error: unknown): QuickJSHandle {
    const tape = this.#errorTape(error);
    this.#run.functions.threw(tape);
    return this.toGuest(tape);
  }

  /** Host value that was thrown -> the guest error the guest sees: name and message, never the host stack. */
  #guestError(error: unknown): QuickJSHandle {
    return this.toGuest(this.#errorTape(error));
  }

  /** The tape of a host value that was thrown: an Error crosses as name and message only (see values/to-guest.ts). */
  #errorTape(error: unknown): Tape {
    try {
      return encodeForGuest(error, this.#run.functions);
    } catch {
      return encodeForGuest(String(error), this.#run.functions);
    }
  }

  /** Encoded host value -> guest value (host promises become guest promises the host settles later). */
  toGuest(encoded: Tape): QuickJSHandle {
    const result = this.toGuestResult(encoded);
    if (result.error !== undefined) throw new GuestFailure(this.describe(result.error));
    return result.value;
  }

  /** As {@link toGuest}, leaving a guest error (the decoder ran out of stack or memory) to the caller. */
  toGuestResult(encoded: Tape): VmCallResult<QuickJSHandle> {
    const ctx = this.#ctx;
    const primitive = encoded.side.length === 0 ? tapeHandle(ctx, encoded.tape) : undefined;
    if (primitive !== undefined) {
      this.#limits.spend(charFuel(encoded.tape.length));
      return { value: primitive };
    }
    this.#limits.spend(objectCrossingFuel(encoded));
    const { decode } = this.#marshal();
    const side = encoded.side.map((item) =>
      item.kind === "buffer" ? ctx.newArrayBuffer(item.bytes.buffer as ArrayBuffer) : this.#guestPromise(item.promise),
    );
    const tape = ctx.newString(encoded.tape);
    try {
      return this.#limits.enter(() => ctx.callFunction(decode, ctx.undefined, [tape, ...side]));
    } finally {
      tape.dispose();
      for (const handle of side) handle.dispose();
    }
  }

  /** A guest promise settled as `promise` settles, once the run delivers it (see {@link deliver}). */
  #guestPromise(promise: Promise<unknown>, crossing: Crossing = "tape"): QuickJSHandle {
    const ctx = this.#ctx;
    const id = this.#nextPromise++;
    this.#limits.spend(HOST_PROMISE_FUEL);
    const idHandle = ctx.newNumber(id);
    let guestPromise: QuickJSHandle;
    try {
      guestPromise = this.guard(() => ctx.callFunction(this.#core.deferred, ctx.undefined, [idHandle]));
    } finally {
      idHandle.dispose();
    }
    this.#inflight++;
    promise.then(
      (value) => this.#settled(id, value, true, crossing),
      (reason) => this.#settled(id, reason, false, crossing),
    );
    return guestPromise;
  }

  /**
   * A host promise settled: its outcome is encoded now, as it is (the caller may change the value after), and
   * waits for the run to deliver it.
   */
  #settled(id: number, value: unknown, ok: boolean, crossing: Crossing): void {
    this.#inflight--;
    // The run may have ended and its instance gone to another run.
    if (!this.#booted.heldBy(this.#holder)) return;
    // A stop made while the run waited (the host's work for this promise could not be paid for) is not delivered,
    // but the run must wake to take it: nothing else may ever settle.
    if (this.#limits.stopped() || this.#limits.faulted) {
      this.wake();
      return;
    }
    let delivery: Delivery;
    if (ok && crossing === "response") {
      this.#deliveries.push({ id, ok, response: value as GuestResponse });
      this.wake();
      return;
    }
    try {
      delivery = { id, ok, value: ok ? encodeForGuest(value, this.#run.functions) : this.#errorTape(value) };
    } catch (error) {
      if (error instanceof SerializationError) delivery = { id, ok: false, value: this.#errorTape(error) };
      else {
        this.#limits.fault(error);
        this.wake();
        return;
      }
    }
    this.#deliveries.push(delivery);
    this.wake();
  }

  /**
   * Settles the guest promises of the host promises that settled since the guest last ran, all in one call of the
   * guest; the run calls it before it runs the guest's jobs. A value the guest's decoder fails on (out of memory or
   * stack) rejects its promise with that error.
   */
  deliver(): void {
    const deliveries = this.#deliveries;
    if (deliveries.length === 0) return;
    this.#deliveries = [];
    const ctx = this.#ctx;
    const handles: QuickJSHandle[] = [];
    try {
      for (const delivery of deliveries) {
        const made =
          "response" in delivery ? this.#responseResult(delivery.response) : this.toGuestResult(delivery.value);
        const fulfilled = delivery.ok && made.error === undefined;
        handles.push(ctx.newNumber(delivery.id), fulfilled ? ctx.true : ctx.false, made.error ?? made.value);
      }
      const settled = this.#limits.enter(() => ctx.callFunction(this.#core.settle, ctx.undefined, handles));
      (settled.error ?? settled.value).dispose();
    } finally {
      for (const handle of handles) handle.dispose();
    }
  }

  /**
   * A fetch's response for the guest, `[head, body]`, made without the guest's decoder (whose walk of the values of a
   * record cost the guest more than the rest of its `fetch`): the head a string, paid as one (see {@link toGuest}),
   * the body a buffer, paid as its bytes.
   */
  #responseResult({ head, body }: GuestResponse): VmCallResult<QuickJSHandle> {
    const ctx = this.#ctx;
    const madeHead = this.toGuestResult(encodeForGuest(head, this.#run.functions));
    if (madeHead.error !== undefined) return madeHead;
    this.#limits.spend(bufferFuel(body.byteLength));
    const buffer = ctx.newArrayBuffer(body);
    try {
      const pair = ctx.newArray();
      ctx.setProp(pair, 0, madeHead.value);
      ctx.setProp(pair, 1, buffer);
      return { value: pair };
    } finally {
      madeHead.value.dispose();
      buffer.dispose();
    }
  }

  /** Guest value -> host value by the guest's encoder, in `mode` (see MODE_* in values/tape.ts). */
  toHost(handle: QuickJSHandle, mode: number): unknown {
    const primitive = this.#primitive(handle);
    if (primitive !== NOT_PRIMITIVE) return primitive;
    return this.#encode(handle, mode, (tape, side) => this.#decode(tape, this.#buffersOf(side)));
  }

  /** As {@link toHost} (structured clone), leaving the value as its tape for a host on another thread to decode. */
  toTape(handle: QuickJSHandle): Tape<ArrayBuffer> {
    const primitive = encodePrimitive(this.#primitive(handle));
    if (primitive !== undefined) return { tape: primitive, side: [] };
    return this.#encode(handle, MODE_CLONE, (tape, side) => this.#guestTape(tape, side));
  }

  /** A primitive read without the guest's encoder; {@link NOT_PRIMITIVE} for what needs the encoder. */
  #primitive(handle: QuickJSHandle): unknown {
    const ctx = this.#ctx;
    switch (this.#booted.bits?.kind(handle) ?? ctx.typeof(handle)) {
      case "undefined":
        return undefined;
      case "null":
        return null;
      case "number":
        return ctx.getNumber(handle);
      case "string": {
        // Strings cross the FFI as UTF-8 C strings: NUL cuts them, lone surrogates turn into U+FFFD. Only a string
        // that provably survived is taken (its length read as its property: `getLength` answers only for objects);
        // others go through the guest's encoder (JSON-escaped).
        const text = ctx.getString(handle);
        // Its reading is paid once done (its length is not its bytes): UTF-8 past ASCII costs the host ~4x.
        if (PAST_ASCII.test(text)) {
          this.#limits.spend(wideTextFuel(text.length));
          if (text.includes("\uFFFD")) return NOT_PRIMITIVE;
        }
        const length = ctx.getProp(handle, "length");
        const survived = text.length === ctx.getNumber(length);
        length.dispose();
        return survived ? text : NOT_PRIMITIVE;
      }
      case "bigint":
        return ctx.getBigInt(handle);
      case "boolean":
        return ctx.eq(handle, ctx.true);
      case "object":
        if (ctx.eq(handle, ctx.null)) return null;
    }
    return NOT_PRIMITIVE;
  }

  /** Runs the guest's encoder on `handle` in `mode` and reads its tape and side list with `read`. */
  #encode<T>(handle: QuickJSHandle, mode: number, read: (tape: string, side: QuickJSHandle) => T): T {
    const ctx = this.#ctx;
    const { encode } = this.#marshal();
    const levels = this.#plainLevels(handle);
    const args = [handle, ctx.newNumber(mode)];
    if (levels > 0) args.push(ctx.newNumber(levels));
    try {
      return this.#read(
        this.guard(() => ctx.callFunction(encode, ctx.undefined, args)),
        read,
      );
    } finally {
      for (let i = 1; i < args.length; i++) args[i]?.dispose();
    }
  }

  /** The levels of plain data `handle` is (0: not plain, or not known), its reading charged to the run. */
  #plainLevels(handle: QuickJSHandle): number {
    const plain = this.#booted.plain?.read(handle, Math.max(0, this.#limits.fuelLeft) / PLAIN_READ_FUEL);
    if (plain === undefined) return 0;
    this.#limits.spend(plain.visits * PLAIN_READ_FUEL);
    return plain.levels;
  }

  /** Reads the guest encoder's `[tape, side]` pair with `read`, then disposes it. */
  #read<T>(pair: QuickJSHandle, read: (tape: string, side: QuickJSHandle) => T): T {
    const ctx = this.#ctx;
    const tape = ctx.getProp(pair, 0);
    const side = ctx.getProp(pair, 1);
    try {
      const text = ctx.getString(tape);
      this.#limits.spend(tapeFuel(text));
      return read(text, side);
    } finally {
      for (const h of [pair, tape, side]) h.dispose();
    }
  }

  /** Copies out the buffer at each index of the guest's side list as it is asked for. */
  #buffersOf(sideHandle: QuickJSHandle): (index: number) => ArrayBuffer {
    const ctx = this.#ctx;
    return (index) => {
      const item = ctx.getProp(sideHandle, index);
      const bytes = ctx.getArrayBuffer(item);
      this.#limits.spend(bufferFuel(bytes.value.byteLength));
      const copy = bytes.value.slice().buffer;
      bytes.dispose();
      item.dispose();
      return copy;
    };
  }

  /**
   * A guest tape with every buffer of its side list copied out (the guest's side lists hold buffers only). A tape
   * without an ArrayBuffer (`["B",` never appears inside its JSON strings, whose quotes are escaped) has none: its side
   * list is not read, so the crossing costs the guest what decoding it in place does (`fuelUsed` is the same on a
   * worker thread as in-thread).
   */
  #guestTape(tape: string, sideHandle: QuickJSHandle): Tape<ArrayBuffer> {
    if (!tape.includes('["B",')) return { tape, side: [] };
    const ctx = this.#ctx;
    const lengthHandle = ctx.getProp(sideHandle, "length");
    const length = ctx.getNumber(lengthHandle);
    lengthHandle.dispose();
    const buffer = this.#buffersOf(sideHandle);
    return { tape, side: Array.from({ length }, (_, index) => buffer(index)) };
  }

  #decode(tape: string, buffer: (index: number) => ArrayBuffer, meter?: HeapMeter, log = false): unknown {
    return decodeFromGuest(
      tape,
      {
        buffer,
        hostFunction: (id) => this.#run.functions.get(id),
        promise: (id) =>
          new Promise((resolve, reject) => {
            this.#guestPromises.set(id, { resolve, reject });
          }),
      },
      meter,
      log,
    );
  }

  /** Reads a guest error through the guest's own describer (no guest code runs on the host). */
  describe(errorHandle: QuickJSHandle): Described {
    const ctx = this.#ctx;
    try {
      const json = this.#limits.enter(() => ctx.callFunction(this.#core.describeError, ctx.undefined, [errorHandle]));
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
      if (this.#limits.faulted) throw fault;
      return { thrown: null };
    }
  }

  /** The marshaling half, booted with the instance (see guest/marshal.ts). */
  #marshal(): MarshalHandles {
    return this.#booted.marshal;
  }
}

const noSide = {
  buffer: () => new ArrayBuffer(0),
  hostFunction: () => undefined,
  promise: () => Promise.resolve(),
};

/** NUL and lone surrogates do not survive the FFI's UTF-8 C strings (see `toHost`). */
const UNSAFE_FOR_C_STRINGS = /[\0\uD800-\uDFFF]/;

/** A character past ASCII. */
const PAST_ASCII = /[\u0080-\uffff]/;

/** What {@link GuestBridge.#primitive} answers for a value that is not a primitive it reads. */
const NOT_PRIMITIVE = Symbol("not a primitive");

/** A primitive as a handle, made without the guest's decoder; `undefined` for what needs it. */
function primitiveHandle(ctx: QuickJSContext, value: unknown): QuickJSHandle | undefined {
  switch (typeof value) {
    case "number":
      return ctx.newNumber(value);
    case "string":
      return UNSAFE_FOR_C_STRINGS.test(value) ? undefined : ctx.newString(value);
    case "boolean":
      return value ? ctx.true : ctx.false;
    case "undefined":
      return ctx.undefined;
    case "bigint":
      return ctx.newBigInt(value);
  }
  return value === null ? ctx.null : undefined;
}

/** The tapes of primitives and of an empty array (see values/tape.ts) become handles without the guest's decoder. */
function tapeHandle(ctx: QuickJSContext, tape: string): QuickJSHandle | undefined {
  if (tape === '["a",0,[]]') return ctx.newArray();
  if (!tape.startsWith("[")) return primitiveHandle(ctx, JSON.parse(tape));
  if (tape === '["u"]') return ctx.undefined;
  if (tape.startsWith('["b",')) return ctx.newBigInt(BigInt(JSON.parse(tape)[1] as string));
  if (!tape.startsWith('["n",')) return undefined;
  const number = JSON.parse(tape)[1] as string;
  return ctx.newNumber(number === "-0" ? -0 : Number(number));
}

/** What a host value that is not a primitive costs to cross into the guest: its tape and its buffers' bytes. */
export function objectCrossingFuel(encoded: Tape): number {
  let bytes = 0;
  for (const item of encoded.side) if (item.kind === "buffer") bytes += item.bytes.byteLength;
  return tapeFuel(encoded.tape) + bufferFuel(bytes);
}
