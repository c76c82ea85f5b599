/**
 * A worker's synchronous calls to the caller's thread through shared memory, one at a time: the worker writes the
 * call into the buffer, publishes its number and blocks; the caller's thread reads the call, runs it, writes the
 * answer in its place and publishes the number answered. No message crosses for a call that fits: the caller's
 * thread finds it by watching the buffer (see thread.ts), and the worker finds the answer there. A call or an answer
 * whose texts do not fit in {@link PAYLOAD_BYTES}, or that carries buffers, goes as a message on the channel's port
 * instead, the buffer saying so.
 *
 * Each side reads only what the other published, within lengths it checks against the buffer, and clears what it
 * read; calls are numbered, and an answer is taken only for its own call, so nothing of one call (or one run)
 * reaches the next.
 * @module
 */
import { type MessagePort, receiveMessageOnPort } from "node:worker_threads";
import type { Call, CallOutcome, HostRequest } from "./protocol.js";

/** Bytes of the buffer's payload (a call's or an answer's two texts, as UTF-16). */
export const PAYLOAD_BYTES = 256 * 1024;
const HEADER_BYTES = 32;
/** Int32 slot: the number of the latest call the worker published. */
const REQUESTED = 0;
/** Int32 slot: the number of the latest call the caller's thread answered; the worker waits on it. */
const ANSWERED = 1;
/** Int32 slot: 1 while the caller's thread watches for the next call, so the worker need not wake it. */
const WATCHING = 2;
/** Int32 slots: UTF-16 units of the head and of the tape in the payload; a head of -1: they went by message. */
const HEAD_UNITS = 3;
const TAPE_UNITS = 4;
const BY_MESSAGE = -1;

/** What crosses in the payload: a head (JSON of the small fields) and a tape, as they are. */
interface Parcel {
  head: string;
  tape: string;
}

/** A call or an answer that went by message, with its number. */
type Posted<T> = T & { call: number };

/** One worker's call channel, as either thread sees it (see the module comment). */
export class CallChannel {
  readonly buffer: SharedArrayBuffer;
  readonly #port: MessagePort;
  readonly #slots: Int32Array;
  readonly #payload: Buffer;
  /** The worker's side: the call whose answer it has not read (it gave up on it mid-way), 0 when none. */
  #unread = 0;

  /** `port` is this thread's end of the channel's message port; a new `buffer` is made where none is given. */
  constructor(port: MessagePort, buffer = new SharedArrayBuffer(HEADER_BYTES + PAYLOAD_BYTES)) {
    this.buffer = buffer;
    this.#port = port;
    this.#slots = new Int32Array(buffer, 0, 5);
    this.#payload = Buffer.from(buffer, HEADER_BYTES, PAYLOAD_BYTES);
  }

