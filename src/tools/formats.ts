/**
 * `format: "url"` in linear time. `@cfworker/json-schema` checks it with one regex whose host part,
 * `(?:[a-z\u{00a1}-\u{ffff}0-9]+-?)*[a-z\u{00a1}-\u{ffff}0-9]+`, backtracks exponentially: measured, 27 characters
 * after `http://` took 1.5 s and every further one doubled that, so a tool argument of 40 characters held the host
 * for hours. {@link isUrl} accepts exactly the strings that regex accepts (compared on generated strings in
 * test/security/host-budgets.test.ts), in time linear in the string.
 * @module
 */

/** A host label's characters: `[a-z\u{00a1}-\u{ffff}0-9]` under the `i` flag. */
const L = "[a-z\\u{00a1}-\\u{ffff}0-9]";
/** The library's IPv4 alternative, unchanged (bounded repetitions only). */
const IPV4 =
  "(?!10(?:\\.\\d{1,3}){3})(?!127(?:\\.\\d{1,3}){3})(?!169\\.254(?:\\.\\d{1,3}){2})(?!192\\.168(?:\\.\\d{1,3}){2})" +
  "(?!172\\.(?:1[6-9]|2\\d|3[0-1])(?:\\.\\d{1,3}){2})(?:[1-9]\\d?|1\\d\\d|2[01]\\d|22[0-3])" +
  "(?:\\.(?:1?\\d{1,2}|2[0-4]\\d|25[0-5])){2}(?:\\.(?:[1-9]\\d?|1\\d\\d|2[0-4]\\d|25[0-4]))";
/**
 * The host: `(?:L+-?)*L+` (one label) rewritten as `L+(?:-L+)*`, the same language (labels of L with single inner
 * dashes) without the ambiguity that backtracked; a host never holds `@`, `:` or `/`, so {@link isUrl} hands it over
 * as one slice.
 */
const HOST = new RegExp(`^(?:${IPV4}|${L}+(?:-${L}+)*(?:\\.${L}+(?:-${L}+)*)*\\.[a-z\\u{00a1}-\\u{ffff}]{2,})$`, "iu");
const SCHEME = /^(?:https?|ftp):\/\//i;
const PORT = /:\d{2,5}/y;
/** The code points `\s` matches (ECMAScript WhiteSpace and LineTerminator). */
const SPACE = new Set([
  0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x20, 0xa0, 0x1680, 0x2000, 0x2001, 0x2002, 0x2003, 0x2004, 0x2005, 0x2006, 0x2007,
  0x2008, 0x2009, 0x200a, 0x2028, 0x2029, 0x202f, 0x205f, 0x3000, 0xfeff,
]);

/**
 * Whether `s` matches the library's `url` regex:
 * `^(?:https?|ftp)://(?:\S+(?::\S*)?@)?(?:IPV4|HOSTNAME)(?::\d{2,5})?(?:/[^\s]*)?$` (flags `iu`). The optional
 * userinfo is any `\S+` ending in `@` (its `(?::\S*)?` adds nothing), so the host starts after one of the `@`s
 * before the first space, or at the start; it runs to the next `:` or `/`; what follows is a port, then a path with
 * no space. Each character is looked at a bounded number of times.
 */
export function isUrl(s: string): boolean {
  const scheme = SCHEME.exec(s);
  if (scheme === null) return false;
  const rest = s.slice(scheme[0].length);
  let firstSpace = -1;
  let lastSpace = -1;
  for (let i = 0; i < rest.length; i++) {
    if (!SPACE.has(rest.charCodeAt(i))) continue;
    if (firstSpace < 0) firstSpace = i;
    lastSpace = i;
  }
  const tail = (at: number): boolean => {
    let i = at;
    if (rest[i] === ":") {
      PORT.lastIndex = i;
      if (!PORT.test(rest)) return false;
      i = PORT.lastIndex;
    }
    return i === rest.length || (rest[i] === "/" && lastSpace < i);
  };
  // Where the userinfo may end: its `\S+` stops at the first space.
  const userEnd = firstSpace < 0 ? rest.length : firstSpace;
  let start = 0;
  for (;;) {
    let end = start;
    while (end < rest.length && rest[end] !== ":" && rest[end] !== "/" && rest[end] !== "@") end++;
    if (end === rest.length || rest[end] !== "@") {
      if (HOST.test(rest.slice(start, end)) && tail(end)) return true;
      // Another host can only start after a later `@`.
      while (end < rest.length && rest[end] !== "@") end++;
    }
    // `end` is an `@` (or the end): the host may start after it if the userinfo before it is `\S+`.
    if (end >= rest.length || end >= userEnd) return false;
    if (end >= 1) start = end + 1;
    else {
      start = 1;
      while (start < rest.length && rest[start] !== "@") start++;
      if (start >= userEnd) return false;
      start++;
    }
  }
}
