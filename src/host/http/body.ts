/**
 * Request bodies read within a size limit, for the HTTP app's reader of JSON bodies (`json-body.ts`). A
 * declared `content-length` over the limit is refused before anything is read; one within it is read in one step,
 * since the server's HTTP parser ends the body at the length declared; a body of undeclared length is counted chunk
 * by chunk and cancelled as soon as it passes the limit. A refused body costs the host at most the limit plus one
 * chunk, never the whole upload.
 * @module
 */

/** Why a body was refused. */
export type BodyRefusal = "too_large" | "not_utf8";

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

/** The body's bytes, or `undefined` when it is longer than `maxBytes` (then nothing more of it is kept). */
export async function readBytesWithin(request: Request, maxBytes: number): Promise<Uint8Array | undefined> {
  const declared = request.headers.get("content-length")?.trim();
  const length = declared !== undefined && /^[0-9]+$/.test(declared) ? Number(declared) : undefined;
  if (length !== undefined && length > maxBytes) {
    if (length <= 2 * maxBytes) await drain(request.body);
    else discard(request.body);
    return undefined;
  }
  if (length !== undefined && !request.headers.has("transfer-encoding")) {
    // In one step, without a web stream (on Node, reading a small body through one cost more than parsing it); the
    // length is checked again for a request made in-process, whose declared length nothing enforced.
    const bytes = new Uint8Array(await request.arrayBuffer());
    return bytes.byteLength > maxBytes ? undefined : bytes;
  }
  if (request.body === null) return new Uint8Array(0);
  const reader = request.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > maxBytes) {
      discard(reader);
      return undefined;
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
  if (bytes === undefined) return { refused: "too_large" };
  try {
    return strictDecoder.decode(bytes);
  } catch {
    return { refused: "not_utf8" };
  }
}
