/**
 * `npm run bench:subtle`: the CPU of the platform's WebCrypto for the operations the guest's `crypto.subtle` hands the
 * host (core/subtle.ts), each as the host does it (HMAC and AES-GCM with their key's import), per call at 16 bytes and
 * per byte between 16 bytes and 1 MiB: the figures behind `subtleFuel` in core/host-fuel.ts. CPU is the process's,
 * so the platform's worker threads count.
 */
import { cpuUsage } from "node:process";

const { subtle } = globalThis.crypto;
const SMALL = new Uint8Array(16);
const LARGE = new Uint8Array(1 << 20);
const KEY = globalThis.crypto.getRandomValues(new Uint8Array(32));
const IV = new Uint8Array(12);

const cpuMs = () => {
  const { user, system } = cpuUsage();
  return (user + system) / 1000;
};

/** Nanoseconds of CPU per call of `work`, after a warm-up. */
async function perCall(calls: number, work: () => Promise<unknown>): Promise<number> {
  for (let i = 0; i < 50; i++) await work();
  const start = cpuMs();
  for (let i = 0; i < calls; i++) await work();
  return ((cpuMs() - start) * 1e6) / calls;
}

const operations: [string, (data: Uint8Array<ArrayBuffer>) => Promise<unknown>][] = [
  ...["SHA-1", "SHA-256", "SHA-384", "SHA-512"].map(
    (hash) =>
      [`digest ${hash}`, (data: Uint8Array<ArrayBuffer>) => subtle.digest(hash, data)] as [
        string,
        (data: Uint8Array<ArrayBuffer>) => Promise<unknown>,
      ],
  ),
  [
    "HMAC-SHA-256 sign",
    async (data) => {
      const key = await subtle.importKey("raw", KEY, { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
      return subtle.sign("HMAC", key, data);
    },
  ],
  [
    "AES-256-GCM encrypt",
    async (data) => {
      const key = await subtle.importKey("raw", KEY, "AES-GCM", false, ["encrypt"]);
      return subtle.encrypt({ name: "AES-GCM", iv: IV }, key, data);
    },
  ],
];

console.log("operation            us/call (16 B)   ns/byte");
for (const [name, work] of operations) {
  const small = await perCall(3000, () => work(SMALL));
  const large = await perCall(100, () => work(LARGE));
  console.log(
    `${name.padEnd(20)} ${(small / 1000).toFixed(1).padStart(14)} ${((large - small) / LARGE.length).toFixed(2).padStart(9)}`,
  );
}
