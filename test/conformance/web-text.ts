/**
 * §13.3 `TextEncoder` and `TextDecoder` (UTF-8) and `atob` and `btoa` in a sandbox made with `webApis: true`, against
 * key cases of the Web Platform Tests (encoding/textdecoder-fatal, -ignorebom, -streaming, -labels,
 * textencoder-utf16-surrogates, encodeInto; html/webappapis/atob/base64).
 * @module
 */
import { describe, expect, it } from "vitest";
import type { RunCode } from "../../src/core/types.js";
import { ok } from "./helpers.js";

const js = { language: "javascript" } as const;
const F = "\uFFFD";

/** [bytes, what a replacing decoder makes of them]: each one also throws a TypeError with `fatal: true`. */
const MALFORMED: [number[], string][] = [
  [[0xff], F],
  [[0xc0], F],
  [[0xe0], F],
  [[0xc0, 0x00], `${F}\u0000`],
  [[0xc0, 0xc0], F + F],
  [[0xe0, 0x00], `${F}\u0000`],
  [[0xe0, 0xc0], F + F],
  [[0xe0, 0x80, 0x00], `${F + F}\u0000`],
  [[0xe0, 0x80, 0xc0], F + F + F],
  [[0xfc, 0x80, 0x80, 0x80, 0x80, 0x80], F.repeat(6)],
  [[0xfe, 0x80, 0x80, 0x80, 0x80, 0x80], F.repeat(6)],
  [[0xc0, 0x80], F + F],
  [[0xe0, 0x80, 0x80], F + F + F],
  [[0xf0, 0x80, 0x80, 0x80], F.repeat(4)],
  [[0xc1, 0xbf], F + F],
  [[0xe0, 0x9f, 0xbf], F + F + F],
  [[0xf0, 0x8f, 0xbf, 0xbf], F.repeat(4)],
  [[0xf4, 0x90, 0x80, 0x80], F.repeat(4)],
  [[0xed, 0xa0, 0x80], F + F + F],
  [[0xed, 0xb0, 0x80], F + F + F],
  [[0xed, 0xa0, 0x80, 0xed, 0xb0, 0x80], F.repeat(6)],
  [[0xf0, 0x9f, 0x8c, 0x41], `${F}A`],
  [[0xf4, 0x90], F + F],
  [[0x61, 0xf1, 0x80, 0x80, 0xe1, 0x80, 0xc2, 0x62, 0x80, 0x63, 0x80, 0xbf, 0x64], `a${F}${F}${F}b${F}c${F}${F}d`],
];

