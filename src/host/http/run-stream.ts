/**
 * A run or a session's cell as Server-Sent Events, for `Accept: text/event-stream` (`POST /run`,
 * `POST /sessions/:id/run`): the headers go out as soon as the work is admitted and started; then a `log` event for
 * each console entry (`{level, args, timestamp}`) and a `report` event for each reported value, as they happen, in
 * wire JSON and together no longer than the answer may be; last a `result` event, the answer the route gives as JSON.
 * A client that goes away stops the run, which releases its room; a run's room is kept after it ends until its client
 * has read the stream to its end (or gone away). Refusals come before the stream, with their own status, as for JSON.
 * @module
 */
import { resultWireText } from "../../core/result-wire.js";
import type { RunAnswer, RunEvent } from "../runs/run-once.js";
import { SSE_HEADERS } from "./route-context.js";

const encoder = new TextEncoder();

/** How a route starts its work for a stream: refusals throw, having run nothing; `answer` never rejects. */
type StartStreamed = (caller: {
  signal: AbortSignal;
  onEvent: (event: RunEvent) => void;
}) => Promise<{ answer: Promise<RunAnswer> }>;

/** The event stream of the work `start` starts; throws, having run nothing, when it is refused. */
export async function streamAnswer(start: StartStreamed, signal: AbortSignal): Promise<Response> {
  const gone = new AbortController();
  let controller!: ReadableStreamDefaultController<Uint8Array>;
  /** Set once the result event is queued: the stream closes, and the answer's room goes back, once it is read. */
  let release: (() => void) | undefined;
  const stream = new ReadableStream<Uint8Array>({
    start(c) {
      controller = c;
    },
    // Called whenever the client has read everything queued.
    pull() {
      if (release === undefined) return;
      release();
      controller.close();
    },
    cancel() {
      gone.abort();
      release?.();
    },
  });
  // Wire JSON text is one line: each event is one `data:` line.
  const send = (type: string, data: string) => {
    if (!gone.signal.aborted) controller.enqueue(encoder.encode(`event: ${type}\ndata: ${data}\n\n`));
  };
  const { answer } = await start({
    signal: AbortSignal.any([signal, gone.signal]),
    onEvent: (event) => send(event.type, event.data),
  });
  answer
    .then((answered) => {
      const done = answered.release ?? (() => {});
      if (gone.signal.aborted) return done();
      send("result", resultWireText(answered.result, answered.maxLength));
      release = done;
      // Read already (the client was waiting for it): the stream has nothing left to hold.
      if ((controller.desiredSize ?? 0) > 0) {
        release();
        controller.close();
      }
    })
    .catch((bug: unknown) => controller.error(bug));
  return new Response(stream, { headers: SSE_HEADERS });
}
