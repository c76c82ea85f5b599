/**
 * SWC for the core's TypeScript erasure (src/transpile.ts), loaded in about 40 ms where the TypeScript compiler
 * takes 0.5-1.7 s.
 * @module
 */
import { createRequire } from "node:module";
import type { Swc } from "../src/transpile.js";

/**
 * A fresh instance of `@swc/wasm-typescript` per call. Each is required from a new `require` and leaves Node's
 * module cache at once: a module stays a child of the module that required it, so instances replaced after a trap
 * were kept alive by one shared `require` (7 MB each).
 */
export function newSwc(): Swc {
  const require = createRequire(import.meta.url);
  const path = require.resolve("@swc/wasm-typescript");
  try {
    return require(path) as Swc;
  } finally {
    delete require.cache[path];
  }
}
