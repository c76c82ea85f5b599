/**
 * TypeScript erasure, no type checking, by SWC (`@swc/wasm-typescript`), whose parser's time grows with the source,
 * not exponentially with its nesting as the TypeScript compiler's does (a 259-byte enum program with 12 nested
 * `async (x, async (` held the compiler for 107 s, about 4x more per level). SWC's worst found, chains of `<` it
 * tries as type arguments at each step, is quadratic (100 KB of them took 11-20 s), so SWC runs metered: its wasm is
 * wasm/swc-fuel.wasm (scripts/build-fuel-wasm.ts), the fuel it spends is the run's (`safetyCap.fuel`), and each
 * source gets at most {@link TRANSPILE_BASE_FUEL} plus {@link TRANSPILE_FUEL_PER_CHAR} per character.
 * Erasable syntax (the common case) is blanked out in place (strip-only mode), so every position stays exact and no
 * source map is needed; enums, namespaces, parameter properties and `<T>x` assertions are transformed with a source
 * map. Imports are kept as written (`verbatimModuleSyntax`): only `import type` and `type` specifiers are erased.
 * Each platform gives its sandboxes a {@link Transpiler} over SWC's metered wasm compiled its way and the generated glue
 * `dist/swc/swc.js` (scripts/swc-wasm.mjs); sandboxes given the same one share its SWC instance and its results,
 * cached by source.
 * @module
 */
import type { TraceMap } from "@jridgewell/trace-mapping";
import { FUEL_QUANTUM, Meter } from "./engine.js";
import type { FuelAccount, Transpiled, TranspileFailure, TranspilerPort } from "./ports.js";

/** What the core uses of `@swc/wasm-typescript`: one instance of its metered wasm. */
export interface Swc {
  transformSync(source: string, options: SwcOptions): { code: string; map?: string };
  /** Its fuel counter: the instance calls the `out` it was made with when this drops below zero. */
  fuel: WebAssembly.Global;
}

/** Makes a fresh SWC instance whose fuel hook is `out`. */
export type NewSwc = (out: () => void) => Swc;

export interface SwcOptions {
  mode: "strip-only" | "transform";
  module: true;
  filename?: string;
  sourceMap?: boolean;
  transform?: { verbatimModuleSyntax: boolean; tsEnumIsMutable: boolean };
}

/** SWC's refusal of a source: a diagnostic, which leaves its instance as it was. */
interface SwcDiagnostic {
  code: string;
  message: string;
  startLine: number;
  /** Counted in display columns (a tab is 4, a wide character 2), not UTF-16 units. */
  startColumn: number;
}

const STRIP: SwcOptions = { mode: "strip-only", module: true };
const TRANSFORM: SwcOptions = {
  mode: "transform",
  module: true,
  filename: "module.ts",
  sourceMap: true,
  // The compiler's semantics: enum members stay properties read at run time (SWC would inline them), and imports
  // whose bindings are only used as types stay as written.
  transform: { verbatimModuleSyntax: true, tsEnumIsMutable: true },
};
const NESTED_TOO_DEEPLY: TranspileFailure = { message: "Source is nested too deeply to parse", line: 1, column: 1 };

/**
 * Fuel of a transpile, at most: this plus {@link TRANSPILE_FUEL_PER_CHAR} per UTF-16 unit, 20x what real code spends
 * (a 50-line module ~48,000 in all; 273 modules of this package and zod 4-44 units per character, 1 MB of them in
 * namespaces with enums 37), where 100 KB of `<` chains 32 deep spend 1,500-2,500 and 600 deep 28,000-44,000.
 */
export const TRANSPILE_BASE_FUEL = 5_000_000;
export const TRANSPILE_FUEL_PER_CHAR = 1_000;

/** What a run stopped during its transpile gets: never reported, its stop ends it. */
const STOPPED: TranspileFailure = { message: "Transpiling was stopped", line: 1, column: 1 };

/** SWC stopped by its meter: the run was stopped, or ran out of fuel (the run's, or the source's allowance). */
class Halt extends Error {
  constructor(readonly failure: TranspileFailure) {
    super("SWC halted");
  }
}

