/**
 * A run's readings recorded by an attempt and replayed by its re-run (src/core/recording.ts); the whole path, with
 * host calls, is tested on Node's default path (test/node/default-path.test.ts).
 */
import { describe, expect, it } from "vitest";
import { Recording } from "../../src/core/recording.js";

describe("Recording", () => {
  it("an attempt records each reading in order; its re-run reads them back, then reads live", () => {
    const attempt = Recording.attempt(() => {}, 1_000, 0);
    let clock = 10;
    const bytes = new Uint8Array([1, 2, 3]);
    expect(attempt.read("seed", () => [1, 2, 3, 4])).toEqual([1, 2, 3, 4]);
    expect(attempt.read("date", () => clock++)).toBe(10);
    expect(attempt.read("random:3", () => bytes)).toBe(bytes);
    expect(attempt.readings).toEqual([
      { kind: "seed", value: [1, 2, 3, 4] },
      { kind: "date", value: 10 },
      { kind: "random:3", value: bytes },
    ]);
    const rerun = Recording.replay(attempt.readings);
    expect(rerun.read("seed", () => [9, 9, 9, 9])).toEqual([1, 2, 3, 4]);
    expect(rerun.read("date", () => clock++)).toBe(10);
    expect(rerun.read("random:3", () => new Uint8Array(3))).toEqual(bytes);
    expect(rerun.read("date", () => clock++)).toBe(11);
    expect(rerun.readings).toEqual([]);
  });

  it("a re-run that reads another kind than recorded reads live from there", () => {
    const rerun = Recording.replay([
      { kind: "now", value: 5 },
      { kind: "date", value: 6 },
    ]);
    expect(rerun.read("random:2", () => new Uint8Array([7, 7]))).toEqual(new Uint8Array([7, 7]));
    expect(rerun.read("date", () => 100)).toBe(100);
  });

  it("an attempt's first calls are paid beyond its slice, the later ones not", () => {
    const attempt = Recording.attempt(() => {}, 1_000, 2);
    expect([attempt.beyondSlice(), attempt.beyondSlice(), attempt.beyondSlice()]).toEqual([true, true, false]);
    expect(Recording.replay([]).beyondSlice()).toBe(false);
  });

  it("only an attempt refuses what it cannot record, ending itself", () => {
    let ended = 0;
    expect(Recording.attempt(() => ended++, 1_000, 0).refuse()).toBe(true);
    expect(ended).toBe(1);
    expect(Recording.replay([]).refuse()).toBe(false);
    expect(Recording.replay([]).recording).toBe(false);
  });
});
