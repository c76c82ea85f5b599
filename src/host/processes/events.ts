/**
 * A process's event stream as Server-Sent Events bytes: a snapshot of the record, then every event until `exit`.
 * Made where the process runs (the process service in Node, the process's Durable Object on the edge) and handed to
 * the HTTP app as a stream, so a slow reader is dropped there, never buffered without end.
 *
 * The snapshot is written as the client reads it: its large fields a chunk at a time (from the store, or the active
 * process's text as it was when the stream began), so a stream nobody reads holds the summary and the events after
 * it, never a copy of the record.
 * @module
 */
import type { ExecutionExitState } from "../../environment/types.js";
import { type HostState, type LargeField, type ProcessSummary, recordJson } from "./storage.js";

/** What a process tells its watchers, in order. */
export type ProcessEvent =
  | {
      type: "snapshot";
      pid: number;
      /** The record without its large fields, which `read` gives a chunk at a time. */
      record: ProcessSummary;
      read(field: LargeField): AsyncIterable<string>;
    }
  | { type: "state"; pid: number; state: HostState; exitState: ExecutionExitState | null }
  | { type: "stdout" | "stderr"; pid: number; data: string }
  | { type: "output"; pid: number; patch: Record<string, unknown> }
  | { type: "exit"; pid: number; exitState: ExecutionExitState; error: string | null };

export type ProcessListener = (event: ProcessEvent) => void;

/**
 * Bytes of events an event stream holds for a client that reads slower than the process writes (the snapshot is read
 * as the client takes it, a chunk at a time). Past it the client is dropped: its stream ends with a `dropped` event
 * and the process forgets it.
 */
const EVENT_STREAM_BUFFER_BYTES = 1_048_576;

/** What an event stream asks of the process service. */
interface Watchable {
  watch(pid: number, listener: ProcessListener): Promise<{ unsubscribe(): void; ended: boolean } | undefined>;
}

const encoder = new TextEncoder();
type StreamedEvent = Exclude<ProcessEvent, { type: "snapshot" }>;

/** An event's SSE frame, encoded once however many streams send it (each stream gets the same event object). */
const frames = new WeakMap<StreamedEvent, Uint8Array>();
const frame = (type: string, data: unknown) => encoder.encode(`event: ${type}\ndata: ${JSON.stringify(data)}\n\n`);
function frameOf(event: StreamedEvent): Uint8Array {
  let bytes = frames.get(event);
  if (bytes === undefined) {
    const { type, ...data } = event;
    bytes = frame(type, data);
    frames.set(event, bytes);
  }
  return bytes;
}

/** The snapshot's frame, a piece at a time: the record as `GET /processes/:pid` shows it (without the tenant). */
async function* snapshotFrame(event: Extract<ProcessEvent, { type: "snapshot" }>): AsyncGenerator<string> {
  yield `event: snapshot\ndata: {"pid":${event.pid},"record":`;
  yield* recordJson(event.record, event.read);
  yield "}\n\n";
}

/** The stream of `pid`'s events, or `undefined` when there is no such process. */
export async function eventStream(service: Watchable, pid: number): Promise<ReadableStream<Uint8Array> | undefined> {
  let controller!: ReadableStreamDefaultController<Uint8Array>;
  let closed = false;
  let unsubscribe = () => {};
  /** The snapshot's pieces not yet read; events wait behind it in `held`. */
  let snapshot: AsyncIterator<string> | undefined;
  const held: Uint8Array[] = [];
  let heldBytes = 0;
  /** The exit (or the drop) came while the snapshot was being read: close once it and what is held are out. */
  let exited = false;
  const close = () => {
    if (closed) return;
    closed = true;
    unsubscribe();
    void snapshot?.return?.();
    controller.close();
  };
  const release = () => {
    for (const bytes of held) controller.enqueue(bytes);
    held.length = 0;
    heldBytes = 0;
    if (exited) close();
  };
  // A zero high-water mark: `desiredSize` is minus the bytes the client has not read yet, and the snapshot's next
  // piece is made only when the client asks for it.
  const stream = new ReadableStream<Uint8Array>(
    {
      start(c) {
        controller = c;
      },
      async pull() {
        if (closed || snapshot === undefined) return;
        const next = await snapshot.next();
        if (closed) return;
        if (next.done) {
          snapshot = undefined;
          release();
        } else controller.enqueue(encoder.encode(next.value));
      },
      cancel() {
        closed = true;
        unsubscribe();
        void snapshot?.return?.();
      },
    },
    { highWaterMark: 0, size: (chunk) => chunk.byteLength },
  );
  const send = (event: ProcessEvent) => {
    if (closed || exited) return;
    if (event.type === "snapshot") {
      snapshot = snapshotFrame(event)[Symbol.asyncIterator]();
      return;
    }
    const bytes = frameOf(event);
    const waiting = snapshot === undefined ? -(controller.desiredSize ?? 0) : heldBytes;
    if (waiting + bytes.byteLength > EVENT_STREAM_BUFFER_BYTES) {
      const reason = `the client read too slowly: ${waiting} bytes of events were waiting, at most ${EVENT_STREAM_BUFFER_BYTES} are kept`;
      const dropped = frame("dropped", { pid, reason });
      if (snapshot === undefined) {
        controller.enqueue(dropped);
        close();
        return;
      }
      // The snapshot's frame is finished first (a chunk at a time, as the client reads), then what was held and
      // the drop end it.
      unsubscribe();
      held.push(dropped);
      exited = true;
      return;
    }
    if (snapshot !== undefined) {
      held.push(bytes);
      heldBytes += bytes.byteLength;
      if (event.type === "exit") exited = true;
      return;
    }
    controller.enqueue(bytes);
    if (event.type === "exit") close();
  };
  const watching = await service.watch(pid, send);
  if (watching === undefined) return undefined;
  unsubscribe = watching.unsubscribe;
  // Closed while subscribing: `close` ran before it could unsubscribe.
  if (closed) unsubscribe();
  else if (watching.ended) {
    if (snapshot === undefined) close();
    else exited = true;
  }
  return stream;
}
