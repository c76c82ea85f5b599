/**
 * The built-in `kv` service: JSON values by string key over a {@link KeyValueStore} per tenant, so processes keep
 * state between runs and no tenant reads another's keys. Quotas: a value's size (checked by a walk that stops at the cap, so a value of shared references
 * never expands), the store's keys and bytes (enforced by the store, atomically with the write) and calls per run.
 * @module
 */

import { BudgetError } from "../values/budget.js";
import { jsonWithin } from "../values/json.js";
import { isKeyValueQuotaError, type KeyValueStore, MemoryKeyValueStore } from "./kv-store.js";
import { type Service, ToolError } from "./registry.js";

/** Longest key, in characters. */
const KV_MAX_KEY_LENGTH = 512;
/** Largest value, in bytes of its JSON text. */
const KV_MAX_VALUE_BYTES = 65_536;
/** Most keys one store (one tenant's) holds. */
const KV_MAX_KEYS = 10_000;
/** Most bytes one store (one tenant's) holds: every key and value, in UTF-8 (the value as JSON text). */
const KV_MAX_STORE_BYTES = 16_777_216;
/** Most `kv` calls (of any tool) one run makes. */
export const KV_MAX_CALLS_PER_RUN = 1_000;

/** The `kv` service's quotas; every one has a default above. */
export interface KvQuotas {
  maxValueBytes: number;
  maxKeys: number;
  maxStoreBytes: number;
  maxCallsPerRun: number;
}

const key = { type: "string", minLength: 1, maxLength: KV_MAX_KEY_LENGTH, description: "The key." };

/** One in-memory store per tenant, made on first use (tenants are the configured keys' few names). */
export function memoryKeyValueStores(): (tenant: string) => KeyValueStore {
  const stores = new Map<string, KeyValueStore>();
  return (tenant) => {
    let store = stores.get(tenant);
    if (store === undefined) {
      store = new MemoryKeyValueStore();
      stores.set(tenant, store);
    }
    return store;
  };
}

/** The service over `storeOf(tenant)`: each call goes to the store of the tenant whose run makes it. */
export function kvService(storeOf: (tenant: string) => KeyValueStore, options: Partial<KvQuotas> = {}): Service {
  const limits: KvQuotas = {
    maxValueBytes: options.maxValueBytes ?? KV_MAX_VALUE_BYTES,
    maxKeys: options.maxKeys ?? KV_MAX_KEYS,
    maxStoreBytes: options.maxStoreBytes ?? KV_MAX_STORE_BYTES,
    maxCallsPerRun: options.maxCallsPerRun ?? KV_MAX_CALLS_PER_RUN,
  };
  const quota = (toolId: string, what: string) => new ToolError("quota_exceeded", `kv.${toolId} failed: ${what}`);
  /** Counts the call against the run's quota before it touches the store. */
  const counted =
    <R>(
      toolId: string,
      run: (p: Record<string, unknown>, store: KeyValueStore) => Promise<R>,
    ): Service["tools"][number]["run"] =>
    (p, context) => {
      if (!context.scope.take("kv", limits.maxCallsPerRun)) {
        throw quota(toolId, `quota exceeded: a run may make at most ${limits.maxCallsPerRun} kv calls`);
      }
      return run(p, storeOf(context.scope.tenant));
    };
  return {
    id: "kv",
    name: "Key-value store",
    description: `JSON values by string key that persist between runs (values up to ${limits.maxValueBytes / 1024} KiB of JSON, ${limits.maxKeys} keys, ${limits.maxCallsPerRun} calls per run).`,
    tools: [
      {
        id: "get",
        description: "Reads the value of a key.",
        inputSchema: { type: "object", properties: { key }, required: ["key"], additionalProperties: false },
        outputSchema: {
          type: "object",
          properties: {
            found: { type: "boolean", description: "Whether the key exists." },
            value: { description: "The value, or null when the key does not exist." },
          },
          required: ["found", "value"],
        },
        run: counted("get", async (p, store) => {
          const value = await store.get(p.key as string);
          return { found: value !== undefined, value: value ?? null };
        }),
      },
      {
        id: "set",
        description: "Stores a JSON value under a key, replacing any previous value.",
        inputSchema: {
          type: "object",
          properties: { key, value: { description: "Any JSON value." } },
          required: ["key", "value"],
          additionalProperties: false,
        },
        outputSchema: {
          type: "object",
          properties: { bytes: { type: "integer", description: "Size of the stored JSON text." } },
          required: ["bytes"],
        },
        run: counted("set", async (p, store) => {
          let converted: ReturnType<typeof jsonWithin>;
          try {
            converted = jsonWithin(p.value, limits.maxValueBytes, "the value");
          } catch (error) {
            if (error instanceof BudgetError) throw quota("set", error.message);
            throw error;
          }
          const { json, bytes } = converted;
          if (json === undefined) throw new Error("the value has no JSON form (undefined or a function)");
          try {
            await store.set(p.key as string, json, {
              maxKeys: limits.maxKeys,
              maxBytes: limits.maxStoreBytes,
            });
          } catch (error) {
            if (isKeyValueQuotaError(error)) throw quota("set", error.message);
            throw error;
          }
          return { bytes };
        }),
      },
      {
        id: "delete",
        description: "Deletes a key.",
        inputSchema: { type: "object", properties: { key }, required: ["key"], additionalProperties: false },
        outputSchema: {
          type: "object",
          properties: { deleted: { type: "boolean", description: "Whether the key existed." } },
          required: ["deleted"],
        },
        run: counted("delete", async (p, store) => ({ deleted: await store.delete(p.key as string) })),
      },
      {
        id: "list",
        description: "Lists keys in ascending order.",
        inputSchema: {
          type: "object",
          properties: {
            prefix: { type: "string", maxLength: KV_MAX_KEY_LENGTH, description: "Only keys that start with this." },
            limit: { type: "integer", minimum: 1, maximum: 1000, default: 100, description: "At most this many keys." },
          },
          additionalProperties: false,
        },
        outputSchema: {
          type: "object",
          properties: { keys: { type: "array", items: { type: "string" } } },
          required: ["keys"],
        },
        run: counted("list", async (p, store) => ({
          keys: await store.list({
            ...(typeof p.prefix === "string" ? { prefix: p.prefix } : {}),
            limit: typeof p.limit === "number" ? p.limit : 100,
          }),
        })),
      },
    ],
  };
}
