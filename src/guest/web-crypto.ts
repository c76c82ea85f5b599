/**
 * `crypto.getRandomValues` and `crypto.randomUUID` (WebCrypto) of a sandbox made with `webApis: true`: the bytes
 * come from the host's platform `crypto.getRandomValues`, at most 65,536 a call, as WebCrypto bounds it. `crypto.subtle`
 * is web-subtle.ts. Shipped as source text (see core.ts).
 * @module
 */
import type { HostCall } from "./core.js";
import type { WebKit } from "./web-kit.js";

export function guestWebCrypto(hostCall: HostCall, kit: WebKit): void {
  // biome-ignore lint/suspicious/noRedundantUseStrict: shipped as source text and evaluated as a sloppy script.
  "use strict";
  const OP_RANDOM = 6;
  const MAX_RANDOM_BYTES = 65536;
  const { apply } = Reflect;
  const { defineProperty, getOwnPropertyDescriptor, getPrototypeOf } = Object;
  const TypeErrorCtor = TypeError;
  const U8 = Uint8Array;
  const { isView } = ArrayBuffer;
  const { DOMException } = kit;
  const EMPTY: unknown[] = [];
  const TypedArrayProto = getPrototypeOf(U8.prototype) as object;
  const typedTag = getOwnPropertyDescriptor(TypedArrayProto, Symbol.toStringTag)?.get as () => unknown;
  const typedBytes = getOwnPropertyDescriptor(TypedArrayProto, "byteLength")?.get as () => number;
  const INTEGER_ARRAYS = [
    "Int8Array",
    "Uint8Array",
    "Uint8ClampedArray",
    "Int16Array",
    "Uint16Array",
    "Int32Array",
    "Uint32Array",
    "BigInt64Array",
    "BigUint64Array",
  ];

  /** `count` random bytes from the host. */
  const random = (count: number) => new U8(hostCall(OP_RANDOM, count, "", EMPTY) as ArrayBuffer);

  let creating = false;
  class Crypto {
    constructor() {
      if (!creating) throw new TypeErrorCtor("Illegal constructor");
      creating = false;
    }
    getRandomValues<T>(array: T): T {
      kit.required(arguments.length, 1, "crypto.getRandomValues");
      const kind = apply(typedTag, array, []);
      let integer = false;
      for (let i = 0; i < INTEGER_ARRAYS.length; i++) if (INTEGER_ARRAYS[i] === kind) integer = true;
      if (!integer) {
        if (kind === undefined && !isView(array)) {
          throw new TypeErrorCtor("crypto.getRandomValues: the argument must be an integer typed array");
        }
        throw new DOMException(
          "crypto.getRandomValues: the argument must be an integer typed array",
          "TypeMismatchError",
        );
      }
      const bytes = kit.bytesOf(array, "crypto.getRandomValues: the argument");
      // Through the engine's own getter: the guest may have replaced the prototype's.
      const length = apply(typedBytes, bytes, []) as number;
      if (length > MAX_RANDOM_BYTES) {
        throw new DOMException(
          `crypto.getRandomValues: the array's ${length} bytes exceed the ${MAX_RANDOM_BYTES} bytes of entropy a call may ask for`,
          "QuotaExceededError",
        );
      }
      bytes.set(random(length));
      return array;
    }
    randomUUID(): string {
      const bytes = random(16);
      bytes[6] = ((bytes[6] as number) & 0x0f) | 0x40;
      bytes[8] = ((bytes[8] as number) & 0x3f) | 0x80;
      let out = "";
      for (let i = 0; i < 16; i++) {
        if (i === 4 || i === 6 || i === 8 || i === 10) out += "-";
        out += ((bytes[i] as number) + 0x100).toString(16).slice(1);
      }
      return out;
    }
  }
  defineProperty(Crypto.prototype, Symbol.toStringTag, { value: "Crypto", configurable: true });
  creating = true;
  const crypto = new Crypto();
  kit.install("Crypto", Crypto);
  kit.install("crypto", crypto);
}
