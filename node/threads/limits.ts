/**
 * The bounds of the worker threads (pool.ts, remote-run.ts), which the Node entry exports: kept apart from the
 * machinery that holds them, so that importing the entry does not load it (see on-threads.ts).
 * @module
 */
import { availableParallelism } from "node:os";

/**
 * Worker threads for unrelated runs (nested runs have up to {@link MAX_THREADS} + {@link MAX_NESTING_DEPTH} - 1
 * more); each holds one run's wasm instance (16 MiB of linear memory and up) while it is warm.
 */
export const MAX_THREADS = 8;
/** Runs that may wait for a worker, unrelated and nested runs each; past it `runCode` throws a `RangeError`. */
export const MAX_QUEUED_RUNS = 1_000;
/** How deep runs may nest through host functions; a run deeper makes `runCode` throw a `RangeError`. */
export const MAX_NESTING_DEPTH = 8;
/** Workers doing guest work at once past which an unrelated run waits a moment for one (see pool.ts). */
export const CPU_SLOTS = availableParallelism();
/** How long without a worker coming free before a waiting run takes another worker past {@link CPU_SLOTS}. */
export const CPU_WAIT_MS = 5;

/**
 * How long a stopped run's worker may take to end it on its own (its next interrupt poll) before the worker itself
 * is ended: guest work of any kind stops within this plus the worker's termination, under 50 ms.
 */
export const STOP_GRACE_MS = 20;
/**
 * How far past `safetyCap.cpuTimeMs` a worker's guest work may go before the watchdog ends the worker. The metered
 * engine stops itself at its next fuel refill and keeps its worker; the watchdog is the backstop for an engine without
 * the meter, and its margin leaves room for a loaded machine holding the worker off the CPU (a narrower one ended
 * workers that were about to stop on their own).
 */
export const WATCHDOG_MARGIN_MS = 250;

/** What `runCode` throws for a run past {@link MAX_QUEUED_RUNS} waiting ones, unrelated or `nested`. */
export function queueFull(nested: boolean): RangeError {
  return new RangeError(
    nested
      ? `runCode: ${MAX_QUEUED_RUNS} nested runs are already waiting for the workers of nested runs: await some before starting more`
      : `runCode: ${MAX_QUEUED_RUNS} runs are already waiting for the ${MAX_THREADS} worker threads: await some before starting more`,
  );
}
