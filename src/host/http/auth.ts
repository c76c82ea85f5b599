/**
 * Who is calling: API keys name tenants, and everything a request creates belongs to its tenant. Keys come from one
 * setting (`RUNCODE_API_KEYS`: `tenant:key` entries separated by commas); a request presents one as
 * `Authorization: Bearer <key>`. Without keys the API is closed unless anonymous access is switched on, and then
 * every caller is the tenant {@link ANONYMOUS_TENANT}.
 * @module
 */
import { ANONYMOUS_TENANT } from "../../tools/registry.js";
import { HostError } from "../errors.js";

/** A tenant's name: it keys storage (one `kv` object per tenant on the edge), so a short, plain identifier. */
const TENANT = /^[A-Za-z0-9_-]{1,64}$/;
/** Shortest key accepted: a guessable key is no key. */
const MIN_API_KEY_LENGTH = 16;
/** Longest header value compared: a key longer than any configured one fails without being hashed whole. */
const MAX_PRESENTED_KEY_LENGTH = 512;

/** How the API decides who calls it. */
export interface Access {
  /** Digests of the configured keys, with their tenants. Empty: no keys configured. */
  readonly keys: readonly { tenant: string; digest: Uint8Array }[];
  /** Serve requests without a key as {@link ANONYMOUS_TENANT} when no keys are configured. */
  readonly allowAnonymous: boolean;
}

export interface AccessSettings {
  /** `tenant:key` entries separated by commas (`RUNCODE_API_KEYS`). */
  apiKeys?: string | undefined;
  /** `true` or `"true"` (`RUNCODE_ALLOW_ANONYMOUS`): serve anonymous requests when no keys are configured. */
  allowAnonymous?: boolean | string | undefined;
}

const encoder = new TextEncoder();
const sha256 = async (text: string) => new Uint8Array(await crypto.subtle.digest("SHA-256", encoder.encode(text)));

/** Reads the settings; throws a `TypeError` that names the bad entry (never the key itself). */
export async function accessFrom(settings: AccessSettings): Promise<Access> {
  const keys: { tenant: string; digest: Uint8Array }[] = [];
  const seen = new Set<string>();
  const entries = (settings.apiKeys ?? "").split(",").map((entry) => entry.trim());
  for (const [index, entry] of entries.entries()) {
    if (entry === "") continue;
    const colon = entry.indexOf(":");
    const tenant = colon < 0 ? "" : entry.slice(0, colon);
    const key = colon < 0 ? "" : entry.slice(colon + 1);
    const where = `RUNCODE_API_KEYS entry ${index + 1}`;
    if (!TENANT.test(tenant)) throw new TypeError(`${where} must be tenant:key with a tenant matching ${TENANT}`);
    if (key.length < MIN_API_KEY_LENGTH || key.length > MAX_PRESENTED_KEY_LENGTH) {
      throw new TypeError(`${where} (tenant ${tenant}): the key must be ${MIN_API_KEY_LENGTH} to 512 characters`);
    }
    if (seen.has(key)) throw new TypeError(`${where} (tenant ${tenant}) repeats a key of an earlier entry`);
    seen.add(key);
    keys.push({ tenant, digest: await sha256(key) });
  }
  const { allowAnonymous } = settings;
  return { keys, allowAnonymous: allowAnonymous === true || allowAnonymous === "true" };
}

/**
 * Equal digests, in time that does not depend on where they differ. Digests rather than keys: every comparison is
 * 32 bytes whatever the key's length, so timing tells nothing about the key either.
 */
function sameDigest(a: Uint8Array, b: Uint8Array): boolean {
  let difference = a.length ^ b.length;
  for (let i = 0; i < a.length; i++) difference |= (a[i] as number) ^ (b[i] ?? 0);
  return difference === 0;
}

/**
 * The digests of presented keys that matched a configured one, per list of keys: hashing each request's key through
 * `crypto.subtle` (a hop to the platform's thread pool and back) was a tenth of a busy server's main thread. Only a key
 * that matched is kept, so a list holds at most as many entries as it has keys whatever callers send, and a request
 * still compares its digest with every configured one: a key taken out of the list fails at once.
 */
const verified = new WeakMap<Access["keys"], Map<string, Uint8Array>>();

function verifiedOf(keys: Access["keys"]): Map<string, Uint8Array> {
  let known = verified.get(keys);
  if (known === undefined) {
    known = new Map();
    verified.set(keys, known);
  }
  return known;
}

/** The tenant a request's `Authorization` header names, or the 401 to answer. */
export async function tenantOf(access: Access, authorization: string | null): Promise<string> {
  if (access.keys.length === 0) {
    if (access.allowAnonymous) return ANONYMOUS_TENANT;
    throw unauthenticated(
      "This API has no keys configured and anonymous access is off: set RUNCODE_API_KEYS (tenant:key entries) or RUNCODE_ALLOW_ANONYMOUS=true",
    );
  }
  const presented = /^Bearer +(\S+) *$/i.exec(authorization ?? "")?.[1];
  if (presented === undefined) throw unauthenticated("Send an API key as Authorization: Bearer <key>");
  if (presented.length > MAX_PRESENTED_KEY_LENGTH) throw unauthenticated("The API key is not valid");
  const known = verifiedOf(access.keys);
  // Looked up by the whole key, so a wrong key never finds another's digest; the time it takes says whether the key
  // worked before, which the answer says anyway.
  const cached = known.get(presented);
  const digest = cached ?? (await sha256(presented));
  let tenant: string | undefined;
  // Every configured key is compared, so the time taken does not say which one (or whether any) matched.
  for (const key of access.keys) if (sameDigest(key.digest, digest)) tenant = key.tenant;
  if (tenant === undefined) throw unauthenticated("The API key is not valid");
  if (cached === undefined && known.size < access.keys.length) known.set(presented, digest);
  return tenant;
}

function unauthenticated(message: string): HostError {
  return new HostError("unauthenticated", message, { "www-authenticate": 'Bearer realm="runcode"' });
}
