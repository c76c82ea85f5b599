/**
 * A failed run's `CodeExecutionError` as the one human-readable message `bindings.setError` takes, with the line
 * and column in the submitted code.
 *
 * Name, message and stack are guest text (any `error.stack`, a 60 MB message): only a bounded prefix of each is
 * read, stack lines are parsed without regular expressions in time linear in their (capped) length, and the
 * description is at most about {@link MAX_MESSAGE_CHARS} + 20 KB long.
 * @module
 */

import { parseFrame } from "../core/positions.js";
import type { CodeExecutionError } from "../core/types.js";

/** Characters of the error's message kept in the description (the rest is counted). */
export const MAX_MESSAGE_CHARS = 10_000;
/** Characters of the error's name, and of a function name in the trace, kept in the description. */
const MAX_NAME_CHARS = 200;
/** Characters of the stack read for frames, of one line parsed, and frames listed. */
const MAX_STACK_CHARS = 65_536;
const MAX_LINE_CHARS = 2_000;
const MAX_FRAMES = 50;

interface Frame {
  fn: string | undefined;
  line: number;
  column: number;
}

const clip = (text: string, max: number) =>
  text.length > max ? `${text.slice(0, max)}... ${text.length - max} more characters` : text;
/** A frame of `file` in one stack line, or `undefined`. */
function frameOf(text: string, file: string): Frame | undefined {
  const frame = parseFrame(text);
  return frame === undefined || frame.file !== file
    ? undefined
    : { fn: frame.fn, line: frame.line, column: frame.column };
}

/** The frames of `file` in a (core-rewritten) stack, innermost first: at most 50, from its first 64 KB. */
function framesOf(stack: string | undefined, file: string): Frame[] {
  const frames: Frame[] = [];
  const text = (stack ?? "").slice(0, MAX_STACK_CHARS);
  for (let start = 0; start < text.length && frames.length < MAX_FRAMES; ) {
    let end = text.indexOf("\n", start);
    if (end === -1) end = text.length;
    // A longer line is no frame the core wrote.
    const frame = end - start <= MAX_LINE_CHARS ? frameOf(text.slice(start, end), file) : undefined;
    if (frame !== undefined) frames.push(frame);
    start = end + 1;
  }
  return frames;
}

/** 1-based line and column of the first quoted occurrence of `specifier` in `code` (for failed imports). */
function positionOfSpecifier(code: string, specifier: string): { line: number; column: number } | undefined {
  for (const quote of ['"', "'", "`"]) {
    const index = code.indexOf(`${quote}${specifier}${quote}`);
    if (index === -1) continue;
    let line = 1;
    let lineStart = 0;
    for (let at = code.indexOf("\n"); at !== -1 && at < index; at = code.indexOf("\n", at + 1)) {
      line++;
      lineStart = at + 1;
    }
    return { line, column: index - lineStart + 1 };
  }
  return undefined;
}

const at = (line: number, column: number) => `line ${line}, column ${column}`;

/**
 * `TypeError: cannot read property 'x' of undefined (at line 4, column 15)`, followed by the process code's own
 * stack frames when there is more than one; a failed import names the modules process code may import (`importable`: its
 * own modules, the host's tools and packages).
 */
export function describeFailure(
  error: CodeExecutionError | undefined,
  code: string,
  file: string,
  importable: readonly string[] = [],
): string {
  if (error === undefined) return "Error: the process failed without an error";
  const name = error.name === "" ? "Error" : clip(error.name, MAX_NAME_CHARS);
  if (name === "LinkError" && error.specifier !== undefined) {
    const where = positionOfSpecifier(code, error.specifier);
    const imports =
      importable.length === 0
        ? "process code is one module and imports nothing; tools are on the cyrnel global"
        : `process code imports only its modules and the host's tools and packages: ${clip(importable.join(", "), MAX_MESSAGE_CHARS)}`;
    const message = `${name}: Cannot import '${clip(error.specifier, MAX_NAME_CHARS)}': ${imports}`;
    return where === undefined ? message : `${message} (at ${at(where.line, where.column)})`;
  }
  const head = error.message === "" ? name : `${name}: ${clip(error.message, MAX_MESSAGE_CHARS)}`;
  const frames = framesOf(error.stack, file);
  const top =
    frames[0] ??
    (error.filename === file && error.line !== undefined && error.column !== undefined
      ? { fn: undefined, line: error.line, column: error.column }
      : undefined);
  if (top === undefined) return head;
  const first = `${head} (at ${at(top.line, top.column)})`;
  if (frames.length < 2) return first;
  const trace = frames.map(
    (f) => `    at ${f.fn === undefined ? "<module>" : clip(f.fn, MAX_NAME_CHARS)} (${at(f.line, f.column)})`,
  );
  return [first, ...trace].join("\n");
}
