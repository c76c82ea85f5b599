/**
 * The wasm a run needs, read from the moment the Node entry is imported rather than when the first run asks, and
 * compiled once for the process (compiled-early.ts): a run that comes later finds the engine compiled, and SWC's too,
 * since a run's default language is TypeScript. Nothing here keeps the process alive beyond reading the two files (a
 * process that only imports the entry exits no later).
 * @module
 */
import { readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { compiledEarly } from "./compiled-early.js";
import { prepareSwc } from "./swc.js";

/** Reads this package's metered QuickJS wasm (`runcode/wasm`). */
export const readWasm = () => readFile(createRequire(import.meta.url).resolve("runcode/wasm"));

const compiled = compiledEarly(readWasm());
prepareSwc();

/**
 * The QuickJS wasm compiled once for the process: the default `wasm` of the entry's sandboxes, which so share one
 * module (a worker thread receives it once) and the booted instances of it.
 */
export const processWasm = (): Promise<WebAssembly.Module> => compiled();
