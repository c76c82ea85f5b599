/**
 * Guest stacks and error positions, rewritten to the caller's original source: TypeScript mapped through its
 * source map, the runtime's own prefix removed, the runtime's internal frames dropped.
 * @module
 */
import type { ModuleMapping } from "./linker.js";
import { originalPosition } from "./transpile.js";

interface Position {
  filename: string;
  line: number;
  column: number;
}

/** Looks up how a module name's generated code maps back; `undefined` for names that are not user modules. */
type MappingOf = (name: string) => ModuleMapping | undefined;

/** A 1-based position in generated code -> the same place in the module's original source. */
export function mapPosition(
  mappingOf: MappingOf,
  filename: string,
  line: number,
  column: number,
): Position | undefined {
  const mapping = mappingOf(filename);
  if (mapping === undefined) return undefined;
  const generatedColumn = line === 1 ? Math.max(1, column - mapping.prefixLength) : column;
  if (mapping.map === undefined) return { filename, line, column: generatedColumn };
  const original = originalPosition(mapping.map, line, generatedColumn);
  return original === undefined ? undefined : { filename, ...original };
}

/** A parsed stack line: `at fn (file:line:col)` or `at file:line:col`. */
interface Frame {
  fn: string | undefined;
  file: string;
  line: number;
  column: number;
}

const DIGITS = /^\d+$/;

/**
 * Parses one stack line in time linear in its length: the guest can set `error.stack` to any text, and the
 * regular expression this replaces backtracked quadratically on a crafted line (9 s for 240 KB).
 */
export function parseFrame(text: string): Frame | undefined {
  const line = text.trimStart();
  if (!line.startsWith("at ")) return undefined;
  let rest = line.slice(3);
  let fn: string | undefined;
  const open = rest.endsWith(")") ? rest.lastIndexOf(" (") : -1;
  if (open !== -1) {
    fn = rest.slice(0, open);
    rest = rest.slice(open + 2, -1);
  }
  const columnAt = rest.lastIndexOf(":");
  const lineAt = columnAt <= 0 ? -1 : rest.lastIndexOf(":", columnAt - 1);
  if (lineAt <= 0) return undefined;
  const row = rest.slice(lineAt + 1, columnAt);
  const col = rest.slice(columnAt + 1);
  if (!DIGITS.test(row) || !DIGITS.test(col)) return undefined;
  return { fn, file: rest.slice(0, lineAt), line: Number(row), column: Number(col) };
}

/** Rewrites a QuickJS stack; returns it with the first user frame's position. */
export function rewriteStack(stack: string, mappingOf: MappingOf): { stack: string; top?: Position } {
  let top: Position | undefined;
  const lines: string[] = [];
  for (const line of stack.split("\n")) {
    if (line.trim() === "") continue;
    const frame = parseFrame(line);
    if (frame === undefined) {
      lines.push(line);
      continue;
    }
    const position = mapPosition(mappingOf, frame.file, frame.line, frame.column);
    if (position === undefined) continue;
    top ??= position;
    const where = `${position.filename}:${position.line}:${position.column}`;
    lines.push(frame.fn === undefined ? `    at ${where}` : `    at ${frame.fn} (${where})`);
  }
  return top === undefined ? { stack: lines.join("\n") } : { stack: lines.join("\n"), top };
}
