/**
 * The session snapshot format (src/core/snapshot.ts): memory round trips byte for byte as a delta against the booted
 * image, and every snapshot that is cut short, changed by one bit, of another version, malformed or forged to inflate
 * past its pages is refused with "invalid_snapshot" before anything is sized by it.
 */
import { constants, deflateRawSync } from "node:zlib";
import { afterEach, describe, expect, it, vi } from "vitest";
import {
  type BasePage,
  decodeSnapshot,
  encodeSnapshot,
  SNAPSHOT_FORMAT,
  SNAPSHOT_PAGE_BYTES,
  SnapshotError,
  type SnapshotHeader,
} from "../../src/core/snapshot.js";

const PAGE = SNAPSHOT_PAGE_BYTES;
const KiB = 1024;
const MiB = 1024 * KiB;
const EXPECTED = { runcode: "0.1.0", maxMemoryBytes: 16 * MiB };
/** Offsets of the prelude (docs/wire-format.md): magic, format u16, length u64, header length u32. */
const FORMAT_AT = 4;
const LENGTH_AT = 6;
const HEADER_LENGTH_AT = 14;
const PRELUDE = 18;
const DIGEST = 32;

/** Deterministic bytes that do not compress (xorshift32). */
function noise(length: number, seed = 1): Uint8Array {
  const bytes = new Uint8Array(length);
  let x = seed;
  for (let i = 0; i < length; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    bytes[i] = x & 0xff;
  }
  return bytes;
}

/** Text that compresses well. */
function text(length: number): Uint8Array {
  const line = new TextEncoder().encode('{"id":1,"name":"item","tags":["a","b"]}\n');
  return Uint8Array.from({ length }, (_, i) => line[i % line.length] as number);
}

/** A booted image of `pages` noise pages (`undefined` past it). */
function imageOf(pages: number): { image: Uint8Array; base: BasePage } {
  const image = noise(pages * PAGE, 99);
  return { image, base: (i) => (i < pages ? image.subarray(i * PAGE, (i + 1) * PAGE) : undefined) };
}

const NO_BASE: BasePage = () => undefined;

function headerOf(span: number, memoryBytes = Math.max(span, MiB), runcode = "0.1.0"): SnapshotHeader {
  return {
    runcode,
    engine: "engine-1",
    boot: "web",
    memoryLimitBytes: 8 * MiB,
    functions: ["tools.search", "log"],
    cells: 3,
    memoryBytes,
    span,
  };
}

async function sha256(bytes: Uint8Array): Promise<Uint8Array> {
  return new Uint8Array(await crypto.subtle.digest("SHA-256", bytes as Uint8Array<ArrayBuffer>));
}

/** A snapshot assembled by hand, its length and digest made valid: a forgery only the decoder's checks can catch. */
async function forge(parts: {
  header: unknown;
  map: Uint8Array;
  table: number[];
  chunks: Uint8Array[];
  format?: number;
  headerText?: string;
}): Promise<Uint8Array> {
  const header = new TextEncoder().encode(parts.headerText ?? JSON.stringify(parts.header));
  const body = [header, parts.map, new Uint8Array(4 * parts.table.length), ...parts.chunks];
  const length = PRELUDE + body.reduce((sum, part) => sum + part.length, 0) + DIGEST;
  const bytes = new Uint8Array(length);
  const view = new DataView(bytes.buffer);
  bytes.set(new TextEncoder().encode("RCSN"));
  view.setUint16(FORMAT_AT, parts.format ?? SNAPSHOT_FORMAT, true);
  view.setBigUint64(LENGTH_AT, BigInt(length), true);
  view.setUint32(HEADER_LENGTH_AT, header.length, true);
  let at = PRELUDE;
  for (const part of body) {
    bytes.set(part, at);
    at += part.length;
  }
  const tableAt = PRELUDE + header.length + parts.map.length;
  for (const [i, stored] of parts.table.entries()) view.setUint32(tableAt + 4 * i, stored, true);
  return reseal(bytes);
}

/** Makes the digest match the bytes again. */
async function reseal(bytes: Uint8Array): Promise<Uint8Array> {
  bytes.set(await sha256(bytes.subarray(0, bytes.length - DIGEST)), bytes.length - DIGEST);
  return bytes;
}

