/**
 * The tape, the format of values crossing the sandbox boundary (the network's is the wire, `wire.ts`): a JSON text
 * plus a side list of binary buffers and promises. Both halves parse it as data, so marshaling never runs code of
 * the other side: guest getters run inside the guest while it encodes, never on the host.
 *
 * Grammar (`id` numbers objects in encounter order so cycles and shared references survive):
 * - JSON string, boolean, null and finite numbers other than -0 stand for themselves
 * - `["u"]` undefined, `["n","NaN"|"Infinity"|"-Infinity"|"-0"]`, `["b","<decimal>"]` bigint
 * - `["r",id]` a reference to an object already encoded
 * - `["j",json]` plain objects and arrays (of the standard prototypes, data properties only) as JSON, written and
 *   parsed by each engine's own JSON code; there is no other reference to any object in it (it has no ids)
 * - `["a",id,[...values]]` dense array; `["A",id,length,[key,value,...]]` array with holes or extra keys
 * - `["o",id,[key,value,...]]` plain object; `["m",id,[key,value,...]]` Map; `["s",id,[...values]]` Set
 * - `["d",id,time]` Date; `["x",id,source,flags]` RegExp; `["e",id,name,message,stack(,cause)]` Error: `message`
 *   is `null` when the error has no own `message`, `cause` is there when it has an own `cause`; `stack` holds user
 *   frames only and is `""` from the host (whose stacks never cross)
 * - `["B",id,side(,maxByteLength)]` ArrayBuffer, resizable when `maxByteLength` is there;
 *   `["t",id,kind,buffer,byteOffset,length]` typed array; `["v",id,buffer,byteOffset,byteLength]` DataView; a
 *   `length`/`byteLength` of `"auto"` tracks a resizable buffer. Detached buffers and out-of-bounds views never cross
 * - `["f",fnId,name,length]` a host function; `["p",id,side]` a promise (host to guest: a guest promise the host
 *   settles later; guest to host: the guest promise's number, settled through the settle operation)
 * - `["P",id,primitive]` a Boolean, Number, String or BigInt wrapper object: only within the guest's own
 *   `structuredClone` (`MODE_STRUCTURED_CLONE`), never across the boundary
 * @module
 */

/** A binary buffer or a host promise a host-encoded tape refers to by index. */
export type SideItem = { kind: "buffer"; bytes: Uint8Array } | { kind: "promise"; promise: Promise<unknown> };

/**
 * A value as a tape and its side list. `Side` is what the side list holds where the tape is: the host's buffers and
 * promises (`encodeForGuest`, the default), the guest's buffers copied out (`Tape<ArrayBuffer>`: what a host that
 * keeps its values on another thread forwards there to be decoded), or, posted to another thread, buffers as they
 * are and promises by number (`Tape<ArrayBuffer | number>`). A `Tape` instance handed to `encodeForGuest` as the value
 * itself crosses as it is: a host on another thread encodes its values there, and the core passes them through.
 */
export class Tape<Side = SideItem> {
  constructor(
    readonly tape: string,
    readonly side: Side[],
  ) {}
}

/** Structured clone by the boundary's rules, as for results and reports. */
export const MODE_CLONE = 0;
/** Arguments of a host function: structured clone plus promises and the host's own functions. */
export const MODE_CALL = 1;
/** Console arguments: never fails; what cannot be cloned is described as a string. */
export const MODE_LOG = 2;
/** The guest's own `structuredClone`, which never leaves the guest: the HTML algorithm itself. */
export const MODE_STRUCTURED_CLONE = 3;

/**
 * Operations the guest asks of the host through its host function (calls of the caller's functions have their own,
 * see `HostFunctionCall` in guest/core.ts).
 */
export const OP_REPORT = 1;
export const OP_LOG = 2;
export const OP_SETTLE = 3;
export const OP_MARSHAL = 4;
/**
 * Native work the guest did (see "Native work" in guest/core.ts): `a >= 0` is that work in interrupt polls, which
 * the host counts and checks against the safety cap, answering `true` when the run must stop; `a < 0` asks for the
 * JS implementations of the guarded natives (guest/slow-paths.ts), compiled on first use. The tape is `0`.
 */
