/**
 * The web APIs `Headers`, `Request` and `Response`, and `fetch` by allow list, with an injected fetch standing for the
 * network (so the suite runs wherever no server can: workerd, Chromium). The requests the host makes, and the ones
 * it refuses to make, are checked on the injected side.
 */
import { describe, expect, it } from "vitest";
import type { FetchOptions, RunCode } from "../../src/core/types.js";
import { type ConformanceOptions, ok } from "./helpers.js";

const API = "https://api.example.com";

/** What the host handed to the platform's fetch. */
interface Sent {
  url: string;
  method: string | undefined;
  headers: [string, string][];
  body: string | null;
  redirect: string | undefined;
  credentials: string | undefined;
}

/** A fetch that answers from `routes` by path and records what it was asked. */
function network(routes: Record<string, () => Response>) {
  const sent: Sent[] = [];
  const fetch = async (url: string, init: RequestInit): Promise<Response> => {
    const { body } = init;
    sent.push({
      url,
      method: init.method,
      headers: [...new Headers(init.headers)],
      body: body === null || body === undefined ? null : new TextDecoder().decode(body as ArrayBuffer),
      redirect: init.redirect,
      credentials: (init as { credentials?: string }).credentials,
    });
    const route = routes[new URL(url).pathname];
    return route === undefined ? new Response("not found", { status: 404 }) : route();
  };
  return { sent, fetch };
}

