/**
 * What the host's work for the guest costs in fuel. The engine meters its own work (scripts/build-fuel-wasm.ts); the
 * host adds these charges for what it does outside the engine, at the engine's own rate (the catalogue's loops that
 * stay in the engine took 3.3-4.5 ms of CPU per 10^6 units: ~4 ns a unit), so a run's fuel bounds the CPU it costs
 * whether it spins in the engine or makes the host work. Each rate is the host's CPU for the work it stands for,
 * measured with a frozen clock, in-thread, by `npm run bench:fuel` (bench/fuel-catalogue.ts: CPU per call, entry or
 * byte of its loops, less the fuel the engine counted for them), at ~4 ns a unit. The work is charged before it is
 * done wherever its size is known then (`Limits.pay`), so a run out of fuel gets none of it done.
 * @module
 */
import type { FetchMeter } from "../fetch/session.js";
import { MAX_RANDOM_BYTES } from "../values/tape.js";
import type { IntlWork } from "./intl.js";

/**
 * A call of a host function (`globals`, `imports`): the FFI's handles, the arguments read, the call and its result
 * made. `for (;;) f()` and `for (;;) n += f()` took 4.4-6.1 us a call, of which the engine counted 76-88 units.
 */
export const HOST_CALL_FUEL = 1_700;

/**
 * A host promise handed to the guest and settled there (an awaited host call, a fetch): the guest's deferred, the
 * delivery and its settle. `for (;;) await f()` took 24 us a call, the engine counting ~900 units of it.
 */
export const HOST_PROMISE_FUEL = 5_000;

/**
 * A value crossing by tape, either way (the guest's encoder or decoder called, the tape made or read on the host):
 * `f({ a: 1 })` and `return { a: 1 }` took 16-21 us a call more than `f()`, of which the engine counted 1,400-4,800.
 */
const TAPE_FUEL = 3_000;

/**
 * A character of a tape: copied across and parsed or made on the host. `console.log` of a 64 KiB string took ~2 units
 * a character the engine did not count.
 */
const TAPE_CHAR_FUEL = 2;

/**
 * A value of a tape (counted by its separators), on top of its characters: the host encodes or decodes it. 1,000 rows
 * of `{ i, s, on }` (~4,000 values, 31 KB of tape) took 1.9 ms to encode for the guest.
 */
const TAPE_VALUE_FUEL = 50;

/**
 * A character of a string a host function returns (or a promise of one resolves to), made in the engine from the
 * host's: a 64 KiB string took 1.3-1.5 units a character the engine did not count. (A string argument is read out by the engine's own copy, which it
 * counts: a 64 KiB one took 1.4 ms per 10^6 units with no charge of the host's.)
 */
const CHAR_FUEL = 1;

/**
 * A character of a guest string the host reads as a primitive (a host function's argument, a result), when the
 * string has any past ASCII: the engine hands it over as UTF-8, 2-4 bytes a character, which the host finds the end of
 * and decodes, on top of the engine's own copy (which the engine counts, ~1 unit a character). Strings of 1,000,000
 * characters passed to `f` took the host 3.5 ns a unit of their fuel in ASCII but 7.0 in `é`, 20.5 in `€` and 29.1 in
 * emoji (two characters each) where a call of `f()` took 8.6 (load average 5).
 */
const WIDE_CHAR_FUEL = 4;

/**
 * Bytes of a buffer crossing per unit: copied out of or into the engine's memory, or made by the platform's random
 * source (`getRandomValues` of 64 KiB ran at 1.1 ms per 10^6 units with a unit a byte).
 */
const BUFFER_BYTES_PER_UNIT = 4;

/**
 * A value the host reads as plain data (see plain-data.ts): a read costs ~25 ns, the CPU time of 8-20 units of the
 * engine's own work, so the safety cap bounds the host's reading for a run as it bounds the engine.
 */
export const PLAIN_READ_FUEL = 16;

/**
 * A `console` entry or report the host keeps (decoded, stamped and handed to the listeners; its tape is charged
 * apart): `console.log('x')` and `console.warn('n', i, true)` took 17-18 us an entry, the engine counting ~1,200 units.
 */
export const LOG_ENTRY_FUEL = 2_000;

/** A call for random bytes: `crypto.getRandomValues` of 16 bytes took 6.4 ms per 10^6 units with 2,000 a call. */
const RANDOM_CALL_FUEL = 3_500;

