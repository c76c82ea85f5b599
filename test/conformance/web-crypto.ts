/**
 * §13.5 `crypto.subtle` of a sandbox made with `webApis: true`: digests, HMAC and AES-GCM against published vectors
 * and the host platform's own WebCrypto (the oracle wherever the suite runs), keys that keep their bytes, the errors
 * WebCrypto names, and fuel and memory bounding the work. WPT's WebCryptoAPI tests are the model of what is checked.
 * @module
 */
import { describe, expect, it } from "vitest";
import type { RunCode, SandboxOptions } from "../../src/core/types.js";
import { ok, settle } from "./helpers.js";

const js = { language: "javascript" } as const;
const HEX = `const hex = (b) => Array.from(new Uint8Array(b), (x) => x.toString(16).padStart(2, "0")).join("");
const utf8 = (s) => new TextEncoder().encode(s);
const caught = async (p) => { try { await p; return "no error"; } catch (e) { return [e.name, e instanceof DOMException || e instanceof TypeError]; } };\n`;
const hex = (bytes: ArrayBuffer) => Array.from(new Uint8Array(bytes), (x) => x.toString(16).padStart(2, "0")).join("");

export function webCryptoSuite(sandbox: (settings: SandboxOptions) => RunCode): void {
  const runCode = sandbox({ webApis: true });

  describe("§13.5 crypto.subtle", () => {
    it("digest gives the FIPS 180 vectors of 'abc' for SHA-1, SHA-256, SHA-384 and SHA-512", async () => {
      const source = `${HEX}const data = utf8("abc");
      export default [await Promise.all(["SHA-1", "sha-256", { name: "SHA-384" }, "SHA-512"].map(async (h) =>
        hex(await crypto.subtle.digest(h, data)))), hex(await crypto.subtle.digest("SHA-256", new ArrayBuffer(0))),
        Object.prototype.toString.call(crypto.subtle), crypto.subtle === crypto.subtle]`;
      expect(await ok(runCode, source, js)).toEqual([
        [
          "a9993e364706816aba3e25717850c26c9cd0d89d",
          "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
          "cb00753f45a35e8bb5a03d699ac65007272c32ab0eded1631a8b605a43ff5bed8086072ba1e7cc2358baeca134c825a7",
          "ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a2192992a274fc1a836ba3c23a3feebbd454d4423643ce80e2a9ac94fa54ca49f",
        ],
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
        "[object SubtleCrypto]",
        true,
      ]);
    });

    it("HMAC signs as the host's WebCrypto does, verifies its own and the host's, and rejects a changed MAC", async () => {
      const key = new TextEncoder().encode("Jefe");
      const data = new TextEncoder().encode("what do ya want for nothing?");
      const hostKey = await crypto.subtle.importKey("raw", key, { name: "HMAC", hash: "SHA-512" }, false, ["sign"]);
      const expected = hex(await crypto.subtle.sign("HMAC", hostKey, data));
      const source = `${HEX}const key = await crypto.subtle.importKey("raw", utf8("Jefe"), { name: "HMAC", hash: "SHA-256" }, false, ["sign", "verify"]);
      const key512 = await crypto.subtle.importKey("raw", utf8("Jefe"), { name: "hmac", hash: { name: "SHA-512" } }, false, ["sign"]);
      const data = utf8("what do ya want for nothing?");
      const mac = await crypto.subtle.sign("HMAC", key, data);
      const bad = new Uint8Array(mac.slice(0)); bad[31] ^= 1;
      export default [hex(mac), hex(await crypto.subtle.sign({ name: "HMAC" }, key512, data)),
        await crypto.subtle.verify("HMAC", key, mac, data), await crypto.subtle.verify("HMAC", key, bad, data),
        await crypto.subtle.verify("HMAC", key, mac, utf8("other")), key.type, key.extractable, key.algorithm,
        key.usages, Object.prototype.toString.call(key)]`;
      expect(await ok(runCode, source, js)).toEqual([
        // RFC 4231, test case 2.
        "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843",
        expected,
        true,
        false,
        false,
        "secret",
        false,
        { name: "HMAC", hash: { name: "SHA-256" }, length: 32 },
        ["sign", "verify"],
        "[object CryptoKey]",
      ]);
    });

    it("AES-GCM round-trips, matches the host's WebCrypto, and refuses tampered data, tags and additional data", async () => {
      const raw = Uint8Array.from({ length: 32 }, (_, i) => i);
      const iv = Uint8Array.from({ length: 12 }, (_, i) => 100 + i);
      const hostKey = await crypto.subtle.importKey("raw", raw, "AES-GCM", false, ["encrypt"]);
      const params = { name: "AES-GCM", iv, additionalData: new TextEncoder().encode("head") };
      const expected = hex(await crypto.subtle.encrypt(params, hostKey, new TextEncoder().encode("secret message")));
      const source = `${HEX}const raw = Uint8Array.from({ length: 32 }, (_, i) => i);
      const iv = Uint8Array.from({ length: 12 }, (_, i) => 100 + i);
      const key = await crypto.subtle.importKey("raw", raw, { name: "AES-GCM" }, false, ["encrypt", "decrypt"]);
      const params = { name: "AES-GCM", iv, additionalData: utf8("head") };
      const sealed = await crypto.subtle.encrypt(params, key, utf8("secret message"));
      const opened = new TextDecoder().decode(await crypto.subtle.decrypt(params, key, sealed));
      const flipped = new Uint8Array(sealed.slice(0)); flipped[0] ^= 1;
      const tag = new Uint8Array(sealed.slice(0)); tag[tag.length - 1] ^= 1;
      const short = await crypto.subtle.encrypt({ name: "AES-GCM", iv, tagLength: 96 }, key, utf8(""));
      export default [hex(sealed), opened, await caught(crypto.subtle.decrypt(params, key, flipped)),
        await caught(crypto.subtle.decrypt(params, key, tag)),
        await caught(crypto.subtle.decrypt({ ...params, additionalData: utf8("Head") }, key, sealed)),
        short.byteLength, key.algorithm]`;
      expect(await ok(runCode, source, js)).toEqual([
        expected,
        "secret message",
        ["OperationError", true],
        ["OperationError", true],
        ["OperationError", true],
        12,
        { name: "AES-GCM", length: 256 },
      ]);
    });

    it("generateKey makes fresh keys of the asked length; exportKey gives raw bytes and JWKs that import back", async () => {
      const source = `${HEX}const hmac = await crypto.subtle.generateKey({ name: "HMAC", hash: "SHA-384" }, true, ["sign", "verify"]);
      const aes = await crypto.subtle.generateKey({ name: "AES-GCM", length: 128 }, true, ["encrypt", "decrypt"]);
      const again = await crypto.subtle.generateKey({ name: "AES-GCM", length: 128 }, true, ["encrypt"]);
      const jwk = await crypto.subtle.exportKey("jwk", hmac);
      const back = await crypto.subtle.importKey("jwk", jwk, { name: "HMAC", hash: "SHA-384" }, true, ["sign"]);
      const data = utf8("payload");
      const same = hex(await crypto.subtle.sign("HMAC", hmac, data)) === hex(await crypto.subtle.sign("HMAC", back, data));
      const aesJwk = await crypto.subtle.exportKey("jwk", aes);
      const rawAes = await crypto.subtle.exportKey("raw", aes);
      const fromJwk = await crypto.subtle.importKey("jwk", { kty: "oct", k: "AAECAwQFBgcICQoLDA0ODw", alg: "A128GCM" },
        "AES-GCM", true, ["decrypt"]);
      export default [hmac.algorithm, (await crypto.subtle.exportKey("raw", hmac)).byteLength, jwk.kty, jwk.alg, jwk.ext,
        jwk.key_ops, same, aes.algorithm, rawAes.byteLength, hex(rawAes) !== hex(await crypto.subtle.exportKey("raw", again)),
        [aesJwk.alg, aesJwk.k.length], hex(await crypto.subtle.exportKey("raw", fromJwk)),
        await crypto.subtle.exportKey("jwk", fromJwk)]`;
      expect(await ok(runCode, source, js)).toEqual([
        { name: "HMAC", hash: { name: "SHA-384" }, length: 1024 },
        128,
        "oct",
        "HS384",
        true,
        ["sign", "verify"],
        true,
        { name: "AES-GCM", length: 128 },
        16,
        true,
        ["A128GCM", 22],
        "000102030405060708090a0b0c0d0e0f",
        { alg: "A128GCM", ext: true, k: "AAECAwQFBgcICQoLDA0ODw", key_ops: ["decrypt"], kty: "oct" },
      ]);
    });

    it("refuses with WebCrypto's errors: wrong usages, unexportable keys, bad JWKs, unsupported algorithms", async () => {
      const source = `${HEX}const s = crypto.subtle;
      const signOnly = await s.importKey("raw", utf8("k"), { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
      const aes = await s.generateKey({ name: "AES-GCM", length: 256 }, false, ["encrypt"]);
      const iv = new Uint8Array(12);
      export default [
        await caught(s.verify("HMAC", signOnly, new Uint8Array(32), utf8("x"))),
        await caught(s.decrypt({ name: "AES-GCM", iv }, aes, new Uint8Array(32))),
        await caught(s.sign("HMAC", aes, utf8("x"))),
        await caught(s.exportKey("raw", signOnly)),
        await caught(s.exportKey("jwk", aes)),
        await caught(s.importKey("raw", utf8("k"), { name: "HMAC", hash: "SHA-256" }, false, ["encrypt"])),
        await caught(s.importKey("raw", utf8("k"), { name: "HMAC", hash: "SHA-256" }, false, [])),
        await caught(s.importKey("raw", utf8("k"), { name: "HMAC" }, false, ["sign"])),
        await caught(s.importKey("raw", new Uint8Array(20), "AES-GCM", false, ["encrypt"])),
        await caught(s.importKey("jwk", { kty: "RSA", k: "AAAA" }, { name: "HMAC", hash: "SHA-256" }, false, ["sign"])),
        await caught(s.importKey("jwk", { kty: "oct", k: "AAAA", alg: "HS512" }, { name: "HMAC", hash: "SHA-256" }, false, ["sign"])),
        await caught(s.importKey("jwk", { kty: "oct", k: "AAAA", ext: false }, { name: "HMAC", hash: "SHA-256" }, true, ["sign"])),
        await caught(s.importKey("spki", new Uint8Array(4), { name: "HMAC", hash: "SHA-256" }, false, ["sign"])),
        await caught(s.exportKey("pkcs8", signOnly)),
        await caught(s.exportKey("pkcs8", await s.importKey("raw", utf8("k"), { name: "HMAC", hash: "SHA-1" }, true, ["sign"]))),
        await caught(s.exportKey("pem", signOnly)),
        await caught(s.digest("MD5", utf8("x"))),
        await caught(s.digest("SHA-256", "not bytes")),
        await caught(s.generateKey({ name: "RSA-OAEP" }, false, ["encrypt"])),
        await caught(s.encrypt({ name: "AES-GCM", iv, tagLength: 100 }, aes, utf8("x"))),
        await caught(s.encrypt({ name: "AES-GCM" }, aes, utf8("x"))),
        await caught(s.sign("HMAC", {}, utf8("x"))),
        await caught(Promise.resolve().then(() => new CryptoKey())),
      ]`;
      expect(await ok(runCode, source, js)).toEqual([
        ["InvalidAccessError", true],
        ["InvalidAccessError", true],
        ["InvalidAccessError", true],
        ["InvalidAccessError", true],
        ["InvalidAccessError", true],
        ["SyntaxError", true],
        ["SyntaxError", true],
        ["TypeError", true],
        ["DataError", true],
        ["DataError", true],
        ["DataError", true],
        ["DataError", true],
        ["NotSupportedError", true],
        ["InvalidAccessError", true],
        ["NotSupportedError", true],
        ["TypeError", true],
        ["NotSupportedError", true],
        ["TypeError", true],
        ["NotSupportedError", true],
        ["OperationError", true],
        ["TypeError", true],
        ["TypeError", true],
        ["TypeError", true],
      ]);
    });

    it("a key's bytes stay out of reach: no property, prototype or JSON of a key shows them", async () => {
      const source = `const key = await crypto.subtle.importKey("raw", new Uint8Array([7, 7, 7, 7]), { name: "HMAC", hash: "SHA-1" }, false, ["sign"]);
      export default [Object.getOwnPropertyNames(key), Reflect.ownKeys(key).length, JSON.stringify(key),
        Object.getOwnPropertyNames(CryptoKey.prototype).sort()]`;
      expect(await ok(runCode, source, js)).toEqual([
        [],
        0,
        "{}",
        ["algorithm", "constructor", "extractable", "type", "usages"],
      ]);
    });

    it("the fuel charged grows with the bytes worked on, and huge inputs are stopped by fuel or memory", async () => {
      const frozen = sandbox({ webApis: true, safetyCap: { fuel: 200_000_000, cpuTimeMs: 1e9 }, clock: () => 0 });
      const spent = async (bytes: number) => {
        const source = `const data = new Uint8Array(1 << 20);
        await crypto.subtle.digest("SHA-256", data.subarray(0, ${bytes})); export default 0`;
        return (await settle(frozen, source, js)).fuelUsed as number;
      };
      const small = await spent(16);
      const large = await spent(1 << 20);
      // Half a unit a byte for the work (host-fuel.ts), a quarter for each copy out of the engine, and the guest's copy.
      expect(large - small).toBeGreaterThan((1 << 20) * 0.75);
      expect(large - small).toBeLessThan((1 << 20) * 4);
      const capped = sandbox({ webApis: true, safetyCap: { fuel: 5_000_000, cpuTimeMs: 1e9 }, clock: () => 0 });
      const huge = `await crypto.subtle.digest("SHA-256", new Uint8Array(16 << 20)); export default "digested"`;
      const stopped = await settle(capped, huge, js);
      expect([stopped.status, stopped.error?.message]).toEqual([
        "terminated",
        "Execution stopped by the safety cap after 5000000 units of fuel",
      ]);
      const tight = await settle(runCode, huge, { ...js, memoryLimitBytes: 24 << 20 });
      expect(tight.status).toBe("memory");
    });

    it("the bytes of operations not yet done are bounded by memoryLimitBytes: past it a call throws a RangeError", async () => {
      const source = `const data = new Uint8Array(2 << 20);
      const calls = [];
      for (let i = 0; i < 9; i++) calls.push(crypto.subtle.digest("SHA-256", data));
      const settled = await Promise.allSettled(calls);
      const after = await crypto.subtle.digest("SHA-256", data);
      export default [settled.map((s) => s.status === "fulfilled" ? s.value.byteLength : s.reason.name), after.byteLength]`;
      expect(await ok(runCode, source, { ...js, memoryLimitBytes: 16 << 20 })).toEqual([
        [32, 32, 32, 32, 32, 32, 32, 32, "RangeError"],
        32,
      ]);
    });
  });
}
