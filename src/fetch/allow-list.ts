/**
 * Which URLs a sandbox's `fetch` may reach: exact origins (`https://api.example.com`), each optionally narrowed to a
 * path prefix (`https://x.org/v1/`). A URL is compared as the platform's WHATWG parser normalized it (host lowercased,
 * default port dropped, `.` and `..` segments and their percent-encoded forms resolved, userinfo apart from the
 * host), so `https://api.example.com.evil.com`, `https://api.example.com@evil.com` or `/v1/%2e%2e/admin` name
 * another origin or path and are refused. A path must also stay under its prefix once percent-decoded and resolved
 * again: a server that decodes `%2f` or `%252e` before it resolves dot segments must not be led out of the prefix.
 * @module
 */

interface Rule {
  origin: string;
  /** `""` for the whole origin; else the prefix as parsed, and percent-decoded and resolved. */
  path: string;
  decodedPath: string;
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
    const decoded = decodedPath(url.pathname);
    return this.#rules.some(
      (rule) =>
        rule.origin === url.origin &&
        (rule.path === "" || (under(url.pathname, rule.path) && under(decoded, rule.decodedPath))),
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
  return { origin: url.origin, path, decodedPath: decodedPath(path) };
}

/** `path` is `prefix` or below it, on a segment boundary (`/v1` covers `/v1` and `/v1/x`, not `/v1x`). */
function under(path: string, prefix: string): boolean {
  if (prefix.endsWith("/")) return path.startsWith(prefix);
  return path === prefix || path.startsWith(`${prefix}/`);
}

/**
 * `path` percent-decoded until nothing changes (each pass shortens it), backslashes read as slashes, and its dot
 * segments resolved: the path a server that decodes first would serve.
 */
function decodedPath(path: string): string {
  let decoded = path;
  for (let previous = ""; previous !== decoded; ) {
    previous = decoded;
    decoded = decoded.replace(/%([0-9a-fA-F]{2})/g, (_, hex: string) => String.fromCharCode(Number.parseInt(hex, 16)));
  }
  const parts = decoded.replaceAll("\\", "/").split("/").slice(1);
  const segments: string[] = [];
  for (const [index, part] of parts.entries()) {
    if (part === "..") segments.pop();
    // A trailing `.` or `..` leaves a directory, as the WHATWG parser resolves them.
    if ((part === "." || part === "..") && index === parts.length - 1) segments.push("");
    else if (part !== "." && part !== "..") segments.push(part);
  }
  return `/${segments.join("/")}`;
}
