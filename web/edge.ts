/**
 * "Run on edge": the same run on the Worker's `POST /run` (same origin when the Worker serves the page), whose answer
 * is `toWire(CodeExecutionResult)`. A deployment asks for an API key; the local edge host (`npm start`) does not.
 * @module
 */
import type { CodeExecutionResult } from "../src/core/types.js";
import type { JsonValue } from "../src/values/json.js";
import { fromWire } from "../src/values/wire.js";

type EdgeOutcome =
  | { kind: "result"; result: CodeExecutionResult; roundTripMs: number }
  | { kind: "unavailable"; message: string };

interface EdgeRequest {
  /** Sent as `Authorization: Bearer <key>` when not empty. */
  key: string;
  signal?: AbortSignal;
}

const UNAVAILABLE =
  "Run on edge needs the Worker's POST /run on this origin (serve the page with the Worker, e.g. `npm start`).";

/** Longest part of a refusal's text the page shows. */
const MAX_DETAIL_CHARS = 300;

/** Posts `body` to `/run` and decodes the answer; never throws. */
export async function runOnEdge(body: object, { key, signal }: EdgeRequest): Promise<EdgeOutcome> {
  const started = performance.now();
  const headers: Record<string, string> = { "content-type": "application/json" };
  if (key !== "") headers.authorization = `Bearer ${key}`;
  let response: Response;
  try {
    response = await fetch("/run", {
      method: "POST",
      headers,
      body: JSON.stringify(body),
      ...(signal === undefined ? {} : { signal }),
    });
  } catch (error) {
    return { kind: "unavailable", message: `${UNAVAILABLE} (${(error as Error).message})` };
  }
  const text = await response.text();
  let json: JsonValue;
  try {
    json = JSON.parse(text) as JsonValue;
  } catch {
    return { kind: "unavailable", message: `${UNAVAILABLE} (HTTP ${response.status}, not JSON)` };
  }
  if (!response.ok) return { kind: "unavailable", message: refusal(response.status, json, text, key) };
  try {
    const result = fromWire(json) as CodeExecutionResult;
    if (typeof result !== "object" || result === null || typeof result.status !== "string")
      return { kind: "unavailable", message: "POST /run answered JSON that is not a run result" };
    return { kind: "result", result, roundTripMs: performance.now() - started };
  } catch (error) {
    return { kind: "unavailable", message: `POST /run answered an undecodable result: ${(error as Error).message}` };
  }
}

/**
 * `POST /run answered HTTP <status> <code>: <message>`, and on a 401 what to do about it (the host's messages for
 * 429 and 503 already say when to retry).
 */
function refusal(status: number, json: JsonValue, text: string, key: string): string {
  const error = isObject(json) && isObject(json.error) ? json.error : undefined;
  const code = typeof error?.code === "string" ? error.code : undefined;
  const detail = typeof error?.message === "string" ? error.message : text;
  let message = `POST /run answered HTTP ${status}${code === undefined ? "" : ` ${code}`}: ${detail.slice(0, MAX_DETAIL_CHARS)}`;
  if (status === 401)
    message += key === "" ? " Enter this host's API key under Edge." : " Check the API key under Edge.";
  return message;
}

function isObject(value: JsonValue | undefined): value is { [key: string]: JsonValue } {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
