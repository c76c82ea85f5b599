/**
 * §13.2 `URL` and `URLSearchParams` in a sandbox made with `webApis: true`, against key cases of the Web Platform
 * Tests' URL suite (urltestdata.json, setters_tests.json, urlsearchparams-*.any.js): authority and ports, relative
 * resolution, dot segments, percent-encode sets, IPv4 and IPv6 hosts, file URLs, non-special schemes, domains to
 * ASCII, origins, the setters and the query object.
 * @module
 */
import { describe, expect, it } from "vitest";
import type { RunCode } from "../../src/core/types.js";
import { ok } from "./helpers.js";

const B = "http://example.org/foo/bar";

/** [input, base, href; `null` when parsing fails]. */
const PARSING: [string, string | null, string | null][] = [
  ["http://example\t.\norg", B, "http://example.org/"],
  ["http://user:pass@foo:21/bar;par?b#c", B, "http://user:pass@foo:21/bar;par?b#c"],
  ["https://test:@test", null, "https://test@test/"],
  ["https://:@test", null, "https://test/"],
  ["non-special://test:@test/x", null, "non-special://test@test/x"],
  ["http:foo.com", B, "http://example.org/foo/foo.com"],
  ["\t   :foo.com   \n", B, "http://example.org/foo/:foo.com"],
  [" foo.com  ", B, "http://example.org/foo/foo.com"],
  ["a:\t foo.com", B, "a: foo.com"],
  ["http://f:21/ b ? d # e ", B, "http://f:21/%20b%20?%20d%20#%20e"],
  ["lolscheme:x x#x x", null, "lolscheme:x x#x%20x"],
  ["http://f:/c", B, "http://f/c"],
  ["http://f:0/c", B, "http://f:0/c"],
  ["http://f:00000000000000/c", B, "http://f:0/c"],
  ["http://f:00000000000000000000080/c", B, "http://f/c"],
  ["http://f:b/c", B, null],
  ["http://f: /c", B, null],
  ["http://f:\n/c", B, "http://f/c"],
  ["http://f:999999/c", B, null],
  ["non-special://f:999999/c", B, null],
  ["", B, "http://example.org/foo/bar"],
  [":foo.com\\", B, "http://example.org/foo/:foo.com/"],
  ["#", B, "http://example.org/foo/bar#"],
  ["?", B, "http://example.org/foo/bar?"],
  ["\\x", B, "http://example.org/x"],
  ["\\\\x\\hello", B, "http://x/hello"],
  ["foo://", B, "foo://"],
  ["http://&a:foo(b]c@d:2/", B, "http://&a:foo(b%5Dc@d:2/"],
  ["http://::@c@d:2", B, "http://:%3A%40c@d:2/"],
  ["http://foo.com/\\@", B, "http://foo.com//@"],
  ["http://a:b@/www.example.com", null, null],
  ["http://@www.example.com", null, "http://www.example.com/"],
  ["http:/:@/www.example.com", null, null],
  ["../i", "http://a/b/c/d;p?q", "http://a/b/i"],
  ["g;x?y#s", "http://a/b/c/d;p?q", "http://a/b/c/g;x?y#s"],
  ["../../../g", "http://a/b/c/d;p?q", "http://a/g"],
  ["//g", "http://a/b/c/d;p?q", "http://g/"],
  ["?y", "http://a/b/c/d;p?q", "http://a/b/c/d;p?y"],
  ["#s", "http://a/b/c/d;p?q", "http://a/b/c/d;p?q#s"],
  ["g/./h/../i", "http://a/b/c/d;p?q", "http://a/b/c/g/i"],
  ["https:g", "http://a/b/c/d;p?q", "https://g/"],
  ["http:g", "http://a/b/c/d;p?q", "http://a/b/c/g"],
  ["http://example.com/foo/%2e%2", null, "http://example.com/foo/%2e%2"],
  ["http://example.com/foo/../../..", null, "http://example.com/"],
  ["http://example.com////../..", null, "http://example.com//"],
  ["http://example.com/foo/%2E%2e/bar/.%2E/./baz", null, "http://example.com/baz"],
  ['http://example.com/"quoted"', null, "http://example.com/%22quoted%22"],
  ["http://example.com/{}`<>", null, "http://example.com/%7B%7D%60%3C%3E"],
  ["http://example.com/?'\"<>`", null, "http://example.com/?%27%22%3C%3E`"],
  ["sc://x/?'\"<>`", null, "sc://x/?'%22%3C%3E`"],
  ["http://example.com/#'\"<>` {}", null, "http://example.com/#'%22%3C%3E%60%20{}"],
  ["http://example.com/日本?é#ü", null, "http://example.com/%E6%97%A5%E6%9C%AC?%C3%A9#%C3%BC"],
  ["http://example.com/\u0000\u001f", null, "http://example.com/%00%1F%7F"],
  ["http://[1:0::]", null, "http://[1::]/"],
  ["http://[0:0:0:0:0:0:13.1.68.3]", null, "http://[::d01:4403]/"],
  ["http://[::127.0.0.1]", null, "http://[::7f00:1]/"],
  ["http://[1::2::3]", null, null],
  ["http://[::1.2.3.]", null, null],
  ["http://[::1.2.3.4x]", null, null],
  ["http://[1:2:3:4:5:6:7:8:9]", null, null],
  ["http://[0::0::0]", null, null],
  ["http://[1:0:0:2::3:0]", null, "http://[1::2:0:0:3:0]/"],
  ["http://[::ffff:192.168.0.1]", null, "http://[::ffff:c0a8:1]/"],
  ["http://[0:0:1:0:0:0:0:0]", null, "http://[0:0:1::]/"],
  ["http://[::]", null, "http://[::]/"],
  ["http://[:]", null, null],
  ["http://[::1]:8080", null, "http://[::1]:8080/"],
  ["http://0x7f.1/", null, "http://127.0.0.1/"],
  ["http://192.168.0.257", null, null],
  ["http://0300.0250.0000.0001", null, "http://192.168.0.1/"],
  ["http://%30%78%63%30%2e%30%32%35%30.01", null, "http://192.168.0.1/"],
  ["http://4294967295", null, "http://255.255.255.255/"],
  ["http://4294967296", null, null],
  ["http://1.2.3.4.5", null, null],
  ["http://foo.0x4", null, null],
  ["http://foo.09", null, null],
  ["http://0x", null, "http://0.0.0.0/"],
  ["http://1.2.3.08", null, null],
  ["http://0.0.0.0x100", null, null],
  ["http://10.0.0.1.", null, "http://10.0.0.1/"],
  ["http://999999999999999999", null, null],
  ["file:///C|/a", null, "file:///C:/a"],
  ["file://localhost/x", null, "file:///x"],
  ["file:c:\\foo\\bar.html", "file:///tmp/mock/path", "file:///c:/foo/bar.html"],
  ["/c:/foo/bar", "file:///c:/baz/qux", "file:///c:/foo/bar"],
  ["..", "file:///C:/", "file:///C:/"],
  ["file://host/C|/x", null, "file://host/C:/x"],
  ["file:..", "file:///a/b", "file:///"],
  ["//server/file", "file:///a/b", "file://server/file"],
  ["file://LOCALHOST/a", null, "file:///a"],
  ["file:///./y:", null, "file:///y:"],
  ["C|", "file://host/dir/file", "file://host/C:"],
  ["non-spec:/.//", null, "non-spec:/.//"],
  ["non-spec:/..//", null, "non-spec:/.//"],
  ["non-spec:/a/..//", null, "non-spec:/.//"],
  ["non-spec:/.//path", "sc://x/", "non-spec:/.//path"],
  ["sc://ñ", null, "sc://%C3%B1"],
  ["sc://\u0000/", null, null],
  ["sc:// /", null, null],
  ["sc://@/", null, null],
  ["sc://te@s:t@/", null, null],
  ["sc://:/", null, null],
  ["sc://:12/", null, null],
  ["sc://%/", null, "sc://%/"],
  ["sc://[/", null, null],
  ["sc:\\../", null, "sc:\\../"],
  ["sc::a@example.net", null, "sc::a@example.net"],
  ["sc:/../", null, "sc:/"],
  ["tel:1234567890", null, "tel:1234567890"],
  ["javascript:/../", null, "javascript:/"],
  ["mailto:a@b.com?subject=hi", null, "mailto:a@b.com?subject=hi"],
  ["http://你好你好", null, "http://xn--6qqa088eba/"],
  ["https://faß.ExAmPlE/", null, "https://xn--fa-hia.example/"],
  ["http://ＧＯ.com", null, "http://go.com/"],
  ["http://a.b.c.xn--pokxncvks", null, null],
  ["http://�", null, null],
  ["http://xn--", null, null],
  ["http://münchen.de", null, "http://xn--mnchen-3ya.de/"],
  ["http://XN--MNCHEN-3YA.de", null, "http://xn--mnchen-3ya.de/"],
  ["http://a­b/", null, "http://ab/"],
  ["http://ex%61mple.com", null, "http://example.com/"],
  ["http://ex%00mple.com", null, null],
  ["http://a<b", null, null],
  ["http://a^b", null, null],
  ["http://a%b", null, null],
  ["https://x/\u0000y", null, "https://x/%00y"],
  ["http://。/", null, "http://./"],
  ["blob:https://example.com:443/", null, "blob:https://example.com:443/"],
  ["blob:d3958f5c-0777-0845-9dcf-2cb28783acaf", null, "blob:d3958f5c-0777-0845-9dcf-2cb28783acaf"],
  ["blob:ftp://host/path", null, "blob:ftp://host/path"],
  ["blob:blob:https://example.org/", null, "blob:blob:https://example.org/"],
  ["ws://example.com:80/", null, "ws://example.com/"],
  ["wss://example.com:443/", null, "wss://example.com/"],
  ["ftp://example.com:21/", null, "ftp://example.com/"],
  ["https://example.com:80/", null, "https://example.com:80/"],
  // Changes of 2025 to the standard: `^` is in the path percent-encode set, and a space of an opaque path right
  // before its query or fragment is escaped.
  ["http://example.com/a^b", null, "http://example.com/a%5Eb"],
  ["data:space ?test", null, "data:space%20?test"],
  ["sc:a  #f", null, "sc:a %20#f"],
  // A base with an opaque path resolves only a fragment.
  ["x", "sc:opaque", null],
  ["#x", "sc:opaque?q", "sc:opaque?q#x"],
  ["x", "about:blank", null],
];

