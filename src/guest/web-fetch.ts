/**
 * `Headers`, `Request` and `Response` (Fetch) of a sandbox made with `webApis: true`, without guards or streams (a body
 * is bytes held whole), and, in sandboxes with a fetch setting, `fetch` (`kit.installFetch`, which the host calls at
 * boot): it hands the request to the host (`OP_FETCH`), which checks it against the allow list and the run's limits,
 * and makes a `Response` of the answer. Installed after the other Web APIs, whose `URL`, `AbortController`, UTF-8 and
 * WebIDL conversions it uses. Shipped as source text (see core.ts); the constants it repeats from `../values/tape.ts`
 * are checked against it by `test/core/guest-constants.test.ts`.
 * @module
 */
import type { HostCall } from "./core.js";
import type { WebKit } from "./web-kit.js";

/** What crosses to the host for one request (see src/fetch/session.ts). */
interface RequestRecord {
  url: string;
  method: string;
  headers: [string, string][];
  body: ArrayBuffer | null;
  redirect: string;
}

/**
 * What the host answers: the response's head as JSON and its body (see `GuestResponse` in src/fetch/session.ts).
 */
type ResponseAnswer = [head: string, body: ArrayBuffer];
/** The head, parsed: status, statusText, the final URL, redirected, the headers. */
type ResponseHead = [number, string, string, boolean, [string, string][]];

type HeadersInit = Headers | Iterable<Iterable<unknown>> | Record<string, unknown>;
type BodyInit = unknown;

