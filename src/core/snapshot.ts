/**
 * The binary format of a session snapshot: a small JSON header and a session's linear memory as a delta against the
 * booted image it restores into, checked by SHA-256 and versioned (docs/wire-format.md, "Session snapshots"). Pages
 * equal to the image's are not stored, nor zero pages where the image is zero; stored pages go in chunks, each
 * deflated or, when it looks incompressible, raw. Nothing here trusts the bytes it decodes: lengths are bounded by
 * the caller's memory before anything is allocated, and a deflate stream is read only up to the pages it claims.
 * Web APIs only (CompressionStream, crypto.subtle, DataView), so it runs the same on every host.
 * @module
 */

/** The format's version: a snapshot of another is refused. */
export const SNAPSHOT_FORMAT = 1;

/**
 * The unit of the delta: a page equal to the booted image's is not stored. 4 KiB finds a cell's scattered writes
 * (a 64 KiB page stores 16 times the bytes for one changed word) at a map cost of 2 bits per page.
 */
export const SNAPSHOT_PAGE_BYTES = 4096;

/** What a snapshot says about itself (JSON in the header). `engine` and `boot` name what instance it restores into. */
export interface SnapshotHeader {
  /** The package version, e.g. "0.1.0". */
  runcode: string;
  /** A fingerprint of the engine build and its booted layout. */
  engine: string;
  /** The boot key (webApis, fetch, boot modules). */
  boot: string;
  memoryLimitBytes: number;
  /** Paths of the host functions the options bound, by number. */
  functions: string[];
  cells: number;
  /** The linear memory that holds the state (its span in whole pages, 16 MiB at least): an adopting instance grows to it. */
  memoryBytes: number;
  /** Bytes of memory the body covers, from 0 (at most `memoryBytes`). */
  span: number;
}

/** The booted image a snapshot is a delta against: page contents by page index, `undefined` = all zero. */
export type BasePage = (index: number) => Uint8Array | undefined;

/** A checked snapshot, its stored pages inflated. */
export interface DecodedSnapshot {
  header: SnapshotHeader;
  /** Writes the state into `memory` (>= header.span long; bytes above span untouched): pages as stored, base pages elsewhere (or zeros). */
  writeInto(memory: Uint8Array, base: BasePage): void;
}

/** Bytes that are not a snapshot this runcode can restore: cut short, changed, of another version, or malformed. */
export class SnapshotError extends Error {
  override name = "SnapshotError";
  readonly code = "invalid_snapshot";
  constructor(problem: string) {
    super(`Invalid snapshot: ${problem}`);
  }
}

const MAGIC = new TextEncoder().encode("RCSN");
/** Magic, format (u16), whole length (u64), header length (u32). Magic and format come first in every format. */
const PRELUDE_BYTES = 18;
const DIGEST_BYTES = 32;
/** A header holds a few names and numbers; the bound stops a forged length from sizing an allocation. */
const MAX_HEADER_BYTES = 64 * 1024;
/**
 * Stored pages are cut into chunks of this many bytes, each deflated on its own: chunks inflate in parallel where the
 * platform's zlib runs off-thread (Node), each is stored raw when deflate does not pay, and each has an exact size,
 * so no stream inflates past its pages.
 */
const CHUNK_BYTES = 1024 * 1024;
/**
 * Above this many bits per byte (order-0 entropy of a sample) a chunk is stored raw without trying deflate: random or
 * already compressed data, which deflate would spend ~25 ms per MiB on to gain nothing (bench/snapshot.ts).
 */
const INCOMPRESSIBLE_BITS = 7.5;
/** Bytes of a chunk the entropy estimate reads, spread through it. */
const SAMPLE_BYTES = 64 * 1024;

/** A page's kind in the map, 2 bits each: its bytes are the image's (or zero), zero, or stored. */
const BASE = 0;
const ZERO = 1;
const STORED = 2;

