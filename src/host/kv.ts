/**
 * The built-in `kv` service: JSON values by string key over a {@link KeyValueStore}, so processes keep state
 * between runs.
 * @module
 */
import { toJson, toJsonText } from "./json.js";
import type { KeyValueStore } from "./storage.js";
import type { Service } from "./tools.js";

/** Longest key, in characters. */
export const KV_MAX_KEY_LENGTH = 512;
/** Largest value, in bytes of its JSON text. */
export const KV_MAX_VALUE_BYTES = 65_536;

const key = { type: "string", minLength: 1, maxLength: KV_MAX_KEY_LENGTH, description: "The key." };

export function kvService(store: KeyValueStore): Service {
  return {
    id: "kv",
    name: "Key-value store",
    description: "JSON values by string key that persist between runs (values up to 64 KiB of JSON).",
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
        run: async (p) => {
          const value = await store.get(p.key as string);
          return { found: value !== undefined, value: value ?? null };
        },
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
        run: async (p) => {
          const text = toJsonText(p.value);
          if (text === undefined) throw new Error("the value has no JSON form (undefined or a function)");
          const bytes = new TextEncoder().encode(text).length;
          if (bytes > KV_MAX_VALUE_BYTES)
            throw new Error(`the value is ${bytes} bytes of JSON, over ${KV_MAX_VALUE_BYTES}`);
          await store.set(p.key as string, toJson(p.value));
          return { bytes };
        },
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
        run: async (p) => ({ deleted: await store.delete(p.key as string) }),
      },
      {
        id: "list",
        description: "Lists keys in ascending order.",
        inputSchema: {
          type: "object",
          properties: {
            prefix: { type: "string", description: "Only keys that start with this." },
            limit: { type: "integer", minimum: 1, maximum: 1000, default: 100, description: "At most this many keys." },
          },
          additionalProperties: false,
        },
        outputSchema: {
          type: "object",
          properties: { keys: { type: "array", items: { type: "string" } } },
          required: ["keys"],
        },
        run: async (p) => ({
          keys: await store.list({
            ...(typeof p.prefix === "string" ? { prefix: p.prefix } : {}),
            limit: typeof p.limit === "number" ? p.limit : 100,
          }),
        }),
      },
    ],
  };
}