/** [input, base, [origin, protocol, username, password, host, hostname, port, pathname, search, hash]]. */
const COMPONENTS: [string, string | null, string[]][] = [
  ["http://example\t.\norg", B, ["http://example.org", "http:", "", "", "example.org", "example.org", "", "/", "", ""]],
  ["non-special://test:@test/x", null, ["null", "non-special:", "test", "", "test", "test", "", "/x", "", ""]],
  ["a:\t foo.com", B, ["null", "a:", "", "", "", "", "", " foo.com", "", ""]],
  ["http://f:0/c", B, ["http://f:0", "http:", "", "", "f:0", "f", "0", "/c", "", ""]],
  ["", B, ["http://example.org", "http:", "", "", "example.org", "example.org", "", "/foo/bar", "", ""]],
  ["\\x", B, ["http://example.org", "http:", "", "", "example.org", "example.org", "", "/x", "", ""]],
  ["http://::@c@d:2", B, ["http://d:2", "http:", "", "%3A%40c", "d:2", "d", "2", "/", "", ""]],
  ["g;x?y#s", "http://a/b/c/d;p?q", ["http://a", "http:", "", "", "a", "a", "", "/b/c/g;x", "?y", "#s"]],
  ["#s", "http://a/b/c/d;p?q", ["http://a", "http:", "", "", "a", "a", "", "/b/c/d;p", "?q", "#s"]],
  [
    "http://example.com/foo/%2e%2",
    null,
    ["http://example.com", "http:", "", "", "example.com", "example.com", "", "/foo/%2e%2", "", ""],
  ],
  [
    'http://example.com/"quoted"',
    null,
    ["http://example.com", "http:", "", "", "example.com", "example.com", "", "/%22quoted%22", "", ""],
  ],
  [
    "http://example.com/#'\"<>` {}",
    null,
    ["http://example.com", "http:", "", "", "example.com", "example.com", "", "/", "", "#'%22%3C%3E%60%20{}"],
  ],
  [
    "http://[0:0:0:0:0:0:13.1.68.3]",
    null,
    ["http://[::d01:4403]", "http:", "", "", "[::d01:4403]", "[::d01:4403]", "", "/", "", ""],
  ],
  ["http://[0:0:1:0:0:0:0:0]", null, ["http://[0:0:1::]", "http:", "", "", "[0:0:1::]", "[0:0:1::]", "", "/", "", ""]],
  [
    "http://0300.0250.0000.0001",
    null,
    ["http://192.168.0.1", "http:", "", "", "192.168.0.1", "192.168.0.1", "", "/", "", ""],
  ],
  ["http://10.0.0.1.", null, ["http://10.0.0.1", "http:", "", "", "10.0.0.1", "10.0.0.1", "", "/", "", ""]],
  ["/c:/foo/bar", "file:///c:/baz/qux", ["null", "file:", "", "", "", "", "", "/c:/foo/bar", "", ""]],
  ["//server/file", "file:///a/b", ["null", "file:", "", "", "server", "server", "", "/file", "", ""]],
  ["non-spec:/.//", null, ["null", "non-spec:", "", "", "", "", "", "//", "", ""]],
  ["sc://ñ", null, ["null", "sc:", "", "", "%C3%B1", "%C3%B1", "", "", "", ""]],
  ["sc:/../", null, ["null", "sc:", "", "", "", "", "", "/", "", ""]],
  [
    "http://你好你好",
    null,
    ["http://xn--6qqa088eba", "http:", "", "", "xn--6qqa088eba", "xn--6qqa088eba", "", "/", "", ""],
  ],
  [
    "http://XN--MNCHEN-3YA.de",
    null,
    ["http://xn--mnchen-3ya.de", "http:", "", "", "xn--mnchen-3ya.de", "xn--mnchen-3ya.de", "", "/", "", ""],
  ],
  ["http://。/", null, ["http://.", "http:", "", "", ".", ".", "", "/", "", ""]],
  ["blob:blob:https://example.org/", null, ["null", "blob:", "", "", "", "", "", "blob:https://example.org/", "", ""]],
  [
    "https://example.com:80/",
    null,
    ["https://example.com:80", "https:", "", "", "example.com:80", "example.com", "80", "/", "", ""],
  ],
];

