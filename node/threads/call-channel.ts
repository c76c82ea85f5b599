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
/** Bytes before the payload: the `Int32Array` slots, then the `Float64Array` fields. */
export const HEADER_BYTES = 64;
/** Int32 slot: the number of the latest call the worker published. */
const REQUESTED = 0;
/** Int32 slot: the number of the latest call the caller's thread answered; the worker waits on it. */
const ANSWERED = 1;
/** Int32 slot: 1 while the caller's thread watches for the next call, so the worker need not wake it. */
const WATCHING = 2;
/** Int32 slots: UTF-16 units of the note and of the tape in the payload; a note of -1: they went by message. */
const NOTE_UNITS = 3;
const TAPE_UNITS = 4;
const BY_MESSAGE = -1;
/** Texts up to this many UTF-16 units are written unit by unit (see `CallChannel#writeText`). */
const SHORT_TEXT_UNITS = 64;
/**
 * The numbers of a call or an answer, as `Float64Array` fields (written as numbers, not as JSON, which took a
 * third of each call's crossing): a call's run, its operation ({@link OPS}) and the operation's number and flag;
 * an answer's kind ({@link VALUE} or {@link FAULT}) and whether the value was returned rather than thrown.
 */
const FIELDS = 4;
const OPS = ["call", "report", "log", "settle"] as const;
const VALUE = 0;
const FAULT = 1;

/** A call or an answer that went by message, with its number. */
type Posted<T> = T & { call: number };

/** One worker's call channel, as either thread sees it (see the module comment). */
export class CallChannel {
  readonly buffer: SharedArrayBuffer;
  readonly #port: MessagePort;
  readonly #slots: Int32Array;
  readonly #fields: Float64Array;
  readonly #payload: Buffer;
  /** The payload as UTF-16 units. */
  readonly #units: Uint16Array;
  /** The worker's side: the call whose answer it has not read (it gave up on it mid-way), 0 when none. */
  #unread = 0;

  /** `port` is this thread's end of the channel's message port; a new `buffer` is made where none is given. */
  constructor(port: MessagePort, buffer = new SharedArrayBuffer(HEADER_BYTES + PAYLOAD_BYTES)) {
    this.buffer = buffer;
    this.#port = port;
    this.#slots = new Int32Array(buffer, 0, 5);
    this.#fields = new Float64Array(buffer, 32, FIELDS);
    this.#payload = Buffer.from(buffer, HEADER_BYTES, PAYLOAD_BYTES);
    this.#units = new Uint16Array(buffer, HEADER_BYTES, PAYLOAD_BYTES / 2);
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
    const fields = this.#fields;
    fields[0] = run;
    fields[1] = OPS.indexOf(request.op);
    fields[2] = request.op === "call" ? request.fn : request.op === "settle" ? request.promise : 0;
    fields[3] = request.op === "settle" ? Number(request.ok) : request.op === "log" ? request.timestamp : 0;
    const note = request.op === "log" ? request.level : "";
    if (value.side.length > 0 || !this.#write(note, value.tape)) {
      this.#byMessage();
      this.#port.postMessage({ call: number, ...call } satisfies Posted<Call>);
    }
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
    const fields = this.#fields;
    const kind = fields[0];
    const ok = fields[1];
    const parcel = this.#read();
    if (parcel === undefined) return this.#posted<CallOutcome>(number);
    if (kind === FAULT) return { fault: parcel.note };
    const side = parcel.note === "" ? [] : (JSON.parse(parcel.note) as number[]);
    return { ok: ok === 1, value: { tape: parcel.tape, side } };
  }

