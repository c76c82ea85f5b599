/**
 * Retention on `runcode serve` (src/host/processes/retention.ts): a sweep deletes the processes that ended more than
 * the retention ago, when the server starts and then every {@link SWEEP_EVERY_MS}; another deletes the sessions idle
 * past `RUNCODE_SESSION_IDLE_DAYS` (`SessionService.sweepIdle`) as often. It deletes in statements of
 * {@link SWEEP_BATCH_ROWS} rows until none is left, so whatever has piled up, no statement holds the database for
 * long.
 * @module
 */
import type { LibsqlProcessStore } from "./libsql-stores.js";

/** How often the sweep runs after the first. */
export const SWEEP_EVERY_MS = 3_600_000;
/** Rows one statement of the sweep deletes at most. */
export const SWEEP_BATCH_ROWS = 500;

interface RetentionOptions {
  /** How long an ended process is kept after its end. */
  retentionMs: number;
  /** Epoch milliseconds. Default `Date.now`. */
  clock?: () => number;
  /** Called with a sweep's failure: the next sweep tries again. */
  onError: (error: unknown) => void;
}

interface Sweeps {
  /** No sweep starts from now on, nor another statement of one under way; resolves when that one has stopped. */
  stop(): Promise<void>;
}

/** Sweeps `store` at once and then periodically, on a timer that keeps no process alive. */
export function sweepEndedProcesses(
  store: Pick<LibsqlProcessStore, "deleteEndedBefore">,
  options: RetentionOptions,
): Sweeps {
  const clock = options.clock ?? Date.now;
  return sweepEvery(async (stopped) => {
    const before = clock() - options.retentionMs;
    let deleted: number;
    do deleted = await store.deleteEndedBefore(before, SWEEP_BATCH_ROWS);
    while (deleted === SWEEP_BATCH_ROWS && !stopped());
  }, options.onError);
}

/**
 * Runs `sweep` at once and then every {@link SWEEP_EVERY_MS} (the processes' retention, the sessions' idle TTL), on
 * a timer that keeps no process alive; `sweep` is told when it should stop early.
 */
export function sweepEvery(
  sweep: (stopped: () => boolean) => Promise<unknown>,
  onError: (error: unknown) => void,
): Sweeps {
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  const round = async () => {
    try {
      await sweep(() => stopped);
    } catch (error) {
      onError(error);
    }
    if (!stopped) {
      timer = setTimeout(() => {
        sweeping = round();
      }, SWEEP_EVERY_MS).unref();
    }
  };
  let sweeping = round();
  return {
    stop() {
      stopped = true;
      clearTimeout(timer);
      return sweeping;
    },
  };
}
