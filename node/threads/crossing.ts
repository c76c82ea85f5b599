/**
 * One run's values on the caller's thread, as they cross to and from its worker: host values encoded here by the
 * core's encoder with the run's `FunctionTable`, their promises numbered and settled by a later message; guest values
 * decoded here from the guest's own tapes, their host functions looked up in the same table and their promises
 * settled when the guest settles them. The worker passes both kinds of tape through undecoded, so a value arrives
 * exactly as the in-thread core would hand it over.
 * @module
 */
import { decodeFromGuest, encodeForGuest, type FunctionTable, type Tape } from "../../src/core/runner-port.js";

/** Posts the settlement of the caller's promise number `key`. */
type SendSettle = (key: number, ok: boolean, value: Tape<ArrayBuffer | number>) => void;

export class Crossing {
  readonly #functions: FunctionTable;
  readonly #sendSettle: SendSettle;
  #nextKey = 0;
  /** How many of this run's functions are known numbered as another run's table numbers them (see numberedAs). */
  #alike = 0;
  /** Host promises standing for the guest's promises, by the guest's numbers. */
  readonly #guestPromises = new Map<number, { resolve(value: unknown): void; reject(reason: unknown): void }>();

  /** `functions` numbers the host functions of the run's values (see `PreparedRun`). */
  constructor(functions: FunctionTable, sendSettle: SendSettle) {
    this.#functions = functions;
    this.#sendSettle = sendSettle;
  }

  /** The host function numbered `id`. */
  functionOf(id: number): ((...args: unknown[]) => unknown) | undefined {
    return this.#functions.get(id);
  }

  /** An encoding of the core's as it crosses; its promises post their outcomes when they settle. */
  cross(encoded: Tape): Tape<ArrayBuffer | number> {
    const side = encoded.side.map((item) =>
      item.kind === "buffer" ? item.bytes.buffer : this.#handOver(item.promise),
    );
    return { tape: encoded.tape, side: side as (ArrayBuffer | number)[] };
  }

  /** Encodes `value`; throws `SerializationError` as the core does for what cannot cross. */
  encode(value: unknown): Tape<ArrayBuffer | number> {
    return this.cross(encodeForGuest(value, this.#functions));
  }

  /**
   * Numbers the first `count` functions of `table`, another run's (node/threads/host-call-record.ts), as it numbered
   * them, so that a tape encoded with it names the same functions here; `false` when this run's table numbered
   * others.
   */
  numberedAs(table: FunctionTable, count: number): boolean {
    for (let id = this.#alike; id < count; id++) {
      const fn = table.get(id);
      if (fn === undefined || this.#functions.idOf(fn) !== id) return false;
    }
    this.#alike = Math.max(this.#alike, count);
    return true;
  }

  /** A thrown value as the core hands it to the guest: itself when it can cross, else its string. */
  encodeThrown(error: unknown): Tape<ArrayBuffer | number> {
    try {
      return this.encode(error);
    } catch {
      return this.encode(String(error));
    }
  }

  /** A guest value (`log`: console arguments); throws `SerializationError` as the core's decoding does. */
  decode(guest: Tape<ArrayBuffer>, log = false): unknown {
    return decodeFromGuest(
      guest.tape,
      {
        buffer: (index) => guest.side[index] as ArrayBuffer,
        hostFunction: (id) => this.#functions.get(id),
        promise: (id) =>
          new Promise((resolve, reject) => {
            this.#guestPromises.set(id, { resolve, reject });
          }),
      },
      undefined,
      log,
    );
  }

  /** The guest settled its promise number `id` with `value`; throws what decoding it throws. */
  settle(id: number, ok: boolean, value: Tape<ArrayBuffer>): void {
    const pending = this.#guestPromises.get(id);
    this.#guestPromises.delete(id);
    const settled = this.decode(value);
    if (ok) pending?.resolve(settled);
    else pending?.reject(settled);
  }

  /** A promise of the caller's, numbered; its outcome is posted when it settles (a value that cannot cross rejects). */
  #handOver(promise: Promise<unknown>): number {
    const key = this.#nextKey++;
    promise.then(
      (value) => {
        let crossed: Tape<ArrayBuffer | number>;
        try {
          crossed = this.encode(value);
        } catch (error) {
          this.#sendSettle(key, false, this.encodeThrown(error));
          return;
        }
        this.#sendSettle(key, true, crossed);
      },
      (reason: unknown) => this.#sendSettle(key, false, this.encodeThrown(reason)),
    );
    return key;
  }
}