/**
 * A request of the guest's `Intl` answered by a formatter the host keeps (core/intl.ts), on top of its tape's
 * characters: `nf.format(i)` and `collator.compare(a, b)` in a loop took 15-19 us a call, the engine counting ~500
 * units of it.
 */
const INTL_CALL_FUEL = 3_500;

/**
 * A request that makes the host's formatter first (new locales and options; every `Date#toLocaleString`, which
 * makes one each call), or for which V8 makes ICU's formatter each call (a range's format, `selectRange`,
 * `Intl.supportedValuesOf`: `IntlWork` in core/intl.ts): `new Intl.NumberFormat` with options never seen took 172 us,
 * `DateTimeFormat` 59 us, `toLocaleString` of a date 150 us, `formatRangeToParts` 35-51 us, `supportedValuesOf` of
 * time zones 170 us.
 */
const INTL_NEW_FUEL = 40_000;

/** A character a `Segmenter` segments: 108,000 characters took 0.6-2.3 us a character (words, graphemes). */
const INTL_SEGMENT_CHAR_FUEL = 500;

/**
 * A character of a request's constructor, locales and options when the host reads its locales (`IntlWork` in
 * core/intl.ts: canonicalizing the list, asking which the host supports): 128 tags such as
 * `de-DE-u-co-phonebk-ca-gregory-nu-latn-x-aaaaa1` (6,273 characters) took 2.9 ms both ways, ~0.46 us a character;
 * before, a loop making formatters of long lists spent 13 ms of CPU per 10^6 units where a spinning loop spent 6.7.
 */
const INTL_LOCALE_CHAR_FUEL = 192;

/**
 * Fuel of the guest's `Intl` request `request` (see OP_INTL): its fee, more when it makes the host's formatter or
 * reads its locales (`work`), and its characters, more for a segmentation.
 */
export function intlFuel(request: string, work: IntlWork): number {
  const segmenting = request.startsWith('["Segmenter"') && request.includes("\nsegment\n");
  const specChars = work === "formatter" || work === "locales" ? request.indexOf("\n") : 0;
  return (
    INTL_CALL_FUEL +
    (work === "formatter" || work === "remade" ? INTL_NEW_FUEL : 0) +
    specChars * INTL_LOCALE_CHAR_FUEL +
    request.length * (TAPE_CHAR_FUEL + (segmenting ? INTL_SEGMENT_CHAR_FUEL : 0))
  );
}

/**
 * An operation of `crypto.subtle` on the host (guest/web-subtle.ts, core/subtle.ts): the platform's WebCrypto called,
 * a key imported for it, its promise settled. `npm run bench:subtle` (bench/subtle.ts, the process's CPU, the
 * platform's threads included) measured 16-37 us a digest of 16 bytes and 55-77 us an HMAC or AES-GCM call with its
 * key's import when the host calls them itself, but 434-441 us a call of a guest's loop of 16-byte digests (HMAC
 * 526-577 us, AES-GCM 611-673 us) in Node, of which the engine and the other charges counted 57,600 units with this
 * fee left out (HMAC 93,400, AES-GCM 137,700): at ~4 ns a unit the fee is the ~51,000 units the digest leaves over.
 */
const SUBTLE_CALL_FUEL = 60_000;

/**
 * Bytes of a `crypto.subtle` operation's input per unit, on top of their copy out of the engine: SHA-1, SHA-256,
 * HMAC-SHA-256 and AES-GCM took 0.6-0.7 ns a byte, SHA-384 and SHA-512 1.3 ns (1.9 ns on a loaded machine).
 */
const SUBTLE_BYTES_PER_UNIT = 2;

/**
 * An instance a run leaves unfit for another (its memory's growth refused, a host fault, an abort, a hard stop): the
 * host boots one in its place for the next run, work the run caused whatever ran before it. `npm run bench:boots`
 * (bench/boots.ts): a restorable boot took 10.5-12.4 ms of CPU back to back and 17-19 ms between runs, and the run
 * after an out-of-memory run 10-16 ms more than a trivial one: ~16 ms at ~4 ns a unit.
 */
export const INSTANCE_BOOT_FUEL = 4_000_000;

/** A read of the run's time for `performance.now()`: a call into the host answered with a number, as a host call's. */
export const NOW_FUEL = HOST_CALL_FUEL;

/** A module specifier the host resolves: `import()` of a module already loaded took ~10 us. */
export const MODULE_RESOLVE_FUEL = 1_000;

/** A module the host loads, or the failure of one it cannot: `import()` of a missing module took ~30 us. */
export const MODULE_LOAD_FUEL = 8_000;