export function fetchSuite(options: ConformanceOptions): void {
  const { sandbox } = options;
  if (sandbox === undefined) return;
  const webApis: RunCode = sandbox({ webApis: true });
  const withFetch = (fetch: FetchOptions["fetch"], allow = [API]): RunCode =>
    sandbox({ webApis: true, fetch: { allow, ...(fetch === undefined ? {} : { fetch }) } });

  describe("web APIs: Headers", () => {
    it("validates names, trims values and reads names case-insensitively", async () => {
      const source = `const h = new Headers({ "Content-Type": "  text/plain\\t" });
        const errors = [];
        for (const [name, value] of [["bad name", "v"], ["x", "a\\nb"], ["x", "\\u0100"], ["", "v"]]) {
          try { h.append(name, value); } catch (e) { errors.push(e.name); }
        }
        export default [h.get("CONTENT-TYPE"), h.has("content-type"), h.get("missing"), errors];`;
      expect(await ok(webApis, source)).toEqual([
        "text/plain",
        true,
        null,
        ["TypeError", "TypeError", "TypeError", "TypeError"],
      ]);
    });

    it("joins repeated names with ', ', iterates sorted lowercase names, and keeps each set-cookie apart", async () => {
      const source = `const h = new Headers([["B", "1"], ["a", "2"], ["b", "3"], ["Set-Cookie", "x=1"], ["set-cookie", "y=2"]]);
        const seen = [];
        h.forEach((value, name, self) => seen.push([name, value, self === h]));
        export default { get: h.get("b"), cookies: h.getSetCookie(), joined: h.get("set-cookie"), entries: [...h],
          keys: [...h.keys()], values: [...h.values()], seen, tag: Object.prototype.toString.call(h) };`;
      expect(await ok(webApis, source)).toEqual({
        get: "1, 3",
        cookies: ["x=1", "y=2"],
        joined: "x=1, y=2",
        entries: [
          ["a", "2"],
          ["b", "1, 3"],
          ["set-cookie", "x=1"],
          ["set-cookie", "y=2"],
        ],
        keys: ["a", "b", "set-cookie", "set-cookie"],
        values: ["2", "1, 3", "x=1", "y=2"],
        seen: [
          ["a", "2", true],
          ["b", "1, 3", true],
          ["set-cookie", "x=1", true],
          ["set-cookie", "y=2", true],
        ],
        tag: "[object Headers]",
      });
    });

    it("set replaces every value of a name in place; delete removes them; a copy is independent", async () => {
      const source = `const h = new Headers([["a", "1"], ["b", "2"], ["a", "3"]]);
        const copy = new Headers(h);
        h.set("A", "4");
        const afterSet = [...h];
        h.delete("a");
        export default [afterSet, [...h], [...copy]];`;
      expect(await ok(webApis, source)).toEqual([
        [
          ["a", "4"],
          ["b", "2"],
        ],
        [["b", "2"]],
        [
          ["a", "1, 3"],
          ["b", "2"],
        ],
      ]);
    });

    it("refuses pairs that are not pairs", async () => {
      const source = `try { new Headers([["a", "1", "2"]]); } catch (e) { report([e.name, e.message]); }
        try { new Headers(null); } catch (e) { report(e.name); }`;
      const r = await webApis(source);
      expect(r.reports).toEqual([["TypeError", "Headers: each header must be a [name, value] pair"], "TypeError"]);
    });

    it("refuse calls missing a required argument, as WebIDL counts them", async () => {
      const source = `const h = new Headers();
        const calls = [() => h.append("a"), () => h.set("a"), () => h.get(), () => h.has(), () => h.delete(), () => h.forEach()];
        const refused = [];
        for (const call of calls) {
          try { call(); refused.push("accepted"); } catch (e) { refused.push(e.message); }
        }
        export default [refused, Headers.prototype.forEach.length];`;
      expect(await ok(webApis, source)).toEqual([
        [
          "Headers.append: 2 arguments required, but only 1 present",
          "Headers.set: 2 arguments required, but only 1 present",
          "Headers.get: 1 argument required, but only 0 present",
          "Headers.has: 1 argument required, but only 0 present",
          "Headers.delete: 1 argument required, but only 0 present",
          "Headers.forEach: 1 argument required, but only 0 present",
        ],
        1,
      ]);
    });

    it("iterate as WebIDL pair iterators: one %HeadersIteratorPrototype% on %IteratorPrototype%", async () => {
      const source = `const h = new Headers({ b: "2", a: "1" });
        const it = h.keys();
        const proto = Object.getPrototypeOf(it);
        const next = Object.getOwnPropertyDescriptor(proto, "next");
        const IteratorProto = Object.getPrototypeOf(Object.getPrototypeOf([][Symbol.iterator]()));
        let foreign;
        try { it.next.call({}); } catch (e) { foreign = e.name; }
        export default [Object.getPrototypeOf(proto) === IteratorProto, [next.writable, next.enumerable, next.configurable],
          Reflect.ownKeys(proto).map(String), proto === Object.getPrototypeOf(h.entries()),
          proto === Object.getPrototypeOf(h[Symbol.iterator]()), Object.prototype.toString.call(it), foreign,
          it.next(), it.next(), it.next(), it.next()];`;
      expect(await ok(webApis, source)).toEqual([
        true,
        [true, true, true],
        ["next", "Symbol(Symbol.toStringTag)"],
        true,
        true,
        "[object Headers Iterator]",
        "TypeError",
        { value: "a", done: false },
        { value: "b", done: false },
        { value: undefined, done: true },
        { value: undefined, done: true },
      ]);
    });

    it("iterators and forEach read the sorted list as it is at each step, changes while iterating included", async () => {
      const source = `const walk = (changes) => {
          const h = new Headers({ foo: "2", baz: "1", BAR: "0", quux: "3" });
          const seen = [];
          for (const [name, value] of h) { seen.push(name + "=" + value); changes(h, name); }
          return seen.join(" ");
        };
        const h = new Headers([["fizz", "buzz"], ["X-Header", "test"]]);
        const it = h[Symbol.iterator]();
        const steps = [it.next().value];
        h.append("Set-Cookie", "a=b");
        steps.push(it.next().value);
        h.append("Accept", "text/html");
        steps.push(it.next().value, it.next().value);
        h.append("set-cookie", "c=d");
        steps.push(it.next().value, it.next().done);
        const f = new Headers({ a: "1", b: "2" });
        const called = [];
        f.forEach((value, name) => { called.push(name); if (name === "a") f.append("c", "3"); });
        export default [
          walk((h) => h.delete("foo")),
          walk((h, name) => name === "baz" && h.delete("bar")),
          walk((h, name) => name === "baz" && h.append("X-yZ", "4")),
          walk((h, name) => name === "baz" && h.append("abc", "-1")),
          steps,
          called,
        ];`;
      expect(await ok(webApis, source)).toEqual([
        "bar=0 baz=1 quux=3",
        "bar=0 baz=1 quux=3",
        "bar=0 baz=1 foo=2 quux=3 x-yz=4",
        "bar=0 baz=1 baz=1 foo=2 quux=3",
        [
          ["fizz", "buzz"],
          ["set-cookie", "a=b"],
          ["set-cookie", "a=b"],
          ["x-header", "test"],
          ["x-header", "test"],
          true,
        ],
        ["a", "b", "c"],
      ]);
    });

    it("take an init as WebIDL converts it: an @@iterator makes a sequence, anything else a record", async () => {
      const source = `const custom = new Headers({ a: "1" });
        custom[Symbol.iterator] = function* () { yield ["test", "value"]; };
        const log = [];
        const traps = {};
        for (const trap of ["get", "ownKeys", "getOwnPropertyDescriptor"]) {
          traps[trap] = (...args) => { log.push(trap + " " + String(args[1] ?? "")); return Reflect[trap](...args); };
        }
        const record = { b: "2", a: "1" };
        Object.defineProperty(record, "hidden", { value: "x", enumerable: false });
        Object.defineProperty(record, Symbol("quiet"), { value: "x", enumerable: false });
        const fromRecord = [...new Headers(new Proxy(record, traps))];
        const refused = [];
        for (const init of [{ a: "1", [Symbol("loud")]: "x" }, { [Symbol.iterator]: 5 }, ["ab"], [["a", Symbol("v")]]]) {
          try { new Headers(init); refused.push("accepted"); } catch (e) { refused.push(e.name); }
        }
        export default [[...new Headers(custom)], fromRecord, log, refused];`;
      expect(await ok(webApis, source)).toEqual([
        [["test", "value"]],
        [
          ["a", "1"],
          ["b", "2"],
        ],
        [
          "get Symbol(Symbol.iterator)",
          "ownKeys ",
          "getOwnPropertyDescriptor b",
          "get b",
          "getOwnPropertyDescriptor a",
          "get a",
          "getOwnPropertyDescriptor hidden",
          "getOwnPropertyDescriptor Symbol(quiet)",
        ],
        ["TypeError", "TypeError", "TypeError", "TypeError"],
      ]);
    });
  });

  describe("web APIs: Request", () => {
    it("normalizes the standard methods, keeps others as given, refuses forbidden ones", async () => {
      const source = `const methods = ["get", "post", "Delete", "patch", "Custom"].map((m) => new Request("https://x.org/", { method: m }).method);
        const refused = [];
        for (const m of ["CONNECT", "trace", "bad method"]) {
          try { new Request("https://x.org/", { method: m }); } catch (e) { refused.push(e.name); }
        }
        export default [methods, refused];`;
      expect(await ok(webApis, source)).toEqual([
        ["GET", "POST", "DELETE", "patch", "Custom"],
        ["TypeError", "TypeError", "TypeError"],
      ]);
    });

    it("has its url, headers, redirect, signal and body, readable once", async () => {
      const source = `const r = new Request("https://x.org/a", { method: "PUT", body: "hé", headers: { "X-A": "1" } });
        const first = await r.text();
        let again;
        try { await r.text(); } catch (e) { again = e.name; }
        export default [r.url, r.method, r.headers.get("x-a"), r.headers.get("content-type"), r.redirect, r.signal instanceof AbortSignal,
          first, r.bodyUsed, again, Object.prototype.toString.call(r)];`;
      expect(await ok(webApis, source)).toEqual([
        "https://x.org/a",
        "PUT",
        "1",
        "text/plain;charset=UTF-8",
        "follow",
        true,
        "hé",
        true,
        "TypeError",
        "[object Request]",
      ]);
    });

    it("has one signal, which never aborts without one given and follows the one given or its input's", async () => {
      const source = `const none = new Request("https://x.org/");
        const controller = new AbortController();
        const given = new Request("https://x.org/", { signal: controller.signal });
        const copy = new Request(given);
        const copyOfNone = new Request(none);
        const before = [none.signal === none.signal, none.signal.aborted, given.signal === controller.signal, copy.signal.aborted];
        controller.abort("why");
        export default [before, given.signal.reason, copy.signal.reason, copyOfNone.signal.aborted, none.signal.aborted];`;
      expect(await ok(webApis, source)).toEqual([[true, false, false, false], "why", "why", false, false]);
    });

    it("refuses a body on GET and HEAD, relative URLs and unknown redirect modes", async () => {
      const source = `const refused = [];
        for (const make of [
          () => new Request("https://x.org/", { body: "x" }),
          () => new Request("https://x.org/", { method: "HEAD", body: "x" }),
          () => new Request("/relative"),
          () => new Request("https://x.org/", { redirect: "sometimes" }),
          () => new Request("https://x.org/", { signal: {} }),
        ]) {
          try { make(); } catch (e) { refused.push(e.name); }
        }
        export default refused;`;
      expect(await ok(webApis, source)).toEqual(["TypeError", "TypeError", "TypeError", "TypeError", "TypeError"]);
    });

    it("refuses a URL with credentials", async () => {
      const source = `try { new Request("https://user:pw@x.org/"); } catch (e) { report([e.name, e.message]); }
        try { new Request("https://:pw@x.org/"); } catch (e) { report(e.name); }`;
      const r = await webApis(source);
      expect(r.reports).toEqual([
        ["TypeError", "Request: a URL with credentials (https://x.org) is refused: send them in a header"],
        "TypeError",
      ]);
    });

    it("made from a request whose body is spent, takes a body of its own but refuses to go without", async () => {
      const source = `const a = new Request("https://x.org/", { method: "POST", body: "one" });
        await a.text();
        const b = new Request(a, { body: "two" });
        const refused = [];
        for (const init of [undefined, { body: null }]) {
          try { new Request(a, init); } catch (e) { refused.push(e.name); }
        }
        export default [await b.text(), b.method, a.bodyUsed, refused];`;
      expect(await ok(webApis, source)).toEqual(["two", "POST", true, ["TypeError", "TypeError"]]);
    });

    it("made from another request takes its body over; clone copies it", async () => {
      const source = `const a = new Request("https://x.org/", { method: "POST", body: "abc" });
        const b = new Request(a, { headers: { "x-b": "1" } });
        const c = b.clone();
        export default [a.bodyUsed, b.method, b.headers.get("x-b"), await b.text(), await c.text(), c.bodyUsed];`;
      expect(await ok(webApis, source)).toEqual([true, "POST", "1", "abc", "abc", true]);
    });
  });

  describe("web APIs: Response", () => {
    it("has status, ok, statusText, headers, type, url and redirected", async () => {
      const source = `const r = new Response("hi", { status: 201, statusText: "Made", headers: { "x-a": "1" } });
        export default [r.status, r.ok, r.statusText, r.headers.get("x-a"), r.headers.get("content-type"), r.type,
          r.url, r.redirected, new Response(null, { status: 404 }).ok, Object.prototype.toString.call(r)];`;
      expect(await ok(webApis, source)).toEqual([
        201,
        true,
        "Made",
        "1",
        "text/plain;charset=UTF-8",
        "default",
        "",
        false,
        false,
        "[object Response]",
      ]);
    });

    it("reads its body as text, JSON, an ArrayBuffer or bytes, once", async () => {
      const source = `const bytes = new Uint8Array([0xef, 0xbb, 0xbf, 0x68, 0xc3, 0xa9, 0xff, 0xe2, 0x82, 0x41, 0xf0, 0x9f, 0x98, 0x80]);
        const text = await new Response(bytes).text();
        const json = await new Response('{"a":[1,2]}').json();
        const buffer = await new Response(new Uint16Array([1, 2])).arrayBuffer();
        const view = await new Response("ab").bytes();
        const r = new Response("x");
        await r.text();
        let again;
        try { await r.arrayBuffer(); } catch (e) { again = e.name; }
        export default [text, json, buffer.byteLength, [...view], r.bodyUsed, again, new Response().bodyUsed,
          await new Response().text()];`;
      expect(await ok(webApis, source)).toEqual([
        "hé\uFFFD\uFFFDA😀",
        { a: [1, 2] },
        4,
        [97, 98],
        true,
        "TypeError",
        false,
        "",
      ]);
    });

    it("decodes long text whole: ASCII runs, and sequences across every chunk boundary", async () => {
      const source = `const texts = ["a".repeat(8191) + "é" + "b".repeat(9000) + "😀c", "漢字".repeat(10000), "x".repeat(20000)];
        const decoded = await Promise.all(texts.map((t) => new Response(t).text()));
        export default decoded.map((d, i) => d === texts[i]);`;
      expect(await ok(webApis, source)).toEqual([true, true, true]);
    });

    it("clones with its body, and refuses to clone a used one", async () => {
      const source = `const r = new Response("body", { status: 202 });
        const c = r.clone();
        const texts = [await r.text(), await c.text(), c.status];
        try { r.clone(); } catch (e) { texts.push(e.name); }
        export default texts;`;
      expect(await ok(webApis, source)).toEqual(["body", "body", 202, "TypeError"]);
    });

    it("has Response.json, Response.error and Response.redirect", async () => {
      const source = `const j = Response.json({ a: 1 }, { status: 202 });
        const e = Response.error();
        const r = Response.redirect("https://x.org/next", 307);
        export default [j.status, j.headers.get("content-type"), await j.json(), e.type, e.status, e.ok,
          r.status, r.headers.get("location")];`;
      expect(await ok(webApis, source)).toEqual([
        202,
        "application/json",
        { a: 1 },
        "error",
        0,
        false,
        307,
        "https://x.org/next",
      ]);
    });

    it("refuses statuses out of range, bad status texts and bodies on null-body statuses", async () => {
      const source = `const refused = [];
        for (const make of [
          () => new Response("", { status: 199 }),
          () => new Response("", { status: 600 }),
          () => new Response("", { statusText: "a\\nb" }),
          () => new Response("x", { status: 204 }),
          () => Response.redirect("https://x.org/", 200),
        ]) {
          try { make(); } catch (e) { refused.push(e.name); }
        }
        export default refused;`;
      expect(await ok(webApis, source)).toEqual(["RangeError", "RangeError", "TypeError", "TypeError", "RangeError"]);
    });

    it("frees a body with its request or response: 48 of 1 MiB made and dropped in turn fit 16 MiB", async () => {
      const source = `let bytes = 0;
        for (let i = 0; i < 48; i++) {
          bytes += new Response(new Uint8Array(1 << 20)).headers.has("content-type") ? 1 : 0;
          bytes += new Request("${API}/", { method: "POST", body: new Uint8Array(1 << 20) }).method.length;
        }
        export default bytes;`;
      expect(await ok(webApis, source, { memoryLimitBytes: 16 << 20 })).toBe(48 * 4);
    });

    it("is restored after every run: a run's changes to the classes are gone for the next", async () => {
      const change = "Headers.prototype.get = () => 'changed';\nexport default new Headers({ a: '1' }).get('a');";
      expect(await ok(webApis, change)).toBe("changed");
      expect(await ok(webApis, "export default new Headers({ a: '1' }).get('a');")).toBe("1");
    });
  });

  describe("fetch by allow list", () => {
    it("hands the request to the platform's fetch, without credentials, following no redirect itself", async () => {
      const { sent, fetch } = network({
        "/v1/items": () => Response.json({ items: [1] }, { headers: { "x-r": "1" } }),
      });
      const source = `const res = await fetch("${API}/v1/items?q=1#frag", {
          method: "POST", headers: [["X-A", "1"], ["x-a", "2"]], body: JSON.stringify({ n: 1 }),
        });
        export default [res.status, res.ok, res.type, res.url, res.redirected, res.headers.get("x-r"), await res.json()];`;
      expect(await ok(withFetch(fetch), source)).toEqual([
        200,
        true,
        "basic",
        `${API}/v1/items?q=1`,
        false,
        "1",
        { items: [1] },
      ]);
      expect(sent).toEqual([
        {
          url: `${API}/v1/items?q=1#frag`,
          method: "POST",
          headers: [
            ["content-type", "text/plain;charset=UTF-8"],
            ["x-a", "1, 2"],
          ],
          body: '{"n":1}',
          redirect: "manual",
          credentials: "omit",
        },
      ]);
    });

    it("gives the guest a response's head and body as the platform answered them, whatever JSON escapes in them", async () => {
      const statusText = 'Odd "one" \\ [x], {y}: z';
      const quoted = '"a", \\b\\ [1]: {2}';
      const headers: [string, string][] = [
        ["X-Quote", quoted],
        ["set-cookie", "a=1"],
        ["set-cookie", 'b="2"'],
      ];
      // A browser's Response drops set-cookie headers: the guest gets what the platform's Response holds.
      const platform = new Headers(new Response(null, { headers }).headers);
      const { fetch } = network({
        "/odd": () => new Response(new Uint8Array([0, 255, 34, 92]), { status: 299, statusText, headers }),
        "/none": () => new Response(null, { status: 204, statusText: "Nothing" }),
      });
      const source = `const odd = await fetch("${API}/odd?q=%22#frag");
        const none = await fetch("${API}/none");
        export default [odd.status, odd.ok, odd.statusText, odd.url, odd.redirected, [...odd.headers],
          odd.headers.getSetCookie(), [...new Uint8Array(await odd.arrayBuffer())],
          none.status, none.statusText, none.bodyUsed, await none.text(), none.bodyUsed];`;
      expect(await ok(withFetch(fetch), source)).toEqual([
        299,
        true,
        statusText,
        `${API}/odd?q=%22`,
        false,
        [...platform],
        platform.getSetCookie(),
        [0, 255, 34, 92],
        204,
        "Nothing",
        false,
        "",
        false,
      ]);
    });

    it("refuses an origin off the list with a TypeError naming it, and never calls the platform's fetch", async () => {
      const { sent, fetch } = network({});
      const source = `export default await fetch("https://api.example.com.evil.com/").catch((e) => [e.name, e.message]);`;
      expect(await ok(withFetch(fetch), source)).toEqual([
        "TypeError",
        "fetch: https://api.example.com.evil.com is not on the sandbox's allow list",
      ]);
      expect(sent).toEqual([]);
    });

    it("follows redirects within the list and refuses one that leaves it", async () => {
      const { sent, fetch } = network({
        "/start": () => new Response(null, { status: 302, headers: { location: "/next" } }),
        "/next": () => new Response("arrived"),
        "/away": () => new Response(null, { status: 301, headers: { location: "https://evil.com/" } }),
      });
      const source = `const res = await fetch("${API}/start");
        const away = await fetch("${API}/away").catch((e) => [e.name, e.message]);
        export default [res.url, res.redirected, await res.text(), away];`;
      expect(await ok(withFetch(fetch), source)).toEqual([
        `${API}/next`,
        true,
        "arrived",
        ["TypeError", "fetch: a redirect to https://evil.com is not on the sandbox's allow list"],
      ]);
      expect(sent.map((s) => s.url)).toEqual([`${API}/start`, `${API}/next`, `${API}/away`]);
    });

    it("refuses paths a server could read out of a prefix, sent or redirected to, before any request", async () => {
      const { sent, fetch } = network({
        "/v1/jump": () => new Response(null, { status: 302, headers: { location: "/v1/..;/admin" } }),
        "/v1/ok": () => new Response("ok"),
      });
      const source = `const outcomes = [];
        for (const path of ["/v1/a/%2F..%2F..%2Fadmin", "/v1/%2F%2F..%2F..%2Fadmin", "/v1/a/%5C%5C..%5C..%5Cadmin", "/v1/jump", "/v1/ok"]) {
          outcomes.push(await fetch("${API}" + path).then((r) => r.text(), (e) => e.message));
        }
        export default outcomes;`;
      const outside = (path: string, redirect = "") =>
        `fetch: ${redirect}${API}${path} is outside the paths allowed for ${API}`;
      expect(await ok(withFetch(fetch, [`${API}/v1/`]), source)).toEqual([
        outside("/v1/a/%2F..%2F..%2Fadmin"),
        outside("/v1/%2F%2F..%2F..%2Fadmin"),
        outside("/v1/a/%5C%5C..%5C..%5Cadmin"),
        outside("/v1/..;/admin", "a redirect to "),
        "ok",
      ]);
      expect(sent.map((s) => new URL(s.url).pathname)).toEqual(["/v1/jump", "/v1/ok"]);
    });

    it("fails a request with the error its platform's fetch met, as a TypeError", async () => {
      const fetch = async () => {
        throw new Error("connection reset");
      };
      const source = `export default await fetch("${API}/").catch((e) => [e.name, e.message]);`;
      expect(await ok(withFetch(fetch), source)).toEqual(["TypeError", `fetch: ${API} failed: connection reset`]);
    });

    it("frees each response once the guest drops it: 48 responses of 1 MiB read in turn fit 16 MiB", async () => {
      const mebibyte = new Uint8Array(1 << 20).fill(97);
      const run = withFetch(async () => new Response(mebibyte));
      const source = `let bytes = 0;
        for (let i = 0; i < 48; i++) bytes += (await (await fetch("${API}/large")).arrayBuffer()).byteLength;
        export default bytes;`;
      expect(await ok(run, source, { memoryLimitBytes: 16 << 20 })).toBe(48 << 20);
    });

    it("does not exist without a fetch setting", async () => {
      expect(await ok(webApis, "export default typeof fetch")).toBe("undefined");
    });
  });
}
