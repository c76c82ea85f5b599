/**
 * The kit the guest halves of the Web APIs share while they are installed, in order, at boot (src/web-apis.ts):
 * WebIDL's conversions, the way onto the global object, and the report of exceptions nobody can catch; each later
 * installer adds what those after it and the host use. The kit belongs to the boot: no user code can reach it.
 * Shipped as source text (see core.ts).
 * @module
 */
import type { HostCall } from "./core.js";

/** A DOMException constructor (WebIDL), as guest/web-events.ts defines it. */
type DOMExceptionConstructor = new (message?: string, name?: string) => Error;

export interface WebKit {
  /** Puts an interface or operation on the global object as WebIDL does: writable, configurable, not enumerable. */
  install(name: string, value: unknown): void;
  /** WebIDL's check of a call's required arguments: a `TypeError` naming `what` when fewer were passed. */
  required(count: number, needed: number, what: string): void;
  /** A WebIDL dictionary argument: `undefined` and `null` are empty, other non-objects a `TypeError`. */
  dictionary(value: unknown, what: string): Record<string, unknown>;
  /** WebIDL's USVString: ToString, then lone surrogates as U+FFFD. */
  usv(value: unknown): string;
  /** Ends the run with `error`: an exception thrown where nobody can catch it (a timer callback, an event listener). */
  reportException(error: unknown): void;
  /** The timer clock: milliseconds since the run began, as the host moved it (see guest/web-timers.ts). */
  now(): number;
  /**
   * Calls `callback` after `ms` milliseconds. A timer made with `keepsAlive: false` does not keep the run going after
   * its result (as `AbortSignal.timeout`'s, which Node does not let keep a process alive either).
   */
  setTimer(callback: () => void, ms: number, keepsAlive: boolean): number;
  /** For the host: the due time of the earliest timer (of those that keep the run alive, when asked), or -1. */
  nextTimer(keepingAlive: boolean): number;
  /** For the host: moves the timer clock to `now` and fires the earliest timer when it is due; whether it fired. */
  fireTimer(now: number): boolean;
  /** For the host: forgets every pending timer (a session's cell ends with the timers it left). */
  clearTimers(): void;
  DOMException: DOMExceptionConstructor;
  /** Adds an algorithm to run when `signal` aborts (the DOM's "add" for an AbortSignal); runs it at once if it has. */
  addAbortAlgorithm(signal: object, algorithm: () => void): void;
  /** A BufferSource's bytes as a view (no copy); a `TypeError` naming `what` for anything else. */
  bytesOf(source: unknown, what: string): Uint8Array;
  /** UTF-8 of a string, lone surrogates as U+FFFD. */
  utf8Encode(text: string): Uint8Array;
  /** UTF-8 decode without BOM, malformed sequences as U+FFFD. */
  utf8Decode(bytes: Uint8Array): string;
  /** A Blob's bytes (no copy) and type (guest/web-blob.ts); `undefined` for anything else. */
  blobOf(value: unknown): { bytes: Uint8Array; type: string } | undefined;
  /** A new Blob of `bytes` (kept, not copied) and `type`. */
  makeBlob(bytes: Uint8Array, type: string): object;
  /** A FormData as a multipart/form-data body and its content type; `undefined` for anything else. */
  multipart(value: unknown): { bytes: Uint8Array; type: string } | undefined;
  /** A body of `contentType` as a FormData (Fetch's `formData()`); a `TypeError` when it is not a form. */
  parseForm(bytes: Uint8Array, contentType: string): object;
  /**
   * `text` parsed as `new URL(text)` parses it (guest/web-url.ts), without making the object: its href and whether it
   * has credentials; what is not a URL throws the constructor's `TypeError`.
   */
  parseUrl(text: string): { href: string; credentials: boolean };
  /** The origin of the URL `text`, as `new URL(text).origin` gives it. */
  originOf(text: string): string;
  /** Installs `fetch` (guest/web-fetch.ts): the host calls it at boot when the sandbox has a fetch setting. */
  installFetch(): void;
  /**
   * The iterators of a WebIDL pair-iterable interface named `tag` (`URLSearchParams`, `FormData`): `make(owner, kind)`
   * walks the live list `listOf(owner)` gives, yielding keys (0), values (1) or entries (2); their prototype is tagged
   * `<tag> Iterator`.
   */
  pairIterator(
    tag: string,
    listOf: (owner: object) => readonly { name: string; value: unknown }[],
  ): (owner: object, kind: number) => Iterator<never>;
}

export function guestWebKit(hostCall: HostCall, kit: WebKit): void {
  // biome-ignore lint/suspicious/noRedundantUseStrict: shipped as source text and evaluated as a sloppy script.
  "use strict";
  const OP_UNCAUGHT = 7;
  const G = globalThis;
  const { apply } = Reflect;
  const { defineProperty, getPrototypeOf, setPrototypeOf } = Object;
  const TypeErrorCtor = TypeError;
  const IteratorPrototype = getPrototypeOf(getPrototypeOf([][Symbol.iterator]())) as object;
  // ES2024, which the engine has and the compiler's library of this project does not name.
  const { toWellFormed } = String.prototype as unknown as { toWellFormed: () => string };

  kit.pairIterator = (tag, listOf) => {
    class PairIterator {
      readonly #owner: object;
      readonly #kind: number;
      #index = 0;
      constructor(owner: object, kind: number) {
        this.#owner = owner;
        this.#kind = kind;
      }
      next(): IteratorResult<never> {
        const list = listOf(this.#owner);
        if (this.#index >= list.length) return { value: undefined, done: true } as IteratorResult<never>;
        const { name, value } = list[this.#index++] as { name: string; value: unknown };
        const kind = this.#kind;
        return { value: (kind === 0 ? name : kind === 1 ? value : [name, value]) as never, done: false };
      }
    }
    setPrototypeOf(PairIterator.prototype, IteratorPrototype);
    delete (PairIterator.prototype as { constructor?: unknown }).constructor;
    defineProperty(PairIterator.prototype, Symbol.toStringTag, { value: `${tag} Iterator`, configurable: true });
    return (owner, kind) => new PairIterator(owner, kind);
  };
  kit.install = (name, value) => {
    defineProperty(G, name, { value, writable: true, enumerable: false, configurable: true });
  };
  kit.required = (count, needed, what) => {
    if (count < needed) {
      throw new TypeErrorCtor(
        `${what}: ${needed} argument${needed === 1 ? "" : "s"} required, but only ${count} present`,
      );
    }
  };
  kit.dictionary = (value, what) => {
    if (value === undefined || value === null) return { __proto__: null } as Record<string, unknown>;
    if (typeof value !== "object" && typeof value !== "function") {
      throw new TypeErrorCtor(`${what}: the options must be an object`);
    }
    return value as Record<string, unknown>;
  };
  kit.usv = (value) => apply(toWellFormed, `${value}`, []) as string;
  kit.reportException = (error) => {
    hostCall(OP_UNCAUGHT, 0, "", error as unknown[]);
  };
}
