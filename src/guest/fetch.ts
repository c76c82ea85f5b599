/**
 * The guest's `Headers`, `Request` and `Response`, as the Fetch standard has them without guards or streams (a body
 * is bytes held whole), and, in sandboxes with a fetch setting, `fetch`: it hands the request to the host
 * (`OP_FETCH`), which checks it against the allow list and the run's limits, and makes a `Response` of the answer.
 * Evaluated at boot into the instances of sandboxes with `webApis`, before any user code.
 *
 * Shipped as source text (sources.generated.ts, `npm run build:guest`): `guestFetch` must not close over anything in
 * this file. It captures at boot what it calls later (constructors, `JSON`, the marshaler), so user code replacing
 * globals does not change how these classes work; they are the guest's own, and the host trusts nothing they send.
 * The constants it repeats from `../values/tape.ts` are checked against it by `test/core/guest-constants.test.ts`.
 * @module
 */
import type { HostCall } from "./core.js";

/** What crosses to the host for one request (see src/fetch/session.ts). */
interface RequestRecord {
  url: string;
  method: string;
  headers: [string, string][];
  body: ArrayBuffer | null;
  redirect: string;
}

/** What the host answers (see `GuestResponse` in src/fetch/session.ts). */
interface ResponseRecord {
  status: number;
  statusText: string;
  url: string;
  redirected: boolean;
  headers: [string, string][];
  body: ArrayBuffer;
}

/** The part of an `AbortSignal` a request uses. */
interface SignalLike {
  aborted: boolean;
  reason: unknown;
  addEventListener(type: string, listener: () => void, options?: object): void;
  removeEventListener(type: string, listener: () => void): void;
}

type HeadersInit = Headers | Iterable<Iterable<unknown>> | Record<string, unknown>;
type BodyInit = unknown;

