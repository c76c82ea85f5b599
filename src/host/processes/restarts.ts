/**
 * A run cannot outlive the host that runs it. A record still active when its host starts again was cut off by the
 * restart (a crash, the platform stopping it): it becomes `idle`, `failed`, with {@link CUT_OFF_BY_RESTART} for its
 * error, so its slot is free and its reader knows why. A host that stops on purpose kills its runs first: each ends
 * `canceled`, with {@link STOPPED_BY_HOST}.
 * @module
 */
import { isActive } from "./states.js";
import { HOST_STATES, type ProcessPatch, type ProcessStore } from "./storage.js";

/** The error of a run its host's restart cut off. */
export const CUT_OFF_BY_RESTART = "The host restarted while this process ran";
/** The error of a run its host ended on stopping on purpose (it exits `canceled`). */
export const STOPPED_BY_HOST = "The host stopped while this process ran";

/** The patch that ends a record's cut-off run at `now` (epoch milliseconds). */
const cutOff = (now: number): ProcessPatch => ({
  state: "idle",
  exitState: "failed",
  error: CUT_OFF_BY_RESTART,
  finishedAt: now,
});

/** Ends every run `store` shows active (for a host that is starting: none of them is its own); their pids. */
export async function failCutOffRuns(store: ProcessStore, now: number): Promise<number[]> {
  const pids: number[] = [];
  for (const state of HOST_STATES.filter(isActive)) {
    for (const record of await store.list({ state })) {
      await store.update(record.pid, cutOff(now));
      pids.push(record.pid);
    }
  }
  return pids;
}
