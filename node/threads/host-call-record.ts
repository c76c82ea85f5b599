/**
 * The host calls of a run attempted on the caller's thread (in-thread-first.ts), recorded so that its re-run on a
 * worker is answered from the record instead of calling the host again: each host function is called once per call the
 * guest made. The attempt's table numbers the caller's functions as the run's does (the functions a call returns to
 * the guest included, in the order the guest got them, as the re-run numbers them), and the guest's calls go through
 * recorders; the re-run's first calls are checked against the record, function and arguments, and answered with what
 * the attempt's guest got.
 * @module
 */
import { types } from "node:util";
import { encodeForGuest, FunctionTable, type Tape } from "../../src/core/runner-port.js";

type HostFunction = (...args: unknown[]) => unknown;

/** How a re-run that went its own way fails. */
export const UNREPEATED = "The run did not repeat on a worker thread what it did on the caller's thread";

/**
 * One call: the function's number, its arguments as {@link argumentsOf} keeps them, and what the guest got; for an
 * answer encoded for the guest and not copied (see {@link keepAnswer}), also its encoding as the guest got it (the host
 * may change an object it returned before the re-run reaches the call).
 */
interface RecordedCall {
  fn: number;
  args: Arguments;
  outcome: { returned: unknown } | { thrown: unknown };
  answered?: Arguments;
  /** Whether the answer is a copy kept as the guest got it. */
  copied?: boolean;
}

/** Arguments as the record keeps them: primitives as they are, anything more encoded (see {@link argumentsOf}). */
type Arguments = { primitives: unknown[] } | { tape: string; buffers: Uint8Array[] };

/**
 * The attempt's function table: the caller's functions, numbered alike, each called by the guest through a recorder
 * (the functions themselves cross to the host, as arguments, and to the guest).
 */
export class HostCallRecord extends FunctionTable {
  /** The calls so far, in order. */
  readonly calls: RecordedCall[] = [];
  /** The order in which the promises the calls returned settle. */
  readonly settling = new SettleOrder();
  /** Each function's recorder, by number, made at its first call. */
  readonly #recorders: HostFunction[] = [];
  /** Calls a function for the guest (as the attempt's: see `Attempted` in in-thread-first.ts). */
  readonly #calling: <T>(call: () => T) => T;

  /** Numbers `functions` as `functions` numbers them; each call made through `calling`. */
  constructor(functions: FunctionTable, calling: <T>(call: () => T) => T) {
    super();
    this.#calling = calling;
    for (let id = 0; id < functions.size; id++) this.idOf(functions.get(id) as HostFunction);
  }

  override answered(answer: Tape): void {
    const call = this.calls.at(-1);
    if (call !== undefined && !call.copied) call.answered = keptOf(answer);
  }

  override callee(id: number): HostFunction | undefined {
    const fn = this.get(id);
    if (fn === undefined) return undefined;
    this.#recorders[id] ??= this.#recorderOf(fn, id);
    return this.#recorders[id];
  }

  /** Calls `fn` (numbered `id`) for the guest and records the call. */
  #recorderOf(fn: HostFunction, id: number): HostFunction {
    return (...args) => {
      // Kept before the call: the host may change what it was given.
      const call: RecordedCall = { fn: id, args: argumentsOf(args), outcome: { returned: undefined } };
      this.calls.push(call);
      try {
        const returned = this.#calling(() => Reflect.apply(fn, undefined, args));
        call.outcome = { returned };
        if (returned instanceof Promise) this.settling.watch(this.calls.length - 1, returned);
        else if (!isPrimitive(returned) && typeof returned !== "function") keepAnswer(call, returned);
        return returned;
      } catch (thrown) {
        call.outcome = { thrown };
        throw thrown;
      }
    };
  }
}

/**
 * A recorded call's outcome for the re-run; with `check` when the answer is the host's own object, not a copy: whether
 * its encoding for the re-run's guest is what the attempt's guest got.
 */
type ReplayedOutcome = RecordedCall["outcome"] & { check?: (tape: string, buffers: ArrayBuffer[]) => boolean };

/** What the host changed between the attempt and its re-run. */
export function changedAnswer(call: number): string {
  return `${UNREPEATED}: what the host returned to its call ${call} changed since; the host was not called again`;
}

/**
 * The attempt's calls as the re-run meets them again: {@link answer} gives the next call's recorded outcome once
 * checked, until the record is spent.
 */
export class Replay {
  readonly #calls: (RecordedCall | undefined)[];
  readonly #settling: SettleOrder;
  #next = 0;

  constructor({ calls, settling }: HostCallRecord) {
    this.#calls = calls;
    this.#settling = settling;
  }

  /** How many of the recorded calls were answered. */
  get answered(): number {
    return this.#next;
  }

  /** Whether recorded calls are left to answer. */
  get pending(): boolean {
    return this.#next < this.#calls.length;
  }

