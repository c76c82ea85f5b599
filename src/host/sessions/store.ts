/**
 * The storage port of the host's sessions: each session's record and snapshot bytes, per tenant, durable across
 * restarts. `runcode serve` keeps them in libSQL (node/serve/libsql-stores.ts), an edge in its own storage, tests in
 * {@link MemorySessionStore}. A store keeps a running count of each tenant's sessions and bytes for the quotas, and
 * finds the sessions idle past a time for the TTL sweep. Records cross the port by value. Writes of one tenant come
 * from one `SessionService` at a time, which serializes them; each write is atomic (a replaced snapshot is either
 * the old bytes or the new, never a mix).
 * @module
 */
import type { SessionInfo, SessionRequestOptions } from "./backend.js";

/** A session as stored: what its tenant sees, the options to restore it with, and its state. */
export interface StoredSession extends SessionInfo {
  tenant: string;
  /** The options it was created with, as sent (wire values): a restore is given the same. */
  options: SessionRequestOptions;
  /** The core's snapshot of its state. */
  snapshot: Uint8Array;
}

export interface SessionStore {
  /** Stores `session`, replacing the tenant's session of the same id (and its bytes) when there is one. */
  put(session: StoredSession): Promise<void>;
  /** The session with its snapshot; `undefined` when the tenant has none of that id. */
  get(tenant: string, id: string): Promise<StoredSession | undefined>;
  /** What the tenant sees of it, reading no snapshot. */
  info(tenant: string, id: string): Promise<SessionInfo | undefined>;
  /** The id of the tenant's session named `name`. */
  named(tenant: string, name: string): Promise<string | undefined>;
  /** The tenant's sessions ascending by id, only ids above `after`, at most `limit`. */
  list(tenant: string, page: { after?: string; limit: number }): Promise<SessionInfo[]>;
  /** `false` when there was none. */
  delete(tenant: string, id: string): Promise<boolean>;
  /** The tenant's sessions and the bytes they take (the sum of their `bytes`), reading no snapshot. */
  usage(tenant: string): Promise<{ count: number; bytes: number }>;
  /** At most `limit` sessions (of any tenant) last used before `before` (epoch milliseconds). */
  expired(before: number, limit: number): Promise<{ tenant: string; id: string }[]>;
}

/** What the tenant sees of `session`. */
function infoOf(session: StoredSession): SessionInfo {
  const { tenant: _t, options: _o, snapshot: _s, ...info } = session;
  return { ...info };
}

const copy = (session: StoredSession): StoredSession => ({
  ...structuredClone({ ...session, snapshot: undefined }),
  snapshot: session.snapshot.slice(),
});

/** {@link SessionStore} in memory: for tests and embeddings that need no durability. */
export class MemorySessionStore implements SessionStore {
  /** Per tenant, by id. */
  readonly #tenants = new Map<string, Map<string, StoredSession>>();

  async put(session: StoredSession): Promise<void> {
    const own = this.#tenants.get(session.tenant) ?? new Map<string, StoredSession>();
    this.#tenants.set(session.tenant, own);
    own.set(session.id, copy(session));
  }

  async get(tenant: string, id: string): Promise<StoredSession | undefined> {
    const session = this.#tenants.get(tenant)?.get(id);
    return session === undefined ? undefined : copy(session);
  }

  async info(tenant: string, id: string): Promise<SessionInfo | undefined> {
    const session = this.#tenants.get(tenant)?.get(id);
    return session === undefined ? undefined : infoOf(session);
  }

  async named(tenant: string, name: string): Promise<string | undefined> {
    for (const session of this.#tenants.get(tenant)?.values() ?? []) if (session.name === name) return session.id;
    return undefined;
  }

  async list(tenant: string, page: { after?: string; limit: number }): Promise<SessionInfo[]> {
    const { after = "", limit } = page;
    return [...(this.#tenants.get(tenant)?.values() ?? [])]
      .filter((session) => session.id > after)
      .sort((a, b) => (a.id < b.id ? -1 : 1))
      .slice(0, limit)
      .map(infoOf);
  }

  async delete(tenant: string, id: string): Promise<boolean> {
    return this.#tenants.get(tenant)?.delete(id) ?? false;
  }

  async usage(tenant: string): Promise<{ count: number; bytes: number }> {
    const own = [...(this.#tenants.get(tenant)?.values() ?? [])];
    return { count: own.length, bytes: own.reduce((sum, session) => sum + session.bytes, 0) };
  }

  async expired(before: number, limit: number): Promise<{ tenant: string; id: string }[]> {
    const out: { tenant: string; id: string }[] = [];
    for (const [tenant, own] of this.#tenants) {
      for (const session of own.values()) {
        if (out.length >= limit) return out;
        if (session.lastUsedAt < before) out.push({ tenant, id: session.id });
      }
    }
    return out;
  }
}