/** Decodes, expecting a refusal; its message. */
async function refusal(bytes: Uint8Array, expected = EXPECTED): Promise<string> {
  const error = await decodeSnapshot(bytes, expected).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(SnapshotError);
  expect((error as SnapshotError).code).toBe("invalid_snapshot");
  expect((error as SnapshotError).name).toBe("SnapshotError");
  return (error as SnapshotError).message;
}

/** Decodes into a memory of garbage; the bytes it holds after. */
async function restored(bytes: Uint8Array, base: BasePage, length: number): Promise<Uint8Array> {
  const decoded = await decodeSnapshot(bytes, EXPECTED);
  const memory = new Uint8Array(length).fill(0xa5);
  decoded.writeInto(memory, base);
  return memory;
}

describe("round trip", () => {
  const { image, base } = imageOf(24);
  const cases: [string, () => Uint8Array, number, BasePage][] = [
    ["random, no image", () => noise(300 * KiB), 300 * KiB, NO_BASE],
    ["zero over an image", () => new Uint8Array(100 * KiB), 100 * KiB, base],
    [
      "mixed: image, changed, zeroed, text, noise, past the image; span not a multiple of the page",
      () => {
        const memory = new Uint8Array(40 * PAGE);
        memory.set(image);
        memory.set(noise(3 * PAGE, 7), 2 * PAGE); // changed pages
        memory.fill(0, 6 * PAGE, 9 * PAGE); // zero where the image is not
        memory[12 * PAGE + 5] = (memory[12 * PAGE + 5] as number) ^ 1; // one changed byte
        memory.set(text(8 * PAGE), 20 * PAGE); // compressible, across the image's end
        memory.set(noise(5 * PAGE, 3), 30 * PAGE);
        return memory;
      },
      37 * PAGE + 123,
      base,
    ],
    [
      "1.5 MiB of noise and text: more than one chunk",
      () => {
        const memory = noise(3 * MiB, 5);
        memory.set(text(MiB), 2 * MiB);
        return memory;
      },
      3 * MiB - 1,
      NO_BASE,
    ],
  ];
  for (const [name, make, span, basePages] of cases) {
    it(`${name}: the span byte for byte, nothing above it touched`, async () => {
      const memory = make();
      const header = headerOf(span, 4 * MiB);
      const bytes = await encodeSnapshot(header, memory, basePages);
      const decoded = await decodeSnapshot(bytes, EXPECTED);
      expect(decoded.header).toEqual(header);
      const target = new Uint8Array(span + 2 * PAGE).fill(0xa5);
      decoded.writeInto(target, basePages);
      expect(Buffer.from(target.subarray(0, span)).equals(Buffer.from(memory.subarray(0, span)))).toBe(true);
      expect(target.subarray(span).every((byte) => byte === 0xa5)).toBe(true);
    });
  }

  it("an empty span", async () => {
    const bytes = await encodeSnapshot(headerOf(0), new Uint8Array(0), NO_BASE);
    const decoded = await decodeSnapshot(bytes, EXPECTED);
    expect(decoded.header.span).toBe(0);
    const memory = new Uint8Array(4).fill(7);
    decoded.writeInto(memory, NO_BASE);
    expect([...memory]).toEqual([7, 7, 7, 7]);
  });
});

describe("size", () => {
  const { image, base } = imageOf(256);
  const overhead = 1024;

  it("stores only the pages that differ from the image", async () => {
    const memory = image.slice();
    memory.set(noise(PAGE, 11), 10 * PAGE);
    memory.set(noise(PAGE, 12), 200 * PAGE);
    const bytes = await encodeSnapshot(headerOf(memory.length), memory, base);
    expect(bytes.length).toBeGreaterThan(2 * PAGE);
    expect(bytes.length).toBeLessThan(2 * PAGE + overhead);
    expect(Buffer.from(await restored(bytes, base, memory.length)).equals(Buffer.from(memory))).toBe(true);
  });

  it("zero pages cost no body bytes, over an image or not", async () => {
    const memory = image.slice();
    memory.fill(0, 0, 100 * PAGE);
    const bytes = await encodeSnapshot(headerOf(2 * MiB), new Uint8Array(2 * MiB), NO_BASE);
    expect(bytes.length).toBeLessThan(overhead);
    const overImage = await encodeSnapshot(headerOf(memory.length), memory, base);
    expect(overImage.length).toBeLessThan(overhead);
    expect(Buffer.from(await restored(overImage, base, memory.length)).equals(Buffer.from(memory))).toBe(true);
  });

  it("incompressible data costs itself plus the header (stored raw)", async () => {
    const memory = noise(2 * MiB, 21);
    const bytes = await encodeSnapshot(headerOf(memory.length), memory, NO_BASE);
    expect(bytes.length).toBeGreaterThan(memory.length);
    expect(bytes.length).toBeLessThan(memory.length + overhead);
  });

  it("compressible data is deflated", async () => {
    const memory = text(2 * MiB);
    const bytes = await encodeSnapshot(headerOf(memory.length), memory, NO_BASE);
    expect(bytes.length).toBeLessThan(memory.length / 50);
  });
});

