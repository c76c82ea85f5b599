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
  const flat = flatText(result, maxLength);
  if (flat !== undefined && flat.length <= maxLength) return flat;
  return encodeWithin(result, maxLength, toWireText);
}

/** A value the wire encoding writes as JSON does: a string, a boolean, `null` or a finite number other than `-0`. */
const asInJson = (value: unknown): boolean =>
  typeof value === "string" ||
  typeof value === "boolean" ||
  value === null ||
  (typeof value === "number" && Number.isFinite(value) && !Object.is(value, -0));

/** The most characters JSON writes for a string of `length`: quotes, and six for a character it escapes as `\uXXXX`. */
const jsonStringBound = (length: number): number => 6 * length + 2;

/**
 * The text of a result whose fields are all such values, but for no reports and no logs, as a short run leaves (its
 * wire text is then its JSON text); `undefined` for any other, and for one whose text could pass `maxLength`, which
 * the general encoder measures before it writes. That encoder first scans the result for shared objects and measures
 * every node, which was most of what writing a trivial `/run`'s answer cost.
 */
function flatText(result: CodeExecutionResult, maxLength: number): string | undefined {
  if (Object.getPrototypeOf(result) !== Object.prototype) return undefined;
  // Braces, then per field its key, a colon, a comma and the value: a number at most 24 characters, `false` 5.
  let bound = 2;
  for (const key of Object.keys(result)) {
    if (key.startsWith("$")) return undefined;
    const value = (result as unknown as Record<string, unknown>)[key];
    if (asInJson(value))
      bound += jsonStringBound(key.length) + 2 + (typeof value === "string" ? jsonStringBound(value.length) : 24);
    else if ((key === "reports" || key === "logs") && isEmptyList(value)) bound += jsonStringBound(key.length) + 4;
    else return undefined;
    if (bound > maxLength) return undefined;
  }
  return JSON.stringify(result);
}

const isEmptyList = (value: unknown): boolean =>
  Array.isArray(value) && Object.getPrototypeOf(value) === Array.prototype && Object.keys(value).length === 0;

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
