/**
 * The `kv` service's storage: one Durable Object with SQLite per tenant, so processes and `/run` keep state between
 * runs, no tenant can name another's keys, and tenants spread over objects as they grow in number (one object's
 * throughput is one tenant's, never the deployment's).
 * @module
 */
import { DurableObject } from "cloudflare:workers";
import type { KeyValueQuota, KeyValueStore, KeyValueUsage } from "../src/tools/kv-store.js";
import { ANONYMOUS_TENANT } from "../src/tools/registry.js";
import { type KeyValueRefusal, refusalError, SqlKeyValueStore } from "./sql-stores.js";

/** The store over RPC. `put` answers a quota refusal as a value, which `kvStoreOf` throws as a `KeyValueQuotaError`. */
export class KvObject extends DurableObject {
  readonly #store: SqlKeyValueStore;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.#store = new SqlKeyValueStore(ctx.storage.sql);
  }

  async get(key: string): Promise<unknown> {
    return this.#store.get(key);
  }

  /** Writes unless that would take the store past `quota`: then answers the refusal and writes nothing. */
  async put(key: string, value: unknown, quota?: KeyValueQuota): Promise<KeyValueRefusal | null> {
    return this.#store.setWithin(key, value, quota);
  }

  async delete(key: string): Promise<boolean> {
    return this.#store.delete(key);
  }

  async list(options?: { prefix?: string; limit?: number }): Promise<string[]> {
    return this.#store.list(options);
  }

  async usage(): Promise<KeyValueUsage> {
    return this.#store.usageNow();
  }
}

/** A tenant's kv object. The anonymous tenant keeps the object every caller shared before tenants, with its keys. */
const kvObjectName = (tenant: string) => (tenant === ANONYMOUS_TENANT ? "kv" : `tenant:${tenant}`);

/**
 * The kv objects as the `kv` service's stores, one per tenant. Stubs belong to the request that made them, so every
 * call takes a fresh one; and every answer waits one turn of the event loop before it returns. Measured in workerd:
 * a process awaiting kv calls in a loop otherwise kept its object from taking any other request (its record, its
 * event stream, `kill`) until the loop ended.
 */
export function kvStoreOf(env: Env): (tenant: string) => KeyValueStore {
  return (tenant) => kvStore(env, kvObjectName(tenant));
}

function kvStore(env: Env, name: string): KeyValueStore {
  const kv = () => env.KV.get(env.KV.idFromName(name));
  const settled = async <T>(call: Promise<T>): Promise<T> => {
    try {
      return await call;
    } finally {
      await new Promise((resolve) => setTimeout(resolve, 0));
    }
  };
  return {
    get: (key) => settled(kv().get(key)),
    set: async (key, value, quota) => {
      const refusal = await settled(kv().put(key, value, quota));
      if (refusal !== null) throw refusalError(refusal);
    },
    delete: (key) => settled(kv().delete(key)),
    list: (options) => settled(kv().list(options)),
    usage: () => settled(kv().usage()),
  };
}
