/**
 * TypeScript erasure, no type checking. Erasable syntax (the common case) is blanked out in place, so every position
 * stays exact and no source map is needed: by the platform's type stripper when it has one (the Node entry gives
 * SWC's strip-only mode, which loads in tens of milliseconds), else by `ts-blank-space` over the compiler's parser.
 * Enums, namespaces, parameter properties and syntax errors go to the compiler itself (`typescript.transpileModule`
 * with a source map; its parser's first diagnostic), so they read the same on every platform. Imports are kept as
 * written (`verbatimModuleSyntax`): only `import type` and `type` specifiers are erased. The compiler (about 9 MB of
 * JavaScript) is loaded only when a run needs it, and results are cached by source.
 * @module
 */
import {
  LEAST_UPPER_BOUND,
  originalPositionFor,
  type SourceMapInput,
  TraceMap,
  traceSegment,
} from "@jridgewell/trace-mapping";
import type { blankSourceFile } from "ts-blank-space";
import type * as TS from "typescript";

export interface Transpiled {
  code: string;
  /** Present when positions moved (the `transpileModule` fallback). */
  map?: TraceMap;
}

/** A syntax error at a 1-based position of the original source. */
export interface TranspileFailure {
  message: string;
  line: number;
  column: number;
}

/**
 * Blanks the types of erasable TypeScript in place (same length, same line breaks); `undefined` when it cannot (an
 * enum, a namespace, a syntax error...), and the compiler decides then.
 */
export type TypeStripper = (source: string) => string | undefined;

let ts: typeof TS | undefined;
let blank: typeof blankSourceFile | undefined;
let stripperLoader: (() => Promise<TypeStripper>) | undefined;
let strip: TypeStripper | undefined;

/** A platform entry's faster stripper, loaded on the first TypeScript run. */
export function useTypeStripper(load: () => Promise<TypeStripper>): void {
  stripperLoader = load;
}

/**
 * Readies `transpile` for `sources`: the stripper when the platform has one, and the compiler only if one of them
 * needs it (or there is no stripper).
 */
export async function loadTypeScript(sources: readonly string[] = []): Promise<void> {
  if (stripperLoader !== undefined) strip ??= await stripperLoader();
  if (ts !== undefined) return;
  if (strip !== undefined && sources.every((source) => cache.has(source) || stripped(source))) return;
  ts = ((await import("typescript")) as { default: typeof TS }).default;
  blank = (await import("ts-blank-space")).blankSourceFile;
}

const CACHE_ENTRIES = 256;
/** Sources above this size are not worth keeping in memory. */
const CACHE_MAX_SOURCE = 256 * 1024;
const cache = new Map<string, Transpiled | TranspileFailure>();

/** Erases types from one module. `loadTypeScript()` must have resolved for it first. */
export function transpile(source: string): Transpiled | TranspileFailure {
  const cached = cache.get(source);
  if (cached !== undefined) {
    cache.delete(source);
    cache.set(source, cached);
    return cached;
  }
  const result = transpileUncached(source);
  remember(source, result);
  return result;
}

function remember(source: string, result: Transpiled | TranspileFailure): void {
  if (source.length > CACHE_MAX_SOURCE) return;
  cache.set(source, result);
  if (cache.size > CACHE_ENTRIES) cache.delete(cache.keys().next().value as string);
}

/** Strips `source` into the cache; `false` when the compiler must decide. */
function stripped(source: string): boolean {
  const code = strip?.(source);
  if (code !== undefined) remember(source, { code });
  return code !== undefined;
}

function transpileUncached(source: string): Transpiled | TranspileFailure {
  const code = strip?.(source);
  if (code !== undefined) return { code };
  if (ts === undefined || blank === undefined) throw new Error("transpile() called before loadTypeScript()");
  try {
    const file = ts.createSourceFile("module.ts", source, {
      languageVersion: ts.ScriptTarget.ESNext,
      impliedNodeFormat: ts.ModuleKind.ESNext,
      jsDocParsingMode: ts.JSDocParsingMode.ParseNone,
    });
    // The parser's own diagnostics: what transpileModule reports as syntactic errors.
    const syntaxError = (file as { parseDiagnostics?: readonly TS.Diagnostic[] }).parseDiagnostics?.[0];
    if (syntaxError !== undefined) {
      const { line, character } = file.getLineAndCharacterOfPosition(syntaxError.start ?? 0);
      const message = ts.flattenDiagnosticMessageText(syntaxError.messageText, "\n");
      return { message, line: line + 1, column: character + 1 };
    }
    let erasable = true;
    const code = blank(file, () => {
      erasable = false;
    });
    return erasable ? { code } : transpileWithMap(ts, source);
  } catch (error) {
    // The compiler's parser is recursive: absurd nesting overflows the host stack, which is a syntax problem here.
    if (error instanceof RangeError) return { message: "Source is nested too deeply to parse", line: 1, column: 1 };
    throw error;
  }
}

function transpileWithMap(ts: typeof TS, source: string): Transpiled {
  const output = ts.transpileModule(source, {
    fileName: "module.ts",
    compilerOptions: {
      target: ts.ScriptTarget.ES2022,
      module: ts.ModuleKind.ESNext,
      verbatimModuleSyntax: true,
      sourceMap: true,
    },
  });
  // TypeScript writes the comment last; a regular expression here backtracked quadratically on a crafted comment.
  const comment = output.outputText.lastIndexOf("\n//# sourceMappingURL=");
  const code = comment === -1 ? output.outputText : output.outputText.slice(0, comment + 1);
  return { code, map: new TraceMap(output.sourceMapText as SourceMapInput) };
}

/** Maps a 1-based position of transpiled code to the original source, or `undefined` where nothing maps. */
export function originalPosition(
  map: TraceMap,
  line: number,
  column: number,
): { line: number; column: number } | undefined {
  const segment = traceSegment(map, line - 1, column - 1);
  if (segment === null || segment.length < 4) {
    // Before the line's first mapped token: take the next one.
    const next = originalPositionFor(map, { line, column: column - 1, bias: LEAST_UPPER_BOUND });
    return next.line === null ? undefined : { line: next.line, column: next.column + 1 };
  }
  const [generatedColumn, , sourceLine, sourceColumn] = segment as [number, number, number, number];
  return { line: sourceLine + 1, column: sourceColumn + (column - 1 - generatedColumn) + 1 };
}
