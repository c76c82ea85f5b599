/**
 * The threaded sandbox: the core's `createSandbox`, with every run on a worker thread of the process's pool (see
 * pool.ts), so a stop holds within 50 ms whatever the guest does and the caller's event loop keeps running.
 * Options are validated and values encoded on the caller's thread, so `runCode` throws exactly where the core's does.
 * @module
 */
import { compiledModule } from "../../src/core/engine.js";
import { Linker } from "../../src/core/linker.js";
import { resolveOptions } from "../../src/core/options.js";
import { createSandbox, DEFAULT_MEMORY_LIMIT_BYTES, DEFAULT_SAFETY_CAP } from "../../src/core/sandbox.js";
import type { CodeExecutionOptions, Sandbox, SandboxOptions } from "../../src/core/types.js";
import { RemoteRun, type ThreadedSandbox } from "./remote-run.js";

/** Settings that are functions of the caller's thread: a worker cannot call them while guest code runs. */
const UNCROSSABLE = ["clock", "interrupted", "onLog"] as const;

export function createThreadedSandbox(settings: SandboxOptions): Sandbox {
  for (const key of UNCROSSABLE) {
    if (settings[key] !== undefined) {
      throw new TypeError(`createSandbox: ${key} cannot cross to a worker thread; pass threads: false to use it`);
    }
  }
  // The core's own checks of the settings, on the caller's thread.
  createSandbox(settings);
  // The host's requests are made on the worker, by its own fetch (so a stop there aborts them at once).
  if (settings.fetch?.fetch !== undefined) {
    throw new TypeError("createSandbox: fetch.fetch cannot cross to a worker thread; pass threads: false to use it");
  }
  const { wasm, clock, interrupted, onLog, ...crossing } = settings;
  const defaultMemoryLimitBytes = settings.defaultMemoryLimitBytes ?? DEFAULT_MEMORY_LIMIT_BYTES;
  const compiled = compiledModule(wasm);
  const sandbox: ThreadedSandbox = {
    settings: crossing,
    wasm: async () => {
      const module = await compiled();
      if (module === undefined) throw new TypeError("The threaded sandbox needs the QuickJS wasm (settings.wasm)");
      return module;
    },
    cpuTimeMs: settings.safetyCap?.cpuTimeMs ?? DEFAULT_SAFETY_CAP.cpuTimeMs,
  };
  const runCode = (source: string, options?: CodeExecutionOptions) => {
    const started = performance.now();
    const resolved = resolveOptions(source, options, defaultMemoryLimitBytes);
    // The linker's checks of the options (the worker's core makes its own linker).
    new Linker(resolved);
    return new RemoteRun(source, resolved, sandbox, started).execution;
  };
  return { runCode };
}
