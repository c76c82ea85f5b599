/**
 * One run's `fetch`, on the host: the guest's requests checked again (nothing the guest sends is trusted), the allow
 * list applied to every URL and every redirect before the platform's client sees it, redirects followed by hand and
 * only within the list, and the run's limits: requests counted, heads and bodies bounded before they are sent, a
 * response counted as it streams in (and, while the host holds it, against the run's memory limit), each request
 * timed by the host's own timer (it holds with a frozen clock), its host work charged to the run's fuel before it is
 * done (a {@link FetchMeter}), and every request in flight aborted when the run ends or stops. Requests are made
 * without credentials or referrer (see exchange.ts): the host's cookies and the page a browser host runs in never
 * reach the network.
 * @module
 */
import { Abort, type Exchange } from "./exchange.js";
import { type FetchPolicy, MAX_REDIRECTS } from "./policy.js";

/**
 * A response as the guest receives it: its head as one JSON string, `[status, statusText, url, redirected, headers]`
 * (the final URL without its fragment; header names lowercase, in the platform's order, `set-cookie` once per cookie),
 * and its body. `JSON.stringify` writes no NUL and no lone surrogate, so the head crosses as a string as it is, and
 * the guest's `JSON.parse` reads it: no value walked by the generic decoder (see `GuestBridge`).
 */
export interface GuestResponse {
  head: string;
  body: ArrayBuffer;
}

/** A request on its way: the URL it is at and what the next hop sends. */
interface Hop {
  url: URL;
  method: string;
  headers: [string, string][];
  body: ArrayBuffer | null;
}

/** A request of the guest, checked (the guest's record: see guest/web-fetch.ts). */
interface GuestRequest extends Hop {
  redirect: "follow" | "error" | "manual";
}

const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const BAD_VALUE = /[\0\r\n]|[^\0-\xff]/;
const FORBIDDEN_METHODS = new Set(["CONNECT", "TRACE", "TRACK"]);
const NORMALIZED_METHODS = new Set(["DELETE", "GET", "HEAD", "OPTIONS", "POST", "PUT"]);
/** Headers the platform's fetch sets itself (framing, the connection, the target host): dropped, as browsers do. */
const HOST_HEADERS =
  /^(host|content-length|transfer-encoding|connection|keep-alive|upgrade|expect|te|trailer|proxy-.*)$/;
/** Headers that carry credentials: never sent on to another origin than the one they were meant for. */
const CREDENTIAL_HEADERS = new Set(["authorization", "cookie", "proxy-authorization"]);
/** Headers that describe a body, dropped with it when a redirect turns the request into a GET. */
const BODY_HEADERS = new Set(["content-encoding", "content-language", "content-location", "content-type"]);
const REDIRECTS = new Set([301, 302, 303, 307, 308]);
const NULL_BODY_STATUSES = new Set([101, 103, 204, 205, 304]);
/** Characters of a URL or path quoted in an error. */
const QUOTED_CHARS = 200;

const malformed = () => new TypeError("fetch: the request is malformed");
const named = (name: string, message: string): Error => Object.assign(new Error(message), { name });
const quoted = (text: string) => (text.length > QUOTED_CHARS ? `${text.slice(0, QUOTED_CHARS)}...` : text);

/** What the run pays for the host's work on its requests; `false`: it cannot, and the work is not done. */
export interface FetchMeter {
  /** A request (or a redirect followed) about to be sent, with `bytes` of URL, headers and body. */
  request(bytes: number): boolean;
  /** A read of `bytes` of a response body, in `pieces` as the client handed them on (see `Exchange.pieces`). */
  response(bytes: number, pieces: number): boolean;
}

const unpaid = () => new RangeError("fetch: the run's fuel cannot pay for the request");

export class FetchSession {
  readonly #policy: FetchPolicy;
  readonly #memoryLimitBytes: number;
  readonly #meter: FetchMeter;
  readonly #inflight = new Map<number, Abort>();
  #requests = 0;
  /** Bytes of response bodies the host is reading for the run. */
  #buffered = 0;
  #ended = false;

