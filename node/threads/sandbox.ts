/**
 * The threaded sandbox: the core's `createSandbox` with every run on a worker thread of the process's pool (see
 * pool.ts), so a stop holds within 50 ms whatever the guest does and the caller's event loop keeps running; or, on
 * Node's default path, every run first on the caller's thread for a slice of fuel (in-thread-first.ts). The core
 * checks the settings and the options and encodes the values on the caller's thread, so `runCode` throws exactly
 * where it does in-thread, and builds the result.
 * @module
 */
import {
  createSandbox,
  type InstancePool,
  inThread,
  type Sandbox,
  type SandboxOptions,
  type TranspilerPort,
} from "../../src/core/runner-port.js";
import { inThreadFirst } from "./in-thread-first.js";
import { onThreads } from "./on-threads.js";

/**
 * Settings of the caller's thread: functions a worker cannot call while guest code runs, and the transpiler and pool,
 * of which each worker has its own.
 */
const UNCROSSABLE = ["clock", "interrupted", "onLog", "transpiler", "pool"] as const;

/**
 * The caller's thread's own transpiler and pool, for the runs it attempts first: Node's default path. Without them
 * every run goes to a worker.
 */
interface CallersThread {
  transpiler: TranspilerPort;
  pool: InstancePool;
}

export function createThreadedSandbox(settings: SandboxOptions, callers?: CallersThread): Sandbox {
  for (const key of UNCROSSABLE) {
    if (settings[key] !== undefined) {
      throw new TypeError(`createSandbox: ${key} cannot cross to a worker thread; pass threads: false to use it`);
    }
  }
  const runner = callers === undefined ? onThreads : inThreadFirst(inThread());
  const sandbox = createSandbox({ ...settings, ...callers, runner });
  // The host's requests are made on the worker, by its own fetch (so a stop there aborts them at once).
  if (settings.fetch?.fetch !== undefined) {
    throw new TypeError("createSandbox: fetch.fetch cannot cross to a worker thread; pass threads: false to use it");
  }
  return sandbox;
}
