/**
 * Node's client for the guest's requests (src/fetch/exchange.ts): undici's `Agent`, the dispatcher below Node's own
 * `fetch`, called directly. The session checks, bounds and reads every response itself and the guest makes its own
 * `Response`, so `fetch`'s `Request`, `Response`, `Headers`, web streams and `AbortSignal` made on the host for each
 * request were work for nothing: a small JSON from another process cost the host 0.35 ms of CPU through `fetch` and
 * 0.08-0.10 ms through the dispatcher (docs/performance.md, "The floor: guest fetch"). What `fetch` does that a
 * response's reader sees is done here as Node's `fetch` does it: its default request headers, the body decoded as its
 * `content-encoding` says, the headers sorted and joined as `Headers` iterates them. The agent is loaded with the
 * first request (only its own modules: ~20 ms, as Node loads its `fetch`) and kept for the thread's requests, its
 * connections kept alive between them as `fetch`'s are.
 * @module
 */
import { PassThrough, pipeline, type Transform } from "node:stream";
import type { Dispatcher } from "undici";
import type { Exchange, ExchangeRequest, Exchanger } from "../src/fetch/exchange.js";

/**
 * The request headers Node's `fetch` adds after the request's own, in its order: each when the request has none of
 * that name, but `sec-fetch-mode`, whose value it sets.
 */
const DEFAULT_HEADERS: readonly [string, string][] = [
  ["accept", "*/*"],
  ["accept-language", "*"],
  ["sec-fetch-mode", "cors"],
  ["user-agent", "node"],
  ["accept-encoding", "gzip, deflate"],
];
/** Codings of one response `fetch` decodes at most (more is refused, as undici's `fetch` refuses it). */
const MAX_CODINGS = 5;
/**
 * Bytes, and pieces, of a body come in and not yet read past which the dispatcher stops reading the socket: the host
 * parses at most so much before the run pays for it (`FETCH_PIECE_FUEL`).
 */
const HELD_BYTES = 64 * 1024;
const HELD_PIECES = 4_096;

/** The thread's agent, and zlib for the bodies it decodes. */
interface Client {
  dispatcher: Dispatcher;
  zlib: typeof import("node:zlib");
}

let client: Promise<Client> | undefined;

/** The thread's client, loaded with its first request (not with the entry: a process may never make one). */
function clientOf(): Promise<Client> {
  // undici's `Agent` module alone: its index loads its fetch, cache and mocks too (~60 ms, against ~20).
  client ??= Promise.all([import("undici/lib/dispatcher/agent.js"), import("node:zlib")]).then(
    ([{ default: Agent }, zlib]) => ({ dispatcher: new Agent(), zlib }),
  );
  return client;
}

/** Node's client: see the module comment. */
export const httpExchange: Exchanger = async (request) => {
  const loaded = await clientOf();
  return new Promise<Exchange>((resolve, reject) => new Incoming(loaded, request, resolve, reject));
};

/** One request's response as it comes in: its head, then its body's chunks, held until the session reads them. */
class Incoming implements Exchange, Dispatcher.DispatchHandler {
  status = 0;
  statusText = "";
  headers: [string, string][] = [];
  readonly opaqueRedirect = false;
  pieces = 0;
  readonly #request: ExchangeRequest;
  readonly #zlib: Client["zlib"];
  #resolve: ((exchange: Exchange) => void) | undefined;
  #reject: ((reason: Error) => void) | undefined;
  #controller: Dispatcher.DispatchController | undefined;
  /** The body's codings, last applied first, when `fetch` would decode them. */
  #codings: string[] = [];
  /** Raw chunks not yet read, and their bytes (the dispatcher paused past {@link HELD_BYTES} or as many pieces). */
  readonly #chunks: Buffer[] = [];
  #held = 0;
  /** {@link pieces} when an encoded body was last read. */
  #piecesRead = 0;
  /** Where an encoded body's raw chunks are written, and what its decoders give out. */
  #encoded: PassThrough | undefined;
  #decoded: AsyncIterator<Uint8Array> | undefined;
  #ended = false;
  #error: Error | undefined;
  /** Wakes the session's read waiting for a chunk. */
  #wake: (() => void) | undefined;

