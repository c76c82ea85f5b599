/**
 * The host half of the Web APIs' timers (guest/web-timers.ts keeps the timers themselves): the timer clock of one
 * run, what the run does when it has nothing to do but wait for the earliest timer, and the run's time that
 * `performance.now()` reads.
 *
 * The timer clock starts at 0 and moves only when timers fire, to the due time of the earliest: the order of timers
 * and what they cost are the same on every run and platform. Moving it costs fuel, `FUEL_PER_MS` per millisecond (at least 1 ms a move: every delay is), so the safety cap bounds the time a run spends in timers
 * wherever clocks stand still, and a `setInterval` loop ends at the cap. The real wait is the move less the run's
 * clock's time since the timer clock last moved (a timer set before a second of work is due after it), on the
 * platform's own `setTimeout`.
 * @module
 */
import type { QuickJSContext } from "quickjs-emscripten-core";
import type { GuestBridge } from "./guest-bridge.js";
import type { TimerHandles } from "./instance.js";
import { FUEL_PER_MS, type Limits } from "./limits.js";
import { Stopped } from "./outcome.js";
import type { Recording } from "./recording.js";

/** The longest wait of a platform timer (a signed 32-bit delay: longer ones fire at once). */
const MAX_PLATFORM_DELAY_MS = 2 ** 31 - 1;

export class Timers {
  readonly #handles: TimerHandles;
  readonly #ctx: QuickJSContext;
  readonly #bridge: GuestBridge;
  readonly #limits: Limits;
  readonly #clock: () => number;
  /** The timer clock. */
  #now = 0;
  /** The run's clock when the timer clock last moved. */
  #anchor: number;
  /** The run's clock when the run began. */
  readonly #start: number;
  /** The last time `performance.now()` read. */
  #read = 0;
  readonly #recording: Recording | undefined;

  constructor(
    handles: TimerHandles,
    ctx: QuickJSContext,
    bridge: GuestBridge,
    limits: Limits,
    clock: () => number,
    recording: Recording | undefined,
  ) {
    this.#handles = handles;
    this.#recording = recording;
    this.#ctx = ctx;
    this.#bridge = bridge;
    this.#limits = limits;
    this.#clock = clock;
    this.#anchor = clock();
    this.#start = this.#anchor;
  }

  /**
   * `performance.now()`: 1 ms (the time origin precedes the run, as for an event's `timeStamp`) plus the later of the
   * timer clock and the run's clock since the run began, to a tenth of a millisecond (a browser's coarse
   * resolution), never less than it last read. With a frozen clock it is the timer clock's alone: deterministic.
   */
  now(): number {
    const live = () => {
      const elapsed = Math.floor((this.#clock() - this.#start) * 10) / 10;
      return Math.max(this.#read, 1 + Math.max(this.#now, elapsed));
    };
    // A re-run reads what its attempt read (core/recording.ts), then, live, never less.
    this.#read = Math.max(this.#read, this.#recording?.read("now", live) ?? live());
    return this.#read;
  }

  /** The due time of the earliest timer (of those that keep the run alive, with `keepingAlive`), or -1 for none. */
  next(keepingAlive: boolean): number {
    const ctx = this.#ctx;
    const due = this.#bridge.guard(() =>
      ctx.callFunction(this.#handles.next, ctx.undefined, [keepingAlive ? ctx.true : ctx.false]),
    );
    const value = ctx.getNumber(due);
    due.dispose();
    return value;
  }

  /**
   * Waits until the timer due at `due` can fire, or host work arrives first (then `false`). A wait the run's fuel
   * cannot pay for stops the run at once (`Stopped` is thrown) rather than after the wait, billed as nothing: it
   * never happened.
   */
  async wait(due: number): Promise<boolean> {
    if (!this.#limits.affords((due - this.#now) * FUEL_PER_MS)) throw new Stopped();
    const left = due - this.#now - (this.#clock() - this.#anchor);
    return !(await this.#bridge.hostWork(Math.min(MAX_PLATFORM_DELAY_MS, Math.max(0, left))));
  }

  /** Moves the timer clock to `due`, charging the move, and fires the earliest timer when it is due; whether it did. */
  fire(due: number): boolean {
    if (due > this.#now) {
      this.#limits.spend((due - this.#now) * FUEL_PER_MS);
      this.#now = due;
      this.#anchor = this.#clock();
      this.#limits.checkSpent();
    }
    const ctx = this.#ctx;
    const now = ctx.newNumber(this.#now);
    try {
      const fired = this.#bridge.guard(() => ctx.callFunction(this.#handles.fire, ctx.undefined, [now]));
      const value = ctx.eq(fired, ctx.true);
      fired.dispose();
      return value;
    } finally {
      now.dispose();
    }
  }
}
