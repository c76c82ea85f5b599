/** The allow list of `SandboxOptions.fetch`: which URLs it covers once the WHATWG parser normalized them. */
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

  it("keeps what stays under the prefix once decoded", () => {
    expect(allows(allow, "https://x.org/v1/a%2Fb")).toBe(true);
    expect(allows(allow, "https://x.org/v1/a/../b")).toBe(true);
    expect(allows(allow, "https://x.org/v1/%2e%2e%2fv1/b")).toBe(true);
  });

  it("without a trailing slash also covers the path itself", () => {
    const bare = list("https://x.org/v1");
    expect(allows(bare, "https://x.org/v1")).toBe(true);
    expect(allows(bare, "https://x.org/v1/x")).toBe(true);
    expect(allows(bare, "https://x.org/v1x")).toBe(false);
    expect(allows(bare, "https://x.org/v1/..")).toBe(false);
  });
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
    ];
    for (const [entry, why] of cases) {
      expect(() => new AllowList(["https://ok.org", entry], where)).toThrow(
        new TypeError(`createSandbox: fetch.allow[1] ${why}`),
      );
    }
  });
});
