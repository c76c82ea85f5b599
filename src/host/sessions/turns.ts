/**
 * A line of work taking turns: each caller waits for the ones before it, then holds the turn until it releases it.
 * A session's cells, forks and deletion take turns, so its state is written after each before the next starts.
 * @module
 */
export class Turns {
  #tail: Promise<void> = Promise.resolve();
  /** Turns taken and not yet released: the holder's and the waiting ones. */
  #taken = 0;

  /** Callers waiting for their turn (the holder is not counted). */
  get waiting(): number {
    return Math.max(0, this.#taken - 1);
  }

  /** Whether nobody holds or waits for a turn. */
  get idle(): boolean {
    return this.#taken === 0;
  }

  /**
   * Takes a place in line at once (it counts from this call); resolves with the release of the caller's turn once
   * every turn taken before it is released. Release exactly once.
   */
  take(): Promise<() => void> {
    this.#taken++;
    let release!: () => void;
    const mine = new Promise<void>((resolve) => {
      release = () => {
        this.#taken--;
        resolve();
      };
    });
    const before = this.#tail;
    this.#tail = before.then(() => mine);
    return before.then(() => release);
  }
}
