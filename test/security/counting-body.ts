/**
 * A request body the test controls, for the body-limit tests in Node (`http-bodies.test.ts`) and inside workerd
 * (`test/workers/abuse.test.ts`): made only as the reader pulls, it counts the bytes handed over and whether the
 * reader cancelled it. Platform-neutral (no imports).
 * @module
 */

/** The size of each piece the stream hands over. */
export const CHUNK_BYTES = 64 * 1024;

/** What the reader took: bytes pulled so far, and whether it cancelled the stream. */
export interface BodyCount {
  pulled: number;
  cancelled: boolean;
}

/** A body of `total` bytes, `head` and then spaces (which JSON allows after a value), in pieces of `chunkBytes`. */
export function countingBody(
  total: number,
  head = "{}",
  chunkBytes = CHUNK_BYTES,
): { stream: ReadableStream<Uint8Array>; count: BodyCount } {
  const prefix = new TextEncoder().encode(head);
  const count: BodyCount = { pulled: 0, cancelled: false };
  const stream = new ReadableStream<Uint8Array>(
    {
      pull(controller) {
        if (count.pulled >= total) return controller.close();
        const chunk = new Uint8Array(Math.min(chunkBytes, total - count.pulled)).fill(0x20);
        if (count.pulled < prefix.length) chunk.set(prefix.subarray(count.pulled, count.pulled + chunk.length));
        count.pulled += chunk.length;
        controller.enqueue(chunk);
      },
      cancel() {
        count.cancelled = true;
      },
    },
    { highWaterMark: 0 },
  );
  return { stream, count };
}
