/**
 * A run's handle that stands for another run once there is one: a cell waiting for its turn (core/session.ts), a
 * run waiting for Node's worker threads to load, or attempted on the caller's thread and then re-run on a worker
 * (node/threads/). What it reads is that run's, nothing before it has one.
 * @module
 */

import type { StartedRun } from "./run.js";
import type { CodeExecutionLog } from "./types.js";

/** The reads of a {@link StartedRun} forwarded to {@link current}; the subclass says when it changes and how to stop. */
export abstract class ForwardingRun<Current extends StartedRun = StartedRun> {
  /** The run this handle stands for now, if any yet. */
  protected current: Current | undefined;

  get logs(): readonly CodeExecutionLog[] {
    return this.current?.logs ?? [];
  }

  get fuelUsed(): number | undefined {
    return this.current?.fuelUsed;
  }

  get memoryUsedBytes(): number | undefined {
    return this.current?.memoryUsedBytes;
  }
}
