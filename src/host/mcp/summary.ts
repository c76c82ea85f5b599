/**
 * The short text a model reads first from `run_code`: the status, the result, reports and logs as wire JSON cut to
 * a few thousand characters (the whole value is in `structuredContent`), and the error with its position. Every
 * piece is encoded within its length (`toWireText` stops before passing it), so a huge or shared-reference value
 * costs no more than the cut.
 * @module
 */
import type { CodeExecutionLog, CodeExecutionResult } from "../../core/types.js";
import { toWireText, WireLengthError } from "../../values/wire.js";

/** Characters of one value shown in the text (the result, a report, a log line). */
export const SHOWN_CHARS = 2_000;
/** Reports and log lines shown; the rest are counted. */
const SHOWN_ENTRIES = 20;

/** `text` as it is up to `SHOWN_CHARS` characters, then cut with a mark. */
export function cut(text: string): string {
  return text.length <= SHOWN_CHARS ? text : `${text.slice(0, SHOWN_CHARS)}... (${text.length - SHOWN_CHARS} more)`;
}

/** `value` as wire JSON, or a note when its text is longer than `SHOWN_CHARS`. */
function shown(value: unknown): string {
  try {
    return toWireText(value, { maxLength: SHOWN_CHARS });
  } catch (error) {
    if (!(error instanceof WireLengthError)) throw error;
    return `(more than ${SHOWN_CHARS} characters: see structuredContent)`;
  }
}

/** A log line as a console shows it: strings as they are, other values as wire JSON. */
function logLine(log: CodeExecutionLog): string {
  const args = log.args.map((arg) => (typeof arg === "string" ? arg.slice(0, SHOWN_CHARS) : shown(arg)));
  return `[${log.level}] ${args.join(" ")}`;
}

/** Up to `SHOWN_ENTRIES` lines of `items`, then how many were left out. */
function listed<T>(items: readonly T[], line: (item: T) => string): string[] {
  const lines = items.slice(0, SHOWN_ENTRIES).map((item) => `  ${line(item)}`);
  if (items.length > SHOWN_ENTRIES) lines.push(`  ... ${items.length - SHOWN_ENTRIES} more`);
  return lines;
}

export function summarize(result: CodeExecutionResult): string {
  const lines = [`status: ${result.status} (${Math.round(result.durationMs)} ms)`];
  if (result.status === "success") lines.push(`result: ${shown(result.result)}`);
  if (result.error !== undefined) {
    const { name, message, filename, line, column } = result.error;
    const at = filename === undefined ? "" : ` at ${filename}${line === undefined ? "" : `:${line}:${column ?? 1}`}`;
    lines.push(`error: ${name}: ${message.slice(0, SHOWN_CHARS)}${at}`);
  }
  if (result.reports.length > 0) lines.push(`reports (${result.reports.length}):`, ...listed(result.reports, shown));
  if (result.logs.length > 0) lines.push(`logs (${result.logs.length}):`, ...listed(result.logs, logLine));
  return lines.join("\n");
}