/**
 * A request of the guest's `fetch` (checked, sent, its response head read), every redirect followed counted again:
 * a loop of fetches answered at once by the transport took ~0.8 ms a request, the engine counting ~45,000 units.
 */
export const FETCH_REQUEST_FUEL = 190_000;

/**
 * A read of a response body, on top of its bytes: waking for what arrived, the platform's fetch handing it on, the
 * host's read loop. A server that sends its body a byte at a time (each its own TCP segment) makes a read a byte:
 * `npm run bench:fetch-reads` (bench/fetch-reads.ts) measured 50-180 us of the host's CPU a read beyond its bytes,
 * median 76 us (load average 3.2), where the bytes alone paid a unit per 4 of them: a drip of 8 MiB cost the host
 * minutes for 2 ms of fuel. Node's own client reads for 28-125 us, median 40 (load average 2.6); the fee stays at
 * what the platforms that read through `fetch` (the edge, browsers) cost.
 */
export const FETCH_READ_FUEL = 20_000;

/**
 * A piece of a response body that a read takes beyond its first (see `Exchange.pieces`): a chunk of the chunked
 * coding, parsed and handed on by the host's client. A server that sends its body as chunks of one byte, many to a
 * segment, made Node's client parse 200,000 of them in 49-99 ms of CPU (0.25-0.5 us each, load average ~2), which
 * the reads' fee, one a wake of the socket, paid a twentieth of.
 */
export const FETCH_PIECE_FUEL = 100;

/** What a run's `fetch` pays, from `account` (the run's limits). */
export function fetchMeter(account: { pay(units: number): boolean }): FetchMeter {
  return {
    request: (bytes) => account.pay(FETCH_REQUEST_FUEL + bufferFuel(bytes)),
    response: (bytes, pieces) =>
      account.pay(FETCH_READ_FUEL + bufferFuel(bytes) + Math.max(0, pieces - 1) * FETCH_PIECE_FUEL),
  };
}

/** Fuel of a call for `count` random bytes (the guest's count: one that is not a valid count pays the call alone). */
export function randomFuel(count: number): number {
  return RANDOM_CALL_FUEL + bufferFuel(count > 0 ? Math.min(count, MAX_RANDOM_BYTES) : 0);
}

/** Fuel of a `crypto.subtle` operation reading `bytes` bytes. */
export function subtleFuel(bytes: number): number {
  return SUBTLE_CALL_FUEL + Math.ceil(bytes / SUBTLE_BYTES_PER_UNIT);
}

/**
 * A character of a session's cell, parsed on the host to find its top-level declarations (core/cell-source.ts): 256 KB
 * of declarations took 400-480 ns a character to parse and rewrite (load average ~1), ~80 units at ~5 ns a unit.
 */
const CELL_CHAR_FUEL = 80;

/** Fuel of parsing a cell of `chars` characters (see {@link CELL_CHAR_FUEL}). */
export function cellFuel(chars: number): number {
  return chars * CELL_CHAR_FUEL;
}

/** Fuel of a string of `chars` characters crossing as a primitive. */
export function charFuel(chars: number): number {
  return chars * CHAR_FUEL;
}

/** Fuel of the host's reading a guest string of `chars` characters, some past ASCII (see {@link WIDE_CHAR_FUEL}). */
export function wideTextFuel(chars: number): number {
  return chars * WIDE_CHAR_FUEL;
}

/** Fuel of `bytes` bytes of buffers crossing. */
export function bufferFuel(bytes: number): number {
  return Math.ceil(bytes / BUFFER_BYTES_PER_UNIT);
}

/**
 * Fuel of a session snapshot of `bytes` bytes that a host writes after a cell, or restores before one: encoding it
 * (the memory's pages scanned and copied, compressed where that pays, a SHA-256 over it) or decoding it takes
 * 2-13 ns a byte (`npm run bench:snapshot`), about a unit (~6 ns) a byte.
 */
export function snapshotFuel(bytes: number): number {
  return bytes;
}

/** Fuel of a tape crossing: its fee, its characters and its values (a separator each: a comma or a colon). */
export function tapeFuel(tape: string): number {
  let values = 0;
  for (let i = 0; i < tape.length; i++) {
    const c = tape.charCodeAt(i);
    if (c === COMMA || c === COLON) values++;
  }
  return TAPE_FUEL + tape.length * TAPE_CHAR_FUEL + values * TAPE_VALUE_FUEL;
}

const COMMA = 0x2c;
const COLON = 0x3a;
