/**
 * The `kv` service's storage: one Durable Object with SQLite, so processes and `/run` keep state between runs.
 * @module
 */
import { DurableObject } from "cloudflare:workers";
import type { KeyValueStore } from "../src/host/index.js";
import { SqlKeyValueStore } from "./sql-stores.js";

export class KvObject extends DurableObject implements KeyValueStore {
  readonly #store: SqlKeyValueStore;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.#store = new SqlKeyValueStore(ctx.storage.sql);
  }

  async get(key: string): Promise<unknown> {
    return this.#store.get(key);
  }

  async set(key: string, value: unknown): Promise<void> {
    return this.#store.set(key, value);
  }

  async delete(key: string): Promise<boolean> {
    return this.#store.delete(key);
  }

  async list(options?: { prefix?: string; limit?: number }): Promise<string[]> {
    return this.#store.list(options);
  }
}

/**
 * The kv object as the `kv` service's store. Stubs belong to the request that made them, so every call takes a
 * fresh one; and every answer waits one turn of the event loop before it returns. Measured in workerd: a process
 * awaiting kv calls in a loop otherwise kept its object from taking any other request (its record, its event
 * stream, `kill`) until the loop ended.
 */
export function kvStoreOf(env: Env): KeyValueStore {
  const kv = () => env.KV.get(env.KV.idFromName("kv"));
  const settled = async <T>(call: Promise<T>): Promise<T> => {
    try {
      return await call;
    } finally {
      await new Promise((resolve) => setTimeout(resolve, 0));
    }
  };
  return {
    get: (key) => settled(kv().get(key)),
    set: (key, value) => settled(kv().set(key, value)),
    delete: (key) => settled(kv().delete(key)),
    list: (options) => settled(kv().list(options)),
  };
}
