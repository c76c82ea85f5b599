/**
 * `npm run bench:subtle`: the CPU of the platform's WebCrypto for the operations the guest's `crypto.subtle` hands the
 * host (core/subtle.ts), each as the host does it (HMAC and AES-GCM with their key's import), per call at 16 bytes and
 * per byte between 16 bytes and 1 MiB; then the same operations asked from the guest, with the fuel they were charged:
 * the figures behind `subtleFuel` in core/host-fuel.ts. CPU is the process's, so the platform's threads count.
 */
import { cpuUsage } from "node:process";
import { createSandbox, nodeWasm } from "../node/index.js";

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

// The same operations asked from the guest, in-thread: CPU and fuel per call of a loop of them (the call's fee in
// host-fuel.ts is the CPU the engine and the other charges leave uncounted, at ~4 ns a unit).
const sandbox = createSandbox({ wasm: nodeWasm, webApis: true, threads: false });
const js = { language: "javascript" } as const;
const GUEST_CALLS = 500;
const guestCases: [string, string, string][] = [
  ["digest SHA-256", "", `await crypto.subtle.digest("SHA-256", data)`],
  [
    "HMAC-SHA-256 sign",
    `const key = await crypto.subtle.importKey("raw", new Uint8Array(32), { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);`,
    `await crypto.subtle.sign("HMAC", key, data)`,
  ],
  [
    "AES-256-GCM encrypt",
    `const key = await crypto.subtle.generateKey({ name: "AES-GCM", length: 256 }, false, ["encrypt"]);
    const iv = new Uint8Array(12);`,
    `await crypto.subtle.encrypt({ name: "AES-GCM", iv }, key, data)`,
  ],
];
console.log("\nfrom the guest, 16 B    us/call   units/call");
for (const [name, setup, call] of guestCases) {
  const source = (calls: number) =>
    `const data = new Uint8Array(16); ${setup} for (let i = 0; i < ${calls}; i++) ${call}; export default 0`;
  await sandbox.runCode(source(GUEST_CALLS), js);
  const base = await sandbox.runCode(source(0), js);
  const start = cpuMs();
  const run = await sandbox.runCode(source(GUEST_CALLS), js);
  const us = ((cpuMs() - start) * 1000) / GUEST_CALLS;
  const units = ((run.fuelUsed ?? 0) - (base.fuelUsed ?? 0)) / GUEST_CALLS;
  console.log(`${name.padEnd(20)} ${us.toFixed(0).padStart(10)} ${units.toFixed(0).padStart(12)}`);
}