  /**
   * The recorded outcome of the re-run's next call, function `fn` with `args`; a message saying how the re-run went
   * its own way when it is not the call recorded. Each answer is dropped from the record once given.
   */
  answer(fn: number, args: unknown[]): ReplayedOutcome | { mismatch: string } {
    const at = this.#next++;
    const call = this.#calls[at] as RecordedCall;
    this.#calls[at] = undefined;
    if (call.fn !== fn || !sameArguments(call.args, argumentsOf(args))) {
      return {
        mismatch:
          `${UNREPEATED}: its host call ${at + 1} was of function ${call.fn} there and of function ${fn} here, ` +
          "or with other arguments; the host was not called again",
      };
    }
    const { outcome, answered } = call;
    if ("returned" in outcome && outcome.returned instanceof Promise) return { returned: this.#settling.gate(at) };
    if (answered === undefined) return outcome;
    const check = (tape: string, buffers: ArrayBuffer[]) =>
      sameArguments(answered, { tape, buffers: buffers.map((buffer) => new Uint8Array(buffer)) });
    return { ...outcome, check };
  }
}

/**
 * The promises an attempt's calls returned, as its re-run gets them: each settles as the host's did, and in the order
 * the host's settled. The re-run hands them to the worker later than the host settled some of them, and a settled
 * promise handed over later would reach the guest before one that settled first.
 */
class SettleOrder {
  /** The calls whose promises settled, in the order they did, and how each settled. */
  readonly #order: number[] = [];
  readonly #outcomes = new Map<number, { ok: boolean; value: unknown }>();
  /** The re-run's promises not settled yet, by call. */
  readonly #gates = new Map<number, { resolve(value: unknown): void; reject(reason: unknown): void }>();
  /** How many of {@link #order} the re-run's promises settled. */
  #released = 0;

  /** Notes when call number `call`'s `promise` settles. */
  watch(call: number, promise: Promise<unknown>): void {
    const settled = (ok: boolean) => (value: unknown) => {
      this.#order.push(call);
      this.#outcomes.set(call, { ok, value });
      this.#release();
    };
    promise.then(settled(true), settled(false));
  }

  /**
   * The re-run's promise for call number `call`: it settles in the host's order, after a microtask, so that the
   * promises the re-run was handed meanwhile have their handlers too.
   */
  gate(call: number): Promise<unknown> {
    const promise = new Promise((resolve, reject) => this.#gates.set(call, { resolve, reject }));
    queueMicrotask(() => this.#release());
    return promise;
  }

  /** Settles the re-run's promises in the host's order, as far as the re-run has been handed them. */
  #release(): void {
    for (;;) {
      const call = this.#order[this.#released];
      const gate = call === undefined ? undefined : this.#gates.get(call);
      if (call === undefined || gate === undefined) return;
      const { ok, value } = this.#outcomes.get(call) as { ok: boolean; value: unknown };
      this.#gates.delete(call);
      this.#outcomes.delete(call);
      this.#released++;
      if (ok) gate.resolve(value);
      else gate.reject(value);
    }
  }
}

/**
 * Keeps what `call` returned as the guest got it, when reading it again runs none of the host's code (plain data:
 * no getter, proxy or function in it): a copy the re-run is answered with, when the copy crosses to the guest as the
 * answer did, else the answer's encoding, which the re-run's answer must still equal. An answer that is more than
 * plain data is read again by the re-run's crossing, as it would be by a run on a worker.
 */
function keepAnswer(call: RecordedCall, returned: unknown): void {
  if (!isPlainData(returned, new Set())) return;
  let copy: unknown;
  try {
    copy = structuredClone(returned);
  } catch {
    return;
  }
  if (!sameArguments(argumentsOf([returned]), argumentsOf([copy]))) return;
  call.outcome = { returned: copy };
  call.copied = true;
}

/** Whether reading `value` whole (its own properties, entries and elements) runs none of the host's code. */
function isPlainData(value: unknown, seen: Set<object>): boolean {
  if (isPrimitive(value)) return true;
  if (typeof value === "function" || types.isProxy(value)) return false;
  const object = value as object;
  if (seen.has(object)) return true;
  seen.add(object);
  if (ArrayBuffer.isView(object) || types.isAnyArrayBuffer(object) || types.isDate(object)) return true;
  if (types.isMap(object) || types.isSet(object)) {
    const entries = types.isMap(object)
      ? [...Map.prototype.entries.call(object)].flat()
      : [...Set.prototype.values.call(object)];
    if (!entries.every((entry) => isPlainData(entry, seen))) return false;
  }
  for (const key of Reflect.ownKeys(object)) {
    const property = Reflect.getOwnPropertyDescriptor(object, key) as PropertyDescriptor;
    if (!("value" in property) || !isPlainData(property.value, seen)) return false;
  }
  return true;
}

/** `args` as the record keeps them: primitives as they are; anything more encoded, its buffers copied. */
function argumentsOf(args: unknown[]): Arguments {
  if (args.every(isPrimitive)) return { primitives: args };
  try {
    return keptOf(encodeForGuest(args, new FunctionTable()));
  } catch (error) {
    // What the host's encoder refuses (a guest promise's value, say) compares by the refusal.
    return { tape: `refused: ${String(error)}`, buffers: [] };
  }
}

/** An encoding as the record keeps it: its text, and copies of its buffers. */
function keptOf(encoded: Tape): Arguments {
  const buffers: Uint8Array[] = [];
  for (const item of encoded.side) if (item.kind === "buffer") buffers.push(item.bytes.slice());
  return { tape: encoded.tape, buffers };
}

function isPrimitive(value: unknown): boolean {
  return value === null || (typeof value !== "object" && typeof value !== "function");
}

function sameArguments(a: Arguments, b: Arguments): boolean {
  if ("primitives" in a || "primitives" in b) {
    if (!("primitives" in a && "primitives" in b) || a.primitives.length !== b.primitives.length) return false;
    return a.primitives.every((value, i) => Object.is(value, b.primitives[i]));
  }
  if (a.tape !== b.tape || a.buffers.length !== b.buffers.length) return false;
  return a.buffers.every((bytes, i) => equalBytes(bytes, b.buffers[i] as Uint8Array));
}

function equalBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && Buffer.compare(a, b) === 0;
}
