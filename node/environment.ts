/**
 * `runcode/environment` in Node: the environment module with this package's QuickJS wasm, compiled once from disk,
 * as the default `wasm` (without it every execution would load the engine again, 1.6-6x slower), and every
 * execution on a worker thread, so `timeoutMs` and `kill(eid)` stop any guest work within 50 ms (a custom `clock`
 * cannot cross to a worker, nor can an injected `fetch.fetch`: with either, executions run on the caller's thread).
 * @module
 */
import { type EnvironmentOptions, instantiate as instantiateWith } from "../src/environment/index.js";
import { createSandbox, nodeWasm } from "./index.js";

export * from "../src/environment/index.js";

/** {@link instantiateWith} with `wasm` defaulting to this package's, read and compiled once, on worker threads. */
export function instantiate(options: EnvironmentOptions = {}): ReturnType<typeof instantiateWith> {
  const threads = options.clock === undefined && options.fetch?.fetch === undefined;
  return instantiateWith({
    wasm: nodeWasm,
    createSandbox: (settings) => createSandbox({ ...settings, threads }),
    ...options,
  });
}
