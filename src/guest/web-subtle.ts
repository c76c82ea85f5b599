/**
 * `crypto.subtle` (WebCrypto's SubtleCrypto) and `CryptoKey` of a sandbox made with `webApis: true`: `digest`
 * (SHA-1, SHA-256, SHA-384, SHA-512), `importKey` and `exportKey` (`raw`, `jwk`), `generateKey`, `sign` and `verify`
 * (HMAC), `encrypt` and `decrypt` (AES-GCM, 128- or 256-bit keys). Shipped as source text (see core.ts).
 *
 * The guest checks every argument as WebCrypto does (a `TypeError` for a malformed one, a `DOMException` named
 * `NotSupportedError`, `SyntaxError`, `DataError`, `InvalidAccessError` or `OperationError` as the standard says) and
 * keeps the keys: a key's bytes are in this closure's table, which no user code reaches, so a non-extractable key's
 * bytes never come out, and a key lives in the guest's memory (a session's later cells and a restored snapshot have
 * it). The work on bytes (digests, HMAC, AES-GCM) is the host's platform WebCrypto's (`OP_SUBTLE`, see
 * src/core/subtle.ts), charged as fuel before it is done; new keys are the host's random bytes.
 * @module
 */
import type { HostCall } from "./core.js";
import type { WebKit } from "./web-kit.js";

interface KeySlot {
  name: "HMAC" | "AES-GCM";
  /** The hash of an HMAC key, else "". */
  hash: string;
  bytes: Uint8Array;
  extractable: boolean;
  usages: string[];
  /** The `algorithm` and `usages` objects the key answers, made once (WebCrypto's [[algorithm]] and [[usages]]). */
  algorithm: object | undefined;
  usagesArray: string[] | undefined;
}

