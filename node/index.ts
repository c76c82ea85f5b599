/**
 * The Node entry: the platform-neutral core with the QuickJS wasm read from disk and compiled once, so every run
 * only instantiates it.
 * @module
 */
import { readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { createSandbox } from "../src/sandbox.js";
import { useTypeStripper } from "../src/transpile.js";
import type { CodeExecution, CodeExecutionOptions, WasmSource } from "../src/types.js";
import { swcStripper } from "./strip.js";

export * from "../src/index.js";

useTypeStripper(async () => swcStripper());

/** The QuickJS wasm of this package, as a loader for `createSandbox({ wasm })`. */
export const nodeWasm: WasmSource = async () =>
  readFile(createRequire(import.meta.url).resolve("@jitl/quickjs-wasmfile-release-sync/wasm"));

let shared: ReturnType<typeof createSandbox> | undefined;

/** Runs `source` as an ES module in a fresh sandbox with the default settings (contract.md §2.1). */
export function runCode(source: string, options?: CodeExecutionOptions): CodeExecution {
  shared ??= createSandbox({ wasm: nodeWasm });
  return shared.runCode(source, options);
}
