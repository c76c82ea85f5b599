/**
 * The host's half of the guest's `Intl` (core/intl.ts): what an answer costs the host's heap. An isolate on Workers
 * has 128 MB for the runs in it, their linear memory included, so no request may make the host build much more than
 * the text it answers with.
 */
import { describe, expect, it } from "vitest";
import { type IntlFormatters, intlAnswer } from "../../src/core/intl.js";

const request = (spec: unknown[], method: string, args: unknown[]) =>
  `${JSON.stringify(spec)}\n${method}\n${JSON.stringify(args)}`;

describe("a segmentation", () => {
  it("answers each segment's length (and for words whether it is word-like), not the segments", () => {
    const kept: IntlFormatters = new Map();
    const words = request(["Segmenter", null, { granularity: "word" }], "segment", ["Hi, big world"]);
    expect(JSON.parse(intlAnswer(words, kept))).toEqual([[2, 1, 1, 3, 1, 5], "100101", true]);
    const graphemes = request(["Segmenter", ["en"]], "segment", ["e\u0301🇫🇷x"]);
    expect(JSON.parse(intlAnswer(graphemes, kept))).toEqual([[2, 4, 1], "", false]);
  });

  it("of 1,000,000 characters is ~3 characters of JSON a segment", () => {
    // Before: `[segment, index, isWordLike]` a segment, 18,388,898 characters of JSON from some 100 MB of the host's
    // heap in arrays first.
    const text = "a ".repeat(500_000);
    const answer = intlAnswer(request(["Segmenter", null, { granularity: "word" }], "segment", [text]), new Map());
    expect(answer.length).toBe(`[[],"",true]`.length + (2 * 1_000_000 - 1) + 1_000_000);
    const [lengths, wordLike] = JSON.parse(answer) as [number[], string];
    expect([lengths.length, wordLike.length, wordLike.slice(0, 4)]).toEqual([1_000_000, 1_000_000, "1010"]);
  }, 60_000);
});

describe("a list", () => {
  it("of more than 16,384 items is refused before ICU makes its parts (200,000 took 55 MB of the host's heap)", () => {
    const kept: IntlFormatters = new Map();
    const list = (n: number) => request(["ListFormat", ["en"]], "formatToParts", [Array(n).fill("a")]);
    expect(JSON.parse(intlAnswer(list(16_384), kept))).toHaveLength(2 * 16_384 - 1);
    expect(() => intlAnswer(list(16_385), kept)).toThrow(new RangeError("Intl: a list of more than 16384 items"));
    const format = request(["ListFormat", ["en"]], "format", [Array(200_000).fill("a")]);
    expect(() => intlAnswer(format, kept)).toThrow(new RangeError("Intl: a list of more than 16384 items"));
  });
});