export const OP_CHARGE = 5;
/** `a` random bytes for the Web APIs' `crypto` (at most {@link MAX_RANDOM_BYTES}): answered with an ArrayBuffer. */
export const OP_RANDOM = 6;
/** An exception nobody can catch (a timer callback's, an event listener's), the value in `side`: it ends the run. */
export const OP_UNCAUGHT = 7;
/** The most bytes one `crypto.getRandomValues` may ask for (WebCrypto's bound). */
export const MAX_RANDOM_BYTES = 65_536;
/**
 * A request of the guest's `fetch` (guest/web-fetch.ts): `a` is its number in the run, the tape its record; the host
 * answers with a promise of the response (src/fetch/session.ts).
 */
export const OP_FETCH = 8;
/** The guest's signal aborted request number `a`: the host aborts it. The tape is `null`. */
export const OP_FETCH_ABORT = 9;
/**
 * How many levels of plain data the object in `side` is, read by the host from the engine's objects (0: not plain,
 * see core/plain-data.ts): the guest's encoder then writes it as JSON without its own walk. The tape is `""`.
 */
export const OP_PLAIN = 10;
/**
 * A request of the guest's `Intl` (guest/intl.ts, core/intl.ts): the tape is `spec \n method \n args` (JSON, JSON,
 * JSON), the answer a JSON string. `a` and `side` are unused.
 */
export const OP_INTL = 11;
/**
 * An operation of the guest's `crypto.subtle` (guest/web-subtle.ts): the tape is its record, with the key's bytes;
 * the host answers with a promise of the result (src/core/subtle.ts). `a` is 0.
 */
export const OP_SUBTLE = 12;
/** The guest's `performance.now()` (guest/web-performance.ts): answered with the run's time (core/timers.ts). */
export const OP_NOW = 13;

/** Console methods in the order the guest numbers them. */
export const LOG_LEVELS = ["log", "info", "warn", "error", "debug"] as const;

/** The name of every typed array kind a tape may carry. */
export const TYPED_ARRAY_KINDS: readonly string[] = Object.freeze([
  "Int8Array",
  "Uint8Array",
  "Uint8ClampedArray",
  "Int16Array",
  "Uint16Array",
  "Int32Array",
  "Uint32Array",
  "Float16Array",
  "Float32Array",
  "Float64Array",
  "BigInt64Array",
  "BigUint64Array",
]);

type TypedArrayConstructor = new (buffer: ArrayBuffer, byteOffset: number, length: number) => ArrayBufferView;

/**
 * The constructors of those kinds this platform has, by name: Node 20 has no `Float16Array` (QuickJS, workerd and
 * Chromium do), and a host without one refuses to receive one (see `decodeFromGuest`).
 */
export const TYPED_ARRAYS: Readonly<Record<string, TypedArrayConstructor>> = Object.freeze(
  Object.assign(
    Object.create(null) as Record<string, TypedArrayConstructor>,
    Object.fromEntries(
      TYPED_ARRAY_KINDS.flatMap((kind) => {
        const Ctor = (globalThis as unknown as Record<string, TypedArrayConstructor | undefined>)[kind];
        return Ctor === undefined ? [] : [[kind, Ctor]];
      }),
    ),
  ),
);

/** What a host without the typed array `kind` says when handed one. */
export const missingTypedArray = (kind: string): string =>
  `A ${kind} cannot be made on this host: its JavaScript has no ${kind}`;

/** Standard error constructors by name; other names arrive as `Error` with the name kept. */
export const ERROR_TYPES: Readonly<Record<string, ErrorConstructor>> = Object.freeze({
  __proto__: null,
  Error,
  EvalError,
  RangeError,
  ReferenceError,
  SyntaxError,
  TypeError,
  URIError,
} as unknown as Record<string, ErrorConstructor>);
