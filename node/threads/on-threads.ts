/**
 * The door to the worker threads' machinery (remote-run.ts, the pool, `node:worker_threads`), loaded when a run first
 * needs a worker rather than with the entry: on the default path a run that stays on the caller's thread never does,
 * and importing it took 4-7 ms of the main thread's CPU, a tenth of the entry's import (docs/performance.md, "The
 * floor: cold start"). A run that needs a worker before the machinery is loaded waits for it, in the order the runs
 * came; its stop and its orphaning hold as they do on a run waiting for a worker, and the queue's bound as well
 * ({@link MAX_QUEUED_RUNS} and the {@link MAX_THREADS} the pool would take at once).
 * @module
 */
import {
  type Ending,
  ForwardingRun,
  internalFailure,
  ORPHANED,
  type PreparedRun,
  type RunChannel,
  type RunContext,
  type StartedRun,
} from "../../src/core/runner-port.js";
import type { Nested } from "./host-calls.js";
import { MAX_QUEUED_RUNS, MAX_THREADS, queueFull } from "./limits.js";

type RemoteRunModule = typeof import("./remote-run.js");
/** What a run handed over from the caller's thread gives its re-run (remote-run.ts). */
type Attempted = Parameters<RemoteRunModule["onThreads"]>[3];
/** A run on a worker, as the caller's thread holds it. */
type RemoteRun = StartedRun & Nested;

/** The machinery, once loaded. */
let loaded: { onThreads: RemoteRunModule["onThreads"] } | undefined;
let loading: Promise<void> | undefined;
/** Runs waiting for the machinery, not stopped: what the pool's queue would hold. */
let waiting = 0;

/** Loads the machinery, once. */
function load(): Promise<void> {
  loading ??= import("./remote-run.js").then((remote) => {
    loaded = { onThreads: remote.onThreads };
  });
  return loading;
}

/**
 * Runs `request` on a worker thread of the process's pool (remote-run.ts's `onThreads`); an attempted run's re-run,
 * fed the attempt's record. Throws a `RangeError` when the workers' queue is full.
 */
export function onThreads(
  context: RunContext,
  request: PreparedRun,
  channel: RunChannel,
  attempted?: Attempted,
): RemoteRun {
  if (loaded !== undefined) return loaded.onThreads(context, request, channel, attempted);
  if (waiting >= MAX_QUEUED_RUNS + MAX_THREADS) throw queueFull(false);
  return new Loading(() => (loaded as NonNullable<typeof loaded>).onThreads(context, request, channel, attempted));
}

/** A run waiting for the machinery to load, then on a worker. */
class Loading extends ForwardingRun<RemoteRun> implements RemoteRun {
  readonly ended: Promise<Ending>;
  #resolve!: (ending: Ending) => void;
  #stopped = false;

  constructor(start: () => RemoteRun) {
    super();
    this.ended = new Promise((resolve) => {
      this.#resolve = resolve;
    });
    waiting++;
    load().then(
      () => {
        if (this.#stopped) return;
        waiting--;
        try {
          this.current = start();
        } catch (error) {
          this.#resolve(internalFailure(error instanceof Error ? error.message : String(error)));
          return;
        }
        void this.current.ended.then(this.#resolve);
      },
      (error: unknown) => {
        if (this.#stopped) return;
        waiting--;
        this.#resolve(internalFailure(`The worker threads could not be loaded: ${String(error)}`));
      },
    );
  }

  /** As a run's stop while it waits for a worker: it leaves the line, and never starts. */
  stop(error: Parameters<StartedRun["stop"]>[0]): void {
    if (this.current !== undefined) this.current.stop(error);
    else if (!this.#stopped) {
      waiting--;
      this.#stopped = true;
    }
  }

  orphan(): void {
    if (this.current !== undefined) this.current.orphan();
    else {
      this.stop(ORPHANED);
      this.#resolve({ status: "terminated", error: ORPHANED });
    }
  }
}