/**
 * `@jridgewell/trace-mapping`, for the maps of what SWC transforms: loaded by a TypeScript run's linking (and by
 * {@link Transpiler.load}), since only TypeScript sources have maps; a fresh process's first JavaScript result spends
 * no time importing it.
 */
let traceMapping: typeof import("@jridgewell/trace-mapping") | undefined;

/** Readies {@link originalPosition} and the maps {@link Transpiler.transpile} makes. */
export async function loadTraceMapping(): Promise<void> {
  traceMapping ??= await import("@jridgewell/trace-mapping");
}

/** The loaded `@jridgewell/trace-mapping`; a map can only exist once a TypeScript run loaded it. */
function traceMappingLoaded(): typeof import("@jridgewell/trace-mapping") {
  if (traceMapping === undefined) throw new Error("Source maps used before loadTraceMapping()");
  return traceMapping;
}

const CACHE_ENTRIES = 256;
/** Sources above this size are not worth keeping in memory. */
const CACHE_MAX_SOURCE = 256 * 1024;

/** One SWC instance and its meter. */
interface Metered {
  instance: Swc;
  meter: Meter;
}

/** TypeScript erasure by SWC, loaded on the first TypeScript run of a sandbox given it (`SandboxOptions.transpiler`). */
export class Transpiler implements TranspilerPort {
  readonly #load: () => Promise<NewSwc>;
  /**
   * Makes a fresh SWC instance: a trap (absurd nesting overflows its stack) or a halt (an exception thrown through
   * its frames) leaves the old one's memory untrusted.
   */
  #newSwc: NewSwc | undefined;
  #swc: Metered | undefined;
  readonly #cache = new Map<string, Transpiled | TranspileFailure>();

  /** `load` resolves to a maker of fresh instances of SWC's metered wasm; it is called on the first TypeScript run. */
  constructor(load: () => Promise<NewSwc>) {
    this.#load = load;
  }