/** [href, setter, value, href after]: what each setter changes, and what it leaves as it was. */
const SETTERS: [string, string, string, string][] = [
  ["a://example.net", "protocol", "b", "b://example.net"],
  ["http://example.net", "protocol", "b", "http://example.net/"],
  ["b://example.net", "protocol", "http", "b://example.net"],
  ["http://example.net:443", "protocol", "https", "https://example.net/"],
  ["https://example.net:1234", "protocol", "http:foo", "http://example.net:1234/"],
  ["mailto:me@example.net", "protocol", "http", "mailto:me@example.net"],
  ["http://me@example.net", "protocol", "file", "http://me@example.net/"],
  ["file:///home", "protocol", "http", "file:///home"],
  ["http://example.net", "protocol", "HTTPS", "https://example.net/"],
  ["http://example.net", "protocol", "0http", "http://example.net/"],
  ["http://example.net", "username", "me", "http://me@example.net/"],
  ["http://:secret@example.net", "username", "me", "http://me:secret@example.net/"],
  ["http://me@example.net", "username", "", "http://example.net/"],
  ["file:///home", "username", "me", "file:///home"],
  ["javascript:alert(1)", "username", "me", "javascript:alert(1)"],
  [
    "http://example.net",
    "username",
    "\u0000\u0001\t\n\r\u001f !\"#$%&'()*+,-./09:;<=>?@AZ[\\]^_`az{|}~Éé",
    "http://%00%01%09%0A%0D%1F%20!%22%23$%&'()*+,-.%2F09%3A%3B%3C%3D%3E%3F%40AZ%5B%5C%5D%5E_%60az%7B%7C%7D~%7F%C2%80%C2%81%C3%89%C3%A9@example.net/",
  ],
  ["http://example.net", "password", "secret", "http://:secret@example.net/"],
  ["http://me:secret@example.net", "password", "", "http://me@example.net/"],
  ["file:///home", "password", "secret", "file:///home"],
  ["http://example.net/path", "host", "example.com:8080", "http://example.com:8080/path"],
  ["http://example.net:8080/path", "host", "example.com:", "http://example.com:8080/path"],
  ["http://example.net:8080/path", "host", "example.com", "http://example.com:8080/path"],
  ["sc://x/", "host", "", "sc:///"],
  ["http://example.net", "host", "", "http://example.net/"],
  ["sc:opaque", "host", "x", "sc:opaque"],
  ["http://example.net/path", "host", "example.com:65536", "http://example.com/path"],
  ["http://example.net/path", "host", "[::1]:3", "http://[::1]:3/path"],
  ["http://example.net/path", "host", "a/b", "http://a/path"],
  ["http://example.net/path", "host", "a?b", "http://a/path"],
  ["http://example.net/path", "host", "a#b", "http://a/path"],
  ["file://y/", "host", "x:123", "file://y/"],
  ["file://y/", "host", "loc%41lhost", "file:///"],
  ["http://user@example.net", "host", "example.com", "http://user@example.com/"],
  ["sc://user@x/", "host", "", "sc://user@x/"],
  ["http://example.net:8080/path", "hostname", "example.com:8080", "http://example.net:8080/path"],
  ["http://example.net/path", "hostname", "example.com", "http://example.com/path"],
  ["http://example.net/path", "hostname", "0x7f.1", "http://127.0.0.1/path"],
  ["sc://x/", "hostname", "", "sc:///"],
  ["http://example.net/path", "hostname", "a\\b", "http://a/path"],
  ["http://example.net:8080", "port", "", "http://example.net/"],
  ["http://example.net:8080", "port", "8080stuff", "http://example.net:8080/"],
  ["http://example.net:8080", "port", "65536", "http://example.net:8080/"],
  ["http://example.net:8080", "port", "80", "http://example.net/"],
  ["http://example.net", "port", "stuff", "http://example.net/"],
  ["file:///home", "port", "12", "file:///home"],
  ["sc://x/", "port", "12", "sc://x:12/"],
  ["http://example.net", "port", "\t8080", "http://example.net:8080/"],
  ["sc:opaque", "port", "1", "sc:opaque"],
  ["http://example.net/home?lang=fr#nav", "pathname", "\\a\\%2E\\b\\%2e.\\c", "http://example.net/a/c?lang=fr#nav"],
  ["sc://example.net/home", "pathname", "\\a\\%2E\\b\\%2e.\\c", "sc://example.net/\\a\\%2E\\b\\%2e.\\c"],
  ["sc:opaque", "pathname", "x", "sc:opaque"],
  ["http://example.net", "pathname", "a#b?c", "http://example.net/a%23b%3Fc"],
  ["sc:/", "pathname", "//p", "sc:/.//p"],
  ["file:///", "pathname", "C|/x", "file:///C:/x"],
  ["http://example.net", "pathname", " {}`^", "http://example.net/%20%7B%7D%60%5E"],
  ["https://example.net#nav", "search", "lang=fr", "https://example.net/?lang=fr#nav"],
  ["https://example.net?lang=en-US#nav", "search", "", "https://example.net/#nav"],
  ["https://example.net?lang=en-US#nav", "search", "?", "https://example.net/?#nav"],
  ["https://example.net", "search", "#'x y", "https://example.net/?%23%27x%20y"],
  ["sc://x/", "search", "'x", "sc://x/?'x"],
  ["https://example.net", "hash", "main", "https://example.net/#main"],
  ["https://example.net#nav", "hash", "", "https://example.net/"],
  ["https://example.net", "hash", "#", "https://example.net/#"],
  ["https://example.net", "hash", "##x", "https://example.net/##x"],
  ["https://example.net", "hash", "a\u0000b `<>", "https://example.net/#a%00b%20%60%3C%3E"],
  ["javascript:alert(1)", "hash", "castle", "javascript:alert(1)#castle"],
  ["http://example.net", "href", "sc:x", "sc:x"],
];

