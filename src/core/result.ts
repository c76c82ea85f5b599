/**
 * A run's `CodeExecutionResult`, built here and nowhere else: by the sandbox whichever runner ran the run, and by a
 * host that ends a run from outside the sandbox (the playground terminating its worker), so every door names the
 * same status and error for the same ending.
 * @module
 */
import type { Ending } from "./outcome.js";
import type { CodeExecutionError, CodeExecutionLog, CodeExecutionResult } from "./types.js";

/** What a run left by the time it ended: its reports, its `console` entries, its duration and what it used. */
interface Left {
  reports: readonly unknown[];
  logs: readonly CodeExecutionLog[];
  durationMs: number;
  memoryUsedBytes?: number | undefined;
  fuelUsed?: number | undefined;
  fuelRedone?: number | undefined;
}

/** The result of a run that ended as `ending` and left `left`. */
export function resultOf(ending: Ending, left: Left): CodeExecutionResult {
  const head = ending.status === "success" ? { status: ending.status, result: ending.result } : { ...ending };
  const result: CodeExecutionResult = {
    ...head,
    reports: [...left.reports],
    logs: [...left.logs],
    durationMs: left.durationMs,
  };
  const { memoryUsedBytes, fuelUsed, fuelRedone } = left;
  if (memoryUsedBytes !== undefined) result.memoryUsedBytes = memoryUsedBytes;
  if (fuelUsed !== undefined) result.fuelUsed = fuelUsed;
  if (fuelRedone !== undefined) result.fuelRedone = fuelRedone;
  return result;
}

/** The error of a run its caller terminated, with the caller's `reason` (a default when it gave none). */
export function terminatedError(reason?: string): CodeExecutionError {
  const message = reason === undefined || reason === "" ? "Execution terminated by the caller" : String(reason);
  return { name: "TerminatedError", message };
}
