/**
 * `npm run bench:snapshot`: the session snapshot format alone (src/core/snapshot.ts), encode and decode (checking,
 * inflating, writing the pages back) of 1, 10 and 64 MiB of live data of three kinds: random (incompressible),
 * zero-filled, and heap-like (objects of pointers, numbers and short strings). The memory holds a booted image of
 * {@link IMAGE_BYTES} (heap-like, the base the delta is against) and the live data above it, in a memory of at least
 * {@link MEMORY_BYTES}. Then deflate-raw alone on 10 MiB of random data: what storing such chunks raw saves.
 */
import { type BasePage, decodeSnapshot, encodeSnapshot, SNAPSHOT_PAGE_BYTES } from "../src/core/snapshot.js";
import { printTable, type Summary, sample, summarize } from "./stats.js";

const MiB = 1024 * 1024;
const IMAGE_BYTES = MiB;
const MEMORY_BYTES = 16 * MiB;
const SIZES = [1, 10, 64];
const ROUNDS = 5;

function random(length: number): Uint8Array {
  const bytes = new Uint8Array(length);
  for (let at = 0; at < length; at += 65536) crypto.getRandomValues(bytes.subarray(at, at + 65536));
  return bytes;
}

/** 64-byte objects as an engine lays them out: a header word, pointers near each other, a double, a short string. */
function heapLike(length: number, seed: number): Uint8Array {
  const bytes = new Uint8Array(length);
  const view = new DataView(bytes.buffer);
  const text = new TextEncoder();
  for (let at = 0, i = seed; at + 64 <= length; at += 64, i++) {
    view.setUint32(at, 0x0001_0003, true);
    view.setUint32(at + 4, 0x0010_0000 + at + 64, true);
    view.setUint32(at + 8, 0x0010_0000 + ((i * 7) % 1000) * 64, true);
    view.setUint32(at + 12, i, true);
    view.setFloat64(at + 16, i / 3, true);
    text.encodeInto(`{"id":${i},"name":"item-${i % 977}"}`.slice(0, 40), bytes.subarray(at + 24, at + 64));
  }
  return bytes;
}

const image = heapLike(IMAGE_BYTES, 0);
const base: BasePage = (index) => {
  const start = index * SNAPSHOT_PAGE_BYTES;
  return start < IMAGE_BYTES ? image.subarray(start, start + SNAPSHOT_PAGE_BYTES) : undefined;
};

const KINDS = {
  random,
  zero: (length: number) => new Uint8Array(length),
  "heap-like": (length: number) => heapLike(length, 1_000_000),
} as const;

const rows: Summary[] = [];
const sizes: string[] = [];
for (const mib of SIZES) {
  for (const [kind, make] of Object.entries(KINDS)) {
    const live = mib * MiB;
    const span = IMAGE_BYTES + live;
    const memory = new Uint8Array(Math.max(MEMORY_BYTES, span));
    memory.set(image);
    memory.set(make(live), IMAGE_BYTES);
    const header = {
      runcode: "0.1.0",
      engine: "bench",
      boot: "",
      memoryLimitBytes: memory.length,
      functions: [],
      cells: 1,
      memoryBytes: memory.length,
      span,
    };
    const expected = { runcode: "0.1.0", maxMemoryBytes: memory.length };
    let bytes = await encodeSnapshot(header, memory, base);
    const target = new Uint8Array(memory.length);
    const rounds = mib >= 64 ? 3 : ROUNDS;
    const encode = await sample(rounds, async () => {
      bytes = await encodeSnapshot(header, memory, base);
    });
    const decode = await sample(rounds, async () => (await decodeSnapshot(bytes, expected)).writeInto(target, base));
    if (!target.subarray(0, span).every((byte, i) => byte === memory[i])) throw new Error("the round trip differs");
    rows.push(summarize(`${mib} MiB ${kind}: encode`, encode), summarize(`${mib} MiB ${kind}: decode + write`, decode));
    sizes.push(
      `${`${mib} MiB ${kind}`.padEnd(20)} ${String(bytes.length).padStart(10)} bytes  ${(bytes.length / live).toFixed(4)}x live`,
    );
  }
}
printTable(rows);
console.log(`\nsnapshot size (live data above a ${IMAGE_BYTES / MiB} MiB image, pages of ${SNAPSHOT_PAGE_BYTES})`);
for (const line of sizes) console.log(line);

/** deflate-raw (or inflate) of `bytes` whole, as one stream. */
async function through(stream: CompressionStream | DecompressionStream, bytes: Uint8Array<ArrayBuffer>) {
  return new Uint8Array(await new Response(new Blob([bytes]).stream().pipeThrough(stream)).arrayBuffer());
}
const noise = random(10 * MiB) as Uint8Array<ArrayBuffer>;
let deflated = new Uint8Array();
const deflate = await sample(3, async () => {
  deflated = await through(new CompressionStream("deflate-raw"), noise);
});
const inflate = await sample(3, () => through(new DecompressionStream("deflate-raw"), deflated));
console.log();
printTable([
  summarize("10 MiB random, deflate-raw alone", deflate),
  summarize("10 MiB random, inflate alone", inflate),
]);
console.log(`deflated: ${deflated.length} bytes (${(deflated.length / noise.length).toFixed(4)}x)`);
