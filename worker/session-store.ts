/**
 * The host's `SessionStore` port in one `SessionObject`: the object keeps exactly one session, its record as JSON in
 * a single-row table and its snapshot in rows (snapshot-rows.ts), both in one synchronous transaction, so the record
 * and the state it describes are written together. What spans a tenant's sessions (names, count and bytes for the
 * quotas, listing) is the registry's (session-index.ts), which checks and records every write before it is made
 * here, and forgets a deleted session before its rows go. A session put under another id is a
 * fork's copy: it goes to a new object of its own (`seed`). Every write arms the object's alarm for the session's
 * idle expiry.
 * @module
 */
import type { SessionInfo } from "../src/host/sessions/backend.js";
import type { SessionStore, StoredSession } from "../src/host/sessions/store.js";
import type { IndexedSession } from "./session-index.js";
import { SnapshotRows } from "./snapshot-rows.js";

/** What the store asks of the registry (`RegistryObject`'s session methods). */
interface SessionRegistry {
  index(entry: IndexedSession): Promise<void>;
  remove(tenant: string, id: string): Promise<void>;
  named(tenant: string, name: string): Promise<string | undefined>;
  usage(tenant: string): Promise<{ count: number; bytes: number }>;
  list(tenant: string, after: string, limit: number): Promise<SessionInfo[]>;
}

interface ObjectSessionStoreOptions {
  registry: SessionRegistry;
  /** Stores a fork's copy in a new object of its own. */
  seed(session: StoredSession): Promise<void>;
  /** Milliseconds a session may stay unused before its alarm deletes it. */
  idleMs: number;
}

type Record = Omit<StoredSession, "snapshot">;

export class ObjectSessionStore implements SessionStore {
  readonly #storage: DurableObjectStorage;
  readonly #object: string;
  readonly #snapshot: SnapshotRows;
  readonly #options: ObjectSessionStoreOptions;

  constructor(storage: DurableObjectStorage, object: DurableObjectId, options: ObjectSessionStoreOptions) {
    this.#storage = storage;
    this.#object = object.toString();
    this.#options = options;
    storage.sql.exec(
      "CREATE TABLE IF NOT EXISTS session (slot INTEGER PRIMARY KEY CHECK (slot = 1), record TEXT NOT NULL)",
    );
    this.#snapshot = new SnapshotRows(storage.sql);
  }

  async put(session: StoredSession): Promise<void> {
    const own = this.#own();
    if (own !== undefined && (own.tenant !== session.tenant || own.id !== session.id)) {
      await this.#options.seed(session);
      return;
    }
    const { snapshot, ...record } = session;
    // The registry first: a name taken meanwhile, or a quota another object of the tenant filled meanwhile, refuses
    // the write before anything is stored here (the service then answers as the quota's refusal says).
    await this.#options.registry.index({ tenant: record.tenant, object: this.#object, info: infoOf(record) });
    this.#storage.transactionSync(() => {
      this.#storage.sql.exec(
        "INSERT INTO session (slot, record) VALUES (1, ?) ON CONFLICT (slot) DO UPDATE SET record = excluded.record",
        JSON.stringify(record),
      );
      this.#snapshot.write(snapshot);
    });
    await this.#storage.setAlarm(record.lastUsedAt + this.#options.idleMs);
  }

  async get(tenant: string, id: string): Promise<StoredSession | undefined> {
    const own = this.#ownOf(tenant, id);
    const snapshot = own && this.#snapshot.read();
    return own === undefined || snapshot === undefined ? undefined : { ...own, snapshot };
  }

  async info(tenant: string, id: string): Promise<SessionInfo | undefined> {
    const own = this.#ownOf(tenant, id);
    return own && infoOf(own);
  }

  named(tenant: string, name: string): Promise<string | undefined> {
    return this.#options.registry.named(tenant, name);
  }

  list(tenant: string, page: { after?: string; limit: number }): Promise<SessionInfo[]> {
    return this.#options.registry.list(tenant, page.after ?? "", page.limit);
  }

  async delete(tenant: string, id: string): Promise<boolean> {
    if (this.#ownOf(tenant, id) === undefined) return false;
    // The registry first: rows left here by a failure after it are deleted again by the alarm.
    await this.#options.registry.remove(tenant, id);
    this.#storage.transactionSync(() => {
      this.#storage.sql.exec("DELETE FROM session");
      this.#snapshot.delete();
    });
    await this.#storage.deleteAlarm();
    return true;
  }

  usage(tenant: string): Promise<{ count: number; bytes: number }> {
    return this.#options.registry.usage(tenant);
  }

  /** This object's session when it was last used before `before`. */
  async expired(before: number, limit: number): Promise<{ tenant: string; id: string }[]> {
    const own = this.#own();
    return own !== undefined && own.lastUsedAt < before && limit > 0 ? [{ tenant: own.tenant, id: own.id }] : [];
  }

  /** When this object's session expires (its last use plus the idle TTL); `undefined` when it holds none. */
  expiry(): number | undefined {
    const own = this.#own();
    return own && own.lastUsedAt + this.#options.idleMs;
  }

  #ownOf(tenant: string, id: string): Record | undefined {
    const own = this.#own();
    return own !== undefined && own.tenant === tenant && own.id === id ? own : undefined;
  }

  #own(): Record | undefined {
    const row = this.#storage.sql.exec<{ record: string }>("SELECT record FROM session").toArray()[0];
    return row === undefined ? undefined : (JSON.parse(row.record) as Record);
  }
}

/** What the tenant sees of `record`. */
function infoOf(record: Record): SessionInfo {
  const { tenant: _t, options: _o, ...info } = record;
  return info;
}
