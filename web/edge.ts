/**
 * "Run on edge": the same run on the Cloudflare Worker's `POST /run` (same origin when the Worker serves the page),
 * whose answer is `toWire(CodeExecutionResult)`.
 * @module
 */
import type { CodeExecutionResult } from "../src/types.js";
import { fromWire, type JsonValue } from "../src/wire.js";

export type EdgeOutcome =
  | { kind: "result"; result: CodeExecutionResult; roundTripMs: number }
  | { kind: "unavailable"; message: string };

const UNAVAILABLE =
  "Run on edge needs the Worker's POST /run on this origin (serve the page with the Worker, e.g. `npm start`).";

/** Posts `body` to `/run` and decodes the answer; never throws. */
export async function runOnEdge(body: object, signal?: AbortSignal): Promise<EdgeOutcome> {
  const started = performance.now();
  let response: Response;
  try {
    response = await fetch("/run", {
      method: "POST",
      headers: { "content-type": "application/json" },
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
  if (!response.ok) {
    const detail =
      typeof json === "object" && json !== null && !Array.isArray(json) && typeof json.error === "string"
        ? json.error
        : text.slice(0, 200);
    return { kind: "unavailable", message: `POST /run answered HTTP ${response.status}: ${detail}` };
  }
  try {
    const result = fromWire(json) as CodeExecutionResult;
    if (typeof result !== "object" || result === null || typeof result.status !== "string")
      return { kind: "unavailable", message: "POST /run answered JSON that is not a run result" };
    return { kind: "result", result, roundTripMs: performance.now() - started };
  } catch (error) {
    return { kind: "unavailable", message: `POST /run answered an undecodable result: ${(error as Error).message}` };
  }
}