export function guestWebSubtle(hostCall: HostCall, kit: WebKit): void {
  // biome-ignore lint/suspicious/noRedundantUseStrict: shipped as source text and evaluated as a sloppy script.
  "use strict";
  const OP_MARSHAL = 4;
  const OP_RANDOM = 6;
  const OP_SUBTLE = 12;
  const MODE_CLONE = 0;
  const MAX_RANDOM_BYTES = 65536;
  const G = globalThis as unknown as { Crypto: { prototype: object } };
  const { apply } = Reflect;
  const { min } = Math;
  const { defineProperty, freeze, getOwnPropertyDescriptor, keys } = Object;
  const TypeErrorCtor = TypeError;
  const U8 = Uint8Array;
  const PromiseCtor = Promise;
  const promiseThen = Promise.prototype.then;
  const { DOMException, bytesOf, required } = kit;
  const EMPTY: unknown[] = [];
  const HASHES = ["SHA-1", "SHA-256", "SHA-384", "SHA-512"];
  /** Block sizes in bits: an HMAC key's default length (WebCrypto's "generate key" for HMAC). */
  const BLOCK_BITS: Record<string, number> = { "SHA-1": 512, "SHA-256": 512, "SHA-384": 1024, "SHA-512": 1024 };
  const USAGES: Record<string, string[]> = {
    HMAC: ["sign", "verify"],
    "AES-GCM": ["encrypt", "decrypt", "wrapKey", "unwrapKey"],
  };
  const ALL_USAGES = ["encrypt", "decrypt", "sign", "verify", "deriveKey", "deriveBits", "wrapKey", "unwrapKey"];
  const TAG_LENGTHS = [32, 64, 96, 104, 112, 120, 128];
  const B64URL = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

  // Keys by their CryptoKey, with the WeakMap's own methods: user changes to WeakMap.prototype never reach them.
  const slots = new WeakMap<object, KeySlot>();
  for (const key of ["get", "set"] as const) defineProperty(slots, key, { value: WeakMap.prototype[key] });

  const fail = (message: string, name: string) => new DOMException(message, name);
  const has = (list: readonly unknown[], item: unknown) => {
    for (let i = 0; i < list.length; i++) if (list[i] === item) return true;
    return false;
  };
  const copy = (bytes: Uint8Array) => new U8(bytes);

  /** WebCrypto's "normalize an algorithm": a name or a dictionary with one, matched case-insensitively. */
  const normalize = (algorithm: unknown, names: readonly string[], what: string) => {
    let params: Record<string, unknown>;
    if (typeof algorithm === "object" && algorithm !== null) params = algorithm as Record<string, unknown>;
    else params = { name: `${algorithm}` };
    const given = params.name;
    if (given === undefined) throw new TypeErrorCtor(`${what}: the algorithm has no name`);
    const name = `${given}`.toUpperCase();
    for (let i = 0; i < names.length; i++) {
      if ((names[i] as string).toUpperCase() === name) return { name: names[i] as string, params };
    }
    throw fail(`${what}: the algorithm ${`${given}`} is not supported`, "NotSupportedError");
  };
  const hashOf = (value: unknown, what: string) => {
    if (value === undefined) throw new TypeErrorCtor(`${what}: the algorithm has no hash`);
    return normalize(value, HASHES, what).name;
  };
  const usagesOf = (value: unknown, what: string) => {
    if (
      typeof value !== "object" ||
      value === null ||
      typeof (value as Iterable<unknown>)[Symbol.iterator] !== "function"
    ) {
      throw new TypeErrorCtor(`${what}: the key usages must be a sequence`);
    }
    const usages: string[] = [];
    for (const usage of value as Iterable<unknown>) {
      const text = `${usage}`;
      if (!has(ALL_USAGES, text)) throw new TypeErrorCtor(`${what}: ${text} is not a key usage`);
      if (!has(usages, text)) usages[usages.length] = text;
    }
    return usages;
  };
  /** WebIDL's KeyFormat enumeration. */
  const formatOf = (value: unknown, what: string) => {
    const format = `${value}`;
    if (format !== "raw" && format !== "jwk" && format !== "spki" && format !== "pkcs8") {
      throw new TypeErrorCtor(`${what}: ${format} is not a key format`);
    }
    return format;
  };
  /** The formats of a secret key, checked by the import or export itself (after its usages or extractability). */
  const secretFormat = (format: string, what: string) => {
    if (format !== "raw" && format !== "jwk") {
      throw fail(`${what}: a secret key has no ${format} format`, "NotSupportedError");
    }
  };
  /** A BufferSource argument, copied (WebCrypto copies its arguments' bytes when called). */
  const bufferOf = (value: unknown, what: string) => copy(bytesOf(value, what));

  const base64url = (bytes: Uint8Array) => {
    let out = "";
    for (let i = 0; i < bytes.length; i += 3) {
      const n = ((bytes[i] as number) << 16) | ((bytes[i + 1] ?? 0) << 8) | (bytes[i + 2] ?? 0);
      out += B64URL[(n >> 18) & 63] as string;
      out += B64URL[(n >> 12) & 63] as string;
      if (i + 1 < bytes.length) out += B64URL[(n >> 6) & 63] as string;
      if (i + 2 < bytes.length) out += B64URL[n & 63] as string;
    }
    return out;
  };
  const fromBase64url = (text: string, what: string) => {
    const bad = () => fail(`${what}: the JWK's k is not base64url`, "DataError");
    if (text.length % 4 === 1) throw bad();
    const out = new U8((text.length * 3) >> 2);
    let bits = 0;
    let value = 0;
    let at = 0;
    for (let i = 0; i < text.length; i++) {
      const digit = B64URL.indexOf(text[i] as string);
      if (digit < 0) throw bad();
      value = (value << 6) | digit;
      bits += 6;
      if (bits >= 8) {
        bits -= 8;
        out[at++] = (value >> bits) & 255;
      }
    }
    return out;
  };

  const JWK_ALGS: Record<string, string> = {
    "SHA-1": "HS1",
    "SHA-256": "HS256",
    "SHA-384": "HS384",
    "SHA-512": "HS512",
  };
  const jwkAlg = (slot: { name: string; hash: string; bytes: Uint8Array }) =>
    slot.name === "HMAC" ? (JWK_ALGS[slot.hash] as string) : `A${slot.bytes.length * 8}GCM`;

  let creating = false;
  class CryptoKey {
    constructor() {
      if (!creating) throw new TypeErrorCtor("Illegal constructor");
      creating = false;
    }
    get type() {
      slotOf(this, "CryptoKey.type");
      return "secret";
    }
    get extractable() {
      return slotOf(this, "CryptoKey.extractable").extractable;
    }
    get algorithm() {
      const slot = slotOf(this, "CryptoKey.algorithm");
      slot.algorithm ??=
        slot.name === "HMAC"
          ? { name: "HMAC", hash: { name: slot.hash }, length: slot.bytes.length * 8 }
          : { name: slot.name, length: slot.bytes.length * 8 };
      return slot.algorithm;
    }
    get usages() {
      const slot = slotOf(this, "CryptoKey.usages");
      slot.usagesArray ??= freeze(slot.usages.slice()) as string[];
      return slot.usagesArray;
    }
  }
  defineProperty(CryptoKey.prototype, Symbol.toStringTag, { value: "CryptoKey", configurable: true });
  const slotOf = (key: unknown, what: string) => {
    const slot = typeof key === "object" && key !== null ? slots.get(key) : undefined;
    if (slot === undefined) throw new TypeErrorCtor(`${what}: the key is not a CryptoKey`);
    return slot;
  };
  /** A new CryptoKey; WebCrypto refuses a secret key with no usages. */
  const makeKey = (slot: KeySlot, what: string) => {
    if (slot.usages.length === 0) throw fail(`${what}: a secret key needs at least one usage`, "SyntaxError");
    creating = true;
    const key = new CryptoKey();
    slots.set(key, slot);
    return key;
  };
  const checkUsages = (name: string, usages: string[], what: string) => {
    const allowed = USAGES[name] as string[];
    for (let i = 0; i < usages.length; i++) {
      if (!has(allowed, usages[i])) throw fail(`${what}: an ${name} key cannot be used to ${usages[i]}`, "SyntaxError");
    }
  };
  /** A key of the right algorithm allowing `usage`, else WebCrypto's InvalidAccessError. */
  const keyFor = (key: unknown, name: string, usage: string, what: string) => {
    const slot = slotOf(key, what);
    if (slot.name !== name) throw fail(`${what}: the key is an ${slot.name} key, not ${name}`, "InvalidAccessError");
    if (!has(slot.usages, usage)) throw fail(`${what}: the key's usages do not include ${usage}`, "InvalidAccessError");
    return slot;
  };
  const aesLength = (bits: number, what: string, name: string) => {
    if (bits !== 128 && bits !== 256) {
      throw fail(`${what}: AES keys are 128 or 256 bits here, not ${bits}`, name);
    }
  };

  const randomBytes = (count: number) => {
    const out = new U8(count);
    for (let at = 0; at < count; at += MAX_RANDOM_BYTES) {
      const n = min(count - at, MAX_RANDOM_BYTES);
      out.set(new U8(hostCall(OP_RANDOM, n, "", EMPTY) as ArrayBuffer), at);
    }
    return out;
  };

  let marshal: { encode(value: unknown, mode: number): [string, unknown[]] } | undefined;
  /** Hands `record` to the host's WebCrypto; its failure (a DOMException there) becomes the guest's own. */
  const host = (record: Record<string, unknown>) => {
    marshal ??= hostCall(OP_MARSHAL, 0, "", EMPTY) as NonNullable<typeof marshal>;
    const encoded = marshal.encode(record, MODE_CLONE);
    const pending = hostCall(OP_SUBTLE, 0, encoded[0], encoded[1]) as Promise<unknown>;
    return apply(promiseThen, pending, [
      undefined,
      (error: { name?: unknown; message?: unknown }) => {
        throw fail(`${error.message}`, `${error.name}`);
      },
    ]) as Promise<unknown>;
  };
  /** WebIDL's promise-returning operations: whatever the steps throw rejects the promise. */
  const promised = (steps: () => unknown) => {
    try {
      return PromiseCtor.resolve(steps());
    } catch (error) {
      return PromiseCtor.reject(error);
    }
  };

  const importSlot = (
    format: string,
    keyData: unknown,
    algorithm: unknown,
    extractable: boolean,
    usages: string[],
    what: string,
  ): KeySlot => {
    const { name, params } = normalize(algorithm, ["HMAC", "AES-GCM"], what);
    const hash = name === "HMAC" ? hashOf(params.hash, what) : "";
    checkUsages(name, usages, what);
    secretFormat(format, what);
    let bytes: Uint8Array;
    if (format === "raw") {
      bytes = bufferOf(keyData, `${what}: the key data`);
    } else {
      if (typeof keyData !== "object" || keyData === null) {
        throw new TypeErrorCtor(`${what}: a jwk key's data must be an object`);
      }
      const jwk = keyData as Record<string, unknown>;
      if (jwk.kty !== "oct") throw fail(`${what}: the JWK's kty must be "oct"`, "DataError");
      if (typeof jwk.k !== "string") throw fail(`${what}: the JWK has no k`, "DataError");
      bytes = fromBase64url(jwk.k, what);
      if (jwk.use !== undefined && jwk.use !== (name === "HMAC" ? "sig" : "enc")) {
        throw fail(`${what}: the JWK's use does not allow this key`, "DataError");
      }
      if (jwk.key_ops !== undefined) {
        const ops = usagesOf(jwk.key_ops, what);
        for (let i = 0; i < usages.length; i++) {
          if (!has(ops, usages[i])) throw fail(`${what}: the JWK's key_ops do not allow ${usages[i]}`, "DataError");
        }
      }
      if (jwk.ext === false && extractable) {
        throw fail(`${what}: the JWK is not extractable, so neither can the key be`, "DataError");
      }
      if (jwk.alg !== undefined && jwk.alg !== jwkAlg({ name, hash, bytes })) {
        throw fail(`${what}: the JWK's alg ${`${jwk.alg}`} does not match the algorithm`, "DataError");
      }
    }
    if (name === "HMAC") {
      if (bytes.length === 0) throw fail(`${what}: an HMAC key cannot be empty`, "DataError");
      if (params.length !== undefined && +(params.length as number) !== bytes.length * 8) {
        throw fail(`${what}: the length does not match the key data`, "DataError");
      }
    } else {
      aesLength(bytes.length * 8, what, "DataError");
    }
    return {
      name: name as KeySlot["name"],
      hash,
      bytes,
      extractable,
      usages,
      algorithm: undefined,
      usagesArray: undefined,
    };
  };

  /** AES-GCM's parameters (WebCrypto's AesGcmParams) as the record for the host. */
  const gcm = (params: Record<string, unknown>, what: string) => {
    if (params.iv === undefined) throw new TypeErrorCtor(`${what}: AES-GCM needs an iv`);
    const iv = bufferOf(params.iv, `${what}: the iv`);
    const additionalData = params.additionalData === undefined ? null : bufferOf(params.additionalData, what);
    const tagLength = params.tagLength === undefined ? 128 : +(params.tagLength as number);
    if (!has(TAG_LENGTHS, tagLength)) {
      throw fail(`${what}: ${tagLength} is not an AES-GCM tag length`, "OperationError");
    }
    if (iv.length === 0) throw fail(`${what}: the iv cannot be empty`, "OperationError");
    return { iv: iv.buffer, additionalData: additionalData === null ? null : additionalData.buffer, tagLength };
  };

  const subtleMethods = {
    digest(algorithm: unknown, data: unknown) {
      const what = "crypto.subtle.digest";
      return promised(() => {
        required(arguments.length, 2, what);
        const { name } = normalize(algorithm, HASHES, what);
        return host({ op: "digest", hash: name, data: bufferOf(data, `${what}: the data`).buffer });
      });
    },
    importKey(format: unknown, keyData: unknown, algorithm: unknown, extractable: unknown, keyUsages: unknown) {
      const what = "crypto.subtle.importKey";
      return promised(() => {
        required(arguments.length, 5, what);
        const slot = importSlot(
          formatOf(format, what),
          keyData,
          algorithm,
          !!extractable,
          usagesOf(keyUsages, what),
          what,
        );
        return makeKey(slot, what);
      });
    },
    exportKey(format: unknown, key: unknown) {
      const what = "crypto.subtle.exportKey";
      return promised(() => {
        required(arguments.length, 2, what);
        const kind = formatOf(format, what);
        const slot = slotOf(key, what);
        if (!slot.extractable) throw fail(`${what}: the key is not extractable`, "InvalidAccessError");
        secretFormat(kind, what);
        if (kind === "raw") return copy(slot.bytes).buffer;
        return {
          alg: jwkAlg(slot),
          ext: true,
          k: base64url(slot.bytes),
          key_ops: slot.usages.slice(),
          kty: "oct",
        };
      });
    },
    generateKey(algorithm: unknown, extractable: unknown, keyUsages: unknown) {
      const what = "crypto.subtle.generateKey";
      return promised(() => {
        required(arguments.length, 3, what);
        const { name, params } = normalize(algorithm, ["HMAC", "AES-GCM"], what);
        const usages = usagesOf(keyUsages, what);
        let hash = "";
        let bits: number;
        if (name === "HMAC") {
          hash = hashOf(params.hash, what);
          bits = params.length === undefined ? (BLOCK_BITS[hash] as number) : +(params.length as number);
          if (!(bits > 0) || bits % 8 !== 0 || bits > 8 * MAX_RANDOM_BYTES) {
            throw fail(
              `${what}: an HMAC key here is a whole number of bytes, at most 65536, not ${bits} bits`,
              "OperationError",
            );
          }
        } else {
          if (params.length === undefined) throw new TypeErrorCtor(`${what}: AES-GCM needs a length`);
          bits = +(params.length as number);
          aesLength(bits, what, "OperationError");
        }
        checkUsages(name, usages, what);
        const slot: KeySlot = {
          name: name as KeySlot["name"],
          hash,
          bytes: new U8(0),
          extractable: !!extractable,
          usages,
          algorithm: undefined,
          usagesArray: undefined,
        };
        if (usages.length > 0) slot.bytes = randomBytes(bits / 8);
        return makeKey(slot, what);
      });
    },
    sign(algorithm: unknown, key: unknown, data: unknown) {
      const what = "crypto.subtle.sign";
      return promised(() => {
        required(arguments.length, 3, what);
        normalize(algorithm, ["HMAC"], what);
        const bytes = bufferOf(data, `${what}: the data`);
        const slot = keyFor(key, "HMAC", "sign", what);
        return host({ op: "sign", hash: slot.hash, key: copy(slot.bytes).buffer, data: bytes.buffer });
      });
    },
    verify(algorithm: unknown, key: unknown, signature: unknown, data: unknown) {
      const what = "crypto.subtle.verify";
      return promised(() => {
        required(arguments.length, 4, what);
        normalize(algorithm, ["HMAC"], what);
        const mac = bufferOf(signature, `${what}: the signature`);
        const bytes = bufferOf(data, `${what}: the data`);
        const slot = keyFor(key, "HMAC", "verify", what);
        return host({
          op: "verify",
          hash: slot.hash,
          key: copy(slot.bytes).buffer,
          signature: mac.buffer,
          data: bytes.buffer,
        });
      });
    },
    encrypt(algorithm: unknown, key: unknown, data: unknown) {
      return crypt("encrypt", algorithm, key, data, arguments.length);
    },
    decrypt(algorithm: unknown, key: unknown, data: unknown) {
      return crypt("decrypt", algorithm, key, data, arguments.length);
    },
  };
  const crypt = (op: "encrypt" | "decrypt", algorithm: unknown, key: unknown, data: unknown, count: number) => {
    const what = `crypto.subtle.${op}`;
    return promised(() => {
      required(count, 3, what);
      const { params } = normalize(algorithm, ["AES-GCM"], what);
      const parts = gcm(params, what);
      const bytes = bufferOf(data, `${what}: the data`);
      const slot = keyFor(key, "AES-GCM", op, what);
      return host({ op, key: copy(slot.bytes).buffer, data: bytes.buffer, ...parts });
    });
  };

  class SubtleCrypto {
    constructor() {
      if (!creating) throw new TypeErrorCtor("Illegal constructor");
      creating = false;
    }
  }
  for (const name of keys(subtleMethods)) {
    defineProperty(SubtleCrypto.prototype, name, {
      value: subtleMethods[name as keyof typeof subtleMethods],
      writable: true,
      enumerable: true,
      configurable: true,
    });
  }
  defineProperty(SubtleCrypto.prototype, Symbol.toStringTag, { value: "SubtleCrypto", configurable: true });
  creating = true;
  const subtle = new SubtleCrypto();
  const getter = getOwnPropertyDescriptor(
    {
      get subtle() {
        return subtle;
      },
    },
    "subtle",
  ) as PropertyDescriptor;
  defineProperty(G.Crypto.prototype, "subtle", {
    get: getter.get as () => unknown,
    enumerable: true,
    configurable: true,
  });
  kit.install("SubtleCrypto", SubtleCrypto);
  kit.install("CryptoKey", CryptoKey);
}
