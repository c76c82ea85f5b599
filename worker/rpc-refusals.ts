/**
 * Refusals across Durable Object RPC. An error thrown over RPC arrives with its message but without its fields, so
 * a `HostError`'s code (the HTTP status the app answers) would be lost: objects answer refusals as values, and the
 * Worker throws them again as the same `HostError`.
 * @module
 */
import { HostError, type HostErrorCode, isHostError } from "../src/host/errors.js";

export type Answer<T> =
  | { value: T }
  | { error: { code: HostErrorCode; message: string; headers: Record<string, string> } };

/** `work`'s value, or its `HostError` as a value; any other failure is thrown as it is. */
export async function answer<T>(work: () => T | Promise<T>): Promise<Answer<T>> {
  try {
    return { value: await work() };
  } catch (error) {
    if (!isHostError(error)) throw error;
    return { error: { code: error.code, message: error.message, headers: { ...error.headers } } };
  }
}

/** The value, or the refusal thrown as the `HostError` it was. */
export function unwrap<T>(answered: Answer<T>): T {
  if ("error" in answered) {
    const { code, message, headers } = answered.error;
    throw new HostError(code, message, headers);
  }
  return answered.value;
}
