/**
 * A process's event stream as Server-Sent Events bytes: a snapshot of the record, then every event until `exit`.
 * Made where the process runs (the process service in Node, the process's Durable Object on the edge) and handed to
 * the HTTP app as a stream, so a slow reader is dropped there, never buffered without end.
 * @module
 */
import type { ExecutionExitState } from "../../environment/types.js";
import type { HostState, ProcessRecord } from "./storage.js";

/** What a process tells its watchers, in order. */
export type ProcessEvent =
  | { type: "snapshot"; pid: number; record: ProcessRecord }
  | { type: "state"; pid: number; state: HostState; exitState: ExecutionExitState | null }
  | { type: "stdout" | "stderr"; pid: number; data: string }
  | { type: "output"; pid: number; patch: Record<string, unknown> }
  | { type: "exit"; pid: number; exitState: ExecutionExitState; error: string | null };

export type ProcessListener = (event: ProcessEvent) => void;

/**
 * Bytes of events an event stream holds for a client that reads slower than the process writes, beyond the snapshot.
 * Past it the client is dropped: its stream ends with a `dropped` event and the process forgets it.
 */
export const EVENT_STREAM_BUFFER_BYTES = 1_048_576;

/** What an event stream asks of the process service. */
export interface Watchable {
  watch(pid: number, listener: ProcessListener): Promise<{ unsubscribe(): void; ended: boolean } | undefined>;
}

const encoder = new TextEncoder();
/** An event's SSE frame, encoded once however many streams send it (each stream gets the same event object). */
const frames = new WeakMap<ProcessEvent, Uint8Array>();
const frame = (type: string, data: unknown) => encoder.encode(`event: ${type}\ndata: ${JSON.stringify(data)}\n\n`);
function frameOf(event: ProcessEvent): Uint8Array {
  let bytes = frames.get(event);
  if (bytes === undefined) {
    const { type, ...data } = event;
    // A snapshot shows the record as `GET /processes/:pid` does: without its tenant (the reader is that tenant).
    if (event.type === "snapshot") {
      const { tenant: _tenant, ...record } = event.record;
      bytes = frame(type, { ...data, record });
    } else bytes = frame(type, data);
    frames.set(event, bytes);
  }
  return bytes;
}

/** The stream of `pid`'s events, or `undefined` when there is no such process. */
export async function eventStream(service: Watchable, pid: number): Promise<ReadableStream<Uint8Array> | undefined> {
  let controller!: ReadableStreamDefaultController<Uint8Array>;
  let closed = false;
  let unsubscribe = () => {};
  /** Bytes the stream may hold: the snapshot, and EVENT_STREAM_BUFFER_BYTES of events after it. */
  let room = EVENT_STREAM_BUFFER_BYTES;
  const close = () => {
    if (closed) return;
    closed = true;
    unsubscribe();
    controller.close();
  };
  // A zero high-water mark: `desiredSize` is minus the bytes the client has not read yet.
  const stream = new ReadableStream<Uint8Array>(
    {
      start(c) {
        controller = c;
      },
      cancel() {
        closed = true;
        unsubscribe();
      },
    },
    { highWaterMark: 0, size: (chunk) => chunk.byteLength },
  );
  const send = (event: ProcessEvent) => {
    if (closed) return;
    const bytes = frameOf(event);
    const waiting = -(controller.desiredSize ?? 0);
    if (event.type === "snapshot") room += bytes.byteLength;
    else if (waiting + bytes.byteLength > room) {
      const reason = `the client read too slowly: ${waiting} bytes of events were waiting, at most ${room} are kept`;
      controller.enqueue(frame("dropped", { pid, reason }));
      close();
      return;
    }
    controller.enqueue(bytes);
    if (event.type === "exit") close();
  };
  const watching = await service.watch(pid, send);
  if (watching === undefined) return undefined;
  unsubscribe = watching.unsubscribe;
  // Closed while subscribing (the snapshot was the exit's): `close` ran before it could unsubscribe.
  if (closed) unsubscribe();
  else if (watching.ended) close();
  return stream;
}
