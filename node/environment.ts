/**
 * `runcode/environment` in Node: the environment module with this package's QuickJS wasm, compiled once from disk,
 * as the default `wasm` (without it every execution would load the engine again, 1.6-6x slower).
 * @module
 */
import { type EnvironmentOptions, instantiate as instantiateWith } from "../src/environment/index.js";
import { nodeWasm } from "./index.js";

export * from "../src/environment/index.js";

/** {@link instantiateWith} with `wasm` defaulting to this package's, read and compiled once. */
export function instantiate(options: EnvironmentOptions = {}): ReturnType<typeof instantiateWith> {
  return instantiateWith({ wasm: nodeWasm, ...options });
}