  /** Readies {@link transpile}: an instance of SWC, and the source maps' library for what it transforms. */
  async load(): Promise<void> {
    [this.#newSwc] = await Promise.all([this.#newSwc ?? this.#load(), loadTraceMapping()]);
    this.#swc ??= this.#fresh();
  }

  /** Erases types from one module, SWC's work charged to `account`. {@link load} must have resolved first. */
  transpile(source: string, account: FuelAccount): Transpiled | TranspileFailure {
    const cached = this.#cache.get(source);
    if (cached !== undefined) {
      this.#cache.delete(source);
      this.#cache.set(source, cached);
      return cached;
    }
    if (this.#swc === undefined) throw new Error("Transpiler.transpile() called before load()");
    const allowance = TRANSPILE_BASE_FUEL + TRANSPILE_FUEL_PER_CHAR * source.length;
    const tooCostly: TranspileFailure = {
      message: `Source is too costly to transpile: over ${allowance} units of fuel for its ${source.length} characters`,
      line: 1,
      column: 1,
    };
    const budget = Math.min(allowance, Math.max(0, account.fuelLeft));
    // Out of the run's fuel, the run's stop ends it; out of the source's allowance, it fails to transpile.
    const outOfFuel = budget < allowance ? STOPPED : tooCostly;
    const { instance, meter } = this.#swc;
    const { counter } = meter;
    // Fuel spent before the current grant, and the grant (as in Limits).
    let spent = 0;
    let granted = Math.min(FUEL_QUANTUM, budget);
    counter.value = granted;
    meter.onEmpty = () => {
      spent += granted - (counter.value as number);
      granted = Math.min(FUEL_QUANTUM, budget - spent);
      const stopped = account.stopped();
      if (stopped || granted <= 0) {
        // Unwinding runs a little of the glue's cleanup in the wasm, counted: the instance is dropped after it.
        meter.idle();
        granted = counter.value as number;
        throw new Halt(stopped ? STOPPED : outOfFuel);
      }
      counter.value = granted;
    };
    let result: Transpiled | TranspileFailure;
    try {
      result = this.#transpileWithSwc(instance, source);
    } catch (error) {
      if (!(error instanceof Halt)) throw error;
      this.#swc = this.#fresh();
      result = error.failure;
    } finally {
      account.spend(spent + granted - (counter.value as number));
      meter.idle();
    }
    if (result === STOPPED) return result;
    if (source.length <= CACHE_MAX_SOURCE) {
      this.#cache.set(source, result);
      if (this.#cache.size > CACHE_ENTRIES) this.#cache.delete(this.#cache.keys().next().value as string);
    }
    return result;
  }

  #fresh(): Metered {
    let meter: Meter | undefined;
    const instance = (this.#newSwc as NewSwc)(() => (meter as Meter).onEmpty());
    meter = new Meter(instance.fuel);
    meter.idle();
    return { instance, meter };
  }

  #transpileWithSwc(instance: Swc, source: string): Transpiled | TranspileFailure {
    try {
      return { code: instance.transformSync(source, STRIP).code };
    } catch (error) {
      if (!isDiagnostic(error)) return this.#trapped(error);
      if (error.code !== "UnsupportedSyntax") return syntaxError(instance, source, error);
    }
    try {
      const { code, map } = instance.transformSync(source, TRANSFORM);
      return { code, map: new (traceMappingLoaded().TraceMap)(map as string) };
    } catch (error) {
      return isDiagnostic(error) ? syntaxError(instance, source, error) : this.#trapped(error);
    }
  }

  /** After a trap in its wasm every later call failed ("memory access out of bounds"): the next source gets a fresh one. */
  #trapped(error: unknown): TranspileFailure {
    if (error instanceof Halt) throw error;
    this.#swc = this.#fresh();
    return NESTED_TOO_DEEPLY;
  }
}

const isDiagnostic = (error: unknown): error is SwcDiagnostic =>
  typeof error === "object" && error !== null && typeof (error as { code?: unknown }).code === "string";

/** SWC's diagnostic at its 1-based line, and the UTF-16 column its display column stands for. */
function syntaxError(instance: Swc, source: string, error: SwcDiagnostic): TranspileFailure {
  const line = source.split(LINE_BREAK)[error.startLine - 1] ?? "";
  return { message: error.message, line: error.startLine, column: utf16Column(instance, line, error.startColumn) + 1 };
}

/** SWC's line breaks (U+2028 and U+2029 are not among them). */
const LINE_BREAK = /\r\n?|\n/;

/**
 * The UTF-16 offset in `line` at display column `display`: the longest prefix no wider than it. Widths are SWC's own,
 * measured by where it places an error after that prefix in a comment; only lines with tabs or non-ASCII characters
 * need it, and a binary search parses O(log n) prefixes of one line.
 */
function utf16Column(instance: Swc, line: string, display: number): number {
  if (/^[\x20-\x7e]*$/.test(line)) return display;
  const width = (prefix: string) => {
    const probe = `/*${prefix.replaceAll("*", " ")}*/)`;
    try {
      instance.transformSync(probe, STRIP);
    } catch (error) {
      if (error instanceof Halt) throw error;
      if (isDiagnostic(error)) return error.startColumn - 4;
    }
    return Number.POSITIVE_INFINITY;
  };
  // Code point boundaries only: a lone surrogate would reach SWC as U+FFFD.
  const starts = [0];
  for (const char of line) starts.push((starts.at(-1) as number) + char.length);
  let [low, high] = [0, starts.length - 1];
  while (low < high) {
    const middle = Math.ceil((low + high) / 2);
    if (width(line.slice(0, starts[middle])) <= display) low = middle;
    else high = middle - 1;
  }
  return starts[low] as number;
}

/** Maps a 1-based position of transpiled code to the original source, or `undefined` where nothing maps. */
export function originalPosition(
  map: TraceMap,
  line: number,
  column: number,
): { line: number; column: number } | undefined {
  const { traceSegment, originalPositionFor, LEAST_UPPER_BOUND } = traceMappingLoaded();
  const segment = traceSegment(map, line - 1, column - 1);
  if (segment === null || segment.length < 4) {
    // Before the line's first mapped token: take the next one.
    const next = originalPositionFor(map, { line, column: column - 1, bias: LEAST_UPPER_BOUND });
    return next.line === null ? undefined : { line: next.line, column: next.column + 1 };
  }
  const [generatedColumn, , sourceLine, sourceColumn] = segment as [number, number, number, number];
  return { line: sourceLine + 1, column: sourceColumn + (column - 1 - generatedColumn) + 1 };
}
