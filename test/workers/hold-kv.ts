/**
 * Holds every `get` of tenant `alpha`'s kv object until released, so a test can keep guest code waiting on the host
 * (a timer would be cut by its fuel). RPC calls methods of the class, not an instance's own properties: the hold is
 * put on the prototype, and `release` takes it off.
 */
import { env, runInDurableObject } from "cloudflare:test";

type Getter = { get(key: string): Promise<unknown> };

export async function holdKvGets(): Promise<{ release: () => void }> {
  let prototype!: Getter;
  await runInDurableObject(env.KV.get(env.KV.idFromName("tenant:alpha")), (object) => {
    prototype = Object.getPrototypeOf(object) as Getter;
  });
  const original = prototype.get;
  let open!: () => void;
  const held = new Promise<void>((resolve) => {
    open = resolve;
  });
  prototype.get = async function (this: Getter, key) {
    await held;
    return original.call(this, key);
  };
  return {
    release: () => {
      open();
      prototype.get = original;
    },
  };
}