/** A snapshot of `memory`'s first `header.span` bytes, against the booted image `base`. */
export async function encodeSnapshot(header: SnapshotHeader, memory: Uint8Array, base: BasePage): Promise<Uint8Array> {
  const problem = headerProblem(header, Number.POSITIVE_INFINITY);
  if (problem !== undefined) throw new TypeError(`encodeSnapshot: the header's ${problem}`);
  const { span } = header;
  if (memory.length < span)
    throw new RangeError(`encodeSnapshot: the memory (${memory.length} bytes) is short of the span ${span}`);
  const headerBytes = new TextEncoder().encode(JSON.stringify(header));
  if (headerBytes.length > MAX_HEADER_BYTES)
    throw new RangeError(`encodeSnapshot: the header is ${headerBytes.length} bytes, over ${MAX_HEADER_BYTES}`);
  const pages = Math.ceil(span / SNAPSHOT_PAGE_BYTES);
  const map = new Uint8Array(Math.ceil(pages / 4));
  const storedPages: Uint8Array[] = [];
  for (let index = 0; index < pages; index++) {
    const page = pageOf(memory, index, span);
    const kind = kindOf(page, basePage(base, index, page.length));
    map[index >> 2] = (map[index >> 2] as number) | (kind << ((index & 3) * 2));
    if (kind === STORED) storedPages.push(page);
  }
  const payload = new Uint8Array(sumOfLengths(storedPages));
  let at = 0;
  for (const page of storedPages) {
    payload.set(page, at);
    at += page.length;
  }
  const chunks = await Promise.all(chunksOf(payload).map(packChunk));
  const length =
    PRELUDE_BYTES + headerBytes.length + map.length + 4 * chunks.length + sumOfLengths(chunks) + DIGEST_BYTES;
  const bytes = new Uint8Array(length);
  const view = new DataView(bytes.buffer);
  bytes.set(MAGIC, 0);
  view.setUint16(4, SNAPSHOT_FORMAT, true);
  view.setBigUint64(6, BigInt(length), true);
  view.setUint32(14, headerBytes.length, true);
  at = PRELUDE_BYTES;
  bytes.set(headerBytes, at);
  at += headerBytes.length;
  bytes.set(map, at);
  at += map.length;
  for (const chunk of chunks) {
    view.setUint32(at, chunk.length, true);
    at += 4;
  }
  for (const chunk of chunks) {
    bytes.set(chunk, at);
    at += chunk.length;
  }
  bytes.set(new Uint8Array(await crypto.subtle.digest("SHA-256", bytes.subarray(0, at))), at);
  return bytes;
}

/**
 * Checks and decodes a snapshot taken by this runcode (`expected.runcode`) whose memory (`memoryBytes`, and so its
 * span) fits in `expected.maxMemoryBytes`, the most linear memory the restoring instance may have; refuses anything
 * else with a {@link SnapshotError}. The digest is checked before the header is read or anything inflated. Raw chunks
 * are read from `bytes` when written: they must not change until then.
 */
