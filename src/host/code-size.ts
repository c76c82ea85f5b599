/**
 * The one bound on code a host accepts from a client, the same at every front door: `POST /run` (its source and
 * modules together), `POST /processes` and MCP's `run_code`. Transpiling and parsing take time linear in it, so it
 * bounds the host work one source can cost before the run's own limits apply (with a frozen clock too).
 * @module
 */

import { utf8Length } from "../values/json.js";
import { HostError } from "./errors.js";

/** Largest code a client may send, in UTF-8 bytes. */
export const MAX_CODE_BYTES = 100 * 1024;

/** The `payload_too_large` refusal of `sources` larger than {@link MAX_CODE_BYTES} together, else `undefined`. */
export function codeTooLarge(what: string, sources: readonly string[]): HostError | undefined {
  const bytes = sources.reduce((sum, source) => sum + utf8Length(source), 0);
  return bytes > MAX_CODE_BYTES
    ? new HostError("payload_too_large", `${what} is larger than ${MAX_CODE_BYTES} bytes`)
    : undefined;
}