export function guestFetch(hostCall: HostCall, withFetch: boolean): void {
  // biome-ignore lint/suspicious/noRedundantUseStrict: shipped as source text and evaluated as a sloppy script.
  "use strict";
  const OP_MARSHAL = 4;
  const OP_FETCH = 8;
  const OP_FETCH_ABORT = 9;
  const MODE_CLONE = 0;

  const G = globalThis as unknown as Record<string, unknown>;
  const { defineProperty, getOwnPropertyDescriptor, keys } = Object;
  const objectToString = Object.prototype.toString;
  const { apply } = Reflect;
  const StringCtor = String;
  const NumberCtor = Number;
  const TypeErrorCtor = TypeError;
  const RangeErrorCtor = RangeError;
  const PromiseCtor = Promise;
  const Uint8ArrayCtor = Uint8Array;
  // The core's stand-in for the constructor: `instanceof` sees through it.
  const ArrayBufferCtor = ArrayBuffer;
  const { isView } = ArrayBuffer;
  const { fromCharCode } = String;
  const { trunc, min } = Math;
  const { isFinite: finite } = Number;
  const parseJson = JSON.parse;
  const stringify = JSON.stringify;
  const promiseThen = Promise.prototype.then;
  const iteratorSymbol = Symbol.iterator;
  /** The guest's `URL` (part of the web APIs) when it was installed before this module. */
  const URLCtor = G.URL as (new (url: string) => { href: string }) | undefined;

  const fail = (message: string): never => {
    throw new TypeErrorCtor(message);
  };
  const hide = (target: object, key: PropertyKey, value: unknown) =>
    defineProperty(target, key, { __proto__: null, value, writable: true, configurable: true } as PropertyDescriptor);
  const tag = (proto: object, name: string) =>
    defineProperty(proto, Symbol.toStringTag, {
      __proto__: null,
      value: name,
      configurable: true,
    } as PropertyDescriptor);

  // Bytes and text: UTF-8 as the Encoding standard has it (lone surrogates and bad sequences become U+FFFD).
  const utf8Encode = (text: string): Uint8Array => {
    const out = new Uint8ArrayCtor(text.length * 3);
    let n = 0;
    for (let i = 0; i < text.length; i++) {
      let c = text.charCodeAt(i);
      if (c >= 0xd800 && c <= 0xdfff) {
        const d = i + 1 < text.length ? text.charCodeAt(i + 1) : 0;
        if (c <= 0xdbff && d >= 0xdc00 && d <= 0xdfff) {
          c = 0x10000 + ((c - 0xd800) << 10) + (d - 0xdc00);
          i++;
        } else c = 0xfffd;
      }
      if (c < 0x80) out[n++] = c;
      else if (c < 0x800) {
        out[n++] = 0xc0 | (c >> 6);
        out[n++] = 0x80 | (c & 0x3f);
      } else if (c < 0x10000) {
        out[n++] = 0xe0 | (c >> 12);
        out[n++] = 0x80 | ((c >> 6) & 0x3f);
        out[n++] = 0x80 | (c & 0x3f);
      } else {
        out[n++] = 0xf0 | (c >> 18);
        out[n++] = 0x80 | ((c >> 12) & 0x3f);
        out[n++] = 0x80 | ((c >> 6) & 0x3f);
        out[n++] = 0x80 | (c & 0x3f);
      }
    }
    return out.slice(0, n);
  };
  /** Code units (or bytes) that become a string at once: `fromCharCode` takes them as arguments. */
  const CHUNK = 8192;
  const NON_ASCII = /[\x80-\xff]/;
  const utf8Decode = (bytes: Uint8Array): string => {
    let text = "";
    const units: number[] = [];
    const flush = () => {
      text += apply(fromCharCode, undefined, units) as string;
      units.length = 0;
    };
    const n = bytes.length;
    // A byte order mark is not text.
    let i = n >= 3 && bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf ? 3 : 0;
    while (i < n) {
      const b = bytes[i] as number;
      if (b < 0x80) {
        // A run of ASCII becomes text natively, a chunk at a time (byte by byte took 140 ns a byte).
        if (units.length > 0) flush();
        const end = min(i + CHUNK, n);
        const latin = apply(fromCharCode, undefined, bytes.subarray(i, end) as unknown as number[]) as string;
        const high = latin.search(NON_ASCII);
        text += high < 0 ? latin : latin.slice(0, high);
        i = high < 0 ? end : i + high;
        continue;
      }
      let c = 0xfffd;
      let need = 0;
      let lower = 0x80;
      let upper = 0xbf;
      i++;
      if (b >= 0xc2 && b <= 0xdf) {
        need = 1;
        c = b & 0x1f;
      } else if (b >= 0xe0 && b <= 0xef) {
        need = 2;
        c = b & 0xf;
        if (b === 0xe0) lower = 0xa0;
        if (b === 0xed) upper = 0x9f;
      } else if (b >= 0xf0 && b <= 0xf4) {
        need = 3;
        c = b & 0x7;
        if (b === 0xf0) lower = 0x90;
        if (b === 0xf4) upper = 0x8f;
      }
      for (; need > 0; need--) {
        const next = i < n ? (bytes[i] as number) : -1;
        if (next < lower || next > upper) {
          // The byte that broke the sequence starts the next one.
          c = 0xfffd;
          break;
        }
        c = (c << 6) | (next & 0x3f);
        lower = 0x80;
        upper = 0xbf;
        i++;
      }
      if (c >= 0x10000) {
        units[units.length] = 0xd800 + ((c - 0x10000) >> 10);
        units[units.length] = 0xdc00 + ((c - 0x10000) & 0x3ff);
      } else units[units.length] = c;
      if (units.length >= CHUNK) flush();
    }
    flush();
    return text;
  };

  // Headers: a list of lowercase names and values, in the order they were added.
  const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
  const EDGE_WHITESPACE = /^[\t\n\r ]+|[\t\n\r ]+$/g;
  const BAD_VALUE = /[\0\r\n]/;
  const NOT_BYTES = /[^\0-\xff]/;
  const headerName = (name: unknown): string => {
    const text = StringCtor(name);
    if (!TOKEN.test(text)) fail(`Headers: ${stringify(text)} is not a valid header name`);
    return text.toLowerCase();
  };
  const headerValue = (value: unknown, name: string): string => {
    const text = StringCtor(value).replace(EDGE_WHITESPACE, "");
    if (BAD_VALUE.test(text) || NOT_BYTES.test(text))
      fail(`Headers: the value of '${name}' is not a valid header value`);
    return text;
  };

  let listOf: (headers: Headers) => [string, string][];
  /** Headers holding `list` as it is: the host's, already lowercase and valid. */
  let headersOf: (list: [string, string][]) => Headers;
  class Headers {
    #list: [string, string][] = [];

    constructor(init?: HeadersInit) {
      if (init === undefined || init === null) {
        if (init === null) fail("Headers: init must be an object, not null");
        return;
      }
      if (typeof init !== "object" && typeof init !== "function") fail("Headers: init must be an object");
      if (#list in (init as object)) {
        const list = (init as Headers).#list;
        for (let i = 0; i < list.length; i++)
          this.#list.push([(list[i] as [string, string])[0], (list[i] as [string, string])[1]]);
        return;
      }
      if (typeof (init as Record<PropertyKey, unknown>)[iteratorSymbol] === "function") {
        for (const pair of init as Iterable<Iterable<unknown>>) {
          if (typeof pair !== "object" || pair === null) fail("Headers: each header must be a [name, value] pair");
          const items = [...pair];
          if (items.length !== 2) fail("Headers: each header must be a [name, value] pair");
          this.append(items[0] as string, items[1] as string);
        }
        return;
      }
      const record = init as Record<string, unknown>;
      const names = keys(record);
      for (let i = 0; i < names.length; i++) this.append(names[i] as string, record[names[i] as string] as string);
    }

    append(name: string, value: string): void {
      const key = headerName(name);
      this.#list.push([key, headerValue(value, key)]);
    }

    delete(name: string): void {
      const key = headerName(name);
      this.#list = this.#list.filter((entry) => entry[0] !== key);
    }

    get(name: string): string | null {
      const key = headerName(name);
      let value: string | null = null;
      for (const entry of this.#list) if (entry[0] === key) value = value === null ? entry[1] : `${value}, ${entry[1]}`;
      return value;
    }

    getSetCookie(): string[] {
      return this.#list.filter((entry) => entry[0] === "set-cookie").map((entry) => entry[1]);
    }

    has(name: string): boolean {
      const key = headerName(name);
      return this.#list.some((entry) => entry[0] === key);
    }

    set(name: string, value: string): void {
      const key = headerName(name);
      const text = headerValue(value, key);
      const at = this.#list.findIndex((entry) => entry[0] === key);
      if (at < 0) {
        this.#list.push([key, text]);
        return;
      }
      this.#list = this.#list.filter((entry, i) => i <= at || entry[0] !== key);
      this.#list[at] = [key, text];
    }

    forEach(callback: (value: string, name: string, headers: Headers) => void, thisArg?: unknown): void {
      if (typeof callback !== "function") fail("Headers.forEach: callback must be a function");
      for (const [name, value] of this.#sorted()) apply(callback, thisArg, [value, name, this]);
    }

    *entries(): IterableIterator<[string, string]> {
      yield* this.#sorted();
    }

    *keys(): IterableIterator<string> {
      for (const entry of this.#sorted()) yield entry[0];
    }

    *values(): IterableIterator<string> {
      for (const entry of this.#sorted()) yield entry[1];
    }

    [Symbol.iterator](): IterableIterator<[string, string]> {
      return this.entries();
    }

    /** Sorted by name, each name once with its values joined by ", ", but `set-cookie` once per cookie. */
    #sorted(): [string, string][] {
      const names = [...new Set(this.#list.map((entry) => entry[0]))].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
      const out: [string, string][] = [];
      for (const name of names) {
        if (name === "set-cookie") for (const value of this.getSetCookie()) out.push([name, value]);
        else out.push([name, this.get(name) as string]);
      }
      return out;
    }

    static {
      listOf = (headers) => headers.#list;
      headersOf = (list) => {
        const headers = new Headers();
        headers.#list = list;
        return headers;
      };
    }
  }
  defineProperty(Headers.prototype, iteratorSymbol, {
    __proto__: null,
    value: Headers.prototype.entries,
    writable: true,
    configurable: true,
  } as PropertyDescriptor);

  // Bodies: bytes held whole, read once.
  interface Body {
    bytes: Uint8Array | null;
    used: boolean;
  }
  const bodies = new WeakMap<object, Body>();
  defineProperty(bodies, "get", { __proto__: null, value: WeakMap.prototype.get } as PropertyDescriptor);
  defineProperty(bodies, "set", { __proto__: null, value: WeakMap.prototype.set } as PropertyDescriptor);
  const bodyOf = (self: unknown): Body => {
    const body = typeof self === "object" && self !== null ? bodies.get(self) : undefined;
    return body === undefined ? fail("Illegal invocation: not a Request or Response") : body;
  };
  const isTag = (value: unknown, name: string) => apply(objectToString, value, []) === `[object ${name}]`;
  /** A body from its init: the bytes, and the content type it implies when the headers name none. */
  const extract = (init: BodyInit): { bytes: Uint8Array; type: string | null } => {
    if (isView(init)) {
      const view = init as ArrayBufferView;
      return { bytes: new Uint8ArrayCtor(view.buffer, view.byteOffset, view.byteLength).slice(), type: null };
    }
    if (init instanceof ArrayBufferCtor) {
      return { bytes: new Uint8ArrayCtor(init as ArrayBuffer).slice(), type: null };
    }
    if (typeof init === "object" && init !== null && isTag(init, "URLSearchParams")) {
      return { bytes: utf8Encode(StringCtor(init)), type: "application/x-www-form-urlencoded;charset=UTF-8" };
    }
    return { bytes: utf8Encode(StringCtor(init)), type: "text/plain;charset=UTF-8" };
  };
  /** Gives `target` the body `init`, with its content type unless `headers` has one. */
  const initBody = (target: object, init: BodyInit, headers: Headers) => {
    if (init === null || init === undefined) {
      bodies.set(target, { bytes: null, used: false });
      return;
    }
    const { bytes, type } = extract(init);
    if (type !== null && !headers.has("content-type")) headers.append("content-type", type);
    bodies.set(target, { bytes, used: false });
  };
  /** The body's bytes, which can be read only once. */
  const consume = (self: unknown): Uint8Array => {
    const body = bodyOf(self);
    if (body.bytes === null) return new Uint8ArrayCtor(0);
    if (body.used) fail("Body has already been used");
    body.used = true;
    return body.bytes;
  };
  const bodyMethods = {
    async text(this: unknown) {
      return utf8Decode(consume(this));
    },
    async json(this: unknown) {
      return parseJson(utf8Decode(consume(this)));
    },
    async arrayBuffer(this: unknown) {
      return consume(this).slice().buffer;
    },
    async bytes(this: unknown) {
      return consume(this).slice();
    },
  };
  const bodyUsed = {
    get bodyUsed() {
      const body = bodyOf(this);
      return body.bytes !== null && body.used;
    },
  };

  const ABSOLUTE = /^[A-Za-z][A-Za-z0-9+.-]*:/;
  const parseUrl = (input: unknown): string => {
    const text = StringCtor(input);
    if (!ABSOLUTE.test(text))
      fail(`Failed to parse URL from ${text}: the sandbox has no base URL, use an absolute URL`);
    return URLCtor === undefined ? text : new URLCtor(text).href;
  };
  const isRecord = (value: unknown): value is Record<string, unknown> =>
    value !== undefined && value !== null && (typeof value === "object" || typeof value === "function");
  const optionsOf = (init: unknown, what: string): Record<string, unknown> => {
    if (init === undefined || init === null) return { __proto__: null } as Record<string, unknown>;
    return isRecord(init) ? init : fail(`${what}: init must be an object`);
  };

  // Request.
  const METHOD_NAMES = ["DELETE", "GET", "HEAD", "OPTIONS", "POST", "PUT"];
  const REDIRECT_MODES = ["follow", "error", "manual"];
  const methodOf = (value: unknown): string => {
    const method = StringCtor(value);
    if (!TOKEN.test(method)) fail(`Request: ${stringify(method)} is not a valid HTTP method`);
    const upper = method.toUpperCase();
    if (upper === "CONNECT" || upper === "TRACE" || upper === "TRACK")
      fail(`Request: the method ${upper} is not allowed`);
    return METHOD_NAMES.includes(upper) ? upper : method;
  };
  const signalOf = (value: unknown): SignalLike | null => {
    if (value === undefined || value === null) return null;
    if (!isRecord(value) || typeof value.addEventListener !== "function")
      fail("Request: signal must be an AbortSignal");
    return value as unknown as SignalLike;
  };

  let requestParts: (request: Request) => { url: string; method: string; redirect: string; headers: Headers };
  class Request {
    #url: string;
    #method = "GET";
    #headers: Headers;
    #redirect = "follow";
    #signal: SignalLike | null = null;

    constructor(input: unknown, init?: unknown) {
      const options = optionsOf(init, "Request");
      let inherited: Uint8Array | null = null;
      if (typeof input === "object" && input !== null && #url in input) {
        const source = input as Request;
        this.#url = source.#url;
        this.#method = source.#method;
        this.#headers = new Headers(source.#headers);
        this.#redirect = source.#redirect;
        this.#signal = source.#signal;
        const body = bodyOf(source);
        if (body.bytes !== null && body.used) fail("Request: the input request's body has already been used");
        inherited = body.bytes;
      } else {
        this.#url = parseUrl(input);
        this.#headers = new Headers();
      }
      if (options.method !== undefined) this.#method = methodOf(options.method);
      if (options.headers !== undefined) this.#headers = new Headers(options.headers as HeadersInit);
      if (options.redirect !== undefined) {
        const redirect = StringCtor(options.redirect);
        if (!REDIRECT_MODES.includes(redirect)) fail(`Request: redirect must be "follow", "error" or "manual"`);
        this.#redirect = redirect;
      }
      if ("signal" in options) this.#signal = signalOf(options.signal);
      const hasBody = options.body !== undefined && options.body !== null;
      if ((hasBody || inherited !== null) && (this.#method === "GET" || this.#method === "HEAD"))
        fail(`Request: a ${this.#method} request cannot have a body`);
      if (options.body !== undefined) initBody(this, options.body, this.#headers);
      else {
        bodies.set(this, { bytes: inherited, used: false });
        // The new request takes the body over: the input's is spent.
        if (inherited !== null) bodyOf(input).used = true;
      }
    }

    get url(): string {
      return this.#url;
    }

    get method(): string {
      return this.#method;
    }

    get headers(): Headers {
      return this.#headers;
    }

    get redirect(): string {
      return this.#redirect;
    }

    get signal(): SignalLike | null {
      return this.#signal;
    }

    clone(): Request {
      const body = bodyOf(this);
      if (body.bytes !== null && body.used) fail("Request.clone: the body has already been used");
      const copy = new Request(this, { body: null });
      bodies.set(copy, { bytes: body.bytes === null ? null : body.bytes.slice(), used: false });
      return copy;
    }

    static {
      requestParts = (request) => ({
        url: request.#url,
        method: request.#method,
        redirect: request.#redirect,
        headers: request.#headers,
      });
    }
  }

  // Response.
  const NULL_BODY_STATUSES = [101, 103, 204, 205, 304];
  const REDIRECT_STATUSES = [301, 302, 303, 307, 308];
  const REASON_PHRASE = /^[\t\x20-\x7e\x80-\xff]*$/;
  /** WebIDL's `unsigned short`: wraps modulo 2^16. */
  const unsignedShort = (value: unknown): number => {
    const n = trunc(NumberCtor(value));
    return finite(n) ? ((n % 65536) + 65536) % 65536 : 0;
  };

  let responseOf: (record: ResponseRecord) => Response;
  class Response {
    #status = 200;
    #statusText = "";
    #headers: Headers;
    #type = "default";
    #url = "";
    #redirected = false;

    constructor(body: BodyInit = null, init?: unknown) {
      const options = optionsOf(init, "Response");
      if (options.status !== undefined) {
        const status = unsignedShort(options.status);
        if (status < 200 || status > 599)
          throw new RangeErrorCtor(`Response: status must be in the range 200 to 599, got ${status}`);
        this.#status = status;
      }
      if (options.statusText !== undefined) {
        const text = StringCtor(options.statusText);
        if (!REASON_PHRASE.test(text)) fail("Response: statusText is not a valid reason phrase");
        this.#statusText = text;
      }
      this.#headers = new Headers(options.headers === undefined ? undefined : (options.headers as HeadersInit));
      if (body !== null && body !== undefined && NULL_BODY_STATUSES.includes(this.#status))
        fail(`Response: a response with status ${this.#status} cannot have a body`);
      initBody(this, body, this.#headers);
    }

    get status(): number {
      return this.#status;
    }

    get ok(): boolean {
      return this.#status >= 200 && this.#status <= 299;
    }

    get statusText(): string {
      return this.#statusText;
    }

    get headers(): Headers {
      return this.#headers;
    }

    get type(): string {
      return this.#type;
    }

    get url(): string {
      return this.#url;
    }

    get redirected(): boolean {
      return this.#redirected;
    }

    clone(): Response {
      const body = bodyOf(this);
      if (body.bytes !== null && body.used) fail("Response.clone: the body has already been used");
      const copy = new Response(null, { headers: this.#headers });
      copy.#status = this.#status;
      copy.#statusText = this.#statusText;
      copy.#type = this.#type;
      copy.#url = this.#url;
      copy.#redirected = this.#redirected;
      bodies.set(copy, { bytes: body.bytes === null ? null : body.bytes.slice(), used: false });
      return copy;
    }

    static error(): Response {
      const response = new Response();
      response.#status = 0;
      response.#type = "error";
      return response;
    }

    static json(data: unknown, init?: unknown): Response {
      const text = stringify(data);
      if (text === undefined) fail("Response.json: the data is not JSON-serializable");
      const options = optionsOf(init, "Response.json");
      const headers = new Headers(options.headers === undefined ? undefined : (options.headers as HeadersInit));
      if (!headers.has("content-type")) headers.set("content-type", "application/json");
      return new Response(text, { status: options.status, statusText: options.statusText, headers });
    }

    static redirect(url: unknown, status: unknown = 302): Response {
      const location = parseUrl(url);
      const code = unsignedShort(status);
      if (!REDIRECT_STATUSES.includes(code))
        throw new RangeErrorCtor(`Response.redirect: ${code} is not a redirect status`);
      const response = new Response(null, { status: code, headers: [["location", location]] });
      return response;
    }

    static {
      responseOf = (record) => {
        const response = new Response();
        response.#status = record.status;
        response.#statusText = record.statusText;
        response.#headers = headersOf(record.headers);
        response.#type = "basic";
        response.#url = record.url;
        response.#redirected = record.redirected;
        const bytes = new Uint8ArrayCtor(record.body);
        bodies.set(response, {
          bytes: bytes.length === 0 && NULL_BODY_STATUSES.includes(record.status) ? null : bytes,
          used: false,
        });
        return response;
      };
    }
  }

  for (const [Ctor, name] of [
    [Headers, "Headers"],
    [Request, "Request"],
    [Response, "Response"],
  ] as const) {
    tag(Ctor.prototype, name);
    hide(G, name, Ctor);
  }
  for (const proto of [Request.prototype, Response.prototype]) {
    for (const name of keys(bodyMethods)) hide(proto, name, bodyMethods[name as keyof typeof bodyMethods]);
    const getter = getOwnPropertyDescriptor(bodyUsed, "bodyUsed") as PropertyDescriptor;
    defineProperty(proto, "bodyUsed", { __proto__: null, get: getter.get, configurable: true } as PropertyDescriptor);
  }
  if (!withFetch) return;

  // fetch: the request crosses to the host as a record; the answer becomes a Response.
  let marshal: { encode(value: unknown, mode: number): [string, unknown[]] } | undefined;
  let requests = 0;
  const EMPTY: unknown[] = [];
  /** Settles with `pending`, or rejects with the signal's reason once it aborts (the host's request aborted too). */
  const abortable = (pending: Promise<unknown>, signal: SignalLike, id: number) =>
    new PromiseCtor<unknown>((resolve, reject) => {
      const onAbort = () => {
        hostCall(OP_FETCH_ABORT, id, "null", EMPTY);
        reject(signal.reason);
      };
      signal.addEventListener("abort", onAbort, { __proto__: null, once: true });
      apply(promiseThen, pending, [
        (value: unknown) => {
          signal.removeEventListener("abort", onAbort);
          resolve(value);
        },
        (error: unknown) => {
          signal.removeEventListener("abort", onAbort);
          reject(error);
        },
      ]);
    });
  const fetch = {
    async fetch(input: unknown, init: unknown = undefined): Promise<Response> {
      const request = new Request(input, init);
      const { url, method, redirect, headers } = requestParts(request);
      const signal = request.signal;
      if (signal?.aborted) throw signal.reason;
      const body = bodyOf(request);
      const bytes = body.bytes;
      // Fetching a request spends its body.
      if (bytes !== null) body.used = true;
      const record: RequestRecord = {
        url,
        method,
        headers: listOf(headers),
        body: bytes === null ? null : (bytes.slice().buffer as ArrayBuffer),
        redirect,
      };
      marshal ??= hostCall(OP_MARSHAL, 0, "", EMPTY) as NonNullable<typeof marshal>;
      const id = ++requests;
      const encoded = marshal.encode(record, MODE_CLONE);
      const pending = hostCall(OP_FETCH, id, encoded[0], encoded[1]) as Promise<unknown>;
      const answer = (signal === null ? await pending : await abortable(pending, signal, id)) as ResponseRecord;
      return responseOf(answer);
    },
  }.fetch;
  hide(G, "fetch", fetch);
}