export async function decodeSnapshot(
  bytes: Uint8Array,
  expected: { runcode: string; maxMemoryBytes: number },
): Promise<DecodedSnapshot> {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (MAGIC.some((byte, i) => i < bytes.length && bytes[i] !== byte))
    throw new SnapshotError('not a runcode session snapshot (no "RCSN" at its start)');
  if (bytes.length < PRELUDE_BYTES) throw cutShort(bytes.length, PRELUDE_BYTES);
  const format = view.getUint16(4, true);
  if (format !== SNAPSHOT_FORMAT) throw new SnapshotError(`format ${format}, this reads ${SNAPSHOT_FORMAT}`);
  const length = Number(view.getBigUint64(6, true));
  if (bytes.length < length) throw cutShort(bytes.length, length);
  if (bytes.length > length) throw new SnapshotError(`${bytes.length - length} bytes past its end (${length} bytes)`);
  if (length < PRELUDE_BYTES + DIGEST_BYTES) throw new SnapshotError(`its length ${length} is short of any snapshot`);
  // Before the digest reads them all: no more bytes than the largest snapshot of the memory allowed.
  const { maxMemoryBytes } = expected;
  const largest =
    PRELUDE_BYTES +
    MAX_HEADER_BYTES +
    Math.ceil(maxMemoryBytes / SNAPSHOT_PAGE_BYTES / 4) +
    4 * Math.ceil(maxMemoryBytes / CHUNK_BYTES) +
    maxMemoryBytes +
    DIGEST_BYTES;
  if (length > largest)
    throw new SnapshotError(`its length ${length} is past any snapshot of ${maxMemoryBytes} bytes of memory`);
  const digest = new Uint8Array(
    await crypto.subtle.digest("SHA-256", bytes.subarray(0, length - DIGEST_BYTES) as Uint8Array<ArrayBuffer>),
  );
  if (digest.some((byte, i) => bytes[length - DIGEST_BYTES + i] !== byte))
    throw new SnapshotError("changed (checksum mismatch)");
  // From here the bytes are as an encoder wrote them: what is wrong was forged with a valid digest.
  const bodyEnd = length - DIGEST_BYTES;
  const headerLength = view.getUint32(14, true);
  if (headerLength > MAX_HEADER_BYTES) throw malformed(`its header is ${headerLength} bytes, over ${MAX_HEADER_BYTES}`);
  const header = parseHeader(slice(bytes, PRELUDE_BYTES, headerLength, bodyEnd), expected);
  const pages = Math.ceil(header.span / SNAPSHOT_PAGE_BYTES);
  const mapAt = PRELUDE_BYTES + headerLength;
  const map = slice(bytes, mapAt, Math.ceil(pages / 4), bodyEnd);
  const kinds = new Uint8Array(pages);
  let payloadBytes = 0;
  for (let index = 0; index < pages; index++) {
    const kind = ((map[index >> 2] as number) >> ((index & 3) * 2)) & 3;
    if (kind > STORED) throw malformed(`page ${index} is of kind ${kind}`);
    kinds[index] = kind;
    if (kind === STORED) payloadBytes += Math.min(SNAPSHOT_PAGE_BYTES, header.span - index * SNAPSHOT_PAGE_BYTES);
  }
  if (pages % 4 !== 0 && (map[map.length - 1] as number) >> ((pages % 4) * 2) !== 0)
    throw malformed("its page map has bits past its last page");
  const plainLengths = chunkLengths(payloadBytes);
  const tableAt = mapAt + map.length;
  slice(bytes, tableAt, 4 * plainLengths.length, bodyEnd);
  let at = tableAt + 4 * plainLengths.length;
  const stored: { bytes: Uint8Array; plainLength: number }[] = [];
  for (const [i, plainLength] of plainLengths.entries()) {
    const storedLength = view.getUint32(tableAt + 4 * i, true);
    if (storedLength > plainLength) throw malformed(`chunk ${i} is ${storedLength} bytes, over its ${plainLength}`);
    stored.push({ bytes: slice(bytes, at, storedLength, bodyEnd), plainLength });
    at += storedLength;
  }
  if (at !== bodyEnd) throw malformed(`${bodyEnd - at} bytes between its last chunk and its digest`);
  const chunks = await Promise.all(
    stored.map((chunk, i) =>
      chunk.bytes.length === chunk.plainLength ? chunk.bytes : inflate(chunk.bytes, chunk.plainLength, i),
    ),
  );
  return { header, writeInto: (memory, base) => writePages(memory, base, header.span, kinds, chunks) };
}

function writePages(memory: Uint8Array, base: BasePage, span: number, kinds: Uint8Array, chunks: Uint8Array[]): void {
  if (memory.length < span)
    throw new RangeError(`writeInto: the memory (${memory.length} bytes) is short of the span ${span}`);
  const pagesPerChunk = CHUNK_BYTES / SNAPSHOT_PAGE_BYTES;
  let storedIndex = 0;
  for (let index = 0; index < kinds.length; index++) {
    const start = index * SNAPSHOT_PAGE_BYTES;
    const end = Math.min(start + SNAPSHOT_PAGE_BYTES, span);
    const kind = kinds[index];
    if (kind === STORED) {
      const chunk = chunks[Math.floor(storedIndex / pagesPerChunk)] as Uint8Array;
      const at = (storedIndex % pagesPerChunk) * SNAPSHOT_PAGE_BYTES;
      memory.set(chunk.subarray(at, at + end - start), start);
      storedIndex++;
      continue;
    }
    const page = kind === BASE ? basePage(base, index, end - start) : undefined;
    if (page === undefined) memory.fill(0, start, end);
    else memory.set(page.subarray(0, end - start), start);
  }
}