  constructor(
    { dispatcher, zlib }: Client,
    request: ExchangeRequest,
    resolve: (exchange: Exchange) => void,
    reject: (reason: Error) => void,
  ) {
    this.#request = request;
    this.#zlib = zlib;
    this.#resolve = resolve;
    this.#reject = reject;
    const { url, method, headers, body, abort } = request;
    abort.listen((reason) => this.#fail(reason));
    if (abort.reason !== undefined) return;
    try {
      dispatcher.dispatch(
        {
          origin: url.origin,
          path: url.pathname + url.search,
          method,
          headers: withDefaults(headers),
          body: body === null ? null : Buffer.from(body),
        },
        this,
      );
    } catch (error) {
      this.#fail(error as Error);
    }
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.#controller = controller;
    const reason = this.#request.abort.reason;
    if (reason !== undefined) controller.abort(reason);
  }

  onResponseStart(
    _controller: Dispatcher.DispatchController,
    status: number,
    headers: Record<string, string | string[] | undefined>,
    statusText = "",
  ): void {
    // An informational response (`100 Continue`, `103 Early Hints`) is not the answer, as in `fetch`.
    if (status < 200) return;
    this.status = status;
    this.statusText = statusText;
    this.headers = fetchHeaders(headers);
    try {
      this.#codings = codingsOf(this, this.#request.method);
    } catch (error) {
      this.#fail(error as Error);
      return;
    }
    const resolve = this.#resolve;
    this.#resolve = undefined;
    this.#reject = undefined;
    resolve?.(this);
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    // undici gives an empty chunk where a paused body resumes.
    if (chunk.byteLength === 0) return;
    this.pieces++;
    if (this.#codings.length > 0 && this.#encoded === undefined)
      this.#decode(decodersOf(this.#zlib, this.#codings, chunk));
    if (this.#encoded !== undefined) {
      const unread = this.pieces - this.#piecesRead;
      if (!this.#encoded.write(chunk) || unread >= HELD_PIECES) controller.pause();
    } else {
      this.#chunks.push(chunk);
      this.#held += chunk.byteLength;
      if (this.#held >= HELD_BYTES || this.#chunks.length >= HELD_PIECES) controller.pause();
    }
    this.#woken();
  }

  onResponseEnd(): void {
    this.#ended = true;
    this.#encoded?.end();
    this.#woken();
  }

  onResponseError(_controller: Dispatcher.DispatchController, error: Error): void {
    this.#fail(error);
  }

  /**
   * What came since the last read, at once: the chunks of one wake of the socket (a server's small chunks of the
   * chunked coding come many to a segment) are one read, which the session pays a read's fee for.
   */
  async read(): Promise<Uint8Array | undefined> {
    for (;;) {
      if (this.#error !== undefined) throw this.#error;
      if (this.#decoded !== undefined) {
        const { done, value } = await this.#decoded.next();
        this.#piecesRead = this.pieces;
        this.#controller?.resume();
        return done ? undefined : value;
      }
      if (this.#chunks.length > 0) return this.#take();
      if (this.#ended) return undefined;
      await new Promise<void>((resolve) => {
        this.#wake = resolve;
      });
    }
  }

  cancel(): void {
    this.#chunks.length = 0;
    if (!this.#ended || this.#encoded !== undefined) this.#fail(new Error("fetch: the response was dropped"));
  }

  /** The chunks held, as one, the dispatcher resumed if they had paused it. */
  #take(): Uint8Array {
    const taken = this.#chunks.length === 1 ? (this.#chunks[0] as Buffer) : Buffer.concat(this.#chunks);
    this.#chunks.length = 0;
    this.#held = 0;
    this.#controller?.resume();
    return taken;
  }

  /** Wakes the session's read waiting for a chunk, the end or a failure. */
  #woken(): void {
    const wake = this.#wake;
    this.#wake = undefined;
    wake?.();
  }

  /** The raw body goes through `decoders`, the session reading what comes out of the last. */
  #decode(decoders: Transform[]): void {
    const first = new PassThrough();
    first.on("drain", () => this.#controller?.resume());
    const last = decoders[decoders.length - 1] as Transform;
    pipeline([first, ...decoders], (error) => {
      if (error) this.#fail(error);
    });
    this.#encoded = first;
    this.#decoded = last[Symbol.asyncIterator]();
  }

  /** Ends the exchange with `reason`: a request not yet answered rejects, a body being read fails. */
  #fail(reason: Error): void {
    if (this.#error !== undefined) return;
    this.#error = reason;
    this.#chunks.length = 0;
    const reject = this.#reject;
    this.#resolve = undefined;
    this.#reject = undefined;
    reject?.(reason);
    this.#woken();
    this.#encoded?.destroy(reason);
    if (this.#controller !== undefined && !this.#controller.aborted && !this.#ended) this.#controller.abort(reason);
  }
}

/** The request's headers, with those Node's `fetch` adds, as the flat list the dispatcher takes. */
function withDefaults(headers: readonly [string, string][]): string[] {
  const flat: string[] = [];
  for (const [name, value] of headers) flat.push(name, value);
  for (const [name, value] of DEFAULT_HEADERS) {
    const at = flat.findIndex((given, i) => i % 2 === 0 && given === name);
    if (at === -1) flat.push(name, value);
    else if (name === "sec-fetch-mode") flat[at + 1] = value;
  }
  return flat;
}

/**
 * Response headers (as the dispatcher gives them: names lowercase, the values of a name repeated in a list) as
 * `fetch`'s `Headers` iterates them: names sorted, the values of one name joined with ", " in the order they came,
 * but each `set-cookie` apart.
 */
function fetchHeaders(headers: Record<string, string | string[] | undefined>): [string, string][] {
  const pairs: [string, string][] = [];
  for (const name of Object.keys(headers).sort()) {
    const value = headers[name] as string | string[];
    if (typeof value === "string") pairs.push([name, value]);
    else if (name === "set-cookie") for (const cookie of value) pairs.push([name, cookie]);
    else pairs.push([name, value.join(", ")]);
  }
  return pairs;
}

/** The codings `fetch` decodes. */
const CODINGS = new Set(["gzip", "x-gzip", "deflate", "br"]);

/**
 * The codings of a response's body that Node's `fetch` decodes, last applied first: none for a request or a status
 * without a body, or when one is a coding it does not know (the body is then given as it came).
 */
function codingsOf(response: Incoming, method: string): string[] {
  if (method === "HEAD" || [101, 204, 205, 304].includes(response.status)) return [];
  const header = response.headers.find(([name]) => name === "content-encoding")?.[1];
  if (!header) return [];
  const codings = header.toLowerCase().split(",");
  if (codings.length > MAX_CODINGS) {
    throw new TypeError(`too many content-encodings in response: ${codings.length}, maximum allowed is ${MAX_CODINGS}`);
  }
  const decoded = codings.map((coding) => coding.trim()).reverse();
  return decoded.every((coding) => CODINGS.has(coding)) ? decoded : [];
}

/**
 * The decoders of `codings`; `deflate` applied last with or without its zlib wrapper, as the body's `first` byte
 * says (as Node's `fetch` decodes it), and after another coding with it (RFC 9110's `deflate`).
 */
function decodersOf(zlib: Client["zlib"], codings: readonly string[], first: Buffer): Transform[] {
  const { constants } = zlib;
  // As undici's `fetch` decodes: what has come is given out, even of a stream cut short.
  const flushed = { flush: constants.Z_SYNC_FLUSH, finishFlush: constants.Z_SYNC_FLUSH };
  const brotliFlushed = { flush: constants.BROTLI_OPERATION_FLUSH, finishFlush: constants.BROTLI_OPERATION_FLUSH };
  return codings.map((coding, i) => {
    if (coding === "br") return zlib.createBrotliDecompress(brotliFlushed);
    if (coding !== "deflate") return zlib.createGunzip(flushed);
    const wrapped = i > 0 || ((first[0] as number) & 0x0f) === 0x08;
    return wrapped ? zlib.createInflate(flushed) : zlib.createInflateRaw(flushed);
  });
}
