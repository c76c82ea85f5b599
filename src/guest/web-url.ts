/**
 * `URL` and `URLSearchParams` (WHATWG URL) of a sandbox made with `webApis: true`: the URL parser's state machine,
 * host parsing (domains, IPv4, IPv6, opaque hosts), the serializers and the API with its setters, as the standard
 * writes them. Shipped as source text (see core.ts).
 *
 * One approximation: UTS #46 (the mapping of internationalized domain names) is done with what the engine has
 * rather than its tables: ignorable code points removed, NFKC, lowercase, NFKC again, ideographic full stops as
 * dots, labels with code points of the categories it disallows (controls, format, unassigned, private use,
 * separators) or starting with a combining mark refused, then Punycode; `xn--` labels must decode to a label that
 * maps to itself. Its Bidi and joiner rules are not checked.
 * @module
 */
import type { HostCall } from "./core.js";
import type { WebKit } from "./web-kit.js";

/** A URL record: the host as its serialization (`null`: none; `""`: empty), the path a list or an opaque string. */
interface UrlRecord {
  scheme: string;
  username: string;
  password: string;
  host: string | null;
  port: number | null;
  path: string[] | string;
  query: string | null;
  fragment: string | null;
}

interface Pair {
  name: string;
  value: string;
}

export function guestWebUrl(_hostCall: HostCall, kit: WebKit): void {
  // biome-ignore lint/suspicious/noRedundantUseStrict: shipped as source text and evaluated as a sloppy script.
  "use strict";
  const { apply, ownKeys, getOwnPropertyDescriptor } = Reflect;
  const { defineProperty } = Object;
  const { floor, min, max } = Math;
  const TypeErrorCtor = TypeError;
  const U8 = Uint8Array;
  const { fromCharCode, fromCodePoint } = String;
  const { utf8Encode, utf8Decode, install, required, usv } = kit;
  const EOF = -1;

  // ---- code points, percent-encoding
  /** The code points of a scalar value string. */
  const codePoints = (text: string): number[] => {
    const out: number[] = [];
    for (let i = 0; i < text.length; i++) {
      const c = text.charCodeAt(i);
      if (c >= 0xd800 && c <= 0xdbff && i + 1 < text.length) {
        out[out.length] = 0x10000 + ((c - 0xd800) << 10) + (text.charCodeAt(++i) - 0xdc00);
      } else out[out.length] = c;
    }
    return out;
  };
  const inC0 = (c: number) => c <= 0x1f || c > 0x7e;
  const inFragment = (c: number) => inC0(c) || c === 0x20 || c === 0x22 || c === 0x3c || c === 0x3e || c === 0x60;
  const inQuery = (c: number) => inC0(c) || c === 0x20 || c === 0x22 || c === 0x23 || c === 0x3c || c === 0x3e;
  const inSpecialQuery = (c: number) => inQuery(c) || c === 0x27;
  const inPath = (c: number) => inQuery(c) || c === 0x3f || c === 0x5e || c === 0x60 || c === 0x7b || c === 0x7d;
  const inUserinfo = (c: number) =>
    inPath(c) ||
    c === 0x2f ||
    c === 0x3a ||
    c === 0x3b ||
    c === 0x3d ||
    c === 0x40 ||
    (c >= 0x5b && c <= 0x5d) ||
    c === 0x7c;
  const inComponent = (c: number) => inUserinfo(c) || (c >= 0x24 && c <= 0x26) || c === 0x2b || c === 0x2c;
  const inForm = (c: number) => inComponent(c) || c === 0x21 || (c >= 0x27 && c <= 0x29) || c === 0x7e;
  const HEX = "0123456789ABCDEF";
  const percentByte = (b: number) => `%${HEX[b >> 4]}${HEX[b & 15]}`;
  /** UTF-8 percent-encode one code point with a percent-encode set. */
  const encodeCodePoint = (c: number, set: (c: number) => boolean): string => {
    if (!set(c)) return c < 0x80 ? fromCharCode(c) : fromCodePoint(c);
    if (c < 0x80) return percentByte(c);
    const bytes = utf8Encode(fromCodePoint(c));
    let out = "";
    for (let i = 0; i < bytes.length; i++) out += percentByte(bytes[i] as number);
    return out;
  };
  const encodeString = (text: string, set: (c: number) => boolean) => {
    const cps = codePoints(text);
    let out = "";
    for (let i = 0; i < cps.length; i++) out += encodeCodePoint(cps[i] as number, set);
    return out;
  };
  const isAlpha = (c: number) => (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a);
  const isDigit = (c: number) => c >= 0x30 && c <= 0x39;
  const isHex = (c: number) => isDigit(c) || (c >= 0x41 && c <= 0x46) || (c >= 0x61 && c <= 0x66);
  const hexValue = (c: number) => (c <= 0x39 ? c - 0x30 : (c | 0x20) - 0x57);
  const lower = (c: number) => (c >= 0x41 && c <= 0x5a ? c + 32 : c);
  const percentDecode = (bytes: Uint8Array): Uint8Array => {
    const out = new U8(bytes.length);
    let n = 0;
    for (let i = 0; i < bytes.length; i++) {
      const b = bytes[i] as number;
      if (b === 0x25 && i + 2 < bytes.length && isHex(bytes[i + 1] as number) && isHex(bytes[i + 2] as number)) {
        out[n++] = hexValue(bytes[i + 1] as number) * 16 + hexValue(bytes[i + 2] as number);
        i += 2;
      } else out[n++] = b;
    }
    return out.subarray(0, n);
  };

  // ---- hosts
  const isForbiddenHost = (c: number) =>
    c === 0 ||
    c === 9 ||
    c === 0xa ||
    c === 0xd ||
    c === 0x20 ||
    c === 0x23 ||
    c === 0x2f ||
    c === 0x3a ||
    c === 0x3c ||
    c === 0x3e ||
    c === 0x3f ||
    c === 0x40 ||
    c === 0x5b ||
    c === 0x5c ||
    c === 0x5d ||
    c === 0x5e ||
    c === 0x7c;
  const isForbiddenDomain = (c: number) => isForbiddenHost(c) || c <= 0x1f || c === 0x25 || c === 0x7f;

  /** The IPv4 number parser: the value, or NaN for failure. */
  const ipv4Number = (part: string): number => {
    if (part === "") return Number.NaN;
    let radix = 10;
    let digits = part;
    if (part.length >= 2 && part[0] === "0" && (part[1] === "x" || part[1] === "X")) {
      radix = 16;
      digits = part.slice(2);
    } else if (part.length >= 2 && part[0] === "0") {
      radix = 8;
      digits = part.slice(1);
    }
    let value = 0;
    for (let i = 0; i < digits.length; i++) {
      const c = digits.charCodeAt(i);
      const d = isDigit(c) ? c - 0x30 : isHex(c) ? hexValue(c) : 99;
      if (d >= radix) return Number.NaN;
      value = value * radix + d;
    }
    return value;
  };
  const endsInNumber = (host: string) => {
    const parts = host.split(".");
    if (parts[parts.length - 1] === "") {
      if (parts.length === 1) return false;
      parts.length--;
    }
    const last = parts[parts.length - 1] as string;
    let digits = last !== "";
    for (let i = 0; i < last.length; i++) if (!isDigit(last.charCodeAt(i))) digits = false;
    // biome-ignore lint/suspicious/noSelfCompare: NaN without the guest's Number.isNaN.
    return digits || ipv4Number(last) === ipv4Number(last);
  };
  const parseIPv4 = (host: string): string | null => {
    const parts = host.split(".");
    if (parts[parts.length - 1] === "" && parts.length > 1) parts.length--;
    if (parts.length > 4) return null;
    const numbers: number[] = [];
    for (let i = 0; i < parts.length; i++) {
      const n = ipv4Number(parts[i] as string);
      // biome-ignore lint/suspicious/noSelfCompare: NaN without the guest's Number.isNaN.
      if (n !== n || (i < parts.length - 1 && n > 255)) return null;
      numbers[i] = n;
    }
    let ipv4 = numbers[numbers.length - 1] as number;
    if (ipv4 >= 256 ** (5 - numbers.length)) return null;
    for (let i = 0; i < numbers.length - 1; i++) ipv4 += (numbers[i] as number) * 256 ** (3 - i);
    let out = "";
    for (let i = 0; i < 4; i++) {
      out = `${ipv4 % 256}${i === 0 ? "" : "."}${out}`;
      ipv4 = floor(ipv4 / 256);
    }
    return out;
  };
  const parseIPv6 = (input: number[]): string | null => {
    const address = [0, 0, 0, 0, 0, 0, 0, 0];
    const at = (i: number) => (i < input.length ? (input[i] as number) : EOF);
    let piece = 0;
    let compress = -1;
    let p = 0;
    if (at(p) === 0x3a) {
      if (at(p + 1) !== 0x3a) return null;
      p += 2;
      compress = ++piece;
    }
    while (at(p) !== EOF) {
      if (piece === 8) return null;
      if (at(p) === 0x3a) {
        if (compress !== -1) return null;
        p++;
        compress = ++piece;
        continue;
      }
      let value = 0;
      let length = 0;
      while (length < 4 && isHex(at(p))) {
        value = value * 16 + hexValue(at(p));
        p++;
        length++;
      }
      if (at(p) === 0x2e) {
        if (length === 0) return null;
        p -= length;
        if (piece > 6) return null;
        let seen = 0;
        while (at(p) !== EOF) {
          let v4 = -1;
          if (seen > 0) {
            if (at(p) === 0x2e && seen < 4) p++;
            else return null;
          }
          if (!isDigit(at(p))) return null;
          while (isDigit(at(p))) {
            const digit = at(p) - 0x30;
            if (v4 === -1) v4 = digit;
            else if (v4 === 0) return null;
            else v4 = v4 * 10 + digit;
            if (v4 > 255) return null;
            p++;
          }
          address[piece] = (address[piece] as number) * 0x100 + v4;
          seen++;
          if (seen === 2 || seen === 4) piece++;
        }
        if (seen !== 4) return null;
        break;
      }
      if (at(p) === 0x3a) {
        p++;
        if (at(p) === EOF) return null;
      } else if (at(p) !== EOF) return null;
      address[piece++] = value;
    }
    if (compress !== -1) {
      let swaps = piece - compress;
      piece = 7;
      while (piece !== 0 && swaps > 0) {
        const other = compress + swaps - 1;
        const t = address[piece] as number;
        address[piece] = address[other] as number;
        address[other] = t;
        piece--;
        swaps--;
      }
    } else if (piece !== 8) return null;
    // The serializer: the first longest run of two or more zero pieces becomes "::".
    let zeros = -1;
    let longest = 1;
    for (let i = 0; i < 8; ) {
      let j = i;
      while (j < 8 && address[j] === 0) j++;
      if (j - i > longest) {
        longest = j - i;
        zeros = i;
      }
      i = j === i ? i + 1 : j;
    }
    let out = "";
    for (let i = 0; i < 8; i++) {
      if (i === zeros) {
        out += i === 0 ? "::" : ":";
        i += longest - 1;
        continue;
      }
      out += (address[i] as number).toString(16);
      if (i !== 7) out += ":";
    }
    return `[${out}]`;
  };

  // Punycode (RFC 3492).
  const BASE = 36;
  const TMIN = 1;
  const TMAX = 26;
  const MAX_INT = 0x7fffffff;
  const adapt = (delta: number, points: number, first: boolean) => {
    let d = first ? floor(delta / 700) : delta >> 1;
    d += floor(d / points);
    let k = 0;
    while (d > ((BASE - TMIN) * TMAX) >> 1) {
      d = floor(d / (BASE - TMIN));
      k += BASE;
    }
    return k + floor(((BASE - TMIN + 1) * d) / (d + 38));
  };
  const threshold = (k: number, bias: number) => (k <= bias ? TMIN : k >= bias + TMAX ? TMAX : k - bias);
  const punycodeDigit = (d: number) => fromCharCode(d < 26 ? 0x61 + d : 22 + d);
  const punycodeEncode = (label: string): string | null => {
    const input = codePoints(label);
    let out = "";
    for (let i = 0; i < input.length; i++) if ((input[i] as number) < 0x80) out += fromCharCode(input[i] as number);
    const basic = out.length;
    let handled = basic;
    if (basic > 0) out += "-";
    let n = 0x80;
    let delta = 0;
    let bias = 72;
    while (handled < input.length) {
      let m = MAX_INT;
      for (let i = 0; i < input.length; i++)
        if ((input[i] as number) >= n && (input[i] as number) < m) m = input[i] as number;
      if (m - n > floor((MAX_INT - delta) / (handled + 1))) return null;
      delta += (m - n) * (handled + 1);
      n = m;
      for (let i = 0; i < input.length; i++) {
        const c = input[i] as number;
        if (c < n && ++delta > MAX_INT) return null;
        if (c !== n) continue;
        let q = delta;
        for (let k = BASE; ; k += BASE) {
          const t = threshold(k, bias);
          if (q < t) break;
          out += punycodeDigit(t + ((q - t) % (BASE - t)));
          q = floor((q - t) / (BASE - t));
        }
        out += punycodeDigit(q);
        bias = adapt(delta, handled + 1, handled === basic);
        delta = 0;
        handled++;
      }
      delta++;
      n++;
    }
    return out;
  };
  const punycodeDecode = (input: string): string | null => {
    const out: number[] = [];
    const basic = max(0, input.lastIndexOf("-"));
    for (let j = 0; j < basic; j++) {
      if (input.charCodeAt(j) >= 0x80) return null;
      out[j] = input.charCodeAt(j);
    }
    let n = 0x80;
    let i = 0;
    let bias = 72;
    for (let index = basic > 0 ? basic + 1 : 0; index < input.length; ) {
      const old = i;
      for (let w = 1, k = BASE; ; k += BASE) {
        if (index >= input.length) return null;
        const c = input.charCodeAt(index++);
        const d = isDigit(c) ? c - 22 : c >= 0x41 && c <= 0x5a ? c - 0x41 : c >= 0x61 && c <= 0x7a ? c - 0x61 : BASE;
        if (d >= BASE || d > floor((MAX_INT - i) / w)) return null;
        i += d * w;
        const t = threshold(k, bias);
        if (d < t) break;
        if (w > floor(MAX_INT / (BASE - t))) return null;
        w *= BASE - t;
      }
      const length = out.length + 1;
      bias = adapt(i - old, length, old === 0);
      if (floor(i / length) > MAX_INT - n) return null;
      n += floor(i / length);
      i %= length;
      if (n > 0x10ffff || (n >= 0xd800 && n <= 0xdfff)) return null;
      for (let j = out.length; j > i; j--) out[j] = out[j - 1] as number;
      out[i++] = n;
    }
    let text = "";
    for (let j = 0; j < out.length; j++) text += fromCodePoint(out[j] as number);
    return text;
  };

  const ASCII = /^[\0-\x7f]*$/;
  const PUNYCODE_LABEL = /(^|\.)xn--/i;
  // Variation selectors are among what UTS #46 ignores: the class lists them on purpose.
  const IGNORED =
    // biome-ignore lint/suspicious/noMisleadingCharacterClass: each code point of the class stands alone.
    /[\u00ad\u034f\u180b-\u180d\u180f\u200b\u2060\u2064\ufe00-\ufe0f\ufeff\u{1bca0}-\u{1bca3}\u{e0100}-\u{e01ef}]/gu;
  const DISALLOWED = /[\p{Cc}\p{Cf}\p{Cn}\p{Co}\p{Cs}\p{Z}\ufffc\ufffd]|^\p{M}/u;
  const IDEOGRAPHIC_FULL_STOP = /\u3002/g;
  const CAPITAL_SIGMA = /\u03a3/g;
  /** The UTS #46 mapping, approximated (see the module comment): capital sigma maps to σ wherever it stands. */
  const mapDomain = (text: string) =>
    text
      .replace(IGNORED, "")
      .normalize("NFKC")
      .replace(CAPITAL_SIGMA, "\u03c3")
      .toLowerCase()
      .normalize("NFKC")
      .replace(IDEOGRAPHIC_FULL_STOP, ".");
  /** The URL standard's "domain to ASCII" with `beStrict` false; `null` for failure. */
  const domainToASCII = (domain: string): string | null => {
    let result: string;
    if (ASCII.test(domain) && !PUNYCODE_LABEL.test(domain)) result = domain.toLowerCase();
    else {
      const labels = mapDomain(domain).split(".");
      for (let i = 0; i < labels.length; i++) {
        const label = labels[i] as string;
        if (label.startsWith("xn--")) {
          if (!ASCII.test(label)) return null;
          const decoded = punycodeDecode(label.slice(4));
          if (
            decoded === null ||
            ASCII.test(decoded) ||
            decoded.startsWith("xn--") ||
            DISALLOWED.test(decoded) ||
            mapDomain(decoded) !== decoded
          ) {
            return null;
          }
        } else if (!ASCII.test(label)) {
          const encoded = DISALLOWED.test(label) ? null : punycodeEncode(label);
          if (encoded === null) return null;
          labels[i] = `xn--${encoded}`;
        }
      }
      result = labels.join(".");
    }
    if (result === "") return null;
    for (let i = 0; i < result.length; i++) if (isForbiddenDomain(result.charCodeAt(i))) return null;
    return result;
  };
  /** The host parser: a host's serialization, or `null` for failure. */
  const parseHost = (input: string, opaque: boolean): string | null => {
    // Indexes are read within the string: past its end a read goes on to Object.prototype, where the guest may have
    // put a getter.
    if (input.length > 0 && input[0] === "[") {
      if (input[input.length - 1] !== "]") return null;
      return parseIPv6(codePoints(input.slice(1, -1)));
    }
    if (opaque) {
      const cps = codePoints(input);
      let out = "";
      for (let i = 0; i < cps.length; i++) {
        if (isForbiddenHost(cps[i] as number)) return null;
        out += encodeCodePoint(cps[i] as number, inC0);
      }
      return out;
    }
    // Without a percent sign, percent-decoding and UTF-8 round trip the input unchanged.
    const domain = input.indexOf("%") < 0 ? input : utf8Decode(percentDecode(utf8Encode(input)));
    const ascii = domainToASCII(domain);
    if (ascii === null) return null;
    return endsInNumber(ascii) ? parseIPv4(ascii) : ascii;
  };

  // ---- the URL parser
  // Special schemes and their default ports (-1: none).
  const SPECIAL = { __proto__: null, ftp: 21, file: -1, http: 80, https: 443, ws: 80, wss: 443 } as unknown as Record<
    string,
    number
  >;
  const isSpecial = (url: UrlRecord | string) => SPECIAL[typeof url === "string" ? url : url.scheme] !== undefined;
  const defaultPort = (scheme: string) => {
    const port = SPECIAL[scheme];
    return port === undefined || port < 0 ? null : port;
  };
  const credentials = (url: UrlRecord) => url.username !== "" || url.password !== "";
  const cannotHaveCredentialsOrPort = (url: UrlRecord) => url.host === null || url.host === "" || url.scheme === "file";
  const isDriveLetter = (s: string | undefined, normalized: boolean) =>
    s !== undefined && s.length === 2 && isAlpha(s.charCodeAt(0)) && (s[1] === ":" || (!normalized && s[1] === "|"));
  const startsWithDriveLetter = (cps: number[], p: number) => {
    const left = cps.length - p;
    if (left < 2 || !isAlpha(cps[p] as number) || (cps[p + 1] !== 0x3a && cps[p + 1] !== 0x7c)) return false;
    const next = cps[p + 2];
    return left === 2 || next === 0x2f || next === 0x5c || next === 0x3f || next === 0x23;
  };
  const shorten = (url: UrlRecord) => {
    const path = url.path as string[];
    if (url.scheme === "file" && path.length === 1 && isDriveLetter(path[0], true)) return;
    if (path.length > 0) path.length--;
  };
  const isSingleDot = (s: string) => s === "." || s.toLowerCase() === "%2e";
  const isDoubleDot = (s: string) => {
    const t = s.toLowerCase();
    return t === ".." || t === ".%2e" || t === "%2e." || t === "%2e%2e";
  };
  const copy = (list: string[] | string) => {
    if (typeof list === "string") return list;
    const out: string[] = [];
    for (let i = 0; i < list.length; i++) out[i] = list[i] as string;
    return out;
  };
  const append = (url: UrlRecord, segment: string) => {
    const path = url.path as string[];
    path[path.length] = segment;
  };
  const newRecord = (): UrlRecord =>
    ({
      __proto__: null,
      scheme: "",
      username: "",
      password: "",
      host: null,
      port: null,
      path: [],
      query: null,
      fragment: null,
    }) as UrlRecord;

  const SCHEME_START = 1;
  const SCHEME = 2;
  const NO_SCHEME = 3;
  const SPECIAL_RELATIVE_OR_AUTHORITY = 4;
  const PATH_OR_AUTHORITY = 5;
  const RELATIVE = 6;
  const RELATIVE_SLASH = 7;
  const SPECIAL_AUTHORITY_SLASHES = 8;
  const SPECIAL_AUTHORITY_IGNORE_SLASHES = 9;
  const AUTHORITY = 10;
  const HOST = 11;
  const HOSTNAME = 12;
  const PORT = 13;
  const FILE = 14;
  const FILE_SLASH = 15;
  const FILE_HOST = 16;
  const PATH_START = 17;
  const PATH = 18;
  const OPAQUE_PATH = 19;
  const QUERY = 20;
  const FRAGMENT = 21;
  const C0_OR_SPACE = /^[\0- ]+|[\0- ]+$/g;
  const TAB_OR_NEWLINE = /[\t\n\r]/g;

  // The common case, read off in one match of the engine's regular expressions instead of a step of the state
  // machine per code point (~1,000 units of fuel a character): an absolute URL of a special scheme but file, without
  // credentials, whose every part is already as the parser writes it. Its scheme and domain are lowercase, no label
  // is to be mapped (`xn--`), and the last is no number unless the host is an IPv4 address as it is written back; its
  // path has no dot segment; the classes hold the printable ASCII that the percent-encode sets leave alone less each
  // part's delimiters: the path's set (and `\`, a slash in special URLs), the special-query set, the fragment set.
  // test/conformance/web-url.ts checks on every host that both ways agree.
  const OCTET = "(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])";
  const HOST_END = "(?:[:/?#]|$)";
  const LABEL = `(?!xn--)(?!(?:0x[0-9a-f]*|[0-9]+)${HOST_END})[a-z0-9_-]+`;
  const SEGMENT = `/(?!(?:\\.|%2[Ee]){1,2}(?:[/?#]|$))[!$-.0-;=@-[\\]_a-z|~]*`;
  const SIMPLE = new RegExp(
    `^(https?|wss?|ftp)://((?:${OCTET}\\.){3}${OCTET}(?=${HOST_END})|${LABEL}(?:\\.${LABEL})*)(?::([0-9]+))?` +
      `((?:${SEGMENT})*)(?:\\?([!$-&(-;=?-~]*))?(?:#([!#-;=?-_a-~]*))?$`,
  );
  const { exec } = RegExp.prototype;
  /** The record of `text` when it is such a URL, else `undefined` (the state machine decides). */
  const parseSimple = (text: string): UrlRecord | undefined => {
    const match = apply(exec, SIMPLE, [text]) as (string | undefined)[] | null;
    if (match === null) return undefined;
    const url = newRecord();
    url.scheme = match[1] as string;
    url.host = match[2] as string;
    const digits = match[3];
    if (digits !== undefined) {
      const port = +digits;
      if (port > 65535) return undefined;
      url.port = port === SPECIAL[url.scheme] ? null : port;
    }
    const path = match[4] as string;
    url.path = path === "" ? [""] : path.slice(1).split("/");
    url.query = match[5] ?? null;
    url.fragment = match[6] ?? null;
    return url;
  };

  /**
   * The basic URL parser: a new record from `text` (against `base`), or, with a state override, `given` changed in
   * place (what a setter does). `null` is failure.
   */
  const parse = (text: string, base: UrlRecord | null, given?: UrlRecord, override = 0): UrlRecord | null => {
    if (given === undefined && base === null) {
      const simple = parseSimple(text);
      if (simple !== undefined) return simple;
    }
    const url = given ?? newRecord();
    const cps = codePoints((given === undefined ? text.replace(C0_OR_SPACE, "") : text).replace(TAB_OR_NEWLINE, ""));
    const n = cps.length;
    let state = override || SCHEME_START;
    let buffer = "";
    let atSignSeen = false;
    let insideBrackets = false;
    let passwordTokenSeen = false;
    for (let p = 0; p <= n; p++) {
      const c = p < n ? (cps[p] as number) : EOF;
      const special = isSpecial(url);
      switch (state) {
        case SCHEME_START:
          if (isAlpha(c)) {
            buffer += fromCharCode(lower(c));
            state = SCHEME;
          } else if (!override) {
            state = NO_SCHEME;
            p--;
          } else return null;
          break;
        case SCHEME:
          if (isAlpha(c) || isDigit(c) || c === 0x2b || c === 0x2d || c === 0x2e) buffer += fromCharCode(lower(c));
          else if (c === 0x3a) {
            if (override) {
              if (special !== isSpecial(buffer)) return url;
              if ((credentials(url) || url.port !== null) && buffer === "file") return url;
              if (url.scheme === "file" && url.host === "") return url;
            }
            url.scheme = buffer;
            if (override) {
              if (url.port === defaultPort(url.scheme)) url.port = null;
              return url;
            }
            buffer = "";
            if (url.scheme === "file") state = FILE;
            else if (isSpecial(url) && base !== null && base.scheme === url.scheme)
              state = SPECIAL_RELATIVE_OR_AUTHORITY;
            else if (isSpecial(url)) state = SPECIAL_AUTHORITY_SLASHES;
            else if (cps[p + 1] === 0x2f) {
              state = PATH_OR_AUTHORITY;
              p++;
            } else {
              url.path = "";
              state = OPAQUE_PATH;
            }
          } else if (!override) {
            buffer = "";
            state = NO_SCHEME;
            p = -1;
          } else return null;
          break;
        case NO_SCHEME:
          if (base === null || (typeof base.path === "string" && c !== 0x23)) return null;
          if (typeof base.path === "string") {
            url.scheme = base.scheme;
            url.path = base.path;
            url.query = base.query;
            url.fragment = "";
            state = FRAGMENT;
          } else {
            state = base.scheme === "file" ? FILE : RELATIVE;
            p--;
          }
          break;
        case SPECIAL_RELATIVE_OR_AUTHORITY:
          if (c === 0x2f && cps[p + 1] === 0x2f) {
            state = SPECIAL_AUTHORITY_IGNORE_SLASHES;
            p++;
          } else {
            state = RELATIVE;
            p--;
          }
          break;
        case PATH_OR_AUTHORITY:
          if (c === 0x2f) state = AUTHORITY;
          else {
            state = PATH;
            p--;
          }
          break;
        case RELATIVE: {
          const from = base as UrlRecord;
          url.scheme = from.scheme;
          if (c === 0x2f || (isSpecial(url) && c === 0x5c)) state = RELATIVE_SLASH;
          else {
            url.username = from.username;
            url.password = from.password;
            url.host = from.host;
            url.port = from.port;
            url.path = copy(from.path);
            url.query = from.query;
            if (c === 0x3f) {
              url.query = "";
              state = QUERY;
            } else if (c === 0x23) {
              url.fragment = "";
              state = FRAGMENT;
            } else if (c !== EOF) {
              url.query = null;
              shorten(url);
              state = PATH;
              p--;
            }
          }
          break;
        }
        case RELATIVE_SLASH:
          if (special && (c === 0x2f || c === 0x5c)) state = SPECIAL_AUTHORITY_IGNORE_SLASHES;
          else if (c === 0x2f) state = AUTHORITY;
          else {
            const from = base as UrlRecord;
            url.username = from.username;
            url.password = from.password;
            url.host = from.host;
            url.port = from.port;
            state = PATH;
            p--;
          }
          break;
        case SPECIAL_AUTHORITY_SLASHES:
          state = SPECIAL_AUTHORITY_IGNORE_SLASHES;
          if (c === 0x2f && cps[p + 1] === 0x2f) p++;
          else p--;
          break;
        case SPECIAL_AUTHORITY_IGNORE_SLASHES:
          if (c !== 0x2f && c !== 0x5c) {
            state = AUTHORITY;
            p--;
          }
          break;
        case AUTHORITY:
          if (c === 0x40) {
            if (atSignSeen) buffer = `%40${buffer}`;
            atSignSeen = true;
            const userinfo = codePoints(buffer);
            for (let i = 0; i < userinfo.length; i++) {
              const b = userinfo[i] as number;
              if (b === 0x3a && !passwordTokenSeen) {
                passwordTokenSeen = true;
                continue;
              }
              if (passwordTokenSeen) url.password += encodeCodePoint(b, inUserinfo);
              else url.username += encodeCodePoint(b, inUserinfo);
            }
            buffer = "";
          } else if (c === EOF || c === 0x2f || c === 0x3f || c === 0x23 || (special && c === 0x5c)) {
            if (atSignSeen && buffer === "") return null;
            p -= codePoints(buffer).length + 1;
            buffer = "";
            state = HOST;
          } else buffer += fromCodePoint(c);
          break;
        case HOST:
        case HOSTNAME:
          if (override && url.scheme === "file") {
            p--;
            state = FILE_HOST;
          } else if (c === 0x3a && !insideBrackets) {
            if (buffer === "" || override === HOSTNAME) return null;
            const host = parseHost(buffer, !special);
            if (host === null) return null;
            url.host = host;
            buffer = "";
            state = PORT;
          } else if (c === EOF || c === 0x2f || c === 0x3f || c === 0x23 || (special && c === 0x5c)) {
            p--;
            if (special && buffer === "") return null;
            if (override && buffer === "" && (credentials(url) || url.port !== null)) return null;
            const host = parseHost(buffer, !special);
            if (host === null) return null;
            url.host = host;
            buffer = "";
            state = PATH_START;
            if (override) return url;
          } else {
            if (c === 0x5b) insideBrackets = true;
            if (c === 0x5d) insideBrackets = false;
            buffer += fromCodePoint(c);
          }
          break;
        case PORT:
          if (isDigit(c)) buffer += fromCharCode(c);
          else if (c === EOF || c === 0x2f || c === 0x3f || c === 0x23 || (special && c === 0x5c) || override) {
            if (buffer !== "") {
              let port = 0;
              for (let i = 0; i < buffer.length; i++) {
                port = port * 10 + buffer.charCodeAt(i) - 0x30;
                if (port > 65535) return null;
              }
              url.port = port === defaultPort(url.scheme) ? null : port;
              buffer = "";
              if (override) return url;
            }
            if (override) return null;
            state = PATH_START;
            p--;
          } else return null;
          break;
        case FILE:
          url.scheme = "file";
          url.host = "";
          if (c === 0x2f || c === 0x5c) state = FILE_SLASH;
          else if (base !== null && base.scheme === "file") {
            url.host = base.host;
            url.path = copy(base.path);
            url.query = base.query;
            if (c === 0x3f) {
              url.query = "";
              state = QUERY;
            } else if (c === 0x23) {
              url.fragment = "";
              state = FRAGMENT;
            } else if (c !== EOF) {
              url.query = null;
              if (!startsWithDriveLetter(cps, p)) shorten(url);
              else url.path = [];
              state = PATH;
              p--;
            }
          } else {
            state = PATH;
            p--;
          }
          break;
        case FILE_SLASH:
          if (c === 0x2f || c === 0x5c) state = FILE_HOST;
          else {
            if (base !== null && base.scheme === "file") {
              url.host = base.host;
              const path = base.path as string[];
              const first = path.length > 0 ? path[0] : undefined;
              if (!startsWithDriveLetter(cps, p) && isDriveLetter(first, true)) append(url, first as string);
            }
            state = PATH;
            p--;
          }
          break;
        case FILE_HOST:
          if (c === EOF || c === 0x2f || c === 0x5c || c === 0x3f || c === 0x23) {
            p--;
            if (!override && isDriveLetter(buffer, false)) state = PATH;
            else if (buffer === "") {
              url.host = "";
              if (override) return url;
              state = PATH_START;
            } else {
              const host = parseHost(buffer, false);
              if (host === null) return null;
              url.host = host === "localhost" ? "" : host;
              if (override) return url;
              buffer = "";
              state = PATH_START;
            }
          } else buffer += fromCodePoint(c);
          break;
        case PATH_START:
          if (special) {
            state = PATH;
            if (c !== 0x2f && c !== 0x5c) p--;
          } else if (!override && c === 0x3f) {
            url.query = "";
            state = QUERY;
          } else if (!override && c === 0x23) {
            url.fragment = "";
            state = FRAGMENT;
          } else if (c !== EOF) {
            state = PATH;
            if (c !== 0x2f) p--;
          } else if (override && url.host === null) append(url, "");
          break;
        case PATH:
          if (c === EOF || c === 0x2f || (special && c === 0x5c) || (!override && (c === 0x3f || c === 0x23))) {
            const slash = c === 0x2f || (special && c === 0x5c);
            if (isDoubleDot(buffer)) {
              shorten(url);
              if (!slash) append(url, "");
            } else if (isSingleDot(buffer)) {
              if (!slash) append(url, "");
            } else {
              if (url.scheme === "file" && url.path.length === 0 && isDriveLetter(buffer, false)) {
                buffer = `${buffer[0]}:`;
              }
              append(url, buffer);
            }
            buffer = "";
            if (c === 0x3f) {
              url.query = "";
              state = QUERY;
            } else if (c === 0x23) {
              url.fragment = "";
              state = FRAGMENT;
            }
          } else buffer += encodeCodePoint(c, inPath);
          break;
        case OPAQUE_PATH:
          if (c === 0x3f) {
            url.query = "";
            state = QUERY;
          } else if (c === 0x23) {
            url.fragment = "";
            state = FRAGMENT;
          } else if (c === 0x20) {
            // A space right before the query or fragment is escaped, so that an opaque path never ends in a space.
            url.path += cps[p + 1] === 0x3f || cps[p + 1] === 0x23 ? "%20" : " ";
          } else if (c !== EOF) url.path += encodeCodePoint(c, inC0);
          break;
        case QUERY:
          if ((!override && c === 0x23) || c === EOF) {
            url.query += encodeString(buffer, special ? inSpecialQuery : inQuery);
            buffer = "";
            if (c === 0x23) {
              url.fragment = "";
              state = FRAGMENT;
            }
          } else buffer += fromCodePoint(c);
          break;
        case FRAGMENT:
          if (c !== EOF) url.fragment += encodeCodePoint(c, inFragment);
          break;
      }
    }
    return url;
  };

  const serializePath = (url: UrlRecord) => {
    if (typeof url.path === "string") return url.path;
    let out = "";
    for (let i = 0; i < url.path.length; i++) out += `/${url.path[i]}`;
    return out;
  };
  const serialize = (url: UrlRecord) => {
    let out = `${url.scheme}:`;
    if (url.host !== null) {
      out += "//";
      if (credentials(url)) out += `${url.username}${url.password === "" ? "" : `:${url.password}`}@`;
      out += url.host;
      if (url.port !== null) out += `:${url.port}`;
    } else if (typeof url.path !== "string" && url.path.length > 1 && url.path[0] === "") out += "/.";
    out += serializePath(url);
    if (url.query !== null) out += `?${url.query}`;
    if (url.fragment !== null) out += `#${url.fragment}`;
    return out;
  };
  const originOf = (url: UrlRecord): string => {
    const { scheme } = url;
    if (scheme === "blob") {
      const inner = parse(serializePath(url), null);
      return inner !== null && (inner.scheme === "http" || inner.scheme === "https") ? originOf(inner) : "null";
    }
    if (scheme === "ftp" || scheme === "http" || scheme === "https" || scheme === "ws" || scheme === "wss") {
      return `${scheme}://${url.host}${url.port === null ? "" : `:${url.port}`}`;
    }
    return "null";
  };
  const shown = (text: string) => (text.length > 256 ? `${text.slice(0, 256)}...` : text);
  /** A URL record from the API's arguments, or `null`; `what` names the failure when given. */
  const parseWithBase = (input: unknown, base: unknown, what?: string): UrlRecord | null => {
    const text = usv(input);
    let parsedBase: UrlRecord | null = null;
    if (base !== undefined) {
      const baseText = usv(base);
      parsedBase = parse(baseText, null);
      if (parsedBase === null) {
        if (what === undefined) return null;
        throw new TypeErrorCtor(`${what}: Invalid base URL '${shown(baseText)}'`);
      }
    }
    const url = parse(text, parsedBase);
    if (url === null && what !== undefined) throw new TypeErrorCtor(`${what}: Invalid URL '${shown(text)}'`);
    return url;
  };

  // ---- application/x-www-form-urlencoded
  const PLUS = /\+/g;
  const formDecode = (text: string) => {
    if (text.indexOf("%") < 0) return text.replace(PLUS, " ");
    const bytes = utf8Encode(text);
    for (let i = 0; i < bytes.length; i++) if (bytes[i] === 0x2b) bytes[i] = 0x20;
    return utf8Decode(percentDecode(bytes));
  };
  const parseForm = (text: string): Pair[] => {
    const list: Pair[] = [];
    const sequences = text.split("&");
    for (let i = 0; i < sequences.length; i++) {
      const sequence = sequences[i] as string;
      if (sequence === "") continue;
      const eq = sequence.indexOf("=");
      const name = eq < 0 ? sequence : sequence.slice(0, eq);
      const value = eq < 0 ? "" : sequence.slice(eq + 1);
      list[list.length] = { __proto__: null, name: formDecode(name), value: formDecode(value) } as Pair;
    }
    return list;
  };
  const formEncode = (text: string) => {
    const cps = codePoints(text);
    let out = "";
    for (let i = 0; i < cps.length; i++) out += cps[i] === 0x20 ? "+" : encodeCodePoint(cps[i] as number, inForm);
    return out;
  };
  const serializeForm = (list: Pair[]) => {
    let out = "";
    for (let i = 0; i < list.length; i++) {
      const { name, value } = list[i] as Pair;
      out += `${i === 0 ? "" : "&"}${formEncode(name)}=${formEncode(value)}`;
    }
    return out;
  };
  /** Sorts pairs by name in code units, keeping the order of equal names (a merge sort). */
  const sortPairs = (list: Pair[]) => {
    let from = list;
    let to: Pair[] = [];
    for (let width = 1; width < list.length; width *= 2) {
      for (let start = 0; start < list.length; start += 2 * width) {
        const mid = min(start + width, list.length);
        const end = min(start + 2 * width, list.length);
        let i = start;
        let j = mid;
        for (let k = start; k < end; k++) {
          to[k] = (
            i < mid && (j >= end || (from[j] as Pair).name >= (from[i] as Pair).name) ? from[i++] : from[j++]
          ) as Pair;
        }
      }
      const t = from;
      from = to;
      to = t;
    }
    for (let k = 0; k < list.length; k++) list[k] = from[k] as Pair;
  };

  let setQuery: (url: URL, query: string | null) => void;
  let listOf: (params: URLSearchParams) => Pair[];
  let link: (params: URLSearchParams, url: URL, query: string) => void;

  class URLSearchParams {
    #list: Pair[] = [];
    #url: URL | null = null;
    constructor(init: unknown = "") {
      const list = this.#list;
      if ((typeof init === "object" && init !== null) || typeof init === "function") {
        const method = (init as { [Symbol.iterator]?: unknown })[Symbol.iterator];
        if (method !== undefined && method !== null) {
          if (typeof method !== "function")
            throw new TypeErrorCtor("URLSearchParams: the init's iterator is not a function");
          const iterator = apply(method, init, []) as Iterator<unknown>;
          for (let step = iterator.next(); !step.done; step = iterator.next()) {
            const pair = step.value;
            if ((typeof pair !== "object" || pair === null) && typeof pair !== "function") {
              throw new TypeErrorCtor("URLSearchParams: every item of the init must be a pair [name, value]");
            }
            const items: string[] = [];
            for (const item of pair as Iterable<unknown>) items[items.length] = usv(item);
            if (items.length !== 2)
              throw new TypeErrorCtor("URLSearchParams: every item of the init must be a pair [name, value]");
            list[list.length] = { __proto__: null, name: items[0], value: items[1] } as Pair;
          }
        } else {
          const keys = ownKeys(init);
          for (let i = 0; i < keys.length; i++) {
            const key = keys[i] as PropertyKey;
            const descriptor = getOwnPropertyDescriptor(init, key);
            if (descriptor === undefined || !descriptor.enumerable) continue;
            const name = usv(key);
            const value = usv((init as Record<PropertyKey, unknown>)[key]);
            let j = 0;
            while (j < list.length && (list[j] as Pair).name !== name) j++;
            if (j < list.length) (list[j] as Pair).value = value;
            else list[j] = { __proto__: null, name, value } as Pair;
          }
        }
      } else {
        const text = usv(init);
        this.#list = parseForm(text.length > 0 && text[0] === "?" ? text.slice(1) : text);
      }
    }
    static {
      listOf = (params) => params.#list;
      link = (params, url, query) => {
        params.#list = parseForm(query);
        params.#url = url;
      };
    }
    /** The URL standard's update steps: the URL's query follows the list. */
    #update(): void {
      if (this.#url === null) return;
      const query = serializeForm(this.#list);
      setQuery(this.#url, query === "" ? null : query);
    }
    get size(): number {
      return this.#list.length;
    }
    append(name: unknown, value: unknown): void {
      required(arguments.length, 2, "URLSearchParams.append");
      const list = this.#list;
      list[list.length] = { __proto__: null, name: usv(name), value: usv(value) } as Pair;
      this.#update();
    }
    delete(name: unknown, value: unknown = undefined): void {
      required(arguments.length, 1, "URLSearchParams.delete");
      const n = usv(name);
      const v = value === undefined ? undefined : usv(value);
      const list = this.#list;
      let j = 0;
      for (let i = 0; i < list.length; i++) {
        const pair = list[i] as Pair;
        if (pair.name !== n || (v !== undefined && pair.value !== v)) list[j++] = pair;
      }
      list.length = j;
      this.#update();
    }
    get(name: unknown): string | null {
      required(arguments.length, 1, "URLSearchParams.get");
      const n = usv(name);
      const list = this.#list;
      for (let i = 0; i < list.length; i++) if ((list[i] as Pair).name === n) return (list[i] as Pair).value;
      return null;
    }
    getAll(name: unknown): string[] {
      required(arguments.length, 1, "URLSearchParams.getAll");
      const n = usv(name);
      const out: string[] = [];
      const list = this.#list;
      for (let i = 0; i < list.length; i++) if ((list[i] as Pair).name === n) out[out.length] = (list[i] as Pair).value;
      return out;
    }
    has(name: unknown, value: unknown = undefined): boolean {
      required(arguments.length, 1, "URLSearchParams.has");
      const n = usv(name);
      const v = value === undefined ? undefined : usv(value);
      const list = this.#list;
      for (let i = 0; i < list.length; i++) {
        const pair = list[i] as Pair;
        if (pair.name === n && (v === undefined || pair.value === v)) return true;
      }
      return false;
    }
    set(name: unknown, value: unknown): void {
      required(arguments.length, 2, "URLSearchParams.set");
      const n = usv(name);
      const v = usv(value);
      const list = this.#list;
      let found = false;
      let j = 0;
      for (let i = 0; i < list.length; i++) {
        const pair = list[i] as Pair;
        if (pair.name !== n) list[j++] = pair;
        else if (!found) {
          found = true;
          pair.value = v;
          list[j++] = pair;
        }
      }
      list.length = j;
      if (!found) list[list.length] = { __proto__: null, name: n, value: v } as Pair;
      this.#update();
    }
    sort(): void {
      sortPairs(this.#list);
      this.#update();
    }
    toString(): string {
      return serializeForm(this.#list);
    }
    forEach(callback: unknown, thisArg: unknown = undefined): void {
      required(arguments.length, 1, "URLSearchParams.forEach");
      if (typeof callback !== "function")
        throw new TypeErrorCtor("URLSearchParams.forEach: the callback must be a function");
      const list = this.#list;
      for (let i = 0; i < list.length; i++) {
        const pair = list[i] as Pair;
        apply(callback, thisArg, [pair.value, pair.name, this]);
      }
    }
    keys(): Iterator<string> {
      return paramsIterator(this, 0);
    }
    values(): Iterator<string> {
      return paramsIterator(this, 1);
    }
    entries(): Iterator<[string, string]> {
      return paramsIterator(this, 2);
    }
  }
  defineProperty(URLSearchParams.prototype, Symbol.iterator, {
    value: URLSearchParams.prototype.entries,
    writable: true,
    configurable: true,
  });
  defineProperty(URLSearchParams.prototype, Symbol.toStringTag, { value: "URLSearchParams", configurable: true });

  const paramsIterator = kit.pairIterator("URLSearchParams", (params) => listOf(params as URLSearchParams));

  class URL {
    #url: UrlRecord;
    /**
     * The query object, made when it is first asked for (most URLs are never asked), from the query as it is then:
     * only the search setter, which links it at once, sets a query that its list does not read back the same.
     */
    #params: URLSearchParams | null = null;
    constructor(url: unknown, base: unknown = undefined) {
      required(arguments.length, 1, "URL");
      this.#url = parseWithBase(url, base, "URL") as UrlRecord;
    }
    static {
      setQuery = (url, query) => {
        url.#url.query = query;
      };
    }
    static parse(url: unknown, base: unknown = undefined): URL | null {
      required(arguments.length, 1, "URL.parse");
      return parseWithBase(url, base) === null ? null : new URL(url, base);
    }
    static canParse(url: unknown, base: unknown = undefined): boolean {
      required(arguments.length, 1, "URL.canParse");
      return parseWithBase(url, base) !== null;
    }
    get href(): string {
      return serialize(this.#url);
    }
    set href(value: string) {
      const text = usv(value);
      const url = parse(text, null);
      if (url === null) throw new TypeErrorCtor(`URL.href: Invalid URL '${shown(text)}'`);
      this.#url = url;
      if (this.#params !== null) link(this.#params, this, url.query ?? "");
    }
    get origin(): string {
      return originOf(this.#url);
    }
    get protocol(): string {
      return `${this.#url.scheme}:`;
    }
    set protocol(value: string) {
      parse(`${usv(value)}:`, null, this.#url, SCHEME_START);
    }
    get username(): string {
      return this.#url.username;
    }
    set username(value: string) {
      if (!cannotHaveCredentialsOrPort(this.#url)) this.#url.username = encodeString(usv(value), inUserinfo);
    }
    get password(): string {
      return this.#url.password;
    }
    set password(value: string) {
      if (!cannotHaveCredentialsOrPort(this.#url)) this.#url.password = encodeString(usv(value), inUserinfo);
    }
    get host(): string {
      const { host, port } = this.#url;
      return host === null ? "" : port === null ? host : `${host}:${port}`;
    }
    set host(value: string) {
      if (typeof this.#url.path !== "string") parse(usv(value), null, this.#url, HOST);
    }
    get hostname(): string {
      return this.#url.host ?? "";
    }
    set hostname(value: string) {
      if (typeof this.#url.path !== "string") parse(usv(value), null, this.#url, HOSTNAME);
    }
    get port(): string {
      const { port } = this.#url;
      return port === null ? "" : `${port}`;
    }
    set port(value: string) {
      const url = this.#url;
      if (cannotHaveCredentialsOrPort(url)) return;
      const text = usv(value);
      if (text === "") url.port = null;
      else parse(text, null, url, PORT);
    }
    get pathname(): string {
      return serializePath(this.#url);
    }
    set pathname(value: string) {
      const url = this.#url;
      if (typeof url.path === "string") return;
      url.path = [];
      parse(usv(value), null, url, PATH_START);
    }
    get search(): string {
      const { query } = this.#url;
      return query === null || query === "" ? "" : `?${query}`;
    }
    set search(value: string) {
      const url = this.#url;
      const text = usv(value);
      const input = text.length > 0 && text[0] === "?" ? text.slice(1) : text;
      if (text === "") url.query = null;
      else {
        url.query = "";
        parse(input, null, url, QUERY);
      }
      this.#params ??= new URLSearchParams();
      link(this.#params, this, input);
    }
    get searchParams(): URLSearchParams {
      if (this.#params === null) {
        this.#params = new URLSearchParams();
        link(this.#params, this, this.#url.query ?? "");
      }
      return this.#params;
    }
    get hash(): string {
      const { fragment } = this.#url;
      return fragment === null || fragment === "" ? "" : `#${fragment}`;
    }
    set hash(value: string) {
      const url = this.#url;
      const text = usv(value);
      if (text === "") {
        url.fragment = null;
        return;
      }
      url.fragment = "";
      parse(text.length > 0 && text[0] === "#" ? text.slice(1) : text, null, url, FRAGMENT);
    }
    toJSON(): string {
      return serialize(this.#url);
    }
    toString(): string {
      return serialize(this.#url);
    }
  }
  defineProperty(URL.prototype, Symbol.toStringTag, { value: "URL", configurable: true });

  install("URL", URL);
  install("URLSearchParams", URLSearchParams);
  /**
   * Whether a URL the one match read (see `parseSimple`) is written back as it is: it has a path (else the parser
   * writes `/`), and a port, if any, as the serializer writes it (no leading zero, not the scheme's default, a port).
   */
  const writtenAsRead = (match: (string | undefined)[]) => {
    if (match[4] === "") return false;
    const digits = match[3];
    if (digits === undefined) return true;
    const port = +digits;
    return (digits[0] !== "0" || digits === "0") && port <= 65535 && port !== SPECIAL[match[1] as string];
  };
  kit.parseUrl = (text) => {
    const match = apply(exec, SIMPLE, [text]) as (string | undefined)[] | null;
    if (match !== null && writtenAsRead(match))
      return { __proto__: null, href: text, credentials: false } as { href: string; credentials: boolean };
    const url = parseWithBase(text, undefined, "URL") as UrlRecord;
    return { __proto__: null, href: serialize(url), credentials: credentials(url) } as {
      href: string;
      credentials: boolean;
    };
  };
  kit.originOf = (text) => originOf(parseWithBase(text, undefined, "URL") as UrlRecord);
}
