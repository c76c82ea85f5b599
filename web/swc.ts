/**
 * SWC for the core in a browser: its wasm fetched and compiled once, on the first TypeScript run, and a fresh
 * instance made of it whenever the core needs one.
 * @module
 */
/// <reference types="vite/client" />
import { instantiate } from "../dist/swc/swc.js";
import { Transpiler } from "../src/index.js";
import swcWasmUrl from "../wasm/swc-fuel.wasm?url";

/** The page's transpiler, for `createSandbox({ transpiler })`. */
export const transpiler = new Transpiler(async () => {
  const module = await WebAssembly.compileStreaming(fetch(swcWasmUrl));
  return (out) => instantiate(module, out);
});