export function webTextSuite(runCode: RunCode): void {
  describe("§13.3 TextEncoder and TextDecoder", () => {
    it("encode UTF-8, a lone surrogate as U+FFFD", async () => {
      const source = `const e = new TextEncoder();
      export default [e.encoding, ...["\\uD834\\uDD1E", "\\uDC00", "\\uD800", "\\uDC00\\uD800", "\\uD800\\uD800\\uDC00", "a\\u00e9\\u20ac", ""].map((s) => [...e.encode(s)]), [...e.encode()], e.encode("x") instanceof Uint8Array]`;
      expect(await ok(runCode, source, js)).toEqual([
        "utf-8",
        [0xf0, 0x9d, 0x84, 0x9e],
        [0xef, 0xbf, 0xbd],
        [0xef, 0xbf, 0xbd],
        [0xef, 0xbf, 0xbd, 0xef, 0xbf, 0xbd],
        [0xef, 0xbf, 0xbd, 0xf0, 0x90, 0x80, 0x80],
        [0x61, 0xc3, 0xa9, 0xe2, 0x82, 0xac],
        [],
        [],
        true,
      ]);
    });

    it("encodeInto writes whole code points that fit and counts what it read and wrote", async () => {
      const source = `const e = new TextEncoder();
      export default [["A", 10], ["\\u0300", 1], ["\\uD834\\uDD1E", 3], ["\\uD834\\uDD1E", 4], ["\\uDC00", 3], ["ab\\u00e9", 3], ["", 2]].map(([s, n]) => {
        const out = new Uint8Array(n);
        return [e.encodeInto(s, out), [...out]];
      })`;
      expect(await ok(runCode, source, js)).toEqual([
        [{ read: 1, written: 1 }, [65, 0, 0, 0, 0, 0, 0, 0, 0, 0]],
        [{ read: 0, written: 0 }, [0]],
        [{ read: 0, written: 0 }, [0, 0, 0]],
        [{ read: 2, written: 4 }, [240, 157, 132, 158]],
        [{ read: 1, written: 3 }, [239, 191, 189]],
        [{ read: 2, written: 2 }, [97, 98, 0]],
        [{ read: 0, written: 0 }, [0, 0]],
      ]);
    });

    it("decode malformed UTF-8 to U+FFFD per maximal subpart, and throw a TypeError for each with fatal", async () => {
      const source = `export default cases.map(([bytes]) => {
        const input = new Uint8Array(bytes);
        let fatal;
        try {
          new TextDecoder("utf-8", { fatal: true }).decode(input);
          fatal = "no error";
        } catch (error) {
          fatal = error.constructor.name;
        }
        return [new TextDecoder().decode(input), fatal];
      })`;
      expect(await ok(runCode, source, { ...js, globals: { cases: MALFORMED } })).toEqual(
        MALFORMED.map(([, text]) => [text, "TypeError"]),
      );
    });

    it("strip one BOM unless ignoreBOM, also when a stream splits it", async () => {
      const source = `const bom = [0xef, 0xbb, 0xbf];
      const text = new Uint8Array([...bom, ...bom, 0x61]);
      const split = new TextDecoder();
      const streamed = split.decode(new Uint8Array([0xef, 0xbb]), { stream: true }) + split.decode(new Uint8Array([0xbf, 0x61]));
      const d = new TextDecoder("utf-8", { ignoreBOM: true });
      export default [new TextDecoder().decode(text), d.decode(text), d.ignoreBOM, d.fatal, streamed, new TextDecoder().decode(new Uint8Array(bom))]`;
      expect(await ok(runCode, source, js)).toEqual(["\uFEFFa", "\uFEFF\uFEFFa", true, false, "a", ""]);
    });

    it("stream: a sequence split anywhere decodes as the whole, and an unfinished one flushes as U+FFFD", async () => {
      const source = `const bytes = new TextEncoder().encode("a\\u00e9\\u20ac\\uD83C\\uDF0D");
      const results = [];
      for (let cut = 0; cut <= bytes.length; cut++) {
        const d = new TextDecoder();
        results.push(d.decode(bytes.subarray(0, cut), { stream: true }) + d.decode(bytes.subarray(cut)));
      }
      const d = new TextDecoder();
      const unfinished = d.decode(new Uint8Array([0xe2, 0x82]), { stream: true }) + "|" + d.decode();
      export default [new Set(results).size, results[0], unfinished]`;
      expect(await ok(runCode, source, js)).toEqual([1, "aé€🌍", "|\uFFFD"]);
    });

    it("take UTF-8's labels and every BufferSource; refuse other encodings with a RangeError", async () => {
      const source = `const caught = (f) => { try { f(); return "no error"; } catch (e) { return e.constructor.name; } };
      const bytes = new Uint8Array([0x68, 0x69, 0x21, 0x21]);
      export default [
        ...[" utf-8 ", "UTF8", "unicode-1-1-utf-8", "x-unicode20utf8"].map((label) => new TextDecoder(label).encoding),
        caught(() => new TextDecoder("utf-16le")),
        caught(() => new TextDecoder("latin1")),
        new TextDecoder().decode(bytes.buffer),
        new TextDecoder().decode(new DataView(bytes.buffer, 1, 2)),
        new TextDecoder().decode(new Uint16Array(bytes.buffer, 2, 1)),
        new TextDecoder().decode(),
        caught(() => new TextDecoder().decode("hi")),
      ]`;
      expect(await ok(runCode, source, js)).toEqual([
        "utf-8",
        "utf-8",
        "utf-8",
        "utf-8",
        "RangeError",
        "RangeError",
        "hi!!",
        "i!",
        "!!",
        "",
        "TypeError",
      ]);
    });
  });

  describe("§13.3 atob and btoa", () => {
    it("decode forgiving-base64 and throw an InvalidCharacterError DOMException otherwise", async () => {
      const source = `const codes = (s) => [...s].map((c) => c.charCodeAt(0));
      export default ["", "abcd", " ab\\tc d\\n", "abcd=", "ab=", "ab==", "abc=", "ab", "a", "ab=c", "=", "==", "ab===", "YQ", "YR==", undefined, null].map((s) => {
        try {
          return codes(atob(s));
        } catch (e) {
          return [e.name, e.code, e instanceof DOMException];
        }
      })`;
      const invalid = ["InvalidCharacterError", 5, true];
      expect(await ok(runCode, source, js)).toEqual([
        [],
        [105, 183, 29],
        [105, 183, 29],
        invalid,
        invalid,
        [105],
        [105, 183],
        [105],
        invalid,
        invalid,
        invalid,
        invalid,
        invalid,
        [97],
        [97],
        invalid,
        [158, 233, 101],
      ]);
    });

    it("encode Latin-1 and throw an InvalidCharacterError past it; both need an argument", async () => {
      const source = `const caught = (f) => { try { return f(); } catch (e) { return e.name; } };
      export default [btoa(""), btoa("a"), btoa("ab"), btoa("abc"), btoa("\\u00ff\\u00fe"), btoa(null), caught(() => btoa("\\u0100")), caught(() => btoa()), caught(() => atob())]`;
      expect(await ok(runCode, source, js)).toEqual([
        "",
        "YQ==",
        "YWI=",
        "YWJj",
        "//4=",
        "bnVsbA==",
        "InvalidCharacterError",
        "TypeError",
        "TypeError",
      ]);
    });
  });
}
