/**
 * One run's values between two threads, as the core's tapes (src/values/tape.ts): each side encodes with
 * `encodeForGuest` and decodes with `decodeFromGuest`, so a value arrives exactly as the in-thread core would hand
 * it over. Host functions live on the caller's thread; the worker holds stand-ins numbered as the caller's
 * `FunctionTable` numbers them. A promise crosses as a key and is settled by a later message. The host's encoder
 * never sends an error's stack (the host's stacks never reach the guest); on the way from the worker, whose errors
 * all come from the guest, stacks are put back, as they hold the guest's user frames only.
 * @module
 */
import { encodeForGuest, FunctionTable, type HostFunction } from "../../src/values/to-guest.js";
import { decodeFromGuest } from "../../src/values/to-host.js";
import type { Crossed, FunctionShape } from "./protocol.js";

/** Posts the settlement of a promise this side handed over. */
export type SendSettle = (key: number, ok: boolean, value: Crossed) => void;
/** Makes the worker's stand-in for the caller's host function number `id`. */
export type MakeStub = (id: number, shape: FunctionShape) => HostFunction;

export class Crossing {
  /** Host functions (the caller's thread) or their stand-ins (the worker), numbered alike on both sides. */
  readonly #functions = new FunctionTable();
  /** How many functions both sides know. */
  #shared = 0;
  #nextKey = 0;
  readonly #pending = new Map<number, { resolve(value: unknown): void; reject(reason: unknown): void }>();
  readonly #sendSettle: SendSettle;
  /** The worker's side: it makes stand-ins and sends stacks. */
  readonly #makeStub: MakeStub | undefined;

  /** `makeStub` on the worker only: the caller's thread never receives functions it does not hold. */
  constructor(sendSettle: SendSettle, makeStub?: MakeStub) {
    this.#sendSettle = sendSettle;
    this.#makeStub = makeStub;
  }

  /** The host function numbered `id`. */
  functionOf(id: number): HostFunction | undefined {
    return this.#functions.get(id);
  }

  /** Encodes `value`; throws `SerializationError` as the core does for what cannot cross. */
  encode(value: unknown): Crossed {
    const encoded = encodeForGuest(value, this.#functions, { json: false });
    const { side } = encoded;
    const tape =
      this.#makeStub !== undefined && encoded.tape.includes('["e",') ? withStacks(encoded.tape, value) : encoded.tape;
    const crossedSide = side.map((item) => (item.kind === "buffer" ? item.bytes.buffer : this.#handOver(item.promise)));
    const functions: FunctionShape[] = [];
    for (let fn = this.#functions.get(this.#shared); fn !== undefined; fn = this.#functions.get(++this.#shared)) {
      functions.push({ name: fn.name, length: fn.length });
    }
    return { tape, side: crossedSide as (ArrayBuffer | number)[], functions };
  }

  /** A thrown value as the core hands it to the guest: itself when it can cross, else its string. */
  encodeThrown(error: unknown): Crossed {
    try {
      return this.encode(error);
    } catch {
      return this.encode(String(error));
    }
  }

  decode(crossed: Crossed): unknown {
    for (const shape of crossed.functions) {
      if (this.#makeStub === undefined) throw new Error("Host functions only cross from the caller's thread");
      this.#functions.idOf(this.#makeStub(this.#shared++, shape));
    }
    return decodeFromGuest(crossed.tape, {
      buffer: (index) => crossed.side[index] as ArrayBuffer,
      hostFunction: (id) => this.#functions.get(id),
      promise: (index) => {
        const promise = new Promise((resolve, reject) => {
          this.#pending.set(crossed.side[index] as number, { resolve, reject });
        });
        // The worker's stand-ins go to the core, which awaits them unless the run ended first: a rejection nobody
        // awaits must not end the worker. On the caller's thread they are the caller's, as in-thread.
        if (this.#makeStub !== undefined) promise.catch(() => {});
        return promise;
      },
    });
  }

  /** The other side's promise number `key` settled. */
  settle(key: number, ok: boolean, value: Crossed): void {
    const pending = this.#pending.get(key);
    this.#pending.delete(key);
    let settled: unknown;
    try {
      settled = this.decode(value);
    } catch (error) {
      pending?.reject(error);
      return;
    }
    if (ok) pending?.resolve(settled);
    else pending?.reject(settled);
  }

  /** A promise of this side, numbered; its outcome is posted when it settles (a value that cannot cross rejects). */
  #handOver(promise: Promise<unknown>): number {
    const key = this.#nextKey++;
    promise.then(
      (value) => {
        let crossed: Crossed;
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

type Node = null | boolean | number | string | Node[];

/**
 * `tape` (the encoding of `value`) with the stacks of `value`'s errors in place of the encoder's `""`: the tape is
 * walked beside the value, which has the same shape (references and binary data have no errors below them).
 */
function withStacks(tape: string, value: unknown): string {
  const walk = (node: Node, at: unknown): void => {
    if (!Array.isArray(node)) return;
    const [tag, , list] = node;
    const items = (Array.isArray(list) ? list : []) as Node[];
    const record = at as Record<string, unknown>;
    const walkAll = (nodes: Node[], values: unknown[]) => {
      for (const [i, item] of nodes.entries()) walk(item, values[i]);
    };
    const walkPairs = (pairs: Node[]) => {
      for (let i = 0; i < pairs.length; i += 2) walk(pairs[i + 1] as Node, record[String(pairs[i])]);
    };
    switch (tag) {
      case "a":
        walkAll(items, at as unknown[]);
        break;
      case "A":
        walkPairs(node[3] as Node[]);
        break;
      case "o":
        walkPairs(items);
        break;
      case "m":
        walkAll(items, [...(at as Map<unknown, unknown>)].flat());
        break;
      case "s":
        walkAll(items, [...(at as Set<unknown>)]);
        break;
      case "e": {
        const stack = (at as Error).stack;
        if (typeof stack === "string") node[4] = stack;
        if (node.length > 5) walk(node[5] as Node, (at as Error).cause);
      }
    }
  };
  const root = JSON.parse(tape) as Node;
  walk(root, value);
  return JSON.stringify(root);
}
