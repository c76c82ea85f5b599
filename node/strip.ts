/**
 * TypeScript in Node: SWC's strip-only mode (what Node's own type stripping runs) blanks types in place, loaded in
 * about 40 ms where the TypeScript compiler takes 0.5-1.7 s. What it refuses (enums, namespaces, parameter
 * properties, syntax errors) goes to the compiler (src/transpile.ts).
 * @module
 */
import { createRequire } from "node:module";
import type { TypeStripper } from "../src/transpile.js";

interface Swc {
  transformSync(source: string, options: { mode: "strip-only"; module: true }): { code: string };
}

/** A refusal SWC reports as a diagnostic (`InvalidSyntax`, `UnsupportedSyntax`), which leaves it as it was. */
const isDiagnostic = (error: unknown) =>
  typeof error === "object" && error !== null && typeof (error as { code?: unknown }).code === "string";

export function swcStripper(): TypeStripper {
  const require = createRequire(import.meta.url);
  const path = require.resolve("@swc/wasm-typescript");
  let swc = require(path) as Swc;
  return (source) => {
    try {
      return swc.transformSync(source, { mode: "strip-only", module: true }).code;
    } catch (error) {
      // Anything else is a trap in its wasm (absurd nesting overflows its stack), after which its memory cannot be
      // trusted: every later call failed with "memory access out of bounds". The next source gets a fresh instance.
      if (!isDiagnostic(error)) {
        delete require.cache[path];
        swc = require(path) as Swc;
      }
      return undefined;
    }
  };
}
