/**
 * Retention (`RUNCODE_RETENTION_DAYS`): a process that has ended is deleted, as `DELETE /processes/:pid` deletes it,
 * once its end is older than the retention. One that is queued, running or terminating never expires; running it
 * again puts off its expiry until the new run's end.
 * @module
 */
import { isActive } from "./states.js";
import type { ProcessRecord } from "./storage.js";

/** When `record` expires (epoch milliseconds): its end plus `retentionMs`; `undefined` while it has not ended. */
export const expiryOf = (record: ProcessRecord, retentionMs: number): number | undefined =>
  isActive(record.state) || record.finishedAt === null ? undefined : record.finishedAt + retentionMs;
