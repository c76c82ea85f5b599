/**
 * SWC for the core's TypeScript erasure (src/core/transpile.ts): its metered wasm (`runcode/swc.wasm`) read and compiled
 * once per process (compiled-early.ts), and a fresh instance made of it whenever the core needs one, as on Workers and
 * in browsers. Worker threads get the compiled module from the caller's thread rather than compiling their own.
 * @module
 */
import { readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { instantiate } from "runcode/swc";
import type { NewSwc } from "../src/core/transpile.js";
import { compiledEarly } from "./compiled-early.js";

let compiled: (() => Promise<WebAssembly.Module>) | undefined;

/**
 * Starts reading and compiling SWC's metered wasm, once for the process; what {@link swcModule} then resolves, waiting
 * for that compile rather than compile again when it is under way (compiled-early.ts).
 */
export function prepareSwc(): () => Promise<WebAssembly.Module> {
  compiled ??= compiledEarly(readFile(createRequire(import.meta.url).resolve("runcode/swc.wasm")), true);
  return compiled;
}

/** SWC's metered wasm, compiled once for the process. */
export function swcModule(): Promise<WebAssembly.Module> {
  return prepareSwc()();
}

/** Fresh instances of SWC's compiled `module`. */
export function swcOf(module: WebAssembly.Module): NewSwc {
  return (out) => instantiate(module, out);
}

/** A `Transpiler`'s loader of SWC's wasm from the package. */
export async function loadSwc(): Promise<NewSwc> {
  return swcOf(await swcModule());
}
