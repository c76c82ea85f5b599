/**
 * The nesting of JSON text read before it is parsed (`src/values/json-nesting.ts`): brackets in strings, escapes,
 * pieces split anywhere, as characters or UTF-8 bytes, and the bound exactly.
 */
import { describe, expect, it } from "vitest";
import { JsonNesting, MAX_JSON_TEXT_DEPTH, nestsWithin } from "../../src/values/json-nesting.js";

const nested = (levels: number) => `${"[".repeat(levels)}${"]".repeat(levels)}`;

describe("JSON nesting", () => {
  it("takes the bound and refuses one level past it, arrays and objects alike", () => {
    expect(nestsWithin(nested(MAX_JSON_TEXT_DEPTH))).toBe(true);
    expect(nestsWithin(nested(MAX_JSON_TEXT_DEPTH + 1))).toBe(false);
    expect(nestsWithin(`${'{"a":'.repeat(3)}[1]}}}`, 4)).toBe(true);
    expect(nestsWithin(`${'{"a":'.repeat(4)}[1]}}}}`, 4)).toBe(false);
    // Siblings do not add up.
    expect(nestsWithin(nested(3).repeat(1000), 3)).toBe(true);
  });

  it("counts no bracket inside a string, escaped quotes and backslashes included", () => {
    expect(nestsWithin(`["${"[".repeat(100)}"]`, 1)).toBe(true);
    expect(nestsWithin(`["\\"[[[", "\\\\", [1]]`, 2)).toBe(true);
    expect(nestsWithin(`["\\\\", [[1]]]`, 2)).toBe(false);
  });

  it("reads text in pieces split anywhere, as characters or as UTF-8 bytes", () => {
    const text = `{"é😀[": "\\"{{", "a": [[{"b": "]]"}]]}`;
    const bytes = new TextEncoder().encode(text);
    for (let cut = 0; cut <= text.length; cut++) {
      const inText = new JsonNesting(4);
      inText.read(text.slice(0, cut));
      expect(inText.read(text.slice(cut))).toBe(true);
      const one = new JsonNesting(3);
      one.read(text.slice(0, cut));
      expect(one.read(text.slice(cut))).toBe(false);
    }
    for (let cut = 0; cut <= bytes.length; cut++) {
      const inBytes = new JsonNesting(4);
      inBytes.read(bytes.subarray(0, cut));
      expect(inBytes.read(bytes.subarray(cut))).toBe(true);
      expect(new JsonNesting(3).read(bytes)).toBe(false);
    }
  });

  it("ends a string at a line break, so a malformed line hides no brackets of the next", () => {
    const nesting = new JsonNesting(2);
    expect(nesting.read('data: {"a": "open\n')).toBe(true);
    expect(nesting.read("data: [[[1]]]\n")).toBe(false);
    // Once past, for good.
    expect(nesting.within).toBe(false);
    expect(nesting.read("[]")).toBe(false);
  });
});