export function guestWebFetch(hostCall: HostCall, kit: WebKit): void {
  // biome-ignore lint/suspicious/noRedundantUseStrict: shipped as source text and evaluated as a sloppy script.
  "use strict";
  const OP_MARSHAL = 4;
  const OP_FETCH = 8;
  const OP_FETCH_ABORT = 9;
  const MODE_CLONE = 0;

  const G = globalThis as unknown as Record<string, unknown>;
  const { defineProperty, getOwnPropertyDescriptor, getPrototypeOf, setPrototypeOf, keys } = Object;
  const { apply, ownKeys } = Reflect;
  const { install, required, dictionary, usv, utf8Encode, utf8Decode, bytesOf, addAbortAlgorithm } = kit;
  const { blobOf, makeBlob, multipart, parseForm } = kit;
  const StringCtor = String;
  const NumberCtor = Number;
  const TypeErrorCtor = TypeError;
  const RangeErrorCtor = RangeError;
  const PromiseCtor = Promise;
  const Uint8ArrayCtor = Uint8Array;
  // The core's stand-in for the constructor: `instanceof` sees through it.
  const ArrayBufferCtor = ArrayBuffer;
  const { isView } = ArrayBuffer;
  const { trunc } = Math;
  const { isFinite: finite } = Number;
  const parseJson = JSON.parse;
  const stringify = JSON.stringify;
  const promiseThen = Promise.prototype.then;
  const iteratorSymbol = Symbol.iterator;
  // The Web APIs installed before this one.
  const URLSearchParamsCtor = G.URLSearchParams as new () => object;
  const AbortControllerCtor = G.AbortController as new () => { signal: AbortSignal; abort(reason?: unknown): void };
  const AbortSignalCtor = G.AbortSignal as new () => AbortSignal;

  const fail = (message: string): never => {
    throw new TypeErrorCtor(message);
  };
  const hide = (target: object, key: PropertyKey, value: unknown) =>
    defineProperty(target, key, { __proto__: null, value, writable: true, configurable: true } as PropertyDescriptor);
  const { fromCharCode } = String;
  const NON_ASCII = /[\x80-\xff]/;
  /** Bytes read as ASCII at once, one string made by the engine; longer ones go to the decoder a chunk at a time. */
  const ASCII_AT_ONCE = 8192;
  /**
   * The Encoding standard's "UTF-8 decode": a byte order mark is not text. A short body all ASCII (no mark, which is
   * not ASCII) is its bytes as they are: one string and one search, without the decoder's state.
   */
  const decodeText = (bytes: Uint8Array) => {
    if (bytes.length <= ASCII_AT_ONCE) {
      const latin = apply(fromCharCode, null, bytes as unknown as number[]) as string;
      if (!NON_ASCII.test(latin)) return latin;
    }
    return utf8Decode(
      bytes.length >= 3 && bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf ? bytes.subarray(3) : bytes,
    );
  };
  const tag = (proto: object, name: string) =>
    defineProperty(proto, Symbol.toStringTag, {
      __proto__: null,
      value: name,
      configurable: true,
    } as PropertyDescriptor);

  // Headers: a list of lowercase names and values, in the order they were added.
  const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
  const EDGE_WHITESPACE = /^[\t\n\r ]+|[\t\n\r ]+$/g;
  const BAD_VALUE = /[\0\r\n]/;
  const NOT_BYTES = /[^\0-\xff]/;
  /** WebIDL's ByteString: ToString (a symbol is refused, as `String()` would not), nothing past U+00FF. */
  const byteString = (value: unknown): string => {
    if (typeof value === "symbol") fail("Headers: a Symbol is not a header name or value");
    const text = StringCtor(value);
    if (NOT_BYTES.test(text)) fail(`Headers: ${stringify(text)} holds a character past U+00FF`);
    return text;
  };
  const headerName = (name: unknown): string => {
    const text = byteString(name);
    if (!TOKEN.test(text)) fail(`Headers: ${stringify(text)} is not a valid header name`);
    return text.toLowerCase();
  };
  const headerValue = (value: unknown, name: string): string => {
    const text = byteString(value).replace(EDGE_WHITESPACE, "");
    if (BAD_VALUE.test(text)) fail(`Headers: the value of '${name}' is not a valid header value`);
    return text;
  };
  const isObject = (value: unknown): value is Record<PropertyKey, unknown> =>
    (typeof value === "object" && value !== null) || typeof value === "function";
  /** WebIDL's sequence<ByteString...> of an iterable whose `@@iterator` is `method`, each item converted by `convert`. */
  const sequence = <T>(iterable: object, method: unknown, convert: (item: unknown) => T): T[] => {
    const iterator = apply(method as () => unknown, iterable, []);
    if (!isObject(iterator)) fail("Headers: an iterator must be an object");
    const next = (iterator as Record<string, unknown>).next as () => unknown;
    const items: T[] = [];
    for (;;) {
      const step = apply(next, iterator, []);
      if (!isObject(step)) fail("Headers: an iterator result must be an object");
      if ((step as IteratorResult<unknown>).done) return items;
      items[items.length] = convert((step as IteratorResult<unknown>).value);
    }
  };
  /** One header of a sequence init: an iterable of ByteStrings (its size is checked when the headers are filled). */
  const headerPair = (pair: unknown): string[] => {
    const method = isObject(pair) ? pair[iteratorSymbol] : undefined;
    if (typeof method !== "function") fail("Headers: each header must be a [name, value] pair");
    return sequence(pair as object, method, byteString);
  };
  /**
   * A `HeadersInit` converted as WebIDL converts `(sequence<sequence<ByteString>> or record<ByteString, ByteString>)`:
   * an object with an `@@iterator` (a Headers too) is iterated; any other is a record, read key by key in
   * [[OwnPropertyKeys]] order, its enumerable own properties only, a symbol key refused.
   */
  const initPairs = (init: Record<PropertyKey, unknown>): string[][] => {
    const method = init[iteratorSymbol];
    if (method !== undefined && method !== null) {
      if (typeof method !== "function") fail("Headers: init's Symbol.iterator must be a function");
      return sequence(init, method, headerPair);
    }
    const pairs: string[][] = [];
    const names = ownKeys(init);
    for (let i = 0; i < names.length; i++) {
      const key = names[i] as PropertyKey;
      const own = getOwnPropertyDescriptor(init, key);
      if (own === undefined || !own.enumerable) continue;
      const name = byteString(key);
      pairs[pairs.length] = [name, byteString(init[key])];
    }
    return pairs;
  };

  let listOf: (headers: Headers) => [string, string][];
  /** Headers holding `list` as it is: the host's, already lowercase and valid. */
  let headersOf: (list: [string, string][]) => Headers;
  /** A copy of `headers`' list, as it is (the Fetch standard copies a request's list; iterating would combine it). */
  let copyOf: (headers: Headers) => Headers;
  /** The sorted and combined list that iterators and `forEach` read, as it is when they read it. */
  let sortedOf: (headers: Headers) => [string, string][];
  class Headers {
    #list: [string, string][] = [];
    /** `#sorted()`'s list until the next change: an iterator reads it at each step. */
    #sortedList: [string, string][] | null = null;

    constructor(init?: HeadersInit) {
      if (init === undefined) return;
      if (!isObject(init)) fail("Headers: init must be an object");
      const pairs = initPairs(init as Record<PropertyKey, unknown>);
      for (let i = 0; i < pairs.length; i++) {
        const pair = pairs[i] as string[];
        if (pair.length !== 2) fail("Headers: each header must be a [name, value] pair");
        this.append(pair[0] as string, pair[1] as string);
      }
    }

    append(name: string, value: string): void {
      required(arguments.length, 2, "Headers.append");
      const key = headerName(name);
      this.#list.push([key, headerValue(value, key)]);
      this.#sortedList = null;
    }

    delete(name: string): void {
      required(arguments.length, 1, "Headers.delete");
      const key = headerName(name);
      this.#list = this.#list.filter((entry) => entry[0] !== key);
      this.#sortedList = null;
    }

    get(name: string): string | null {
      required(arguments.length, 1, "Headers.get");
      const key = headerName(name);
      let value: string | null = null;
      for (const entry of this.#list) if (entry[0] === key) value = value === null ? entry[1] : `${value}, ${entry[1]}`;
      return value;
    }

    getSetCookie(): string[] {
      return this.#list.filter((entry) => entry[0] === "set-cookie").map((entry) => entry[1]);
    }

    has(name: string): boolean {
      required(arguments.length, 1, "Headers.has");
      const key = headerName(name);
      return this.#list.some((entry) => entry[0] === key);
    }

    set(name: string, value: string): void {
      required(arguments.length, 2, "Headers.set");
      const key = headerName(name);
      const text = headerValue(value, key);
      this.#sortedList = null;
      const at = this.#list.findIndex((entry) => entry[0] === key);
      if (at < 0) {
        this.#list.push([key, text]);
        return;
      }
      this.#list = this.#list.filter((entry, i) => i <= at || entry[0] !== key);
      this.#list[at] = [key, text];
    }

    /** WebIDL's forEach of a pair iterable: the list is read again before each call, as changed by the last. */
    forEach(callback: (value: string, name: string, headers: Headers) => void, thisArg: unknown = undefined): void {
      required(arguments.length, 1, "Headers.forEach");
      if (typeof callback !== "function") fail("Headers.forEach: callback must be a function");
      for (let i = 0; ; i++) {
        const pairs = this.#sorted();
        if (i >= pairs.length) return;
        const pair = pairs[i] as [string, string];
        apply(callback, thisArg, [pair[1], pair[0], this]);
      }
    }

    entries(): HeadersIterator {
      return new HeadersIterator(this, ENTRIES);
    }

    keys(): HeadersIterator {
      return new HeadersIterator(this, KEYS);
    }

    values(): HeadersIterator {
      return new HeadersIterator(this, VALUES);
    }

    /** Sorted by name, each name once with its values joined by ", ", but `set-cookie` once per cookie. */
    #sorted(): [string, string][] {
      if (this.#sortedList !== null) return this.#sortedList;
      const values = new Map<string, string[]>();
      for (const [name, value] of this.#list) {
        const known = values.get(name);
        if (known === undefined) values.set(name, [value]);
        else known.push(value);
      }
      const names = [...values.keys()].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
      const out: [string, string][] = [];
      for (const name of names) {
        const all = values.get(name) as string[];
        if (name === "set-cookie") for (const value of all) out.push([name, value]);
        else out.push([name, all.join(", ")]);
      }
      this.#sortedList = out;
      return out;
    }

    static {
      listOf = (headers) => headers.#list;
      headersOf = (list) => {
        const headers = new Headers();
        headers.#list = list;
        return headers;
      };
      copyOf = (headers) => {
        const list = headers.#list;
        const copy: [string, string][] = [];
        for (let i = 0; i < list.length; i++)
          copy[i] = [(list[i] as [string, string])[0], (list[i] as [string, string])[1]];
        return headersOf(copy);
      };
      sortedOf = (headers) => headers.#sorted();
    }
  }
  // WebIDL's pair iterator: %HeadersIteratorPrototype% (on %IteratorPrototype%), whose next() reads the headers'
  // sorted and combined list as it is at that moment, at the iterator's index, so changes while iterating show.
  const KEYS = 0;
  const VALUES = 1;
  const ENTRIES = 2;
  class HeadersIterator {
    #headers: Headers;
    #kind: number;
    #index = 0;

    constructor(headers: Headers, kind: number) {
      this.#headers = headers;
      this.#kind = kind;
    }

    next(): IteratorResult<unknown> {
      if (!isObject(this) || !(#kind in this)) fail("next: the receiver is not a Headers iterator");
      const pairs = sortedOf(this.#headers);
      const index = this.#index;
      if (index >= pairs.length) return { value: undefined, done: true };
      this.#index = index + 1;
      const pair = pairs[index] as [string, string];
      const kind = this.#kind;
      return { value: kind === KEYS ? pair[0] : kind === VALUES ? pair[1] : [pair[0], pair[1]], done: false };
    }
  }
  const headersGet = Headers.prototype.get;
  const HeadersIteratorProto = HeadersIterator.prototype;
  const arrayIterator = ([] as unknown as Record<symbol, () => object>)[iteratorSymbol] as () => object;
  setPrototypeOf(HeadersIteratorProto, getPrototypeOf(getPrototypeOf(apply(arrayIterator, [], []))));
  delete (HeadersIteratorProto as { constructor?: unknown }).constructor;
  defineProperty(HeadersIteratorProto, "next", {
    __proto__: null,
    value: HeadersIteratorProto.next,
    writable: true,
    enumerable: true,
    configurable: true,
  } as PropertyDescriptor);
  tag(HeadersIteratorProto, "Headers Iterator");
  defineProperty(Headers.prototype, iteratorSymbol, {
    __proto__: null,
    value: Headers.prototype.entries,
    writable: true,
    configurable: true,
  } as PropertyDescriptor);

  // Bodies: bytes held whole, read once, in a private field of their request or response. Not in a WeakMap keyed
  // by it: there a body outlived its request or response until the engine's cycle collector ran, which bodies do not
  // bring about (200 responses of 1 MiB made and dropped in a loop ran out of a 64 MiB memory limit).
  interface Body {
    bytes: Uint8Array | null;
    used: boolean;
  }
  let requestBody: (self: object) => Body | undefined;
  let responseBody: (self: object) => Body | undefined;
  const bodyOf = (self: unknown): Body => {
    const body = typeof self === "object" && self !== null ? (requestBody(self) ?? responseBody(self)) : undefined;
    return body === undefined ? fail("Illegal invocation: not a Request or Response") : body;
  };
  /** A body from its init: the bytes, and the content type it implies when the headers name none. */
  const extract = (init: BodyInit): { bytes: Uint8Array; type: string | null } => {
    if (isView(init) || init instanceof ArrayBufferCtor) return { bytes: bytesOf(init, "body").slice(), type: null };
    const blob = blobOf(init);
    if (blob !== undefined) return { bytes: blob.bytes.slice(), type: blob.type === "" ? null : blob.type };
    const form = multipart(init);
    if (form !== undefined) return form;
    if (init instanceof URLSearchParamsCtor) {
      return { bytes: utf8Encode(usv(init)), type: "application/x-www-form-urlencoded;charset=UTF-8" };
    }
    return { bytes: utf8Encode(usv(init)), type: "text/plain;charset=UTF-8" };
  };
  /** The body of `init`, its content type added to `headers` unless they have one. */
  const bodyFrom = (init: BodyInit, headers: Headers): Body => {
    if (init === null || init === undefined) return { bytes: null, used: false };
    const { bytes, type } = extract(init);
    if (type !== null && !headers.has("content-type")) headers.append("content-type", type);
    return { bytes, used: false };
  };
  /** The body's bytes, which can be read only once. */
  const consume = (self: unknown): Uint8Array => {
    const body = bodyOf(self);
    if (body.bytes === null) return new Uint8ArrayCtor(0);
    if (body.used) fail("Body has already been used");
    body.used = true;
    return body.bytes;
  };
  /** A request's or response's `content-type`, or "". */
  const contentType = (self: unknown) =>
    (apply(headersGet, (self as { headers: Headers }).headers, ["content-type"]) as string | null) ?? "";
  const bodyMethods = {
    async text(this: unknown) {
      return decodeText(consume(this));
    },
    async json(this: unknown) {
      return parseJson(decodeText(consume(this)));
    },
    async arrayBuffer(this: unknown) {
      return consume(this).slice().buffer;
    },
    async bytes(this: unknown) {
      return consume(this).slice();
    },
    async blob(this: unknown) {
      const bytes = consume(this).slice();
      return makeBlob(bytes, contentType(this));
    },
    async formData(this: unknown) {
      return parseForm(consume(this), contentType(this));
    },
  };
  const bodyUsed = {
    get bodyUsed() {
      const body = bodyOf(this);
      return body.bytes !== null && body.used;
    },
  };

  const ABSOLUTE = /^[A-Za-z][A-Za-z0-9+.-]*:/;
  const parseUrl = (input: unknown) => {
    const text = usv(input);
    if (!ABSOLUTE.test(text))
      fail(`Failed to parse URL from ${text}: the sandbox has no base URL, use an absolute URL`);
    return kit.parseUrl(text);
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
  /**
   * A request's own signal, which follows `given` (an `AbortSignal`); `null` for none, a signal that never aborts,
   * made only when the request's `signal` is read.
   */
  const signalOf = (given: unknown): AbortSignal | null => {
    if (given === undefined || given === null) return null;
    if (!(given instanceof AbortSignalCtor)) fail("Request: signal must be an AbortSignal");
    const controller = new AbortControllerCtor();
    addAbortAlgorithm(given as AbortSignal, () => controller.abort((given as AbortSignal).reason));
    return controller.signal;
  };

  /** What `fetch` sends of a request; `headers` null for none. */
  interface RequestParts {
    url: string;
    method: string;
    redirect: string;
    headers: Headers | null;
    signal: AbortSignal | null;
  }
  let requestParts: (request: Request) => RequestParts;
  /** The parts of `new Request(url)`, checked as it checks them, without making it. */
  const plainGet = (url: string): RequestParts => ({
    url: requestUrl(url),
    method: "GET",
    redirect: "follow",
    headers: null,
    signal: null,
  });
  /** A request's URL: absolute and without credentials. */
  const requestUrl = (input: unknown): string => {
    const url = parseUrl(input);
    if (url.credentials)
      fail(`Request: a URL with credentials (${kit.originOf(url.href)}) is refused: send them in a header`);
    return url.href;
  };
  class Request {
    #url: string;
    #method = "GET";
    #headers: Headers;
    #redirect = "follow";
    #signal: AbortSignal | null;
    #body: Body;

    constructor(input: unknown, init?: unknown) {
      const options = dictionary(init, "Request");
      let inherited: Uint8Array | null = null;
      let signal: unknown;
      if (typeof input === "object" && input !== null && #url in input) {
        const source = input as Request;
        this.#url = source.#url;
        this.#method = source.#method;
        this.#headers = copyOf(source.#headers);
        this.#redirect = source.#redirect;
        signal = source.#signal;
        inherited = bodyOf(source).bytes;
      } else {
        this.#url = requestUrl(input);
        this.#headers = new Headers();
      }
      if (options.method !== undefined) this.#method = methodOf(options.method);
      if (options.headers !== undefined) this.#headers = new Headers(options.headers as HeadersInit);
      if (options.redirect !== undefined) {
        const redirect = StringCtor(options.redirect);
        if (!REDIRECT_MODES.includes(redirect)) fail(`Request: redirect must be "follow", "error" or "manual"`);
        this.#redirect = redirect;
      }
      if ("signal" in options) signal = options.signal;
      this.#signal = signalOf(signal);
      const hasBody = options.body !== undefined && options.body !== null;
      if ((hasBody || inherited !== null) && (this.#method === "GET" || this.#method === "HEAD"))
        fail(`Request: a ${this.#method} request cannot have a body`);
      if (hasBody) this.#body = bodyFrom(options.body as BodyInit, this.#headers);
      else {
        // Without a body of its own, the new request takes the input's over (refused when spent): the input's is spent.
        if (inherited !== null && bodyOf(input).used) fail("Request: the input request's body has already been used");
        this.#body = { bytes: inherited, used: false };
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

    get signal(): AbortSignal {
      this.#signal ??= new AbortControllerCtor().signal;
      return this.#signal;
    }

    clone(): Request {
      const body = bodyOf(this);
      if (body.bytes !== null && body.used) fail("Request.clone: the body has already been used");
      // A body of its own, a copy of this one's, so this request keeps its body.
      return new Request(this, body.bytes === null ? undefined : { body: body.bytes });
    }

    static {
      requestBody = (self) => (#body in self ? (self as Request).#body : undefined);
      requestParts = (request) => ({
        url: request.#url,
        method: request.#method,
        redirect: request.#redirect,
        headers: request.#headers,
        signal: request.#signal,
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

  let responseOf: (answer: ResponseAnswer) => Response;
  /** Given as its body, makes a response whose every field `responseOf` sets: none of the constructor's conversions. */
  const ANSWERED = {};
  class Response {
    #status = 200;
    #statusText = "";
    // Set by the constructor, or by `responseOf` for a response made with ANSWERED.
    #headers!: Headers;
    #type = "default";
    #url = "";
    #redirected = false;
    #body!: Body;

    constructor(body: BodyInit = null, init?: unknown) {
      if (body === ANSWERED) return;
      const options = dictionary(init, "Response");
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
      this.#body = bodyFrom(body, this.#headers);
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
      const copy = new Response(null);
      copy.#headers = copyOf(this.#headers);
      copy.#status = this.#status;
      copy.#statusText = this.#statusText;
      copy.#type = this.#type;
      copy.#url = this.#url;
      copy.#redirected = this.#redirected;
      copy.#body = { bytes: body.bytes === null ? null : body.bytes.slice(), used: false };
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
      const options = dictionary(init, "Response.json");
      const headers = new Headers(options.headers === undefined ? undefined : (options.headers as HeadersInit));
      if (!headers.has("content-type")) headers.set("content-type", "application/json");
      return new Response(text, { status: options.status, statusText: options.statusText, headers });
    }

    static redirect(url: unknown, status: unknown = 302): Response {
      const location = parseUrl(url).href;
      const code = unsignedShort(status);
      if (!REDIRECT_STATUSES.includes(code))
        throw new RangeErrorCtor(`Response.redirect: ${code} is not a redirect status`);
      const response = new Response(null, { status: code, headers: [["location", location]] });
      return response;
    }

    static {
      responseBody = (self) => (#body in self ? (self as Response).#body : undefined);
      responseOf = (answer) => {
        const [status, statusText, url, redirected, headers] = parseJson(answer[0]) as ResponseHead;
        const response = new Response(ANSWERED);
        response.#status = status;
        response.#statusText = statusText;
        response.#headers = headersOf(headers);
        response.#type = "basic";
        response.#url = url;
        response.#redirected = redirected;
        const bytes = new Uint8ArrayCtor(answer[1]);
        response.#body = {
          bytes: bytes.length === 0 && NULL_BODY_STATUSES.includes(status) ? null : bytes,
          used: false,
        };
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
    install(name, Ctor);
  }
  for (const proto of [Request.prototype, Response.prototype]) {
    for (const name of keys(bodyMethods)) hide(proto, name, bodyMethods[name as keyof typeof bodyMethods]);
    const getter = getOwnPropertyDescriptor(bodyUsed, "bodyUsed") as PropertyDescriptor;
    defineProperty(proto, "bodyUsed", { __proto__: null, get: getter.get, configurable: true } as PropertyDescriptor);
  }

  // fetch, when the sandbox has a fetch setting: the request crosses to the host as a record; the answer (its head as
  // JSON, its body) becomes a Response.
  kit.installFetch = () => {
    let marshal: { encode(value: unknown, mode: number, plainLevels?: number): [string, unknown[]] } | undefined;
    let requests = 0;
    const EMPTY: unknown[] = [];
    const EMPTY_LIST: [string, string][] = [];
    /** What `JSON.stringify` escapes in a string without lone surrogates (a request's strings have none). */
    // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it finds.
    const ESCAPED = /["\\\0-\x1f]/;
    /**
     * The tape of the record of a request without a body, when `JSON.stringify` would write each of its strings as
     * it is (a method and a header name are tokens and a redirect mode one of three words; the URL and the header
     * values are tested): the tape's JSON node (`["j",json]`, see values/tape.ts) written by joining its strings,
     * where `JSON.stringify` of the record cost more than the rest of the guest's `fetch` (~2,400 units). `undefined`
     * for any other, which the encoder writes.
     */
    const writtenTape = (url: string, method: string, list: [string, string][], redirect: string) => {
      if (ESCAPED.test(url)) return undefined;
      let headers = "";
      for (let i = 0; i < list.length; i++) {
        const pair = list[i] as [string, string];
        if (ESCAPED.test(pair[1])) return undefined;
        headers += `${i === 0 ? "" : ","}["${pair[0]}","${pair[1]}"]`;
      }
      return `["j",{"url":"${url}","method":"${method}","headers":[${headers}],"body":null,"redirect":"${redirect}"}]`;
    };
    /** Settles with `pending`, or rejects with the signal's reason once it aborts (and the host aborts the request). */
    const abortable = (pending: Promise<unknown>, signal: AbortSignal, id: number) =>
      new PromiseCtor<unknown>((resolve, reject) => {
        let settled = false;
        addAbortAlgorithm(signal, () => {
          if (settled) return;
          settled = true;
          hostCall(OP_FETCH_ABORT, id, "null", EMPTY);
          reject(signal.reason);
        });
        apply(promiseThen, pending, [
          (value: unknown) => {
            settled = true;
            resolve(value);
          },
          (error: unknown) => {
            settled = true;
            reject(error);
          },
        ]);
      });
    const fetch = {
      async fetch(input: unknown, init: unknown = undefined): Promise<Response> {
        // A URL string and no init is a GET without headers, body or signal: its record is made without a Request.
        const request = typeof input === "string" && init === undefined ? undefined : new Request(input, init);
        const { url, method, redirect, headers, signal } =
          request === undefined ? plainGet(input as string) : requestParts(request);
        if (signal?.aborted) throw signal.reason;
        const body = request === undefined ? undefined : bodyOf(request);
        const bytes = body === undefined ? null : body.bytes;
        // Fetching a request spends its body.
        if (bytes !== null) (body as Body).used = true;
        const list = headers === null ? EMPTY_LIST : listOf(headers);
        const id = ++requests;
        let encoded: [string, unknown[]] | undefined;
        if (bytes === null) {
          const tape = writtenTape(url, method, list, redirect);
          if (tape !== undefined) encoded = [tape, EMPTY];
        }
        if (encoded === undefined) {
          const record: RequestRecord = {
            url,
            method,
            headers: list,
            body: bytes === null ? null : (bytes.slice().buffer as ArrayBuffer),
            redirect,
          };
          marshal ??= hostCall(OP_MARSHAL, 0, "", EMPTY) as NonNullable<typeof marshal>;
          // Without a body the record is plain data three levels deep (it, its headers, each pair), all made here:
          // the encoder writes it with the engine's JSON.stringify at once rather than walking it.
          encoded = bytes === null ? marshal.encode(record, MODE_CLONE, 3) : marshal.encode(record, MODE_CLONE);
        }
        const pending = hostCall(OP_FETCH, id, encoded[0], encoded[1]) as Promise<unknown>;
        return responseOf((await (signal === null ? pending : abortable(pending, signal, id))) as ResponseAnswer);
      },
    }.fetch;
    install("fetch", fetch);
  };
}
