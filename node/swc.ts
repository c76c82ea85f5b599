/**
 * SWC for the core's TypeScript erasure (src/core/transpile.ts): its metered wasm (`runcode/swc.wasm`) read and compiled
 * once, and a fresh instance made of it whenever the core needs one, as on Workers and in browsers.
 * @module
 */
import { readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { instantiate } from "runcode/swc";
import type { NewSwc } from "../src/core/transpile.js";

export async function loadSwc(): Promise<NewSwc> {
  const module = new WebAssembly.Module(await readFile(createRequire(import.meta.url).resolve("runcode/swc.wasm")));
  return (out) => instantiate(module, out);
}
