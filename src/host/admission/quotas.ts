/**
 * Rate limits per tenant: process creations plus `/run` calls per minute, as a token bucket (a burst of up to a
 * minute's allowance, refilled continuously). The bucket's arithmetic is one pure function, so the in-memory
 * limiter here and the edge registry's SQLite rows count exactly alike.
 * @module
 */
import { retryLater } from "../errors.js";
import { SETTING_DEFAULTS } from "../limits.js";

/** Process creations plus `/run` calls one tenant may make per minute when no figure is configured. */
const DEFAULT_RUNS_PER_MINUTE = Number(SETTING_DEFAULTS.RUNCODE_TENANT_RUNS_PER_MINUTE);

/** A tenant's bucket: tokens left, as of `at` (epoch milliseconds). */
export interface Bucket {
  tokens: number;
  at: number;
}

/**
 * Takes one token from `bucket` (a full one when `undefined`): the bucket afterwards, and `null` — or, when it was
 * empty, the bucket unchanged and the seconds until a token is back.
 */
export function takeToken(
  bucket: Bucket | undefined,
  perMinute: number,
  now: number,
): { bucket: Bucket; retryAfterSeconds: number | null } {
  const refilled = Math.min(
    perMinute,
    (bucket?.tokens ?? perMinute) + ((now - (bucket?.at ?? now)) * perMinute) / 60_000,
  );
  if (refilled < 1) {
    return { bucket: { tokens: refilled, at: now }, retryAfterSeconds: ((1 - refilled) * 60) / perMinute };
  }
  return { bucket: { tokens: refilled - 1, at: now }, retryAfterSeconds: null };
}

/** What the app asks before it starts work for a tenant (a process or a `/run`). */
export interface Quotas {
  /** Counts one run for `tenant`; throws a 429 `rate_limited` `HostError` with `Retry-After` when over. */
  admit(tenant: string): Promise<void>;
}

/** {@link Quotas} in memory: one bucket per tenant (tenants are the configured keys' few names). */
export class MemoryQuotas implements Quotas {
  readonly #buckets = new Map<string, Bucket>();
  readonly #perMinute: number;
  readonly #now: () => number;

  constructor(perMinute = DEFAULT_RUNS_PER_MINUTE, now: () => number = Date.now) {
    this.#perMinute = perMinute;
    this.#now = now;
  }

  async admit(tenant: string): Promise<void> {
    const { bucket, retryAfterSeconds } = takeToken(this.#buckets.get(tenant), this.#perMinute, this.#now());
    this.#buckets.set(tenant, bucket);
    if (retryAfterSeconds !== null) throw rateLimited(this.#perMinute, retryAfterSeconds);
  }
}

/** The refusal of a run over the tenant's rate. */
export function rateLimited(perMinute: number, retryAfterSeconds: number) {
  return retryLater(
    "rate_limited",
    `This tenant may start ${perMinute} processes and /run calls per minute: retry in ${Math.max(1, Math.ceil(retryAfterSeconds))} s`,
    retryAfterSeconds,
  );
}
