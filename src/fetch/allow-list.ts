/**
 * Which URLs a sandbox's `fetch` may reach: exact origins (`https://api.example.com`), each optionally narrowed to a
 * path prefix (`https://x.org/v1/`). A URL is compared as the platform's WHATWG parser normalized it (host lowercased,
 * default port dropped, `.` and `..` segments and their percent-encoded forms resolved, userinfo apart from the
 * host), so `https://api.example.com.evil.com`, `https://api.example.com@evil.com` or `/v1/%2e%2e/admin` name
 * another origin or path and are refused.
 *
 * Below a prefix, servers read a path in ways the WHATWG parser does not: they percent-decode before resolving dot
 * segments (`%2F..%2F`), collapse empty segments (`//..`), take `\` for `/` (Windows rules), drop `;` parameters
 * (`..;/`: Servlet containers), stop at a NUL, or decode twice (`%252F`). Rather than model every such reading and
 * resolve the path each way, the rest of the path after the prefix is refused when, percent-decoded once, it could
 * be read as anything but plain names below the prefix: an escape still in it (a second decoding would change it),
 * an empty segment but a trailing one, a segment of only dots (and spaces), a backslash, a `;` or a control
 * character. What is left is a path every one of those readings resolves to itself, so it stays under the prefix;
 * the rule is one linear pass, easy to check, and refuses only paths no API needs.
 * @module
 */

interface Rule {
  origin: string;
  /** `""` for the whole origin; else the prefix as parsed. */
  path: string;
}

export class AllowList {
  readonly #rules: readonly Rule[];
  /** The entries as normalized (`https://x.org/v1/`). */
  readonly entries: readonly string[];

  /** Parses `entries`; a bad one throws a `TypeError` that starts with `where(index)`, the setting it came from. */
  constructor(entries: readonly unknown[], where: (index: number) => string) {
    this.#rules = entries.map((entry, index) => ruleOf(entry, where(index)));
    this.entries = Object.freeze(this.#rules.map((rule) => rule.origin + (rule.path === "" ? "" : rule.path)));
  }

  /** Whether `url`'s origin is listed. */
  allowsOrigin(url: URL): boolean {
    return this.#rules.some((rule) => rule.origin === url.origin);
  }

  /** Whether `url` (http or https, without userinfo) is under one of the entries. */
  allows(url: URL): boolean {
    return this.#rules.some(
      (rule) => rule.origin === url.origin && (rule.path === "" || under(url.pathname, rule.path)),
    );
  }
}

function ruleOf(entry: unknown, where: string): Rule {
  const fail = (why: string): never => {
    throw new TypeError(`${where} ${why}, got ${JSON.stringify(entry)}`);
  };
  if (typeof entry !== "string") return fail("must be an origin such as 'https://api.example.com'");
  const url = URL.canParse(entry) ? new URL(entry) : fail("is not an absolute URL");
  if (url.protocol !== "http:" && url.protocol !== "https:") fail("must be an http: or https: origin");
  if (url.username !== "" || url.password !== "") fail("must not hold credentials");
  if (/[?#]/.test(entry)) fail("must not have a query or fragment");
  const path = url.pathname === "/" ? "" : url.pathname;
  // The prefix itself is held to the rule its paths are: a server could read `/a%2F..%2F` as above it.
  if (path !== "" && !plainNames(path.slice(1)))
    fail("must have a path of plain names (no '..', '//', '\\', ';' or escapes that decode to them)");
  return { origin: url.origin, path };
}

/**
 * `path` is `prefix` or below it, on a segment boundary (`/v1` covers `/v1` and `/v1/x`, not `/v1x`), with a rest
 * that every server reads as plain names (see the module's comment).
 */
function under(path: string, prefix: string): boolean {
  if (path === prefix) return true;
  const base = prefix.endsWith("/") ? prefix : `${prefix}/`;
  return path.startsWith(base) && plainNames(path.slice(base.length));
}

const ESCAPES = /%([0-9a-fA-F]{2})/g;
const ESCAPE = /%[0-9a-fA-F]{2}/;
/** A backslash (Windows' `/`), a `;` (Servlet path parameters are dropped) or a control character (C stops at NUL). */
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it finds.
const UNSAFE_CHARACTER = /[\\;\x00-\x1f\x7f]/;
/** A segment of dots and spaces only: `.` and `..`, and what Windows trims to them or to nothing (`...`, `.. `). */
const DOTS = /^[. ]+$/;

/**
 * `rest` (a path below a prefix, as sent), decoded once, is names joined by single slashes (an empty last one for a
 * trailing slash), with no escape left in it that a second decoding would change (`%252F`).
 */
function plainNames(rest: string): boolean {
  const decoded = rest.replace(ESCAPES, (_, hex: string) => String.fromCharCode(Number.parseInt(hex, 16)));
  if (ESCAPE.test(decoded) || UNSAFE_CHARACTER.test(decoded)) return false;
  const segments = decoded.split("/");
  return segments.every((segment, index) => (segment !== "" || index === segments.length - 1) && !DOTS.test(segment));
}
