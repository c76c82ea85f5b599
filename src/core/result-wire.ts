/**
 * A {@link CodeExecutionResult} in the lossless wire encoding (`values/wire.ts`), as the HTTP `POST /run` and the MCP
 * `run_code` tool answer it, within a length decided before the text is made: what a run leaves is capped by its
 * memory, but its encoding is not the same size (base64 is 4/3 of a buffer, `undefined` 18 characters), so past
 * `maxLength` the answer is a `memory` result saying so.
 * @module
 */

import type { JsonValue } from "../values/json.js";
import { toWire, toWireText, WireLengthError } from "../values/wire.js";
import type { CodeExecutionResult } from "./types.js";

/** The result's wire text, or that of a `memory` result in its place when the text would pass `maxLength`. */
export function resultWireText(result: CodeExecutionResult, maxLength: number): string {
  return encodeWithin(result, maxLength, toWireText);
}

/** The result's wire encoding as JSON data, or a `memory` result's when its text would pass `maxLength`. */
export function resultWire(result: CodeExecutionResult, maxLength: number): JsonValue {
  return encodeWithin(result, maxLength, toWire);
}

function encodeWithin<T>(
  result: CodeExecutionResult,
  maxLength: number,
  encode: (value: unknown, options: { maxLength: number }) => T,
): T {
  try {
    return encode(result, { maxLength });
  } catch (error) {
    if (!(error instanceof WireLengthError)) throw error;
  }
  const { durationMs, memoryUsedBytes } = result;
  const tooLong: CodeExecutionResult = {
    status: "memory",
    error: {
      name: "MemoryError",
      message: `The run ended '${result.status}', but its result, reports and logs take more than ${maxLength} characters of JSON to send`,
    },
    reports: [],
    logs: [],
    durationMs,
    ...(memoryUsedBytes === undefined ? {} : { memoryUsedBytes }),
  };
  return encode(tooLong, { maxLength: Number.POSITIVE_INFINITY });
}
