/** The allow list of `SandboxOptions.fetch`: which URLs it covers once the WHATWG parser normalized them. */
import path from "node:path";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { AllowList } from "../../src/fetch/allow-list.js";

const where = (index: number) => `createSandbox: fetch.allow[${index}]`;
const list = (...entries: string[]) => new AllowList(entries, where);
const allows = (allow: AllowList, url: string) => allow.allows(new URL(url));

describe("an origin entry", () => {
  const allow = list("https://api.example.com");

  it("covers every path of exactly that origin, as normalized", () => {
    expect(allows(allow, "https://api.example.com/")).toBe(true);
    expect(allows(allow, "https://API.Example.COM:443/a/b?q=1#f")).toBe(true);
  });

  it("refuses look-alike hosts, userinfo tricks, other schemes and ports", () => {
    for (const url of [
      "https://api.example.com.evil.com/",
      "https://api.example.com@evil.com/",
      "https://api.example.com%2eevil.com/",
      "https://evil.com/https://api.example.com",
      "https://evil.com/?https://api.example.com",
      "http://api.example.com/",
      "https://api.example.com:8443/",
      "https://api.example.com./",
      "https://sub.api.example.com/",
    ]) {
      expect([url, allows(allow, url)]).toEqual([url, false]);
    }
  });
});

describe("a path-prefix entry", () => {
  const allow = list("https://x.org/v1/");

  it("covers the prefix and below, on segment boundaries", () => {
    expect(allows(allow, "https://x.org/v1/")).toBe(true);
    expect(allows(allow, "https://x.org/v1/users/7")).toBe(true);
    expect(allows(allow, "https://x.org/v1")).toBe(false);
    expect(allows(allow, "https://x.org/v1beta/")).toBe(false);
    expect(allows(allow, "https://x.org/v2/")).toBe(false);
  });

  it("cannot be left by dot segments, percent-encoded or not, decoded once or twice, or by backslashes", () => {
    for (const path of [
      "/v1/../admin",
      "/v1/%2e%2e/admin",
      "/v1/%2E%2E/admin",
      "/v1/.%2e/admin",
      "/v1/..%2fadmin",
      "/v1/..%2Fadmin",
      "/v1%2f..%2fadmin",
      "/v1/%252e%252e/admin",
      "/v1/%252e%252e%252fadmin",
      "/v1/..\\admin",
      "/v1/..%5cadmin",
      "/v1/x/../../admin",
    ]) {
      expect([path, allows(allow, `https://x.org${path}`)]).toEqual([path, false]);
    }
  });

  it("cannot be left by any way a server reads a path: decoded then normalized, Windows or Servlet rules", () => {
    for (const path of [
      "/v1/a/%2F..%2F..%2Fadmin",
      "/v1/%2F%2F..%2F..%2Fadmin",
      "/v1/a/%5C%5C..%5C..%5Cadmin",
      "/v1/..;/admin",
      "/v1/a/%2f..%2f..%2fadmin",
      "/v1/a/%5c..%5c..%5cadmin",
      "/v1/a/%252F..%252F..%252Fadmin",
      "/v1/a/%25252F..%25252F..%25252Fadmin",
      "/v1/a/..%00/..%00/admin",
      "/v1/a/.%09./..%0a/admin",
      "/v1/a/..%3B/..%3b/admin",
      "/v1/a;x/..;y/..;z/admin",
      "/v1//..%2F..%2Fadmin",
      "/v1/a//%2e%2e%2F%2F..%2Fadmin",
      "/v1/a/.../.../admin",
      "/v1/a/..%20/..%20/admin",
      "/v1/%2e%2e%2fv1/b",
    ]) {
      expect([path, allows(allow, `https://x.org${path}`)]).toEqual([path, false]);
    }
  });

  it("keeps plain names below the prefix, an encoded slash or a trailing slash among them", () => {
    for (const path of [
      "/v1/a%2Fb",
      "/v1/a/../b",
      "/v1/a/b/",
      "/v1/caf%C3%A9",
      "/v1/a.b/c..d/.e",
      "/v1/100%",
      "/v1/%7Euser",
    ]) {
      expect([path, allows(allow, `https://x.org${path}`)]).toEqual([path, true]);
    }
  });

  it("without a trailing slash also covers the path itself", () => {
    const bare = list("https://x.org/v1");
    expect(allows(bare, "https://x.org/v1")).toBe(true);
    expect(allows(bare, "https://x.org/v1/x")).toBe(true);
    expect(allows(bare, "https://x.org/v1x")).toBe(false);
    expect(allows(bare, "https://x.org/v1/..")).toBe(false);
    expect(allows(bare, "https://x.org/v1x/..%2F..%2Fv1")).toBe(false);
    expect(allows(bare, "https://x.org/v1;a")).toBe(false);
    expect(allows(bare, "https://x.org/v1/%2F..%2F..%2Fadmin")).toBe(false);
  });
});

