/**
 * Request bodies read within a size limit, for the HTTP app's reader of JSON bodies (`json-body.ts`). A
 * declared `content-length` over the limit is refused before anything is read; one within it is read in one step,
 * since the server's HTTP parser ends the body at the length declared; a body of undeclared length is counted chunk
 * by chunk and cancelled as soon as it passes the limit, or comes in more chunks than the limit holds at
 * {@link MIN_CHUNK_BYTES} each. A refused body costs the host at most the limit plus one chunk, never the whole upload.
 * @module
 */

/** Why a body was refused. */
export type BodyRefusal = "too_large" | "too_many_chunks" | "not_utf8";

/**
 * The size of chunk a body of undeclared length is allowed for: it may come in as many chunks as its limit holds of
 * these (64 at least). Each chunk is host work and host memory whatever its size: a 1 MiB body sent as chunks of one
 * byte (six bytes each on the wire) cost `runcode serve`'s event loop 3.7 s and 234 MB of heap before.
 */
export const MIN_CHUNK_BYTES = 1024;

/** Chunks a body of undeclared length within `maxBytes` may come in. */
export const maxChunksWithin = (maxBytes: number): number => Math.max(64, Math.ceil(maxBytes / MIN_CHUNK_BYTES));

/** Strict: bytes that are not UTF-8 are refused, never turned into U+FFFD (which would run or store text nobody sent). */
const strictDecoder = new TextDecoder("utf-8", { fatal: true, ignoreBOM: false });

/** `application/json`, with or without parameters (`; charset=utf-8`), and nothing else. */
export function isJsonContentType(headers: Headers): boolean {
  const type = (headers.get("content-type") ?? "").split(";")[0]?.trim().toLowerCase();
  return type === "application/json";
}

/** Releases a body the host will not read; not awaited, as a source's `cancel` may never settle. */
function discard(stream: ReadableStream<Uint8Array> | ReadableStreamDefaultReader<Uint8Array> | null): void {
  stream?.cancel().catch(() => {});
}

/**
 * Reads and drops a refused body that is at most twice the limit: leaving it unread broke the next request on the
 * client's kept-alive connection under `wrangler dev` (503 "Your worker restarted mid-request"). Larger ones are
 * cancelled unread.
 */
async function drain(stream: ReadableStream<Uint8Array> | null): Promise<void> {
  if (stream === null) return;
  const reader = stream.getReader();
  try {
    while (!(await reader.read()).done);
  } catch {
    // The client went away: nothing left to keep usable.
  }
}

/** The body's bytes, or why it was refused (then nothing more of it is kept). */
async function readBytesWithin(
  request: Request,
  maxBytes: number,
): Promise<Uint8Array | Exclude<BodyRefusal, "not_utf8">> {
  const declared = request.headers.get("content-length")?.trim();
  const length = declared !== undefined && /^[0-9]+$/.test(declared) ? Number(declared) : undefined;
  if (length !== undefined && length > maxBytes) {
    if (length <= 2 * maxBytes) await drain(request.body);
    else discard(request.body);
    return "too_large";
  }
  if (length !== undefined && !request.headers.has("transfer-encoding")) {
    // In one step, without a web stream (on Node, reading a small body through one cost more than parsing it); the
    // length is checked again for a request made in-process, whose declared length nothing enforced.
    const bytes = new Uint8Array(await request.arrayBuffer());
    return bytes.byteLength > maxBytes ? "too_large" : bytes;
  }
  if (request.body === null) return new Uint8Array(0);
  const reader = request.body.getReader();
  const chunks: Uint8Array[] = [];
  const maxChunks = maxChunksWithin(maxBytes);
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    const refusal = total > maxBytes ? "too_large" : chunks.length === maxChunks ? "too_many_chunks" : undefined;
    if (refusal !== undefined) {
      discard(reader);
      return refusal;
    }
    chunks.push(value);
  }
  if (chunks.length === 1) return chunks[0] as Uint8Array;
  const bytes = new Uint8Array(total);
  let offset = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return bytes;
}

/** The body as text, read within `maxBytes` and decoded as strict UTF-8; or why it was refused. */
export async function readTextWithin(request: Request, maxBytes: number): Promise<string | { refused: BodyRefusal }> {
  const bytes = await readBytesWithin(request, maxBytes);
  if (typeof bytes === "string") return { refused: bytes };
  try {
    return strictDecoder.decode(bytes);
  } catch {
    return { refused: "not_utf8" };
  }
}
