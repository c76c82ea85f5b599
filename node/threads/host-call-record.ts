/**
 * The host calls of a run attempted on the caller's thread (in-thread-first.ts), recorded so that its re-run on a
 * worker is answered from the record instead of calling the host again: each host function is called once per call the
 * guest made. The attempt's table numbers the caller's functions as the run's does, and the guest's calls go through
 * recorders; the re-run's first calls are checked against the record, function and arguments, and answered with what
 * the attempt's guest got: an object, or an error the call threw or its answer's crossing did, as its encoding crossed
 * then, so neither a change the host made to it since nor a getter read again reaches the re-run. Before each answer the re-run's table numbers
 * the functions the attempt's had numbered by then (those a call answered, those a promise settled with), in the same
 * order, so that an answer names each function as the attempt's guest knew it.
 * @module
 */
import { encodeForGuest, FunctionTable, type Tape } from "../../src/core/runner-port.js";

type HostFunction = (...args: unknown[]) => unknown;

/** How a re-run that went its own way fails. */
export const UNREPEATED = "The run did not repeat on a worker thread what it did on the caller's thread";

/**
 * One call: the function's number, its arguments as {@link argumentsOf} keeps them, and what the guest got: a
 * primitive or a promise as the host gave it; an object, or an error (`ok` false), as its encoding crossed to the guest
 * (the host may change the object, or its getters answer otherwise, before the re-run reaches the call); `thrown` only
 * until the error's encoding is told.
 */
interface RecordedCall {
  fn: number;
  args: Arguments;
  outcome: { returned: unknown } | { thrown: unknown } | { encoded: Tape; ok: boolean };
  /**
   * How many functions the table had numbered when the guest got the call's answer (as the record keeps it): the
   * re-run's table numbers them first, alike.
   */
  numbered: number;
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
  /** The call whose answer crosses next, when it is not a primitive or a promise (see {@link answered}, {@link threw}). */
  #answering: RecordedCall | undefined;

  /** Numbers `functions` as `functions` numbers them; each call made through `calling`. */
  constructor(functions: FunctionTable, calling: <T>(call: () => T) => T) {
    super();
    this.#calling = calling;
    for (let id = 0; id < functions.size; id++) this.idOf(functions.get(id) as HostFunction);
  }

  override answered(answer: Tape): void {
    this.#crossed(answer, true);
  }

  /** The call threw, or its answer could not cross: the guest got the error as it crossed (see the module comment). */
  override threw(error: Tape): void {
    this.#crossed(error, false);
  }

  /** Keeps what the guest got of the call {@link #answering}; nothing for others (a sink's, a log listener's). */
  #crossed(answer: Tape, ok: boolean): void {
    const call = this.#answering;
    this.#answering = undefined;
    if (call === undefined) return;
    // Its buffers copied: the host may write to them after.
    const side = answer.side.map((item) => (item.kind === "buffer" ? { ...item, bytes: item.bytes.slice() } : item));
    call.outcome = { encoded: { tape: answer.tape, side }, ok };
    call.numbered = this.size;
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
      const call: RecordedCall = {
        fn: id,
        args: argumentsOf(args),
        outcome: { returned: undefined },
        numbered: this.size,
      };
      this.calls.push(call);
      this.#answering = undefined;
      try {
        const returned = this.#calling(() => Reflect.apply(fn, undefined, args));
        call.outcome = { returned };
        if (returned instanceof Promise) this.settling.watch(this.calls.length - 1, returned);
        else if (!isPrimitive(returned)) this.#answering = call;
        return returned;
      } catch (thrown) {
        call.outcome = { thrown };
        this.#answering = call;
        throw thrown;
      }
    };
  }
}

/**
 * The attempt's calls as the re-run meets them again: {@link answer} gives the next call's recorded outcome once
 * checked, until the record is spent.
 */
export class Replay {
  /** The attempt's table, as it numbered the functions (see {@link answer}). */
  readonly numbering: FunctionTable;
  readonly #calls: (RecordedCall | undefined)[];
  readonly #settling: SettleOrder;
  #next = 0;

  constructor(record: HostCallRecord) {
    this.numbering = record;
    this.#calls = record.calls;
    this.#settling = record.settling;
  }

  /** Whether recorded calls are left to answer. */
  get pending(): boolean {
    return this.#next < this.#calls.length;
  }

  /**
   * The recorded outcome of the re-run's next call, function `fn` with `args`, and how many functions of
   * {@link numbering} the re-run's table must number alike before it answers; a message saying how the re-run went its
   * own way when it is not the call recorded. Each answer is dropped from the record once given.
   */
  answer(fn: number, args: unknown[]): { outcome: RecordedCall["outcome"]; numbered: number } | { mismatch: string } {
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
    const { outcome, numbered } = call;
    if ("returned" in outcome && outcome.returned instanceof Promise) {
      return { outcome: { returned: this.#settling.gate(at) }, numbered };
    }
    return { outcome, numbered };
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

/** `args` as the record keeps them: primitives as they are; anything more encoded, its buffers copied. */
function argumentsOf(args: unknown[]): Arguments {
  if (args.every(isPrimitive)) return { primitives: args };
  try {
    const encoded = encodeForGuest(args, new FunctionTable());
    const buffers: Uint8Array[] = [];
    for (const item of encoded.side) if (item.kind === "buffer") buffers.push(item.bytes.slice());
    return { tape: encoded.tape, buffers };
  } catch (error) {
    // What the host's encoder refuses (a guest promise's value, say) compares by the refusal.
    return { tape: `refused: ${String(error)}`, buffers: [] };
  }
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
