/**
 * A failed run's `CodeExecutionError` as the one human-readable message `bindings.setError` takes, with the line
 * and column in the submitted code.
 * @module
 */
import type { CodeExecutionError } from "../index.js";

const FRAME = /^\s*at (?:(.*?) \()?(.+?):(\d+):(\d+)\)?$/;

interface Frame {
  fn: string | undefined;
  line: number;
  column: number;
}

/** The frames of `file` in a (core-rewritten) stack, innermost first. */
export function framesOf(stack: string | undefined, file: string): Frame[] {
  const frames: Frame[] = [];
  for (const text of (stack ?? "").split("\n")) {
    const match = FRAME.exec(text);
    if (match === null || match[2] !== file) continue;
    frames.push({ fn: match[1], line: Number(match[3]), column: Number(match[4]) });
  }
  return frames;
}

/** 1-based line and column of the first quoted occurrence of `specifier` in `code` (for failed imports). */
export function positionOfSpecifier(code: string, specifier: string): { line: number; column: number } | undefined {
  for (const quote of ['"', "'", "`"]) {
    const index = code.indexOf(`${quote}${specifier}${quote}`);
    if (index === -1) continue;
    const before = code.slice(0, index);
    const line = before.split("\n").length;
    return { line, column: index - before.lastIndexOf("\n") };
  }
  return undefined;
}

const at = (line: number, column: number) => `line ${line}, column ${column}`;

/**
 * `TypeError: cannot read property 'x' of undefined (at line 4, column 15)`, followed by the process code's own
 * stack frames when there is more than one.
 */
export function describeFailure(error: CodeExecutionError | undefined, code: string, file: string): string {
  if (error === undefined) return "Error: the process failed without an error";
  const name = error.name === "" ? "Error" : error.name;
  if (name === "LinkError" && error.specifier !== undefined) {
    const where = positionOfSpecifier(code, error.specifier);
    const message = `${name}: Cannot import '${error.specifier}': process code is one module and imports nothing; tools are on the cyrnel global`;
    return where === undefined ? message : `${message} (at ${at(where.line, where.column)})`;
  }
  const head = error.message === "" ? name : `${name}: ${error.message}`;
  const frames = framesOf(error.stack, file);
  const top =
    frames[0] ??
    (error.filename === file && error.line !== undefined && error.column !== undefined
      ? { fn: undefined, line: error.line, column: error.column }
      : undefined);
  if (top === undefined) return head;
  const first = `${head} (at ${at(top.line, top.column)})`;
  if (frames.length < 2) return first;
  const trace = frames.map((f) => `    at ${f.fn ?? "<module>"} (${at(f.line, f.column)})`);
  return [first, ...trace].join("\n");
}
