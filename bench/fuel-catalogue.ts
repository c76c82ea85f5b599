/**
 * The runaways of `npm run bench:fuel`, in-thread and in workerd: programs that never end of themselves, each
 * stopped by its fuel cap, so CPU per unit of fuel can be compared across every kind of work a run makes.
 * @module
 */
/** A runaway of the catalogue: its source, the run options it needs, and the sandbox it runs in. */
export interface Runaway {
  source: string;
  /** Host functions the guest calls (run option `globals`). */
  globals?: Record<string, unknown>;
  /** Modules it may import (run option `modules`). */
  modules?: Record<string, string>;
  /** Runs with the Web APIs and a `fetch` whose transport answers at once, without a network. */
  web?: boolean;
  /** A wait on timers: billed for the timer clock's time (`FUEL_PER_MS`), not for CPU, so outside the spread. */
  wait?: boolean;
}

const KIB64 = "x".repeat(64 * 1024);
const PLAIN = Array.from({ length: 1000 }, (_, i) => ({ i, s: `v${i}`, on: i % 2 === 0 }));
const noop = () => undefined;

/**
 * The catalogue: the engine's own runaways (SECURITY.md's included), then every kind of work the host does for the
 * guest in a loop (host calls, console entries, random bytes, module loads, timers, fetch, Web APIs).
 */
