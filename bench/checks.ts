/** What every bench case checks of its result, so that a case gone wrong stops the bench instead of timing an error. */
import type { CodeExecutionResult } from "../src/index.js";

export function expect(value: unknown, expected: unknown): void {
  if (value !== expected) throw new Error(`bench case returned ${String(value)}, expected ${String(expected)}`);
}

/** A run's result; a failed run throws. */
export function resultOf(result: CodeExecutionResult): unknown {
  if (result.status !== "success") throw new Error(`bench run failed: ${result.error?.message}`);
  return result.result;
}

export function succeeded(result: CodeExecutionResult, expected: unknown): void {
  expect(resultOf(result), expected);
}