describe("refusals", () => {
  /** A snapshot with every section: header, map of all kinds, a table of two chunks (one raw, one deflated). */
  async function sample() {
    const { image, base } = imageOf(8);
    const memory = new Uint8Array(MiB + 20 * PAGE + 100);
    memory.set(image);
    memory.fill(0, PAGE, 2 * PAGE);
    memory.set(noise(MiB, 4), 8 * PAGE);
    memory.set(text(12 * PAGE), 8 * PAGE + MiB);
    const bytes = await encodeSnapshot(headerOf(memory.length), memory, base);
    const view = new DataView(bytes.buffer);
    const mapAt = PRELUDE + view.getUint32(HEADER_LENGTH_AT, true);
    const pages = Math.ceil(memory.length / PAGE);
    const tableAt = mapAt + Math.ceil(pages / 4);
    const chunksAt = tableAt + 8;
    return { bytes, mapAt, tableAt, chunksAt, deflatedAt: chunksAt + view.getUint32(tableAt, true) };
  }

  it("a snapshot as encoded decodes (the sample the refusals change)", async () => {
    const { bytes, chunksAt, deflatedAt } = await sample();
    expect((await decodeSnapshot(bytes, EXPECTED)).header).toEqual(headerOf(MiB + 20 * PAGE + 100));
    // the first chunk (noise) is raw, the second (text) deflated
    expect(deflatedAt - chunksAt).toBe(MiB);
    expect(bytes.length - DIGEST - deflatedAt).toBeLessThan(12 * PAGE + 8 * PAGE);
  });

  it("every single-bit flip, in every section", async () => {
    const { bytes, mapAt, tableAt, chunksAt, deflatedAt } = await sample();
    const sections = [0, 3, 4, 5, 6, 13, 14, 17, PRELUDE, PRELUDE + 10, mapAt - 1, mapAt, tableAt - 1, tableAt];
    const more = [tableAt + 7, chunksAt, chunksAt + 1000, deflatedAt - 1, deflatedAt, deflatedAt + 3];
    const ends = [bytes.length - DIGEST - 1, bytes.length - DIGEST, bytes.length - 1];
    const spread = Array.from({ length: 48 }, (_, i) => Math.floor((i * bytes.length) / 48));
    for (const at of [...sections, ...more, ...ends, ...spread]) {
      const changed = bytes.slice();
      changed[at] = (changed[at] as number) ^ (1 << (at % 8));
      const message = await refusal(changed);
      if (at >= PRELUDE) expect(message, `flip at ${at}`).toBe("Invalid snapshot: changed (checksum mismatch)");
    }
  });

  it("cut short in every section", async () => {
    const { bytes, mapAt, tableAt, chunksAt, deflatedAt } = await sample();
    for (const cut of [0, 2, 5, 10, 17]) {
      expect(await refusal(bytes.subarray(0, cut))).toBe(`Invalid snapshot: cut short (${cut} of ${PRELUDE} bytes)`);
    }
    const ends = [bytes.length - DIGEST, bytes.length - 1];
    for (const cut of [PRELUDE, PRELUDE + 9, mapAt + 1, tableAt + 3, chunksAt + 500, deflatedAt + 1, ...ends]) {
      expect(await refusal(bytes.subarray(0, cut))).toBe(
        `Invalid snapshot: cut short (${cut} of ${bytes.length} bytes)`,
      );
    }
  });

  it("bytes past its end", async () => {
    const { bytes } = await sample();
    const longer = new Uint8Array(bytes.length + 3);
    longer.set(bytes);
    expect(await refusal(longer)).toBe(`Invalid snapshot: 3 bytes past its end (${bytes.length} bytes)`);
  });

  it("not a snapshot", async () => {
    const { bytes } = await sample();
    const other = bytes.slice();
    other[3] = "X".charCodeAt(0);
    const message = 'Invalid snapshot: not a runcode session snapshot (no "RCSN" at its start)';
    expect(await refusal(await reseal(other))).toBe(message);
    expect(await refusal(new TextEncoder().encode("{}"))).toBe(message);
  });

  it("another format", async () => {
    const { bytes } = await sample();
    const other = bytes.slice();
    new DataView(other.buffer).setUint16(FORMAT_AT, SNAPSHOT_FORMAT + 1, true);
    expect(await refusal(await reseal(other))).toBe(`Invalid snapshot: format 2, this reads ${SNAPSHOT_FORMAT}`);
  });

  it("another runcode version", async () => {
    const bytes = await encodeSnapshot(headerOf(PAGE, MiB, "0.0.9"), noise(PAGE), NO_BASE);
    expect(await refusal(bytes)).toBe("Invalid snapshot: from runcode 0.0.9, this is 0.1.0");
  });

  it("bytes past the largest snapshot of the restore's memory, before the digest reads them", async () => {
    const bytes = await encodeSnapshot(headerOf(2 * MiB, 2 * MiB), noise(2 * MiB), NO_BASE);
    const digest = vi.spyOn(crypto.subtle, "digest");
    try {
      expect(await refusal(bytes, { runcode: "0.1.0", maxMemoryBytes: MiB })).toBe(
        `Invalid snapshot: its length ${bytes.length} is past any snapshot of 1048576 bytes of memory`,
      );
      expect(digest).not.toHaveBeenCalled();
    } finally {
      digest.mockRestore();
    }
  });

  it("a memory past the restore's bound, before anything is sized by it", async () => {
    const bytes = await encodeSnapshot(headerOf(2 * MiB, 2 * MiB), new Uint8Array(2 * MiB), NO_BASE);
    expect(await refusal(bytes, { runcode: "0.1.0", maxMemoryBytes: MiB })).toBe(
      "Invalid snapshot: malformed: its header's memoryBytes 2097152 is past the 1048576 allowed",
    );
    // A forged span of 1 TiB: refused without a page map of 2^28 pages or anything else of its size.
    const huge = 2 ** 40;
    const forged = await forge({ header: headerOf(huge, huge), map: new Uint8Array(0), table: [], chunks: [] });
    expect(await refusal(forged)).toBe(
      `Invalid snapshot: malformed: its header's memoryBytes ${huge} is past the ${EXPECTED.maxMemoryBytes} allowed`,
    );
    const past = await forge({ header: headerOf(2 * PAGE, PAGE), map: new Uint8Array(1), table: [], chunks: [] });
    expect(await refusal(past)).toBe(
      `Invalid snapshot: malformed: its header's span ${2 * PAGE} is past its memoryBytes ${PAGE}`,
    );
  });

  it("malformed headers, maps and tables", async () => {
    const empty = { map: new Uint8Array(0), table: [], chunks: [] };
    const cases: [Promise<Uint8Array>, string][] = [
      [forge({ ...empty, header: null, headerText: "{not json" }), "its header is not JSON"],
      [
        forge({ ...empty, header: null, headerText: `"${"x".repeat(70_000)}"` }),
        "its header is 70002 bytes, over 65536",
      ],
      [forge({ ...empty, header: [1] }), "its header's JSON is not an object"],
      [
        forge({ ...empty, header: { ...headerOf(0), extra: 1 } }),
        `its header's field "extra" is not one of a header's`,
      ],
      [forge({ ...empty, header: { ...headerOf(0), engine: 1 } }), "its header's engine is not a string"],
      [
        forge({ ...empty, header: { ...headerOf(0), functions: [1] } }),
        "its header's functions is not a list of strings",
      ],
      [forge({ ...empty, header: { ...headerOf(0), cells: -1 } }), "its header's cells is not a whole number"],
      [forge({ ...empty, header: { ...headerOf(0), span: 0.5 } }), "its header's span is not a whole number"],
      // one page, of kind 3
      [forge({ ...empty, header: headerOf(PAGE), map: Uint8Array.of(3) }), "page 0 is of kind 3"],
      // one page (base) and bits set for a second
      [
        forge({ ...empty, header: headerOf(PAGE), map: Uint8Array.of(0b0100) }),
        "its page map has bits past its last page",
      ],
      // one stored page whose chunk claims more than a page
      [
        forge({ header: headerOf(PAGE), map: Uint8Array.of(2), table: [PAGE + 1], chunks: [new Uint8Array(PAGE + 1)] }),
        `chunk 0 is ${PAGE + 1} bytes, over its ${PAGE}`,
      ],
      [
        forge({ header: headerOf(PAGE), map: Uint8Array.of(2), table: [], chunks: [] }),
        "its sections run past its body",
      ],
      [
        forge({ header: headerOf(PAGE), map: Uint8Array.of(2), table: [10], chunks: [new Uint8Array(10)] }),
        "chunk 0 does not inflate",
      ],
      [
        forge({ header: headerOf(PAGE), map: Uint8Array.of(2), table: [PAGE], chunks: [new Uint8Array(PAGE + 5)] }),
        "5 bytes between its last chunk and its digest",
      ],
      [
        forge({
          header: headerOf(PAGE),
          map: Uint8Array.of(2),
          table: [deflateRawSync(new Uint8Array(100)).length],
          chunks: [deflateRawSync(new Uint8Array(100))],
        }),
        "chunk 0 inflates to 100 bytes, short of its 4096",
      ],
    ];
    for (const [forged, problem] of cases) {
      expect(await refusal(await forged)).toContain(`Invalid snapshot: malformed: ${problem}`);
    }
  });
});