/** Reads and checks the header: the version first, so a snapshot of another runcode says so whatever its shape. */
function parseHeader(bytes: Uint8Array, expected: { runcode: string; maxMemoryBytes: number }): SnapshotHeader {
  let value: unknown;
  try {
    value = JSON.parse(new TextDecoder("utf-8", { fatal: true, ignoreBOM: false }).decode(bytes));
  } catch {
    throw malformed("its header is not JSON");
  }
  const runcode = (value as { runcode?: unknown } | null)?.runcode;
  if (typeof runcode === "string" && runcode !== expected.runcode)
    throw new SnapshotError(`from runcode ${runcode}, this is ${expected.runcode}`);
  const problem = headerProblem(value, expected.maxMemoryBytes);
  if (problem !== undefined) throw malformed(`its header's ${problem}`);
  return value as SnapshotHeader;
}

const HEADER_FIELDS = ["runcode", "engine", "boot", "memoryLimitBytes", "functions", "cells", "memoryBytes", "span"];

/** What is wrong with a header, or `undefined`; the encoder and the decoder hold headers to the same rules. */
function headerProblem(value: unknown, maxMemoryBytes: number): string | undefined {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return "JSON is not an object";
  const header = value as Record<string, unknown>;
  const unknown = Object.keys(header).find((key) => !HEADER_FIELDS.includes(key));
  if (unknown !== undefined) return `field ${JSON.stringify(unknown)} is not one of a header's`;
  for (const key of ["runcode", "engine", "boot"] as const)
    if (typeof header[key] !== "string") return `${key} is not a string`;
  const { functions } = header;
  if (!Array.isArray(functions) || functions.some((path) => typeof path !== "string"))
    return "functions is not a list of strings";
  for (const key of ["memoryLimitBytes", "cells", "memoryBytes", "span"] as const) {
    const number = header[key];
    if (typeof number !== "number" || !Number.isSafeInteger(number) || number < 0)
      return `${key} is not a whole number`;
  }
  const { span, memoryBytes } = header as unknown as SnapshotHeader;
  if (span > memoryBytes) return `span ${span} is past its memoryBytes ${memoryBytes}`;
  if (memoryBytes > maxMemoryBytes) return `memoryBytes ${memoryBytes} is past the ${maxMemoryBytes} allowed`;
  return undefined;
}

/** Inflates a chunk that must come to exactly `length` bytes, reading no further than that. */
async function inflate(bytes: Uint8Array, length: number, index: number): Promise<Uint8Array> {
  const stream = new DecompressionStream("deflate-raw");
  const writer = stream.writable.getWriter();
  // A failure to inflate shows on the readable side; the writer's own rejection says the same.
  writer
    .write(bytes as Uint8Array<ArrayBuffer>)
    .then(() => writer.close())
    .catch(() => undefined);
  const reader = stream.readable.getReader();
  const out = new Uint8Array(length);
  let at = 0;
  try {
    for (let read = await reader.read(); !read.done; read = await reader.read()) {
      if (read.value.length > length - at) throw malformed(`chunk ${index} inflates past its ${length} bytes`);
      out.set(read.value, at);
      at += read.value.length;
    }
  } catch (error) {
    reader.cancel().catch(() => undefined);
    if (error instanceof SnapshotError) throw error;
    throw malformed(`chunk ${index} does not inflate (${error instanceof Error ? error.message : String(error)})`);
  }
  if (at !== length) throw malformed(`chunk ${index} inflates to ${at} bytes, short of its ${length}`);
  return out;
}

