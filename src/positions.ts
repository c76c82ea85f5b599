/**
 * Guest stacks and error positions, rewritten to the caller's original source: TypeScript mapped through its
 * source map, the runtime's own prefix removed, the runtime's internal frames dropped.
 * @module
 */
import type { ModuleMapping } from "./linker.js";
import { originalPosition } from "./transpile.js";

export interface Position {
  filename: string;
  line: number;
  column: number;
}

/** Looks up how a module name's generated code maps back; `undefined` for names that are not user modules. */
export type MappingOf = (name: string) => ModuleMapping | undefined;

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

const FRAME = /^\s*at (?:(.*?) \()?(.+?):(\d+):(\d+)\)?$/;

/** Rewrites a QuickJS stack; returns it with the first user frame's position. */
export function rewriteStack(stack: string, mappingOf: MappingOf): { stack: string; top?: Position } {
  let top: Position | undefined;
  const lines: string[] = [];
  for (const line of stack.split("\n")) {
    if (line.trim() === "") continue;
    const frame = FRAME.exec(line);
    if (frame === null) {
      lines.push(line);
      continue;
    }
    const [, fn, file = "", row = "0", col = "0"] = frame;
    const position = mapPosition(mappingOf, file, Number(row), Number(col));
    if (position === undefined) continue;
    top ??= position;
    const where = `${position.filename}:${position.line}:${position.column}`;
    lines.push(fn === undefined ? `    at ${where}` : `    at ${fn} (${where})`);
  }
  return top === undefined ? { stack: lines.join("\n") } : { stack: lines.join("\n"), top };
}
