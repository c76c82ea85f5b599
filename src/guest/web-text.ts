/**
 * `TextEncoder` and `TextDecoder` (WHATWG Encoding, UTF-8 only) and `atob` and `btoa` (HTML's forgiving base64) of a
 * sandbox made with `webApis: true`. Shipped as source text (see core.ts).
 * @module
 */
import type { HostCall } from "./core.js";
import type { WebKit } from "./web-kit.js";

export function guestWebText(_hostCall: HostCall, kit: WebKit): void {
  // biome-ignore lint/suspicious/noRedundantUseStrict: shipped as source text and evaluated as a sloppy script.
  "use strict";
  const { apply } = Reflect;
  const { defineProperty, getOwnPropertyDescriptor, getPrototypeOf } = Object;
  const TypeErrorCtor = TypeError;
  const RangeErrorCtor = RangeError;
  const U8 = Uint8Array;
  const U16 = Uint16Array;
  const { fromCharCode } = String;
  const { min } = Math;
  const { isView } = ArrayBuffer;
  const { DOMException, install, required, dictionary } = kit;
  const getter = (proto: object, key: PropertyKey) => getOwnPropertyDescriptor(proto, key)?.get as () => unknown;
  const TypedArrayProto = getPrototypeOf(U8.prototype) as object;
  const typedTag = getter(TypedArrayProto, Symbol.toStringTag);
  const typedBuffer = getter(TypedArrayProto, "buffer");
  const typedOffset = getter(TypedArrayProto, "byteOffset");
  const typedBytes = getter(TypedArrayProto, "byteLength");
  const viewBuffer = getter(DataView.prototype, "buffer");
  const viewOffset = getter(DataView.prototype, "byteOffset");
  const viewBytes = getter(DataView.prototype, "byteLength");
  const bufferBytes = getter(ArrayBuffer.prototype, "byteLength");
  const bytesOf = (source: unknown, what: string): Uint8Array => {
    if (isView(source)) {
      return apply(typedTag, source, []) === undefined
        ? new U8(
            apply(viewBuffer, source, []) as ArrayBuffer,
            apply(viewOffset, source, []) as number,
            apply(viewBytes, source, []) as number,
          )
        : new U8(
            apply(typedBuffer, source, []) as ArrayBuffer,
            apply(typedOffset, source, []) as number,
            apply(typedBytes, source, []) as number,
          );
    }
    try {
      apply(bufferBytes, source, []);
    } catch {
      throw new TypeErrorCtor(`${what} must be an ArrayBuffer or an ArrayBuffer view`);
    }
    return new U8(source as ArrayBuffer);
  };
  kit.bytesOf = bytesOf;

  /** UTF-8 bytes of one code point (a lone surrogate is U+FFFD) into `out` at `at`; the bytes written. */
  const put = (out: Uint8Array, at: number, c: number) => {
    if (c < 0x80) {
      out[at] = c;
      return 1;
    }
    if (c < 0x800) {
      out[at] = 0xc0 | (c >> 6);
      out[at + 1] = 0x80 | (c & 0x3f);
      return 2;
    }
    if (c < 0x10000) {
      out[at] = 0xe0 | (c >> 12);
      out[at + 1] = 0x80 | ((c >> 6) & 0x3f);
      out[at + 2] = 0x80 | (c & 0x3f);
      return 3;
    }
    out[at] = 0xf0 | (c >> 18);
    out[at + 1] = 0x80 | ((c >> 12) & 0x3f);
    out[at + 2] = 0x80 | ((c >> 6) & 0x3f);
    out[at + 3] = 0x80 | (c & 0x3f);
    return 4;
  };
  /** The code point of `text` at `i` (a lone surrogate as U+FFFD) and the code units it takes, as `c * 2 + units - 1`. */
  const codePointAt = (text: string, i: number) => {
    const c = text.charCodeAt(i);
    if (c < 0xd800 || c > 0xdfff) return c * 2;
    if (c <= 0xdbff && i + 1 < text.length) {
      const d = text.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) return (0x10000 + ((c - 0xd800) << 10) + (d - 0xdc00)) * 2 + 1;
    }
    return 0xfffd * 2;
  };
  const sizeOf = (c: number) => (c < 0x80 ? 1 : c < 0x800 ? 2 : c < 0x10000 ? 3 : 4);
  const utf8Encode = (text: string) => {
    let length = 0;
    for (let i = 0; i < text.length; i++) {
      const c = text.charCodeAt(i);
      if (c < 0x80) length++;
      else {
        const pair = codePointAt(text, i);
        length += sizeOf(pair >> 1);
        i += pair & 1;
      }
    }
    const out = new U8(length);
    for (let i = 0, at = 0; i < text.length; i++) {
      const c = text.charCodeAt(i);
      if (c < 0x80) out[at++] = c;
      else {
        const pair = codePointAt(text, i);
        at += put(out, at, pair >> 1);
        i += pair & 1;
      }
    }
    return out;
  };
  kit.utf8Encode = utf8Encode;

  /**
   * The Encoding standard's UTF-8 decoder over `bytes`, from the state a stream left (`state`, updated), appending
   * code units to `text`: `fatal` throws on the first error, else each error is U+FFFD. `end` flushes a partial
   * sequence. The BOM is the caller's business.
   */
  interface Decoding {
    codePoint: number;
    needed: number;
    seen: number;
    lower: number;
    upper: number;
  }
  const CHUNK = 8192;
  const NON_ASCII = /[\x80-\xff]/;
  const decodeInto = (bytes: Uint8Array, state: Decoding, fatal: boolean, end: boolean, skipBOM: boolean) => {
    let text = "";
    // A byte makes at most one code unit, and an unfinished sequence one U+FFFD: no more room than that is zeroed.
    const units = new U16(min(CHUNK, bytes.length + 2));
    let count = 0;
    let first = skipBOM;
    const emit = (c: number) => {
      if (first) {
        first = false;
        if (c === 0xfeff) return;
      }
      if (count + 2 > units.length) {
        text += apply(fromCharCode, null, units.subarray(0, count) as unknown as number[]) as string;
        count = 0;
      }
      if (c < 0x10000) units[count++] = c;
      else {
        units[count++] = 0xd800 + ((c - 0x10000) >> 10);
        units[count++] = 0xdc00 + ((c - 0x10000) & 0x3ff);
      }
    };
    const error = () => {
      if (fatal) throw new TypeErrorCtor("The encoded data was not valid UTF-8");
      emit(0xfffd);
    };
    const s = state;
    for (let i = 0; i < bytes.length; i++) {
      const byte = bytes[i] as number;
      if (s.needed === 0 && byte < 0x80) {
        // A run of ASCII becomes text natively, a chunk at a time (byte by byte, 1 MiB took 140 ms).
        first = false;
        if (count > 0) {
          text += apply(fromCharCode, null, units.subarray(0, count) as unknown as number[]) as string;
          count = 0;
        }
        const chunk = bytes.subarray(i, min(i + CHUNK, bytes.length));
        const latin = apply(fromCharCode, null, chunk as unknown as number[]) as string;
        const high = latin.search(NON_ASCII);
        const run = high < 0 ? latin : latin.slice(0, high);
        text += run;
        i += run.length - 1;
        continue;
      }
      if (s.needed === 0) {
        if (byte >= 0xc2 && byte <= 0xdf) {
          s.needed = 1;
          s.codePoint = byte & 0x1f;
        } else if (byte >= 0xe0 && byte <= 0xef) {
          if (byte === 0xe0) s.lower = 0xa0;
          if (byte === 0xed) s.upper = 0x9f;
          s.needed = 2;
          s.codePoint = byte & 0xf;
        } else if (byte >= 0xf0 && byte <= 0xf4) {
          if (byte === 0xf0) s.lower = 0x90;
          if (byte === 0xf4) s.upper = 0x8f;
          s.needed = 3;
          s.codePoint = byte & 0x7;
        } else error();
        continue;
      }
      if (byte < s.lower || byte > s.upper) {
        s.codePoint = s.needed = s.seen = 0;
        s.lower = 0x80;
        s.upper = 0xbf;
        i--; // the byte starts over
        error();
        continue;
      }
      s.lower = 0x80;
      s.upper = 0xbf;
      s.codePoint = (s.codePoint << 6) | (byte & 0x3f);
      if (++s.seen !== s.needed) continue;
      const c = s.codePoint;
      s.codePoint = s.needed = s.seen = 0;
      emit(c);
    }
    if (end && s.needed !== 0) {
      s.codePoint = s.needed = s.seen = 0;
      s.lower = 0x80;
      s.upper = 0xbf;
      error();
    }
    return {
      text: text + (apply(fromCharCode, null, units.subarray(0, count) as unknown as number[]) as string),
      bomDone: !first,
    };
  };
  const newDecoding = (): Decoding =>
    ({ __proto__: null, codePoint: 0, needed: 0, seen: 0, lower: 0x80, upper: 0xbf }) as Decoding;
  kit.utf8Decode = (bytes) => decodeInto(bytes, newDecoding(), false, true, false).text;

  // The labels of UTF-8 in the Encoding standard; every other encoding is refused.
  const UTF8_LABELS = ["unicode-1-1-utf-8", "unicode11utf8", "unicode20utf8", "utf-8", "utf8", "x-unicode20utf8"];
  const ASCII_WHITESPACE = /^[\t\n\f\r ]+|[\t\n\f\r ]+$/g;

  class TextDecoder {
    readonly #fatal: boolean;
    readonly #ignoreBOM: boolean;
    #state = newDecoding();
    #bomSeen = false;
    #doNotFlush = false;
    constructor(label: unknown = "utf-8", options: unknown = undefined) {
      const name = `${label}`.replace(ASCII_WHITESPACE, "").toLowerCase();
      let known = false;
      for (let i = 0; i < UTF8_LABELS.length; i++) if (UTF8_LABELS[i] === name) known = true;
      if (!known) {
        throw new RangeErrorCtor(
          `TextDecoder: the encoding '${label}' is not supported: the sandbox decodes UTF-8 only`,
        );
      }
      const dict = dictionary(options, "TextDecoder");
      this.#fatal = !!dict.fatal;
      this.#ignoreBOM = !!dict.ignoreBOM;
    }
    get encoding(): string {
      return "utf-8";
    }
    get fatal(): boolean {
      return this.#fatal;
    }
    get ignoreBOM(): boolean {
      return this.#ignoreBOM;
    }
    decode(input: unknown = undefined, options: unknown = undefined): string {
      const bytes = input === undefined ? new U8(0) : bytesOf(input, "TextDecoder.decode: the input");
      const stream = !!dictionary(options, "TextDecoder.decode").stream;
      if (!this.#doNotFlush) {
        this.#state = newDecoding();
        this.#bomSeen = false;
      }
      this.#doNotFlush = stream;
      try {
        const decoded = decodeInto(bytes, this.#state, this.#fatal, !stream, !this.#ignoreBOM && !this.#bomSeen);
        if (decoded.bomDone) this.#bomSeen = true;
        return decoded.text;
      } catch (error) {
        this.#doNotFlush = false;
        throw error;
      }
    }
  }
  defineProperty(TextDecoder.prototype, Symbol.toStringTag, { value: "TextDecoder", configurable: true });

  class TextEncoder {
    get encoding(): string {
      return "utf-8";
    }
    encode(input: unknown = ""): Uint8Array {
      return utf8Encode(`${input}`);
    }
    encodeInto(source: unknown, destination: unknown): { read: number; written: number } {
      required(arguments.length, 2, "TextEncoder.encodeInto");
      const text = `${source}`;
      if (apply(typedTag, destination, []) !== "Uint8Array") {
        throw new TypeErrorCtor("TextEncoder.encodeInto: the destination must be a Uint8Array");
      }
      const out = destination as Uint8Array;
      let read = 0;
      let written = 0;
      while (read < text.length) {
        const pair = codePointAt(text, read);
        const size = sizeOf(pair >> 1);
        if (written + size > out.length) break;
        put(out, written, pair >> 1);
        written += size;
        read += 1 + (pair & 1);
      }
      return { read, written };
    }
  }
  defineProperty(TextEncoder.prototype, Symbol.toStringTag, { value: "TextEncoder", configurable: true });

  const ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  const invalid = (message: string) => new DOMException(message, "InvalidCharacterError");
  const base64 = {
    btoa(data: unknown): string {
      required(arguments.length, 1, "btoa");
      const text = `${data}`;
      let out = "";
      for (let i = 0; i < text.length; i += 3) {
        const a = text.charCodeAt(i);
        const b = i + 1 < text.length ? text.charCodeAt(i + 1) : 0;
        const c = i + 2 < text.length ? text.charCodeAt(i + 2) : 0;
        if (a > 0xff || b > 0xff || c > 0xff) {
          throw invalid("btoa: the string to be encoded contains characters outside of the Latin1 range");
        }
        const bits = (a << 16) | (b << 8) | c;
        out += ALPHABET[bits >> 18];
        out += ALPHABET[(bits >> 12) & 63];
        out += i + 1 < text.length ? ALPHABET[(bits >> 6) & 63] : "=";
        out += i + 2 < text.length ? ALPHABET[bits & 63] : "=";
      }
      return out;
    },
    atob(data: unknown): string {
      required(arguments.length, 1, "atob");
      const bad = () => invalid("atob: the string to be decoded is not correctly encoded");
      const input = `${data}`;
      // Forgiving-base64: ASCII whitespace anywhere, up to two `=` at the end of a length that is a multiple of 4.
      let digits = "";
      for (let i = 0; i < input.length; i++) {
        const c = input.charCodeAt(i);
        if (c !== 0x09 && c !== 0x0a && c !== 0x0c && c !== 0x0d && c !== 0x20) digits += input[i];
      }
      if (digits.length % 4 === 0) {
        if (digits.endsWith("==")) digits = digits.slice(0, -2);
        else if (digits.endsWith("=")) digits = digits.slice(0, -1);
      }
      if (digits.length % 4 === 1) throw bad();
      let out = "";
      let bits = 0;
      let count = 0;
      for (let i = 0; i < digits.length; i++) {
        const c = digits.charCodeAt(i);
        const value =
          c >= 0x41 && c <= 0x5a
            ? c - 0x41
            : c >= 0x61 && c <= 0x7a
              ? c - 71
              : c >= 0x30 && c <= 0x39
                ? c + 4
                : c === 0x2b
                  ? 62
                  : c === 0x2f
                    ? 63
                    : -1;
        if (value < 0) throw bad();
        bits = (bits << 6) | value;
        count += 6;
        if (count >= 8) {
          count -= 8;
          out += fromCharCode((bits >> count) & 0xff);
        }
      }
      return out;
    },
  };

  install("TextEncoder", TextEncoder);
  install("TextDecoder", TextDecoder);
  install("btoa", base64.btoa);
  install("atob", base64.atob);
}