  /**
   * The worker's side: publishes call `number`, calling `wake` unless the caller's thread watches for it. The previous
   * call is answered first: a call the worker gave up on mid-way (its stack ran out) is answered all the same, and its
   * answer dropped unread.
   */
  publish(number: number, call: Call, wake: () => void): void {
    if (this.#unread !== 0) {
      if (Atomics.load(this.#slots, WATCHING) === 0) wake();
      this.awaitAnswer(this.#unread, 0);
      this.#unread = 0;
      this.#read();
    }
    const { run, request, value } = call;
    const parcel = value.buffers.length === 0 ? { head: JSON.stringify([run, request]), tape: value.tape } : undefined;
    if (!this.#write(parcel)) this.#port.postMessage({ call: number, ...call } satisfies Posted<Call>);
    this.#unread = number;
    Atomics.store(this.#slots, REQUESTED, number);
    if (Atomics.load(this.#slots, WATCHING) === 0) wake();
  }

  /** The worker's side: blocks until call `number` is answered, spinning `spinMs` before it sleeps. */
  awaitAnswer(number: number, spinMs: number): void {
    const slots = this.#slots;
    const spinUntil = performance.now() + spinMs;
    while (Atomics.load(slots, ANSWERED) !== number && performance.now() < spinUntil);
    for (let answered = Atomics.load(slots, ANSWERED); answered !== number; answered = Atomics.load(slots, ANSWERED)) {
      Atomics.wait(slots, ANSWERED, answered);
    }
  }

  /** The worker's side: the answer to call `number`, which {@link awaitAnswer} saw published. */
  answerTo(number: number): CallOutcome {
    this.#unread = 0;
    const parcel = this.#read();
    if (parcel === undefined) return this.#posted<CallOutcome>(number);
    const head = JSON.parse(parcel.head) as { fault: string } | { ok: boolean; side: number[] };
    return "fault" in head ? head : { ok: head.ok, value: { tape: parcel.tape, side: head.side } };
  }

  /** The caller's side: the number of the call waiting for its answer, 0 when none. */
  pending(): number {
    const requested = Atomics.load(this.#slots, REQUESTED);
    return requested === Atomics.load(this.#slots, ANSWERED) ? 0 : requested;
  }

  /** The caller's side: call `number`, which {@link pending} named. Throws when the worker wrote what is no call. */
  call(number: number): Call {
    const parcel = this.#read();
    if (parcel === undefined) return this.#posted<Call>(number);
    const [run, request] = JSON.parse(parcel.head) as [number, HostRequest];
    return { run, request, value: { tape: parcel.tape, buffers: [] } };
  }

  /** The caller's side: answers call `number` and wakes the worker. */
  answer(number: number, outcome: CallOutcome): void {
    let parcel: Parcel | undefined = { head: JSON.stringify(outcome), tape: "" };
    if (!("fault" in outcome)) {
      const { ok, value } = outcome;
      const buffers = value.side.some((item) => typeof item !== "number");
      parcel = buffers ? undefined : { head: JSON.stringify({ ok, side: value.side }), tape: value.tape };
    }
    if (!this.#write(parcel)) this.#port.postMessage({ call: number, ...outcome } satisfies Posted<CallOutcome>);
    Atomics.store(this.#slots, ANSWERED, number);
    Atomics.notify(this.#slots, ANSWERED);
  }

  /** The caller's side: whether it watches for the next call (the worker then does not wake it). */
  watch(watching: boolean): void {
    Atomics.store(this.#slots, WATCHING, watching ? 1 : 0);
  }

  /** Writes `parcel` into the payload; `false`, the buffer saying so, when there is none or it does not fit. */
  #write(parcel: Parcel | undefined): boolean {
    const slots = this.#slots;
    if (parcel === undefined || 2 * (parcel.head.length + parcel.tape.length) > PAYLOAD_BYTES) {
      slots[HEAD_UNITS] = BY_MESSAGE;
      slots[TAPE_UNITS] = 0;
      return false;
    }
    // UTF-16 as it is: the tapes' lone surrogates survive, which UTF-8 would replace.
    const headBytes = this.#payload.write(parcel.head, 0, "utf16le");
    this.#payload.write(parcel.tape, headBytes, "utf16le");
    slots[HEAD_UNITS] = parcel.head.length;
    slots[TAPE_UNITS] = parcel.tape.length;
    return true;
  }

  /** The parcel in the payload, which is cleared; `undefined` when it went by message. */
  #read(): Parcel | undefined {
    const slots = this.#slots;
    const head = slots[HEAD_UNITS] as number;
    const tape = slots[TAPE_UNITS] as number;
    if (head === BY_MESSAGE) return undefined;
    // The other thread wrote these: they are checked against the buffer before anything is read.
    if (!(head >= 0 && tape >= 0 && 2 * (head + tape) <= PAYLOAD_BYTES)) {
      throw new RangeError(`The call channel holds ${head} + ${tape} units: more than it can`);
    }
    const end = 2 * (head + tape);
    const parcel = {
      head: this.#payload.toString("utf16le", 0, 2 * head),
      tape: this.#payload.toString("utf16le", 2 * head, end),
    };
    this.#payload.fill(0, 0, end);
    slots[HEAD_UNITS] = 0;
    slots[TAPE_UNITS] = 0;
    return parcel;
  }

  /** What went by message for call `number`; messages of calls given up on are dropped. */
  #posted<T>(number: number): T {
    for (;;) {
      const received = receiveMessageOnPort(this.#port) as { message: Posted<T> } | undefined;
      if (received === undefined) throw new Error(`The call channel has no message for call ${number}`);
      const { call, ...rest } = received.message;
      if (call === number) return rest as T;
    }
  }
}
