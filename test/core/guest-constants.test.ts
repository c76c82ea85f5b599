import { describe, expect, it } from "vitest";
import { MAX_PENDING_TIMERS } from "../../src/core/web-apis.js";
import {
  guestCoreSource,
  guestIntlSource,
  guestMarshalSource,
  guestWebCryptoSource,
  guestWebFetchSource,
  guestWebKitSource,
  guestWebPerformanceSource,
  guestWebSubtleSource,
  guestWebTimersSource,
} from "../../src/guest/sources.generated.js";
import * as tape from "../../src/values/tape.js";

// The guest halves are shipped as source text and cannot import the tape's constants: they repeat them. A drift
// would make the two sides read each other's operations wrongly, so every repeated value must match.
describe("the guest's copies of the tape's constants", () => {
  const constants = Object.entries(tape).filter(([name]) => /^(MODE|OP)_/.test(name)) as [string, number][];

  it.each([
    ["core", guestCoreSource],
    ["marshal", guestMarshalSource],
    ["Web APIs' kit", guestWebKitSource],
    ["Web APIs' crypto", guestWebCryptoSource],
    ["Web APIs' crypto.subtle", guestWebSubtleSource],
    ["Web APIs' fetch", guestWebFetchSource],
    ["Intl", guestIntlSource],
    ["Web APIs' performance", guestWebPerformanceSource],
  ])("the %s half repeats them exactly", (_half, source) => {
    const repeated = constants.filter(([name]) => new RegExp(`\\b${name}\\s*=`).test(source));
    expect(repeated.length).toBeGreaterThan(0);
    for (const [name, value] of repeated) expect(source).toMatch(new RegExp(`\\b${name}\\s*=\\s*${value}\\b`));
  });

  it("the Web APIs repeat the host's bounds exactly", () => {
    for (const source of [guestWebCryptoSource, guestWebSubtleSource]) {
      expect(source).toMatch(new RegExp(`\\bMAX_RANDOM_BYTES = ${tape.MAX_RANDOM_BYTES}\\b`));
    }
    expect(guestWebTimersSource).toMatch(new RegExp(`\\bMAX_PENDING_TIMERS = ${MAX_PENDING_TIMERS}\\b`));
  });

  it("the console levels are numbered as the host reads them", () => {
    const listed = /levels = \[([^\]]*)\]/.exec(guestCoreSource)?.[1] ?? "";
    expect(listed.split(",").map((level) => level.trim().slice(1, -1))).toEqual([...tape.LOG_LEVELS]);
  });
});