describe("a deflate stream that inflates past its pages", () => {
  afterEach(() => vi.unstubAllGlobals());

  it("is refused once it passes them, not inflated whole", async () => {
    // 900 MiB of zeros in under 1 MiB: flushed blocks of 1 MiB each, then an empty final block.
    const block = deflateRawSync(new Uint8Array(MiB), { finishFlush: constants.Z_SYNC_FLUSH });
    const final = deflateRawSync(new Uint8Array(0));
    const bomb = new Uint8Array(900 * block.length + final.length);
    for (let i = 0; i < 900; i++) bomb.set(block, i * block.length);
    bomb.set(final, 900 * block.length);
    expect(bomb.length).toBeLessThan(MiB);
    const span = MiB;
    const forged = await forge({
      header: headerOf(span),
      map: new Uint8Array(span / PAGE / 4).fill(0b1010_1010), // every page stored
      table: [bomb.length],
      chunks: [bomb],
    });
    let inflated = 0;
    const Real = globalThis.DecompressionStream;
    vi.stubGlobal(
      "DecompressionStream",
      class {
        readonly writable: WritableStream<BufferSource>;
        readonly readable: ReadableStream<Uint8Array>;
        constructor(format: CompressionFormat) {
          const inner = new Real(format);
          this.writable = inner.writable;
          this.readable = inner.readable.pipeThrough(
            new TransformStream<Uint8Array, Uint8Array>({
              transform(chunk, controller) {
                inflated += chunk.length;
                controller.enqueue(chunk);
              },
            }),
          );
        }
      },
    );
    expect(await refusal(forged)).toBe(`Invalid snapshot: malformed: chunk 0 inflates past its ${span} bytes`);
    expect(inflated).toBeGreaterThan(span);
    expect(inflated).toBeLessThan(span + MiB);
  });
});

describe("caller errors", () => {
  it("encoding refuses a bad header or a short memory", async () => {
    await expect(encodeSnapshot({ ...headerOf(PAGE), cells: -1 }, new Uint8Array(PAGE), NO_BASE)).rejects.toThrow(
      new TypeError("encodeSnapshot: the header's cells is not a whole number"),
    );
    await expect(encodeSnapshot(headerOf(2 * PAGE), new Uint8Array(PAGE), NO_BASE)).rejects.toThrow(
      new RangeError(`encodeSnapshot: the memory (${PAGE} bytes) is short of the span ${2 * PAGE}`),
    );
  });

  it("writing refuses a memory short of the span", async () => {
    const decoded = await decodeSnapshot(await encodeSnapshot(headerOf(PAGE), noise(PAGE), NO_BASE), EXPECTED);
    expect(() => decoded.writeInto(new Uint8Array(PAGE - 1), NO_BASE)).toThrow(
      new RangeError(`writeInto: the memory (${PAGE - 1} bytes) is short of the span ${PAGE}`),
    );
  });
});