/**
 * Parts of absolute URLs for {@link SIMPLE_OR_NOT}, each as `[plain, near misses]`: the forms that the parser takes in
 * one match, and those next to them that must go through its state machine (case, numbers as hosts, labels to map,
 * dot segments, ports out of range or with zeros, characters of each percent-encode set, delimiters).
 */
const URL_PARTS: [string[], string[]][] = [
  [
    ["http", "https", "ws", "wss", "ftp"],
    ["HTTP", "hTtPs", "file", "sc", "http+x", "h"],
  ],
  [["://"], [":/", ":\\\\", ":", ":///"]],
  [
    [
      ...["example.com", "a_b.c-d", "a", "localhost", "127.0.0.1", "255.255.255.255", "0.0.0.0", "a.b1", "1.a"],
      ...["a.0xg", "1e5"],
    ],
    [
      ...["EXAMPLE.Com", "xn--mnchen-3ya.de", "a.XN--x", "a.xn--x", "a..b", "a.", ".a", "1.2.3.256", "1.2.3"],
      ...["01.2.3.4", "0x7f.1", "0x", "a.1", "a.0x1", "a.09", "[::1]", "u@h", "u:p@h", "h%41", "exa mple"],
      ...["", "é.com", "a\tb", "1.2.3.4."],
    ],
  ],
  [
    ["", ":80", ":443", ":21", ":0", ":00080", ":8080", ":65535"],
    [":", ":65536", ":99999999999", ":8a", ": 1"],
  ],
  [
    ["", "/", "/a/b", "/a/b/", "//", "/a/...", "/.a", "/a..", "/%zz", "/a;b=c@d:e,f+g$h&i(j)*!~", "/a|b[c]'_%2e1"],
    ["/a/./b", "/a/../b", "/.", "/..", "/%2e/", "/%2E%2e", "/.%2E", "/a b", "/a^b", "/a\\b", "/é", "/{x}", "/`", '/"'],
  ],
  [
    ["", "?", "?a=1&b=2", "??", "?`{}^\\|", "?%41", "?/.."],
    ["?'", '?"', "?a b", "?é", "?<x>", "?a\tb"],
  ],
  [
    ["", "#", "#x", "##", "#{}^'", "#?", "#/./"],
    ["#a`b", "#a b", "#é", "#<x>", '#"'],
  ],
];

