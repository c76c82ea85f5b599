/**
 * The call channel of a worker thread (node/threads/call-channel.ts), both of its ends driven from this thread: a
 * call and its answer cross in shared memory, cleared once read; what does not fit, or holds buffers, crosses by
 * message, exactly; an answer is taken only for its own call; and lengths in the buffer are checked before use.
 */
import { MessageChannel } from "node:worker_threads";
import { describe, expect, it } from "vitest";
import { CallChannel, HEADER_BYTES, PAYLOAD_BYTES } from "../../node/threads/call-channel.js";
import type { Call, CallOutcome } from "../../node/threads/protocol.js";

/** A worker's end and the caller's end of one channel. */
function channel() {
  const { port1, port2 } = new MessageChannel();
  const caller = new CallChannel(port1);
  return { caller, worker: new CallChannel(port2, caller.buffer) };
}

const call = (tape: string, side: ArrayBuffer[] = []): Call => ({
  run: 7,
  request: { op: "call", fn: 3 },
  value: { tape, side },
});

/** The payload's bytes, as the other thread sees them. */
const payload = (buffer: SharedArrayBuffer) => new Uint8Array(buffer, HEADER_BYTES, PAYLOAD_BYTES);

/** Publishes `sent` from the worker's end, answers it with `outcome` from the caller's; what each end received. */
function roundTrip(sent: Call, outcome: CallOutcome, number = 1) {
  const { caller, worker } = channel();
  const wakes: number[] = [];
  worker.publish(number, sent, () => wakes.push(number));
  expect(caller.pending()).toBe(number);
  const received = caller.call(number);
  caller.answer(number, outcome);
  expect(caller.pending()).toBe(0);
  worker.awaitAnswer(number, 0);
  return { received, answer: worker.answerTo(number), wakes, buffer: caller.buffer };
}

describe("the call channel", () => {
  it("carries a call and its answer in shared memory, and clears what was read", () => {
    const outcome: CallOutcome = { ok: true, value: { tape: '{"t":"o"}', side: [4] } };
    const { received, answer, wakes, buffer } = roundTrip(call('["a",[1,"x"]]'), outcome);
    expect(received).toEqual(call('["a",[1,"x"]]'));
    expect(answer).toEqual(outcome);
    // Nobody watched on the caller's side: the worker woke it.
    expect(wakes).toEqual([1]);
    expect(payload(buffer).every((byte) => byte === 0)).toBe(true);
  });

  it("does not wake the caller's thread while it watches", () => {
    const { caller, worker } = channel();
    caller.watch(true);
    const wakes: number[] = [];
    worker.publish(1, call("1"), () => wakes.push(1));
    expect(wakes).toEqual([]);
    expect(caller.pending()).toBe(1);
  });

  it("carries calls and answers that do not fit, or hold buffers, by message, exactly", () => {
    // A lone surrogate and a NUL survive as they are.
    const long = `"${"\uD800x\0".repeat(PAYLOAD_BYTES / 4)}"`;
    const bytes = new Uint8Array([1, 2, 3]).buffer;
    const large = roundTrip(call(long), { ok: false, value: { tape: long, side: [] } });
    expect(large.received).toEqual(call(long));
    expect(large.answer).toEqual({ ok: false, value: { tape: long, side: [] } });
    const buffers = roundTrip(call("1", [bytes]), { ok: true, value: { tape: '"b"', side: [bytes, 2] } });
    expect(buffers.received).toEqual(call("1", [bytes]));
    expect(buffers.answer).toEqual({ ok: true, value: { tape: '"b"', side: [bytes, 2] } });
  });

  it("carries every request, and answers with promises of the host, and clears their numbers once read", () => {
    const requests: Call["request"][] = [
      { op: "call", fn: 12 },
      { op: "report" },
      { op: "log", level: "warn", timestamp: 1_764_126_000_123.5 },
      { op: "settle", promise: 9, ok: true },
      { op: "settle", promise: 10, ok: false },
    ];
    for (const request of requests) {
      const sent: Call = { run: 2_147_483_647, request, value: { tape: '["u"]', side: [] } };
      const outcome: CallOutcome = { ok: false, value: { tape: '["p",0]', side: [0, 41] } };
      const { received, answer, buffer } = roundTrip(sent, outcome);
      expect(received).toEqual(sent);
      expect(answer).toEqual(outcome);
      expect(new Uint8Array(buffer, 32, HEADER_BYTES - 32).every((byte) => byte === 0)).toBe(true);
    }
  });

  it("takes no operation it does not know for a call", () => {
    const { caller, worker } = channel();
    worker.publish(1, call("1"), () => {});
    new Float64Array(caller.buffer, 32, 4)[1] = 4;
    expect(() => caller.call(1)).toThrow(new RangeError("The call channel holds operation 4: no call"));
  });

  it("carries a fault of the host", () => {
    expect(roundTrip(call("1"), { fault: "cannot decode" }).answer).toEqual({ fault: "cannot decode" });
  });

  it("never hands a call the answer of one the worker gave up on, in the buffer or by message", () => {
    for (const stale of ["in the buffer", "x".repeat(PAYLOAD_BYTES)]) {
      const { caller, worker } = channel();
      // Call 1 is published and answered, but the worker gave up on it before reading the answer.
      worker.publish(1, call("1"), () => {});
      caller.call(1);
      caller.answer(1, { ok: true, value: { tape: JSON.stringify(stale), side: [] } });
      worker.publish(2, call("2"), () => {});
      expect(caller.call(2)).toEqual(call("2"));
      caller.answer(2, { ok: true, value: { tape: '"fresh"', side: [] } });
      worker.awaitAnswer(2, 0);
      expect(worker.answerTo(2)).toEqual({ ok: true, value: { tape: '"fresh"', side: [] } });
    }
  });

  it("checks the lengths the other thread wrote before reading anything", () => {
    const { caller, worker } = channel();
    worker.publish(1, call("1"), () => {});
    const slots = new Int32Array(caller.buffer, 0, 5);
    slots[4] = PAYLOAD_BYTES;
    expect(() => caller.call(1)).toThrow(
      new RangeError(`The call channel holds 0 + ${PAYLOAD_BYTES} units: more than it can`),
    );
    slots[3] = -2;
    slots[4] = 0;
    expect(() => caller.call(1)).toThrow(new RangeError("The call channel holds -2 + 0 units: more than it can"));
  });
});
