/**
 * Shared helpers of the conformance suite. Platform-neutral: no `node:*`, no DOM.
 * @module
 */
import { expect } from "vitest";
import type {
  CodeExecutionError,
  CodeExecutionOptions,
  CodeExecutionResult,
  CodeExecutionStatus,
  RunCode,
  SandboxOptions,
} from "../../src/core/types.js";

/** Settings of the conformance suite for one host. */
export interface ConformanceOptions {
  /** Builds a `runCode` with custom host-level settings (safety cap, default memory limit, clock). */
  sandbox?: (opts: SandboxOptions) => RunCode;
}

/** The five statuses a run may settle with. */
export const STATUSES: readonly CodeExecutionStatus[] = ["success", "error", "memory", "terminated", "link_error"];

/** Strings that betray a host path or host stack frame. */
export const HOST_PATH_MARKERS: readonly string[] = ["node_modules", "/work", "file://", "node:internal"];

/** Asserts that `text` names no host path. */
export function expectNoHostPaths(text: string): void {
  for (const marker of HOST_PATH_MARKERS) expect(text).not.toContain(marker);
}

/** Runs `source` and asserts a success, returning the result value. */
export async function ok(runCode: RunCode, source: string, options?: CodeExecutionOptions): Promise<unknown> {
  const r = await runCode(source, options);
  expect({ status: r.status, error: r.error }).toEqual({ status: "success", error: undefined });
  expect("result" in r).toBe(true);
  return r.result;
}

/** Runs `source` and asserts it settles with `status`, returning the error. */
export async function fails(
  runCode: RunCode,
  status: Exclude<CodeExecutionStatus, "success">,
  source: string,
  options?: CodeExecutionOptions,
): Promise<CodeExecutionError> {
  const r = await runCode(source, options);
  expect({ status: r.status, result: r.result }).toEqual({ status, result: undefined });
  expect("result" in r).toBe(false);
  const error = r.error;
  if (error === undefined) throw new Error(`expected an error with status ${status}`);
  expect(typeof error.name).toBe("string");
  expect(typeof error.message).toBe("string");
  return error;
}

/** Runs `source` and returns the whole result. */
export async function settle(
  runCode: RunCode,
  source: string,
  options?: CodeExecutionOptions,
): Promise<CodeExecutionResult> {
  return await runCode(source, options);
}

/** Calls `fn` and returns what it threw, failing when it returns. */
export function thrown(fn: () => unknown): unknown {
  try {
    fn();
  } catch (error) {
    return error;
  }
  throw new Error("expected a synchronous throw");
}

/** `name` and `message` of a thrown value. */
export function nameAndMessage(error: unknown): { name: string; message: string } {
  if (typeof error !== "object" || error === null) throw new Error(`not an error object: ${String(error)}`);
  const { name, message } = error as { name?: unknown; message?: unknown };
  return { name: String(name), message: String(message) };
}

/** A plain record view of an unknown value (for property reads in assertions). */
export function rec(value: unknown): Record<string, unknown> {
  if (typeof value !== "object" || value === null) throw new Error(`not an object: ${String(value)}`);
  return value as Record<string, unknown>;
}

/** An array view of an unknown value. */
export function arr(value: unknown): unknown[] {
  if (!Array.isArray(value)) throw new Error(`not an array: ${String(value)}`);
  return value as unknown[];
}

/** A promise that never settles, and a way to observe when something called it. */
export function never<T>(): Promise<T> {
  return new Promise<T>(() => {});
}

/** A host-side deferred. */
export interface Deferred<T> {
  promise: Promise<T>;
  resolve: (value: T) => void;
  reject: (reason: unknown) => void;
}

/** Creates a host-side deferred. */
export function deferred<T>(): Deferred<T> {
  let resolve: (value: T) => void = () => {};
  let reject: (reason: unknown) => void = () => {};
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

/** Waits `ms` milliseconds of host time. */
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Monotonic-enough host clock for hang-only bounds. */
export function now(): number {
  return Date.now();
}
