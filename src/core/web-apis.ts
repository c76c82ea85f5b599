/**
 * The Web APIs a sandbox made with `webApis: true` installs on its global object (contract.md §13): their guest
 * halves, evaluated in this order when an instance boots (so they are part of its booted image and cost a run
 * nothing), each taking what those before it put in the kit (guest/web-kit.ts), and the host's answers to two
 * things they ask of it: random bytes and exceptions nobody can catch. Their timers and `performance.now()` are timers.ts, `crypto.subtle`'s
 * work subtle.ts.
 * @module
 */
import {
  guestWebBlobSource,
  guestWebCryptoSource,
  guestWebEventsSource,
  guestWebFetchSource,
  guestWebKitSource,
  guestWebPerformanceSource,
  guestWebSubtleSource,
  guestWebTextSource,
  guestWebTimersSource,
  guestWebUrlSource,
} from "../guest/sources.generated.js";
import { MAX_RANDOM_BYTES } from "../values/tape.js";

/** The guest halves by name, in the order they are installed. */
export const WEB_API_SOURCES: readonly (readonly [name: string, source: string])[] = Object.freeze([
  ["kit", guestWebKitSource],
  ["timers", guestWebTimersSource],
  ["events", guestWebEventsSource],
  ["performance", guestWebPerformanceSource],
  ["text", guestWebTextSource],
  ["url", guestWebUrlSource],
  ["blob", guestWebBlobSource],
  ["crypto", guestWebCryptoSource],
  ["subtle", guestWebSubtleSource],
  ["fetch", guestWebFetchSource],
] as const);

/** Most timers pending at once in one run; past it `setTimeout` and `setInterval` throw a `RangeError`. */
export const MAX_PENDING_TIMERS = 10_000;

/** `count` bytes of the platform's cryptographic randomness, for `crypto.getRandomValues` and `randomUUID`. */
export function randomBytes(count: number): Uint8Array {
  if (!Number.isSafeInteger(count) || count < 0 || count > MAX_RANDOM_BYTES) {
    throw new RangeError(`crypto: ${count} random bytes asked for; at most ${MAX_RANDOM_BYTES} a call`);
  }
  return crypto.getRandomValues(new Uint8Array(count));
}