  /** The caller's side: the number of the call waiting for its answer, 0 when none. */
  pending(): number {
    const requested = Atomics.load(this.#slots, REQUESTED);
    return requested === Atomics.load(this.#slots, ANSWERED) ? 0 : requested;
  }

  /** The caller's side: call `number`, which {@link pending} named. Throws when the worker wrote what is no call. */
  call(number: number): Call {
    const fields = this.#fields;
    const run = fields[0] as number;
    const op = fields[1] as number;
    const a = fields[2] as number;
    const b = fields[3] as number;
    const parcel = this.#read();
    if (parcel === undefined) return this.#posted<Call>(number);
    let request: HostRequest;
    switch (OPS[op]) {
      case "call":
        request = { op: "call", fn: a };
        break;
      case "report":
        request = { op: "report" };
        break;
      case "log":
        request = { op: "log", level: parcel.note as Extract<HostRequest, { op: "log" }>["level"], timestamp: b };
        break;
      case "settle":
        request = { op: "settle", promise: a, ok: b === 1 };
        break;
      default:
        throw new RangeError(`The call channel holds operation ${op}: no call`);
    }
    return { run, request, value: { tape: parcel.tape, side: [] } };
  }

  /** The caller's side: answers call `number` and wakes the worker. */
  answer(number: number, outcome: CallOutcome): void {
    const fields = this.#fields;
    let written: boolean;
    if ("fault" in outcome) {
      fields[0] = FAULT;
      written = this.#write(outcome.fault, "");
    } else {
      const { ok, value } = outcome;
      fields[0] = VALUE;
      fields[1] = Number(ok);
      const numbers = value.side.every((item) => typeof item === "number");
      written = numbers && this.#write(value.side.length === 0 ? "" : JSON.stringify(value.side), value.tape);
    }
    if (!written) {
      this.#byMessage();
      this.#port.postMessage({ call: number, ...outcome } satisfies Posted<CallOutcome>);
    }
    Atomics.store(this.#slots, ANSWERED, number);
    Atomics.notify(this.#slots, ANSWERED);
  }

  /** The caller's side: whether it watches for the next call (the worker then does not wake it). */
  watch(watching: boolean): void {
    Atomics.store(this.#slots, WATCHING, watching ? 1 : 0);
  }

  /** Writes the texts into the payload; `false` when they do not fit. */
  #write(note: string, tape: string): boolean {
    if (2 * (note.length + tape.length) > PAYLOAD_BYTES) return false;
    // UTF-16 as it is: the tapes' lone surrogates survive, which UTF-8 would replace.
    this.#writeText(note, 0);
    this.#writeText(tape, note.length);
    this.#slots[NOTE_UNITS] = note.length;
    this.#slots[TAPE_UNITS] = tape.length;
    return true;
  }

  /**
   * Writes `text` at UTF-16 unit `at` of the payload: a short one unit by unit, quicker than a call into the runtime,
   * which a call's note and tape mostly are.
   */
  #writeText(text: string, at: number): void {
    if (text.length > SHORT_TEXT_UNITS) {
      this.#payload.write(text, 2 * at, "utf16le");
      return;
    }
    const units = this.#units;
    for (let i = 0; i < text.length; i++) units[at + i] = text.charCodeAt(i);
  }

  /** Marks the call or the answer as gone by message; its fields are cleared. */
  #byMessage(): void {
    this.#fields.fill(0);
    this.#slots[NOTE_UNITS] = BY_MESSAGE;
    this.#slots[TAPE_UNITS] = 0;
  }

  /** The texts in the payload, which is cleared with the fields; `undefined` when they went by message. */
  #read(): { note: string; tape: string } | undefined {
    const slots = this.#slots;
    const note = slots[NOTE_UNITS] as number;
    const tape = slots[TAPE_UNITS] as number;
    this.#fields.fill(0);
    if (note === BY_MESSAGE) return undefined;
    // The other thread wrote these: they are checked against the buffer before anything is read.
    if (!(note >= 0 && tape >= 0 && 2 * (note + tape) <= PAYLOAD_BYTES)) {
      throw new RangeError(`The call channel holds ${note} + ${tape} units: more than it can`);
    }
    const end = 2 * (note + tape);
    const payload = this.#payload;
    const parcel = {
      note: note === 0 ? "" : payload.toString("utf16le", 0, 2 * note),
      tape: tape === 0 ? "" : payload.toString("utf16le", 2 * note, end),
    };
    this.#payload.fill(0, 0, end);
    slots[NOTE_UNITS] = 0;
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