/** Ways servers read a sent path: each must leave an allowed path under its prefix. */
const readings: [string, (sent: string) => string][] = [
  ["decoded, then POSIX-normalized", (sent) => path.posix.normalize(decodeURIComponent(sent))],
  [
    "decoded twice, then POSIX-normalized",
    (sent) => path.posix.normalize(decodeURIComponent(decodeURIComponent(sent))),
  ],
  ["decoded, then Windows-normalized", (sent) => path.win32.normalize(decodeURIComponent(sent)).replaceAll("\\", "/")],
  [
    "the Servlet rule: `;` parameters dropped from each segment, decoded, normalized",
    (sent) => path.posix.normalize(decodeURIComponent(sent.replace(/;[^/]*/g, ""))),
  ],
  [
    "decoded, cut at a NUL, then normalized",
    (sent) => path.posix.normalize(decodeURIComponent(sent).split("\0")[0] ?? ""),
  ],
];

describe("a path allowed under a prefix", () => {
  const pieces = [
    "a",
    "v1",
    "admin",
    "/",
    ".",
    "..",
    "%2e",
    "%2E",
    "%2F",
    "%2f",
    "%5C",
    "%5c",
    "\\",
    ";",
    "%3B",
    "%25",
    "%252F",
    "%252e",
    "%00",
    "%09",
    " ",
    "%20",
    "//",
    "x;y",
    "%C3%A9",
  ];
  const sent = fc.array(fc.constantFrom(...pieces), { maxLength: 12 }).map((parts) => parts.join(""));

  for (const prefix of ["/v1/", "/v1"]) {
    it(`stays under ${prefix} however a server reads it`, () => {
      const allow = list(`http://h${prefix}`);
      const stays = (read: string) => read === prefix || read.startsWith(prefix.endsWith("/") ? prefix : `${prefix}/`);
      fc.assert(
        fc.property(fc.constantFrom("/v1/", "/v1", "/"), sent, (start, rest) => {
          const url = new URL(`http://h${start}${rest}`);
          if (!allow.allows(url)) return;
          for (const [name, read] of readings) {
            let served: string;
            try {
              served = read(url.pathname);
            } catch {
              continue; // malformed escapes: the server answers 400
            }
            expect([name, url.pathname, served, stays(served)]).toEqual([name, url.pathname, served, true]);
          }
        }),
        { numRuns: 5000 },
      );
    });
  }
});

describe("entries", () => {
  it("are normalized as URLs", () => {
    expect(list("HTTPS://API.Example.com:443", "http://x.org:8080/v1/a/../b/").entries).toEqual([
      "https://api.example.com",
      "http://x.org:8080/v1/b/",
    ]);
  });

  it("tells the origin from the path", () => {
    const allow = list("https://x.org/v1/");
    expect(allow.allowsOrigin(new URL("https://x.org/v2/"))).toBe(true);
    expect(allow.allowsOrigin(new URL("https://y.org/v1/"))).toBe(false);
  });

  it("refuse what is not an http(s) origin with an optional path, naming the entry", () => {
    const cases: [unknown, string][] = [
      [42, "must be an origin such as 'https://api.example.com', got 42"],
      ["api.example.com", 'is not an absolute URL, got "api.example.com"'],
      ["ftp://x.org", 'must be an http: or https: origin, got "ftp://x.org"'],
      ["https://user:pw@x.org", 'must not hold credentials, got "https://user:pw@x.org"'],
      ["https://x.org/?a=1", 'must not have a query or fragment, got "https://x.org/?a=1"'],
      ["https://x.org/#top", 'must not have a query or fragment, got "https://x.org/#top"'],
      [
        "https://x.org/a%2F..%2F/",
        `must have a path of plain names (no '..', '//', '\\', ';' or escapes that decode to them), got "https://x.org/a%2F..%2F/"`,
      ],
      [
        "https://x.org/v1;x/",
        `must have a path of plain names (no '..', '//', '\\', ';' or escapes that decode to them), got "https://x.org/v1;x/"`,
      ],
    ];
    for (const [entry, why] of cases) {
      expect(() => new AllowList(["https://ok.org", entry], where)).toThrow(
        new TypeError(`createSandbox: fetch.allow[1] ${why}`),
      );
    }
  });
});