export const RUNAWAYS: Record<string, Runaway> = {
  "while (true) {}": { source: "while (true) {}" },
  "i++ loop": { source: "let i = 0; for (;;) i++;" },
  fib: { source: "const fib = (n) => (n < 2 ? n : fib(n - 1) + fib(n - 2)); for (;;) fib(25);" },
  "closures + calls": { source: "for (let i = 0; ; i++) ((x) => () => x + i)(i)();" },
  "try/throw/catch": { source: "for (;;) { try { throw new Error('x'); } catch {} }" },
  "class instances": {
    source: "class P { constructor(x) { this.x = x; } } let p; for (let i = 0; ; i++) p = new P(i);",
  },
  generators: { source: "function* g() { for (let i = 0; ; i++) yield i; } for (const _ of g());" },
  "Proxy get": { source: "const p = new Proxy({}, { get: (_, k) => k }); for (;;) p.x;" },
  "BigInt multiply": { source: "let x = 3n ** 200000n; for (;;) x = (x * x) % (3n ** 200000n);" },
  "BigInt toString": { source: "const x = 7n ** 300000n; for (;;) x.toString().length;" },
  "BigInt(s) 300k digits": { source: "const s = '7'.repeat(300000); for (;;) BigInt(s);" },
  "replace over 2 MB": { source: "const s = 'a'.repeat(2 * 1024 * 1024); for (;;) s.replace(/a/g, 'a');" },
  "regex backtracking": { source: "const s = 'ab'.repeat(100000); for (;;) /(a|b)*c/.test(s);" },
  "regex capture groups": { source: "const s = 'ab'.repeat(50000); for (;;) /((a)(b))*c/.exec(s);" },
  "regex nested quantifier": { source: "const s = 'a'.repeat(22) + 'c'; for (;;) /(a+)+b/.test(s);" },
  "regex replace groups": { source: "const s = 'ab'.repeat(100000); for (;;) s.replace(/(a)(b)/g, '$2$1');" },
  "JSON round trip": {
    source:
      "const big = Array.from({ length: 10000 }, (_, i) => ({ i, s: 'x' + i })); for (;;) JSON.parse(JSON.stringify(big));",
  },
  "JSON.parse 1 MB": {
    source:
      "const t = JSON.stringify(Array.from({ length: 50000 }, (_, i) => ({ i, s: 'x' + i }))); for (;;) JSON.parse(t);",
  },
  "JSON.stringify": {
    source: "const big = Array.from({ length: 50000 }, (_, i) => ({ i, s: 'x' + i })); for (;;) JSON.stringify(big);",
  },
  "JSON.parse strings": { source: "const t = JSON.stringify('x'.repeat(1 << 20)); for (;;) JSON.parse(t);" },
  sort: {
    source:
      "const a = Array.from({ length: 100000 }, (_, i) => (i * 7919) % 100003); for (;;) a.slice().sort((x, y) => x - y);",
  },
  "typed array sort": {
    source: "const a = new Float64Array(1e6).map((_, i) => (i * 7919) % 100003); for (;;) a.slice().sort();",
  },
  "push/pop": {
    source: "const a = []; for (;;) { for (let i = 0; i < 1e5; i++) a.push(i); while (a.length) a.pop(); }",
  },
  "map/filter": {
    source: "const a = Array.from({ length: 1e5 }, (_, i) => i); for (;;) a.map((x) => x * 2).filter((x) => x % 3);",
  },
  "Array.from": { source: "for (;;) Array.from({ length: 1e5 }, (_, i) => i);" },
  "array spread 1 Mi": { source: "const a = new Array(1 << 20).fill(1); for (;;) [...a];" },
  "object spread 262,144 keys": {
    source: "const o = {}; for (let i = 0; i < 262144; i++) o['k' + i] = i; for (;;) ({ ...o });",
  },
  "Object.keys": {
    source: "const o = {}; for (let i = 0; i < 1e5; i++) o['k' + i] = i; for (;;) Object.keys(o).length;",
  },
  "Object.assign": {
    source: "const o = {}; for (let i = 0; i < 1e5; i++) o['k' + i] = i; for (;;) Object.assign({}, o);",
  },
  "spread + Math.max": { source: "const a = Array.from({ length: 60000 }, (_, i) => i); for (;;) Math.max(...a);" },
  "Map churn": { source: "const m = new Map(); for (let i = 0; ; i++) { m.set(i, i); if (m.size > 1e5) m.clear(); }" },
  "Set of strings": {
    source: "const s = new Set(); for (let i = 0; ; i++) { s.add('k' + i); if (s.size > 1e5) s.clear(); }",
  },
  "new Array(2**32-1).join('')": { source: "for (;;) new Array(2 ** 32 - 1).join('');" },
  "repeat 8 MB": { source: "for (;;) 'ab'.repeat(4 * 1024 * 1024).length;" },
  "string concat": { source: "let s = ''; for (let i = 0; ; i++) { s += 'x'; if (s.length > 1e6) s = ''; }" },
  "split/join 1 MB": { source: "const s = 'ab,'.repeat(350000); for (;;) s.split(',').join(';');" },
  "toUpperCase 1 MB": { source: "const s = 'ab'.repeat(1 << 19); for (;;) s.toUpperCase();" },
  "indexOf 8 MiB": { source: "const u = new Uint8Array(8 << 20); for (;;) u.indexOf(1);" },
  "typed array copy": { source: "const u = new Uint8Array(8 << 20); for (;;) u.slice();" },
  "promise chain": { source: "for (;;) await Promise.resolve(1);" },
  "host call f()": { source: "for (;;) f();", globals: { f: noop } },
  "host call f(1, 'a')": { source: "for (;;) f(1, 'a');", globals: { f: noop } },
  "host call returns 1": { source: "let n = 0; for (;;) n += f();", globals: { f: () => 1 } },
  "host call f({ a: 1 })": { source: "for (;;) f({ a: 1, b: [1, 2] });", globals: { f: noop } },
  "host call f(64 KiB string)": { source: "const s = 'x'.repeat(65536); for (;;) f(s);", globals: { f: noop } },
  "host call f(64 KiB buffer)": { source: "const b = new Uint8Array(65536); for (;;) f(b);", globals: { f: noop } },
  "host call f(plain 1,000 rows)": {
    source:
      "const rows = Array.from({ length: 1000 }, (_, i) => ({ i, s: 'v' + i, on: i % 2 === 0 })); for (;;) f(rows);",
    globals: { f: noop },
  },
  "host call returns 64 KiB string": { source: "for (;;) f().length;", globals: { f: () => KIB64 } },
  "host call returns plain 1,000 rows": { source: "for (;;) f().length;", globals: { f: () => PLAIN } },
  "host call returns { a: 1 }": { source: "for (;;) f().a;", globals: { f: () => ({ a: 1, b: [1, 2] }) } },
  "awaited host call": { source: "for (;;) await f();", globals: { f: async () => 1 } },
  "awaited host call, 64 KiB": { source: "for (;;) (await f()).length;", globals: { f: async () => KIB64 } },
  "awaited host call, plain rows": { source: "for (;;) (await f()).length;", globals: { f: async () => PLAIN } },
  "console.log('x')": { source: "for (;;) console.log('x');" },
  "console.log(1 KiB)": { source: "const s = 'x'.repeat(1024); for (;;) console.log(s);" },
  "console.log(64 KiB)": { source: "const s = 'x'.repeat(65536); for (;;) console.log(s);" },
  "console.error(object)": { source: "const o = { a: 1, b: [1, 2, 3], c: { d: 'e' } }; for (;;) console.error(o);" },
  "console.warn(3 args)": { source: "for (let i = 0; ; i++) console.warn('n', i, true);" },
  "console.log(1,000 rows)": {
    source: "const rows = Array.from({ length: 1000 }, (_, i) => ({ i, s: 'v' + i })); for (;;) console.log(rows);",
  },
  "getRandomValues(16 B)": { source: "const u = new Uint8Array(16); for (;;) crypto.getRandomValues(u);", web: true },
  "getRandomValues(64 KiB)": {
    source: "const u = new Uint8Array(65536); for (;;) crypto.getRandomValues(u);",
    web: true,
  },
  randomUUID: { source: "for (;;) crypto.randomUUID();", web: true },
  "import() missing": { source: "for (let i = 0; ; i++) try { await import('./missing-' + i + '.js'); } catch {}" },
  "import() present": { source: "for (;;) await import('./m.js');", modules: { "./m.js": "export default 1" } },
  "import() bad specifier": { source: "for (;;) try { await import('node:fs'); } catch {}" },
  "setTimeout 0 loop": { source: "for (;;) await new Promise((r) => setTimeout(r, 0));", web: true, wait: true },
  "setTimeout refused wait": { source: "setTimeout(() => {}, 2 ** 31 - 1); export default 0;", web: true, wait: true },
  "clearTimeout churn": { source: "for (;;) clearTimeout(setTimeout(() => {}, 10));", web: true },
  "fetch loop": { source: "for (;;) await (await fetch('http://local.test/')).text();", web: true },
  "fetch 64 KiB response": {
    source: "for (;;) await (await fetch('http://local.test/big')).arrayBuffer();",
    web: true,
  },
  "fetch POST 64 KiB": {
    source:
      "const body = 'x'.repeat(65536); for (;;) await (await fetch('http://local.test/', { method: 'POST', body })).text();",
    web: true,
  },
  "TextEncoder 64 KiB": {
    source: "const e = new TextEncoder(), s = 'é'.repeat(32768); for (;;) e.encode(s);",
    web: true,
  },
  "TextDecoder 64 KiB": {
    source: "const d = new TextDecoder(), u = new Uint8Array(65536).fill(97); for (;;) d.decode(u);",
    web: true,
  },
  "new URL": {
    source: "for (let i = 0; ; i++) new URL('https://user@example.com:8080/a/b/../c?q=' + i + '#h').href;",
    web: true,
  },
  URLSearchParams: { source: "for (;;) new URLSearchParams('a=1&b=2&c=%20x&d=4').toString();", web: true },
  Headers: { source: "for (;;) { const h = new Headers({ a: '1', B: '2' }); h.append('c', '3'); [...h]; }", web: true },
  "btoa/atob 48 KiB": { source: "const s = 'x'.repeat(49152); for (;;) atob(btoa(s));", web: true },
  structuredClone: {
    source: "const o = { a: [1, 2, { b: 'c' }], d: new Map([[1, 2]]) }; for (;;) structuredClone(o);",
    web: true,
  },
  "EventTarget dispatch": {
    source: "const t = new EventTarget(); t.addEventListener('x', () => {}); for (;;) t.dispatchEvent(new Event('x'));",
    web: true,
  },
};

/** What the `fetch` of the catalogue's runs answers: without a network, so only the host's own work is measured. */
export const transport = async (url: string, init: RequestInit) => {
  if (init.body !== undefined && init.body !== null) await new Response(init.body).arrayBuffer();
  return new Response(url.endsWith("/big") ? KIB64 : "ok");
};
