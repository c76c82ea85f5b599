/**
 * Requests to the Worker as a tenant. The pool's Worker has two tenants' keys (vitest.workers.config.ts); most
 * tests are tenant `alpha`, and the tenancy tests speak for `beta` or for nobody.
 */
import { SELF } from "cloudflare:test";

export const BASE = "http://runcode.test";
/** The keys configured as RUNCODE_API_KEYS in vitest.workers.config.ts. */
export const KEYS = { alpha: "alpha-test-key-0123456789abcdef", beta: "beta-test-key-0123456789abcdef" } as const;

/** A fetch of `path` on the Worker as `tenant` (its key as a bearer token), or with no key at all for `null`. */
export function as(tenant: keyof typeof KEYS | null) {
  return (path: string, init: RequestInit = {}): Promise<Response> => {
    const headers = new Headers(init.headers);
    if (tenant !== null && !headers.has("authorization")) headers.set("authorization", `Bearer ${KEYS[tenant]}`);
    return SELF.fetch(`${BASE}${path}`, { ...init, headers });
  };
}

/** A fetch as tenant `alpha`. */
export const api = as("alpha");
