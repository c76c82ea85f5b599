/**
 * The host half of the guest's `crypto.subtle` (guest/web-subtle.ts): the work on bytes, done by the platform's own
 * WebCrypto (`globalThis.crypto.subtle`: Node 20, workerd and browsers have it). The guest keeps its keys and checks
 * every argument; each operation arrives as a record (`OP_SUBTLE`) carrying the key's bytes, which the host imports
 * for that operation alone and forgets. A failure of the platform's crosses as an error of WebCrypto's name with a
 * message of ours, the same on every platform.
 * @module
 */

const HASHES: readonly string[] = ["SHA-1", "SHA-256", "SHA-384", "SHA-512"];
const TAG_LENGTHS: readonly number[] = [32, 64, 96, 104, 112, 120, 128];

/** One operation the guest asks for. */
type SubtleRecord =
  | { op: "digest"; hash: string; data: ArrayBuffer }
  | { op: "sign"; hash: string; key: ArrayBuffer; data: ArrayBuffer }
  | { op: "verify"; hash: string; key: ArrayBuffer; signature: ArrayBuffer; data: ArrayBuffer }
  | {
      op: "encrypt" | "decrypt";
      key: ArrayBuffer;
      data: ArrayBuffer;
      iv: ArrayBuffer;
      additionalData: ArrayBuffer | null;
      tagLength: number;
    };

/** The bytes an operation's work reads (what its fuel counts, see host-fuel.ts). */
export function subtleBytes(record: unknown): number {
  if (typeof record !== "object" || record === null) return 0;
  let bytes = 0;
  for (const value of Object.values(record)) if (value instanceof ArrayBuffer) bytes += value.byteLength;
  return bytes;
}

/** Does the operation of `record` with the platform's WebCrypto: a digest, a MAC, a verdict or AES-GCM's output. */
export async function subtleWork(record: unknown): Promise<ArrayBuffer | boolean> {
  const checked = check(record);
  const { subtle } = crypto;
  try {
    switch (checked.op) {
      case "digest":
        return await subtle.digest(checked.hash, checked.data);
      case "sign":
      case "verify": {
        const algorithm = { name: "HMAC", hash: checked.hash };
        const key = await subtle.importKey("raw", checked.key, algorithm, false, [checked.op]);
        if (checked.op === "sign") return await subtle.sign("HMAC", key, checked.data);
        return await subtle.verify("HMAC", key, checked.signature, checked.data);
      }
      case "encrypt":
      case "decrypt": {
        const key = await subtle.importKey("raw", checked.key, "AES-GCM", false, [checked.op]);
        const { iv, tagLength, additionalData } = checked;
        const params = { name: "AES-GCM", iv, tagLength, ...(additionalData === null ? {} : { additionalData }) };
        return await subtle[checked.op](params, key, checked.data);
      }
    }
  } catch (error) {
    throw failure(checked.op, error);
  }
}

/** The record as the guest half makes it; anything else is a fault of the guest half's. */
function check(record: unknown): SubtleRecord {
  const r = (typeof record === "object" && record !== null ? record : {}) as Record<string, unknown>;
  const buffer = (value: unknown) => value instanceof ArrayBuffer;
  const hash = typeof r.hash === "string" && HASHES.includes(r.hash);
  const aesKey = r.key instanceof ArrayBuffer && (r.key.byteLength === 16 || r.key.byteLength === 32);
  const valid =
    buffer(r.data) &&
    (r.op === "digest"
      ? hash
      : r.op === "sign" || r.op === "verify"
        ? hash && buffer(r.key) && (r.op === "sign" || buffer(r.signature))
        : (r.op === "encrypt" || r.op === "decrypt") &&
          aesKey &&
          buffer(r.iv) &&
          (r.additionalData === null || buffer(r.additionalData)) &&
          TAG_LENGTHS.includes(r.tagLength as number));
  if (!valid) throw new TypeError("crypto.subtle: a malformed request reached the host");
  return r as unknown as SubtleRecord;
}

/** The platform's failure as the guest sees it: WebCrypto's name, our message (platforms word theirs apart). */
function failure(op: SubtleRecord["op"], error: unknown): Error {
  const name = error instanceof Error || (typeof error === "object" && error !== null) ? (error as Error).name : "";
  const failed = new Error(
    op === "decrypt"
      ? "crypto.subtle.decrypt: the data could not be decrypted (a wrong key, iv, additional data or tag)"
      : `crypto.subtle.${op}: the operation failed`,
  );
  failed.name = typeof name === "string" && name.endsWith("Error") ? name : "OperationError";
  return failed;
}
