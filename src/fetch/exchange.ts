/**
 * How the host makes one request of the guest's (session.ts checks, bounds and reads it): by default with the
 * platform's HTTP client as a platform's entry installs it ({@link usePlatformExchange}: Node's calls undici's
 * dispatcher, below `fetch`'s own `Request`, `Response`, `Headers` and web streams, which the host does not need: the
 * guest makes its own), else with a `fetch`, the platform's or the sandbox's ({@link fetchExchange}).
 * @module
 */

/** A request's abort: one listener, the exchange's (an `AbortController` costs Node more than a request's read). */
export class Abort {
  #reason: Error | undefined;
  #listener: ((reason: Error) => void) | undefined;

  /** The abort's reason, once aborted. */
  get reason(): Error | undefined {
    return this.#reason;
  }

  abort(reason: Error): void {
    if (this.#reason !== undefined) return;
    this.#reason = reason;
    this.#listener?.(reason);
    this.#listener = undefined;
  }

  /** Calls `listener` with the reason when aborted, or at once if it is already. */
  listen(listener: (reason: Error) => void): void {
    if (this.#reason !== undefined) listener(this.#reason);
    else this.#listener = listener;
  }
}

/** A request as the session sends it: checked, its URL on the allow list, its headers without the platform's own. */
export interface ExchangeRequest {
  url: URL;
  method: string;
  headers: [string, string][];
  body: ArrayBuffer | null;
  abort: Abort;
}

/** A response as the session reads it. */
export interface Exchange {
  status: number;
  statusText: string;
  /**
   * The headers as `fetch`'s `Headers` iterates them: names lowercase and sorted, the values of one name joined with
   * ", ", but `set-cookie` once per cookie.
   */
  headers: [string, string][];
  /** A browser's answer to a redirect of `redirect: "manual"`, which hides where it leads. */
  opaqueRedirect: boolean;
  /** The body's next bytes, decoded as its `content-encoding` says; `undefined` at its end. */
  read(): Promise<Uint8Array | undefined>;
  /**
   * The pieces of the body the client has handed on so far (a read may take many: the chunks of the chunked coding
   * one wake of the socket brought), each parsed by the host; a `fetch` hands on one a read.
   */
  readonly pieces: number;
  /** Drops the rest of the body, and its connection with it when it is still coming in. */
  cancel(): void;
}

/** Makes a request: its response once the head has come, or the abort's reason as soon as it is aborted. */
export type Exchanger = (request: ExchangeRequest) => Promise<Exchange>;

/** The platform's `fetch`, as the host calls it: always with a URL string and `redirect: "manual"`. */
export type FetchTransport = (url: string, init: RequestInit) => Promise<Response>;

/** The platform entry's own client, when it installed one. */
let platformExchanger: Exchanger | undefined;

/**
 * Makes `exchanger` the client of every sandbox of this thread that names no `fetch` of its own, in place of the
 * platform's global `fetch`: a platform's entry calls it once, as it loads.
 */
export function usePlatformExchange(exchanger: Exchanger): void {
  platformExchanger = exchanger;
}

/** The client of a sandbox whose setting names no `fetch`: the platform entry's, else its global `fetch`'s. */
export function platformExchange(): Exchanger | undefined {
  if (platformExchanger !== undefined) return platformExchanger;
  return typeof globalThis.fetch === "function" ? fetchExchange(globalThis.fetch) : undefined;
}

/**
 * Requests made with `fetch`, called without credentials or referrer (the host's cookies and the page a browser host
 * runs in never reach the network) and without following redirects (the session follows them within the allow list).
 */
export function fetchExchange(fetch: FetchTransport): Exchanger {
  return async ({ url, method, headers, body, abort }) => {
    const controller = new AbortController();
    abort.listen((reason) => controller.abort(reason));
    const init = {
      method,
      headers,
      body,
      redirect: "manual",
      signal: controller.signal,
      credentials: "omit",
      referrerPolicy: "no-referrer",
    } as const;
    const response = await fetch(url.href, init);
    const reader = response.body?.getReader();
    let reads = 0;
    return {
      status: response.status,
      statusText: response.statusText,
      headers: [...response.headers],
      // Browsers answer a redirect of redirect: "manual" with an opaque response (Workers' types do not list it).
      opaqueRedirect: (response.type as string) === "opaqueredirect",
      async read() {
        const next = await reader?.read();
        if (next === undefined || next.done) return undefined;
        if (!(next.value instanceof Uint8Array)) throw new TypeError("fetch: the response body is not bytes");
        reads++;
        return next.value;
      },
      get pieces() {
        return reads;
      },
      cancel: () => void reader?.cancel().catch(() => {}),
    };
  };
}