  constructor(policy: FetchPolicy, memoryLimitBytes: number, meter: FetchMeter) {
    this.#policy = policy;
    this.#memoryLimitBytes = memoryLimitBytes;
    this.#meter = meter;
  }

  /** The guest's request number `id` (see OP_FETCH in values/tape.ts). */
  readonly request = async (id: unknown, record: unknown): Promise<GuestResponse> => {
    if (this.#ended) throw new TypeError("fetch: the run has ended");
    if (typeof id !== "number") throw malformed();
    const request = this.#checked(record);
    const abort = new Abort();
    this.#inflight.set(id, abort);
    const { timeoutMs } = this.#policy;
    const timer = setTimeout(() => {
      const message = `fetch: ${request.url.origin} did not answer within ${timeoutMs} ms (fetch.timeoutMs)`;
      abort.abort(named("TimeoutError", message));
    }, timeoutMs);
    try {
      return await this.#follow(request, abort);
    } catch (error) {
      if (abort.reason !== undefined) throw abort.reason;
      // Whatever is left of the exchange (a body dropped past its cap) goes too.
      abort.abort(named("AbortError", "fetch: the response was dropped"));
      throw error;
    } finally {
      clearTimeout(timer);
      if (this.#inflight.get(id) === abort) this.#inflight.delete(id);
    }
  };

  /** The guest's signal aborted its request number `id`. */
  readonly abort = (id: unknown): void => {
    if (typeof id !== "number") return;
    this.#inflight.get(id)?.abort(named("AbortError", "fetch: the request was aborted"));
    this.#inflight.delete(id);
  };

  /** The run ended or stopped: every request in flight is aborted, and no other is made. */
  end(): void {
    this.#ended = true;
    for (const abort of this.#inflight.values()) abort.abort(named("AbortError", "fetch: the run ended"));
    this.#inflight.clear();
  }

  /** The guest's record as a request, bounded and checked before anything is sent. */
  #checked(record: unknown): GuestRequest {
    if (typeof record !== "object" || record === null) throw malformed();
    const { url, method, headers, body, redirect } = record as Record<string, unknown>;
    if (typeof url !== "string" || typeof method !== "string" || !Array.isArray(headers)) throw malformed();
    if (!(body === null || body instanceof ArrayBuffer)) throw malformed();
    if (redirect !== "follow" && redirect !== "error" && redirect !== "manual") throw malformed();
    const { maxHeaderBytes, maxRequestBytes } = this.#policy;
    const overHead = () =>
      new RangeError(`fetch: the request's URL and headers exceed ${maxHeaderBytes} bytes (fetch.maxHeaderBytes)`);
    let headBytes = url.length + method.length;
    if (headBytes > maxHeaderBytes) throw overHead();
    const kept: [string, string][] = [];
    for (const pair of headers as unknown[]) {
      if (!Array.isArray(pair) || typeof pair[0] !== "string" || typeof pair[1] !== "string") throw malformed();
      const [name, value] = pair as [string, string];
      headBytes += name.length + value.length + 4;
      if (headBytes > maxHeaderBytes) throw overHead();
      if (!TOKEN.test(name)) throw new TypeError(`fetch: ${JSON.stringify(quoted(name))} is not a valid header name`);
      if (BAD_VALUE.test(value))
        throw new TypeError(`fetch: the value of header '${name}' is not a valid header value`);
      const lower = name.toLowerCase();
      if (!HOST_HEADERS.test(lower)) kept.push([lower, value]);
    }
    if (!TOKEN.test(method)) throw new TypeError(`fetch: ${JSON.stringify(method)} is not a valid HTTP method`);
    const upper = method.toUpperCase();
    if (FORBIDDEN_METHODS.has(upper)) throw new TypeError(`fetch: the method ${upper} is not allowed`);
    const normalized = NORMALIZED_METHODS.has(upper) ? upper : method;
    if (body !== null && (normalized === "GET" || normalized === "HEAD"))
      throw new TypeError(`fetch: a ${normalized} request cannot have a body`);
    if (body !== null && body.byteLength > maxRequestBytes)
      throw new RangeError(`fetch: the request body exceeds ${maxRequestBytes} bytes (fetch.maxRequestBytes)`);
    return { url: absolute(url), method: normalized, headers: kept, body, redirect };
  }

  /** Makes the request, following its redirects within the allow list. */
  async #follow(request: GuestRequest, abort: Abort): Promise<GuestResponse> {
    let hop: Hop = request;
    for (let redirects = 0; ; redirects++) {
      this.#admit(hop.url, redirects > 0);
      if (!this.#meter.request(headBytes(hop) + (hop.body?.byteLength ?? 0))) throw unpaid();
      let response: Exchange;
      try {
        response = await this.#policy.exchange({ ...hop, abort });
      } catch (error) {
        if (abort.reason !== undefined) throw abort.reason;
        throw new TypeError(`fetch: ${hop.url.origin} failed: ${reasonOf(error)}`);
      }
      if (response.opaqueRedirect) {
        throw new TypeError(
          `fetch: ${hop.url.origin} redirects, and this platform's fetch hides where to, so it cannot be checked against the allow list`,
        );
      }
      const location = REDIRECTS.has(response.status) ? headerOf(response, "location") : null;
      if (location === null || request.redirect === "manual") return this.#read(response, hop.url, redirects > 0);
      response.cancel();
      if (request.redirect === "error")
        throw new TypeError(`fetch: ${hop.url.origin} redirects, and the request's redirect is "error"`);
      if (redirects === MAX_REDIRECTS) throw new TypeError(`fetch: more than ${MAX_REDIRECTS} redirects`);
      hop = redirected(hop, response.status, location);
    }
  }

  /** Refuses a URL off the list (or a request past the count) before any request is made for it. */
  #admit(url: URL, redirect: boolean): void {
    const what = redirect ? "a redirect to " : "";
    if (url.protocol !== "http:" && url.protocol !== "https:")
      throw new TypeError(`fetch: ${what}${url.protocol} URLs cannot be fetched, only http: and https:`);
    const { allow, maxRequests } = this.#policy;
    if (!allow.allows(url)) {
      throw new TypeError(
        allow.allowsOrigin(url)
          ? `fetch: ${what}${url.origin}${quoted(url.pathname)} is outside the paths allowed for ${url.origin}`
          : `fetch: ${what}${url.origin} is not on the sandbox's allow list`,
      );
    }
    if (url.username !== "" || url.password !== "")
      throw new TypeError(`fetch: ${what}a URL with credentials (${url.origin}) is refused: send them in a header`);
    if (this.#requests >= maxRequests)
      throw new RangeError(`fetch: the run made its ${maxRequests} requests (fetch.maxRequests, redirects included)`);
    this.#requests++;
  }

  /** The response for the guest: its head bounded, its body read with a running count. */
  async #read(response: Exchange, url: URL, redirected: boolean): Promise<GuestResponse> {
    const { maxHeaderBytes, maxResponseBytes } = this.#policy;
    let headBytes = response.statusText.length;
    for (const [name, value] of response.headers) headBytes += name.length + value.length + 4;
    if (headBytes > maxHeaderBytes) {
      response.cancel();
      throw new RangeError(
        `fetch: the response headers of ${url.origin} exceed ${maxHeaderBytes} bytes (fetch.maxHeaderBytes)`,
      );
    }
    const tooLarge = () =>
      new RangeError(
        `fetch: the response body of ${url.origin} exceeds ${maxResponseBytes} bytes (fetch.maxResponseBytes)`,
      );
    if (Number(headerOf(response, "content-length")) > maxResponseBytes) {
      response.cancel();
      throw tooLarge();
    }
    let body: ArrayBuffer;
    if (NULL_BODY_STATUSES.has(response.status)) {
      response.cancel();
      body = new ArrayBuffer(0);
    } else body = await this.#bodyOf(response, url, tooLarge);
    url.hash = "";
    return {
      head: JSON.stringify([response.status, response.statusText, url.href, redirected, response.headers]),
      body,
    };
  }

  /**
   * The body's bytes, counted chunk by chunk against its cap and the run's memory limit. A body that fails on its way
   * (the connection lost, a coding that does not decode) is a `TypeError` naming the origin.
   */
  async #bodyOf(response: Exchange, url: URL, tooLarge: () => RangeError): Promise<ArrayBuffer> {
    const read = () =>
      response.read().catch((error: unknown) => {
        throw new TypeError(`fetch: the response body of ${url.origin} failed: ${reasonOf(error)}`);
      });
    const chunks: Uint8Array[] = [];
    let total = 0;
    let pieces = 0;
    try {
      for (let chunk = await read(); chunk !== undefined; chunk = await read()) {
        const handed = response.pieces - pieces;
        pieces = response.pieces;
        if (!this.#meter.response(chunk.byteLength, handed)) throw unpaid();
        total += chunk.byteLength;
        this.#buffered += chunk.byteLength;
        if (total > this.#policy.maxResponseBytes) throw tooLarge();
        if (this.#buffered > this.#memoryLimitBytes) {
          throw new RangeError(
            `fetch: the responses being read exceed the run's memory limit (${this.#memoryLimitBytes} bytes)`,
          );
        }
        chunks.push(chunk);
      }
    } catch (error) {
      response.cancel();
      throw error;
    } finally {
      this.#buffered -= total;
    }
    const bytes = new Uint8Array(total);
    let at = 0;
    for (const chunk of chunks) {
      bytes.set(chunk, at);
      at += chunk.byteLength;
    }
    return bytes.buffer;
  }
}

/**
 * The next hop of a redirect, as the Fetch standard makes it: a 303, or a 301 or 302 of a POST, becomes a GET without
 * its body; credentials stay with their origin.
 */
function redirected(hop: Hop, status: number, location: string): Hop {
  const url = URL.canParse(location, hop.url.href) ? new URL(location, hop.url.href) : undefined;
  if (url === undefined)
    throw new TypeError(`fetch: ${hop.url.origin} redirects to ${JSON.stringify(quoted(location))}, not a URL`);
  let { method, headers, body } = hop;
  if (
    (status === 303 && method !== "GET" && method !== "HEAD") ||
    ((status === 301 || status === 302) && method === "POST")
  ) {
    method = "GET";
    body = null;
    headers = headers.filter(([name]) => !BODY_HEADERS.has(name));
  }
  if (url.origin !== hop.url.origin) headers = headers.filter(([name]) => !CREDENTIAL_HEADERS.has(name));
  return { url, method, headers, body };
}

/** `url` parsed, once (`URL.canParse` parses it too). */
function absolute(url: string): URL {
  try {
    return new URL(url);
  } catch {
    throw new TypeError(`fetch: ${JSON.stringify(quoted(url))} is not an absolute URL`);
  }
}

/** The value of the response's header `name` (lowercase), as `Headers.get` gives it; `null` without one. */
function headerOf(response: Exchange, name: string): string | null {
  for (const [key, value] of response.headers) if (key === name) return value;
  return null;
}

/** The bytes of a hop's URL and headers. */
function headBytes(hop: Hop): number {
  let bytes = hop.url.href.length + hop.method.length;
  for (const [name, value] of hop.headers) bytes += name.length + value.length + 4;
  return bytes;
}

/** Why the platform's fetch failed, in its own words (Node's puts them in `cause`). */
function reasonOf(error: unknown): string {
  const cause = (error as { cause?: unknown } | null)?.cause;
  const reason = cause instanceof Error ? cause : error;
  return quoted(reason instanceof Error ? reason.message : String(reason));
}
