/**
 * SWC for the core in a browser: its wasm fetched and compiled once, on the first TypeScript run, and a fresh
 * instance made of it whenever the core needs one.
 * @module
 */
/// <reference types="vite/client" />
import { instantiate } from "../dist/swc/swc.js";
import swcWasmUrl from "../dist/swc/swc.wasm?url";
import { useSwc } from "../src/index.js";

useSwc(async () => {
  const module = await WebAssembly.compileStreaming(fetch(swcWasmUrl));
  return () => instantiate(module);
});
