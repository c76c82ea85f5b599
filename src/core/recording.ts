/**
 * What a run reads that a second run of the same code could read differently: its `Math.random` seed, the engine's
 * wall clock (`Date.now()`, `new Date()`), `performance.now()` and the Web APIs' random bytes. A run attempted first
 * somewhere and run again from the start elsewhere (Node's default path, node/threads/in-thread-first.ts) records
 * them in the attempt and replays them in the re-run, so the guest takes the same path up to where the attempt
 * ended and makes the same host calls, which the re-run answers from the attempt's record rather than calling the host
 * again. Guest code given the same inputs does the same: the engine is deterministic, its boot aside, which each run's
 * restore puts back as booted.
 *
 * The record holds only what the run paid for as fuel when it read it (random bytes by the byte, a clock reading as
 * a host call), so it is bounded by what the attempt could spend; it lives as long as the run.
 * @module
 */

/** One reading, tagged by what was read (random bytes by their count). */
export interface Reading {
  kind: "seed" | "date" | "now" | `random:${number}`;
  value: number | number[] | Uint8Array;
}

/** The run's readings, recorded (an attempt) or replayed (its re-run, then read live once the record is spent). */
export class Recording {
  /** The attempt's readings, in the order the run read them. */
  readonly readings: Reading[] = [];
  /** The readings replayed, in order; the first {@link #replayed} were. */
  readonly #replay: readonly Reading[];
  #replayed = 0;
  /**
   * Ends the attempt where the guest would wait for what the host settles (a host promise, `crypto.subtle`'s work):
   * which settles first, over turns of the event loop, no record can replay.
   */
  readonly #refuse: (() => void) | undefined;

  /**
   * An attempt's: the run's own fuel cap, up to which its host calls' fees raise its slice (see
   * `Limits.payBeyondCap`): past it the attempt ends, and its re-run stops where the cap says.
   */
  readonly fuelCap: number;
  /** An attempt's: how many more of its host calls' fees raise its slice rather than count against it. */
  #callsBeyondSlice: number;

  private constructor(
    replay: readonly Reading[],
    refuse: (() => void) | undefined,
    fuelCap: number,
    callsBeyondSlice: number,
  ) {
    this.#replay = replay;
    this.#refuse = refuse;
    this.fuelCap = fuelCap;
    this.#callsBeyondSlice = callsBeyondSlice;
  }

  /**
   * An attempt's recording, of a run whose own cap is `fuelCap`, the fees of whose first `calls` host calls do not
   * count against its slice; `refuse` ends the attempt (see {@link refuse}).
   */
  static attempt(refuse: () => void, fuelCap: number, calls: number): Recording {
    return new Recording([], refuse, fuelCap, calls);
  }

  /** A re-run's: `readings` replayed first. */
  static replay(readings: readonly Reading[]): Recording {
    return new Recording(readings, undefined, 0, 0);
  }

  /** Whether the fee of the host call about to be made raises the attempt's slice (one of its first calls). */
  beyondSlice(): boolean {
    if (this.#callsBeyondSlice === 0) return false;
    this.#callsBeyondSlice--;
    return true;
  }

  /** Whether the run is an attempt, which records. */
  get recording(): boolean {
    return this.#refuse !== undefined;
  }

  /**
   * The next reading of `kind`: replayed while the record lasts, else `live()` (recorded in an attempt). A reading of
   * another kind than recorded means the re-run went its own way (an input nobody recorded): from there it reads live,
   * and the host calls' check (node/threads/host-call-record.ts) stops it before it reaches the host differently.
   */
  read<T extends Reading["value"]>(kind: Reading["kind"], live: () => T): T {
    const replayed = this.#replay[this.#replayed];
    if (replayed !== undefined) {
      if (replayed.kind === kind) {
        this.#replayed++;
        return replayed.value as T;
      }
      this.#replayed = this.#replay.length;
    }
    const value = live();
    if (this.recording) this.readings.push({ kind, value });
    return value;
  }

  /** In an attempt, ends it where the guest would wait for the host (see {@link #refuse}); `true` then. */
  refuse(): boolean {
    this.#refuse?.();
    return this.#refuse !== undefined;
  }
}