/** A chunk as stored: deflated when that makes it smaller, else itself (its stored length then equals its own). */
async function packChunk(chunk: Uint8Array<ArrayBuffer>): Promise<Uint8Array> {
  if (looksIncompressible(chunk)) return chunk;
  const deflated = new Uint8Array(
    await new Response(new Blob([chunk]).stream().pipeThrough(new CompressionStream("deflate-raw"))).arrayBuffer(),
  );
  return deflated.length < chunk.length ? deflated : chunk;
}

/** Order-0 entropy of a sample above {@link INCOMPRESSIBLE_BITS}; an odd stride samples every byte lane of words. */
function looksIncompressible(bytes: Uint8Array): boolean {
  const counts = new Uint32Array(256);
  const stride = Math.max(1, Math.floor(bytes.length / SAMPLE_BYTES)) | 1;
  let samples = 0;
  for (let i = 0; i < bytes.length; i += stride, samples++) {
    const byte = bytes[i] as number;
    counts[byte] = (counts[byte] as number) + 1;
  }
  let bits = 0;
  for (const count of counts) if (count > 0) bits -= (count / samples) * Math.log2(count / samples);
  return bits > INCOMPRESSIBLE_BITS;
}

function chunksOf(payload: Uint8Array<ArrayBuffer>): Uint8Array<ArrayBuffer>[] {
  return chunkLengths(payload.length).map((length, i) => payload.subarray(i * CHUNK_BYTES, i * CHUNK_BYTES + length));
}

function chunkLengths(payloadBytes: number): number[] {
  const count = Math.ceil(payloadBytes / CHUNK_BYTES);
  return Array.from({ length: count }, (_, i) => Math.min(CHUNK_BYTES, payloadBytes - i * CHUNK_BYTES));
}

function pageOf(memory: Uint8Array, index: number, span: number): Uint8Array {
  const start = index * SNAPSHOT_PAGE_BYTES;
  return memory.subarray(start, Math.min(start + SNAPSHOT_PAGE_BYTES, span));
}

/** The image's page `index`, checked to cover `length` bytes. */
function basePage(base: BasePage, index: number, length: number): Uint8Array | undefined {
  const page = base(index);
  if (page !== undefined && page.length < length)
    throw new RangeError(`the base's page ${index} is ${page.length} bytes, short of ${length}`);
  return page;
}

/** Zero pages are the image's where it is zero too, else stored as zero: either way they cost no body bytes. */
function kindOf(page: Uint8Array, base: Uint8Array | undefined): number {
  if (base !== undefined && sameBytes(page, base)) return BASE;
  if (sameBytes(page, undefined)) return base === undefined ? BASE : ZERO;
  return STORED;
}

/** Whether `page` equals the start of `other` (all zeros when `undefined`), a word at a time where aligned. */
function sameBytes(page: Uint8Array, other: Uint8Array | undefined): boolean {
  let i = 0;
  if (page.byteOffset % 4 === 0 && (other === undefined || other.byteOffset % 4 === 0)) {
    const words = page.length >> 2;
    const a = new Int32Array(page.buffer, page.byteOffset, words);
    if (other === undefined) {
      for (; i < words; i++) if (a[i] !== 0) return false;
    } else {
      const b = new Int32Array(other.buffer, other.byteOffset, words);
      for (; i < words; i++) if (a[i] !== b[i]) return false;
    }
    i = words << 2;
  }
  for (; i < page.length; i++) if (page[i] !== (other?.[i] ?? 0)) return false;
  return true;
}

function sumOfLengths(parts: Uint8Array[]): number {
  return parts.reduce((sum, part) => sum + part.length, 0);
}

/** `length` bytes from `at`, refused when they run past `end`. */
function slice(bytes: Uint8Array, at: number, length: number, end: number): Uint8Array {
  if (at + length > end) throw malformed(`its sections run past its body (${at + length} of ${end} bytes)`);
  return bytes.subarray(at, at + length);
}

function cutShort(has: number, needs: number): SnapshotError {
  return new SnapshotError(`cut short (${has} of ${needs} bytes)`);
}

function malformed(problem: string): SnapshotError {
  return new SnapshotError(`malformed: ${problem}`);
}