/**
 * 600 absolute URLs made of {@link URL_PARTS} by a fixed sequence (MINSTD's), so that each
 * host checks the same ones: every part plain, or all but one, which is a near miss.
 */
const SIMPLE_OR_NOT = (() => {
  let seed = 1;
  const next = (n: number) => {
    seed = (seed * 48_271) % 2_147_483_647;
    return seed % n;
  };
  return Array.from({ length: 600 }, () => {
    const missed = next(URL_PARTS.length * 2);
    return URL_PARTS.map(([plain, near], part) => {
      const list = part === missed ? near : plain;
      return list[next(list.length)];
    }).join("");
  });
})();

const PARSE = `export default cases.map(([input, base]) => {
  try {
    return [input, (base === null ? new URL(input) : new URL(input, base)).href];
  } catch (error) {
    return [input, error instanceof TypeError ? null : String(error)];
  }
})`;

export function webUrlSuite(runCode: RunCode): void {
  describe("§13.2 URL", () => {
    const js = { language: "javascript" } as const;

    it("parses every case as the URL standard does", async () => {
      const result = await ok(runCode, PARSE, { ...js, globals: { cases: PARSING } });
      expect(result).toEqual(PARSING.map(([input, , href]) => [input, href]));
    });

    it("gives each component as the URL standard does", async () => {
      const source = `export default cases.map(([input, base]) => {
        const u = base === null ? new URL(input) : new URL(input, base);
        return [input, [u.origin, u.protocol, u.username, u.password, u.host, u.hostname, u.port, u.pathname, u.search, u.hash]];
      })`;
      const result = await ok(runCode, source, { ...js, globals: { cases: COMPONENTS } });
      expect(result).toEqual(COMPONENTS.map(([input, , components]) => [input, components]));
    });

    it("reads an absolute URL whose parts are already as the parser writes them as its state machine does", async () => {
      const inputs = [...SIMPLE_OR_NOT, ...PARSING.filter(([, base]) => base === null).map(([input]) => input)];
      // A base of another scheme leaves an absolute URL as it is, but takes it through the state machine every time.
      const source = `const parts = (u) => u === null ? null : [u.href, u.host, u.port, u.pathname, u.search, u.hash];
      export default inputs.map((input) => {
        const alone = parts(URL.parse(input));
        const based = parts(URL.parse(input, "sc://base/"));
        return JSON.stringify(alone) === JSON.stringify(based) ? null : [input, alone, based];
      }).filter((differs) => differs !== null)`;
      expect(await ok(runCode, source, { ...js, globals: { inputs } })).toEqual([]);
    });

    it("gives a Request the URL its state machine writes, whether or not the URL is written back as it was read", async () => {
      const inputs = [...SIMPLE_OR_NOT, ...PARSING.filter(([, base]) => base === null).map(([input]) => input)];
      // A Request refuses with a TypeError what is no absolute URL (the sandbox has no base URL) and a URL with
      // credentials; a base of another scheme takes the rest through the state machine.
      const source = `export default inputs.map((input) => {
        let url;
        try { url = new Request(input).url; } catch (error) { url = error.name; }
        const alone = URL.parse(input);
        const refused = alone === null || !/^[A-Za-z][A-Za-z0-9+.-]*:/.test(input) || alone.username + alone.password !== "";
        const expected = refused ? "TypeError" : URL.parse(input, "sc://base/").href;
        return url === expected ? null : [input, url, expected];
      }).filter((differs) => differs !== null)`;
      expect(await ok(runCode, source, { ...js, globals: { inputs } })).toEqual([]);
    });

    it("costs a plain URL a few thousand units of fuel, not a step of the state machine per character", async () => {
      const source = (count: number) =>
        `for (let i = 0; i < ${count}; i++) new URL("http://127.0.0.1:8080/api/items?page=2#top");\nexport default 0;`;
      const once = await runCode(source(1), js);
      const more = await runCode(source(11), js);
      expect([once.status, more.status]).toEqual(["success", "success"]);
      const perUrl = ((more.fuelUsed as number) - (once.fuelUsed as number)) / 10;
      expect(perUrl).toBeGreaterThan(0);
      expect(perUrl).toBeLessThan(6_000);
    });

    it("sets each component as the URL standard does, leaving the URL as it was where a setter fails", async () => {
      const source = `export default cases.map(([href, setter, value]) => {
        const u = new URL(href);
        u[setter] = value;
        return [href, setter, value, u.href];
      })`;
      expect(await ok(runCode, source, { ...js, globals: { cases: SETTERS } })).toEqual(SETTERS);
    });

    it("throws a TypeError naming the input it cannot parse, from the constructor and the href setter", async () => {
      const source = `const caught = (f) => { try { f(); return "no error"; } catch (e) { return [e.constructor === TypeError, e.message]; } };
      export default [
        caught(() => new URL("http://f:b/c")),
        caught(() => new URL("x", "not a base")),
        caught(() => new URL()),
        caught(() => { new URL("http://a/").href = "//x"; }),
      ]`;
      expect(await ok(runCode, source, js)).toEqual([
        [true, "URL: Invalid URL 'http://f:b/c'"],
        [true, "URL: Invalid base URL 'not a base'"],
        [true, "URL: 1 argument required, but only 0 present"],
        [true, "URL.href: Invalid URL '//x'"],
      ]);
    });

    it("has URL.canParse, URL.parse, toJSON, toString and the interface's shape", async () => {
      const source = `const u = new URL("https://a.example/p?q=1#h");
      export default [
        URL.canParse("https://x"), URL.canParse("x"), URL.canParse("x", "https://b/"), URL.canParse("x", "bad base"),
        URL.parse("x", "https://b/c").href, URL.parse("x"),
        u.toJSON(), String(u), JSON.stringify({ u }), Object.prototype.toString.call(u), URL.length,
        typeof URL.prototype.constructor, Object.keys(globalThis).includes("URL"),
      ]`;
      expect(await ok(runCode, source, js)).toEqual([
        true,
        false,
        true,
        false,
        "https://b/x",
        null,
        "https://a.example/p?q=1#h",
        "https://a.example/p?q=1#h",
        '{"u":"https://a.example/p?q=1#h"}',
        "[object URL]",
        1,
        "function",
        false,
      ]);
    });
  });

  describe("§13.2 URLSearchParams", () => {
    const js = { language: "javascript" } as const;

    it("parses application/x-www-form-urlencoded: +, percent-decoding, UTF-8 with U+FFFD, empty pieces", async () => {
      const source = `const p = new URLSearchParams("?a=b+c%20d&%zz=1&&=x&e&a=%C3%A9&f=%FF&g=%F0%9F%8C%8D&h==");
      export default [[...p], p.size]`;
      expect(await ok(runCode, source, js)).toEqual([
        [
          ["a", "b c d"],
          ["%zz", "1"],
          ["", "x"],
          ["e", ""],
          ["a", "é"],
          ["f", "\uFFFD"],
          ["g", "🌍"],
          ["h", "="],
        ],
        8,
      ]);
    });

    it("takes a sequence of pairs or a record, and refuses a pair of another length", async () => {
      const source = `const caught = (f) => { try { f(); return "no error"; } catch (e) { return e.constructor.name; } };
      export default [
        new URLSearchParams([["a", 1], ["b", "2"], new Set(["c", "3"])]).toString(),
        new URLSearchParams({ a: "1", b: ["x", "y"] }).toString(),
        caught(() => new URLSearchParams({ [Symbol("s")]: "1" })),
        new URLSearchParams(new URLSearchParams("x=1")).toString(),
        caught(() => new URLSearchParams([["a"]])),
        caught(() => new URLSearchParams([["a", "b", "c"]])),
        caught(() => new URLSearchParams([1])),
      ]`;
      expect(await ok(runCode, source, js)).toEqual([
        "a=1&b=2&c=3",
        "a=1&b=x%2Cy",
        "TypeError",
        "x=1",
        "TypeError",
        "TypeError",
        "TypeError",
      ]);
    });

    it("appends, deletes, gets, sets, sorts stably and serializes with the form percent-encode set", async () => {
      const source = `const p = new URLSearchParams("z=b&a=b&z=a&a=a");
      const seen = [];
      p.forEach((value, name, self) => seen.push(name + value + (self === p)));
      const steps = [seen.join(",")];
      p.append("a b", "~!*'()é&=+");
      steps.push(p.toString(), p.get("a"), p.get("none"), p.getAll("z"), p.has("z"), p.has("z", "c"), p.has("z", "a"));
      p.delete("z", "b");
      steps.push(p.toString());
      p.set("a", "1");
      steps.push(p.toString());
      p.sort();
      steps.push(p.toString(), [...p.keys()], [...p.values()], p.size);
      p.delete("a");
      steps.push(p.toString(), Object.prototype.toString.call(p.entries()), p[Symbol.iterator] === p.entries);
      export default steps`;
      expect(await ok(runCode, source, js)).toEqual([
        "zbtrue,abtrue,zatrue,aatrue",
        "z=b&a=b&z=a&a=a&a+b=%7E%21*%27%28%29%C3%A9%26%3D%2B",
        "b",
        null,
        ["b", "a"],
        true,
        false,
        true,
        "a=b&z=a&a=a&a+b=%7E%21*%27%28%29%C3%A9%26%3D%2B",
        "a=1&z=a&a+b=%7E%21*%27%28%29%C3%A9%26%3D%2B",
        "a=1&a+b=%7E%21*%27%28%29%C3%A9%26%3D%2B&z=a",
        ["a", "a b", "z"],
        ["1", "~!*'()é&=+", "a"],
        3,
        "a+b=%7E%21*%27%28%29%C3%A9%26%3D%2B&z=a",
        "[object URLSearchParams Iterator]",
        true,
      ]);
    });

    it("is live with its URL in both directions", async () => {
      const source = `const u = new URL("https://x/?a=1#f");
      const p = u.searchParams;
      const steps = [p.get("a")];
      p.append("b", "c d");
      steps.push(u.href);
      u.search = "?x=%41";
      steps.push(p.get("x"), p.has("a"), u.searchParams === p);
      p.delete("x");
      steps.push(u.href, u.search);
      u.href = "https://y/?k=v";
      steps.push(p.get("k"));
      const o = new URL("sc:opaque ?q");
      o.searchParams.delete("q");
      steps.push(o.href);
      export default steps`;
      expect(await ok(runCode, source, js)).toEqual([
        "1",
        "https://x/?a=1&b=c+d#f",
        "A",
        false,
        true,
        "https://x/#f",
        "",
        "v",
        "sc:opaque%20",
      ]);
    });
  });
}
