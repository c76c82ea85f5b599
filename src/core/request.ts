/**
 * A run as its runner receives it: the options checked, plain data, and the values encoded beside them, so a value
 * that cannot cross has made `runCode` throw before anything runs, and a runner on another thread receives them as
 * tapes it passes through.
 * @module
 */
import type { Tape } from "../values/tape.js";
import { encodeForGuest, encodeParts, FunctionTable, type HostFunction } from "../values/to-guest.js";
import { resolveOptions } from "./options.js";
import type { Recording } from "./recording.js";
import type { CodeExecutionLog, CodeExecutionOptions } from "./types.js";

/** A run's options as plain data (its values travel encoded beside them). */
export interface RunOptions {
  fn: string;
  /** See `ResolvedOptions.script`. */
  script: boolean;
  modules: Record<string, string>;
  language: "javascript" | "typescript";
  memoryLimitBytes: number;
  filename: string;
  /** The names `options.globals` binds. */
  globals: string[];
  /** Bare specifier -> the names its synthetic module exports. */
  imports: Record<string, string[]>;
  /** `CodeExecutionOptions.timeoutMs`: it crosses with the run, which derives its safety cap from it. */
  timeoutMs: number | undefined;
}

/** A run `prepareRun` checked and encoded: what a runner (in-process or a thread) starts. */
export interface PreparedRun {
  source: string;
  options: RunOptions;
  /**
   * `[globals, imports]` as one tape; or, when no object of theirs is reached twice, `globals` alone, each import
   * then in `imports` (a run decodes one when its module loads, so one the code never imports costs it nothing).
   */
  values: Tape;
  /** Each of `options.imports` as a tape of its own, in its order, when `values` holds only the globals. */
  imports: Tape[] | undefined;
  args: Tape;
  /** The host functions the values hold, numbered as their tapes number them. */
  functions: FunctionTable;
  /** The caller's report sink, if any. */
  report: HostFunction | undefined;
  /** The run's own log listener, if any (`CodeExecutionOptions.onLog`). */
  onLog: ((entry: CodeExecutionLog) => void) | undefined;
  /** `CodeExecutionOptions.tenant`. */
  tenant: string | undefined;
  /** What the run reads that a re-run could read differently, recorded by an attempt or replayed by its re-run. */
  recording?: Recording;
}

/** Checks `runCode`'s arguments and encodes their values; throws what `runCode` throws. */
export function prepareRun(
  source: unknown,
  options: CodeExecutionOptions | undefined,
  defaultMemoryLimitBytes: number,
): PreparedRun {
  const resolved = resolveOptions(source, options, defaultMemoryLimitBytes);
  const { fn, args, script, imports, modules, globals, language, memoryLimitBytes, filename } = resolved;
  const { report, onLog, tenant, timeoutMs } = resolved;
  const functions = new FunctionTable();
  const specifiers = Object.entries(imports);
  // Depths are those of `[globals, imports]`: its parts are encoded as they are within it.
  const parts = [{ value: globals, depth: 1 }, ...specifiers.map(([, named]) => ({ value: named, depth: 2 }))];
  const values = encodeParts([globals, imports], parts, functions);
  return {
    source: source as string,
    options: {
      fn,
      script,
      modules,
      language,
      memoryLimitBytes,
      filename,
      globals: Object.keys(globals),
      imports: Object.fromEntries(specifiers.map(([specifier, named]) => [specifier, Object.keys(named)])),
      timeoutMs,
    },
    values: Array.isArray(values) ? (values[0] as Tape) : values,
    imports: Array.isArray(values) ? values.slice(1) : undefined,
    args: encodeForGuest(args, functions),
    functions,
    report,
    onLog,
    tenant,
  };
}
