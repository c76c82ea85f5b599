/**
 * A sandbox's `fetch` setting (`SandboxOptions.fetch`), checked once: the allow list, the limits with their
 * defaults, and the client the host makes the requests with.
 * @module
 */
import { AllowList } from "./allow-list.js";
import { type Exchanger, type FetchTransport, fetchExchange, platformExchange } from "./exchange.js";

export type { FetchTransport };

/** The guest's `fetch` (`SandboxOptions.fetch`): what it may reach, and how much of it one run may use. */
export interface FetchOptions {
  /**
   * Origins the guest may fetch (`https://api.example.com`), each optionally narrowed to a path prefix
   * (`https://x.org/v1/` covers `/v1/` and plain names below it, so no `..`, `//`, `\` or `;` however encoded;
   * `https://x.org/v1` also `/v1` itself). Every other URL, and every redirect to one, is refused with a `TypeError`
   * naming its origin, and never reaches the network.
   */
  allow: readonly string[];
  /**
   * The fetch the host makes requests with. Default the platform's client: in Node undici's dispatcher, the client
   * below Node's own `fetch`; elsewhere the global `fetch`.
   */
  fetch?: FetchTransport;
  /** Requests one run may make, each redirect followed counted as one. Default 50. */
  maxRequests?: number;
  /** Largest request body in bytes. Default 1 MiB. */
  maxRequestBytes?: number;
  /** Largest response body in bytes, counted as it streams in. Default 8 MiB. */
  maxResponseBytes?: number;
  /** Largest request URL plus headers, and response status text plus headers, in bytes. Default 64 KiB. */
  maxHeaderBytes?: number;
  /** Milliseconds from a request to the last byte of its response, redirects included. Default 10,000. */
  timeoutMs?: number;
}

/** The limits of `SandboxOptions.fetch` a host leaves out. */
const DEFAULT_FETCH_LIMITS = Object.freeze({
  /** Requests one run may make, every redirect followed counted as one. */
  maxRequests: 50,
  /** A request body's bytes. */
  maxRequestBytes: 1024 * 1024,
  /** A response body's bytes, counted as they stream in. */
  maxResponseBytes: 8 * 1024 * 1024,
  /** A request's URL and headers together, and a response's status text and headers together. */
  maxHeaderBytes: 64 * 1024,
  /** Milliseconds from the request to the last byte of its response, redirects included. */
  timeoutMs: 10_000,
});

/** Redirects one request may follow (the Fetch standard's figure). */
export const MAX_REDIRECTS = 20;

type FetchLimits = { -readonly [K in keyof typeof DEFAULT_FETCH_LIMITS]: number };

/** A checked `fetch` setting. */
export interface FetchPolicy extends FetchLimits {
  allow: AllowList;
  exchange: Exchanger;
}

const KEYS = new Set(["allow", "fetch", ...Object.keys(DEFAULT_FETCH_LIMITS)]);

/** `policy` as a setting again, for a worker thread whose own platform client makes the requests. */
export function fetchSettingOf(policy: FetchPolicy): FetchOptions {
  const { allow, exchange: _platform, ...limits } = policy;
  return { ...limits, allow: allow.entries };
}

/** `settings` checked, with the defaults; a bad one throws a `TypeError` naming the key as `where.key`. */
export function fetchPolicyOf(settings: FetchOptions, where = "createSandbox: fetch"): FetchPolicy {
  if (typeof settings !== "object" || settings === null || Array.isArray(settings))
    throw new TypeError(`${where} must be an object { allow: [origins], ... }`);
  for (const key of Object.keys(settings)) {
    if (!KEYS.has(key)) throw new TypeError(`${where} has no setting '${key}' (it has ${[...KEYS].join(", ")})`);
  }
  const { allow, fetch: transport, ...limits } = settings;
  if (!Array.isArray(allow) || allow.length === 0)
    throw new TypeError(`${where}.allow must list at least one origin, such as 'https://api.example.com'`);
  const exchange = typeof transport === "function" ? fetchExchange(transport) : platformExchange();
  if (exchange === undefined || (typeof transport !== "function" && transport !== undefined))
    throw new TypeError(`${where}.fetch must be a function (the platform has no global fetch)`);
  const checked: FetchLimits = { ...DEFAULT_FETCH_LIMITS, ...limits };
  for (const [key, value] of Object.entries(checked)) {
    if (typeof value !== "number" || !Number.isSafeInteger(value) || value <= 0)
      throw new TypeError(`${where}.${key} must be a positive integer, got ${String(value)}`);
  }
  return { ...checked, allow: new AllowList(allow, (index) => `${where}.allow[${index}]`), exchange };
}
