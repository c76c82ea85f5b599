/**
 * The sandbox factory: host-level settings (wasm source, default memory limit, safety cap, clock, transpiler, pool)
 * checked once and shared by every run it starts, each run's options checked and its values encoded before a runner
 * starts it, and the one place a run's `CodeExecutionResult` is built (by core/result.ts), whichever runner ran it.
 * The core's runner gives each run a booted instance of its own, from the sandbox's pool; the next run gets it back as booted (see
 * core/instance.ts). A runner on other threads gets the settings as derived here ({@link threadSettingsOf}) and
 * takes them there as they come ({@link threadContext}).
 * @module
 */

import { type FetchOptions, fetchPolicyOf, fetchSettingOf } from "../fetch/policy.js";
import { compiledModule } from "./engine.js";
import { Execution } from "./execution.js";
import { type Boot, bootOf } from "./instance.js";
import { InstancePool } from "./instance-pool.js";
import { FUEL_PER_MS, safetyCapWithin } from "./limits.js";
import { type Ending, internalFailure } from "./outcome.js";
import type { TranspilerPort } from "./ports.js";
import { type PreparedRun, prepareRun } from "./request.js";
import { resultOf } from "./result.js";
import { inThread, type RunContext, type Runner } from "./run.js";
import type { CodeExecutionOptions, CodeExecutionResult, SafetyCap, Sandbox, SandboxOptions } from "./types.js";

export { FUEL_PER_MS, safetyCapWithin };

/** Memory limit of a run that sets no `memoryLimitBytes`. */
export const DEFAULT_MEMORY_LIMIT_BYTES = 64 * 1024 * 1024;
/** The runtime's own stop for runaway code (see {@link SafetyCap}). */
export const DEFAULT_SAFETY_CAP: SafetyCap = Object.freeze({ cpuTimeMs: 30_000, fuel: 30_000 * FUEL_PER_MS });

/** The core's `createSandbox` settings: the public ones, and where the runs execute. */
interface SandboxSettings extends SandboxOptions {
  /** Default the core's own, in this thread ({@link inThread}); Node's entry passes its worker threads. */
  runner?: Runner;
}

/** A sandbox's settings, checked, with every default applied. */
export interface SandboxContext extends RunContext {
  defaultMemoryLimitBytes: number;
}

const defaultClock = (): (() => number) => {
  const performance = (globalThis as { performance?: { now(): number } }).performance;
  return performance === undefined ? Date.now : () => performance.now();
};

/** Checks a sandbox's settings (a `TypeError` names the bad one) and applies the defaults. */
export function sandboxContext(settings: SandboxOptions): SandboxContext {
  const mode = settings.instances ?? "restore";
  if (mode !== "restore" && mode !== "fresh")
    throw new TypeError(`createSandbox: instances must be "restore" or "fresh", not ${JSON.stringify(mode)}`);
  const { webApis = false } = settings;
  if (typeof webApis !== "boolean") throw new TypeError("createSandbox: webApis must be a boolean");
  const fetch = settings.fetch === undefined ? undefined : fetchPolicyOf(settings.fetch);
  if (fetch !== undefined && !webApis)
    throw new TypeError("createSandbox: fetch needs webApis: true (the guest's Request, Response and Headers)");
  const { intl = false } = settings;
  if (typeof intl !== "boolean") throw new TypeError("createSandbox: intl must be a boolean");
  const boot = bootOf(settings.bootModules, webApis, fetch !== undefined, intl);
  for (const key of Object.keys(settings.safetyCap ?? {})) {
    if (!(key in DEFAULT_SAFETY_CAP))
      throw new TypeError(`createSandbox: safetyCap has no setting '${key}' (it has cpuTimeMs and fuel)`);
  }
  const safetyCap = { ...DEFAULT_SAFETY_CAP, ...settings.safetyCap };
  const { pool = new InstancePool() } = settings;
  if (!(pool instanceof InstancePool)) throw new TypeError("createSandbox: pool must be an InstancePool");
  const defaultMemoryLimitBytes = settings.defaultMemoryLimitBytes ?? DEFAULT_MEMORY_LIMIT_BYTES;
  for (const [key, value] of Object.entries({ defaultMemoryLimitBytes, ...safetyCap })) {
    if (typeof value !== "number" || !(value > 0))
      throw new TypeError(`createSandbox: ${key} must be a positive number`);
  }
  return {
    wasm: compiledModule(settings.wasm),
    pool,
    restore: mode === "restore",
    safetyCap,
    clock: settings.clock ?? defaultClock(),
    interrupted: settings.interrupted ?? (() => false),
    boot,
    onLog: settings.onLog,
    transpiler: settings.transpiler,
    fetch,
    defaultMemoryLimitBytes,
  };
}

/**
 * A sandbox's settings as they cross to another thread that runs its runs, as {@link sandboxContext} derived them
 * (the functions, the transpiler and the pool stay: that thread has its own).
 */
export interface ThreadSettings {
  restore: boolean;
  safetyCap: SafetyCap;
  boot: Boot;
  /** The guest's `fetch`, made on that thread by its own platform `fetch` (so a stop there aborts its requests). */
  fetch: FetchOptions | undefined;
}

/** What a thread that runs a sandbox's runs gives them of its own. */
interface ThreadParts {
  wasm: WebAssembly.Module;
  pool: InstancePool;
  transpiler: TranspilerPort;
  interrupted: () => boolean;
}

/** The settings of `context` that cross to a thread (structured-cloneable). */
export function threadSettingsOf(context: RunContext): ThreadSettings {
  const { restore, safetyCap, boot, fetch } = context;
  return { restore, safetyCap, boot, fetch: fetch && fetchSettingOf(fetch) };
}

/** The context of a sandbox's runs on a thread of its runner: its settings as they crossed, with the thread's parts. */
export function threadContext(settings: ThreadSettings, parts: ThreadParts): RunContext {
  const { fetch, ...crossed } = settings;
  return {
    ...crossed,
    ...parts,
    wasm: compiledModule(parts.wasm),
    clock: defaultClock(),
    onLog: undefined,
    // The allow list's parsed rules do not survive the crossing: they are parsed again from its normalized entries.
    fetch: fetch && fetchPolicyOf(fetch),
  };
}

/** Creates a sandbox runner; see {@link SandboxOptions}. */
export function createSandbox(settings: SandboxSettings = {}): Sandbox {
  const context = sandboxContext(settings);
  const runner = settings.runner ?? inThread();
  const runCode = (source: string, options?: CodeExecutionOptions) => {
    const started = context.clock();
    return startRun(context, runner, prepareRun(source, options, context.defaultMemoryLimitBytes), started);
  };
  return { runCode };
}

/**
 * Starts `request` on `runner` and returns its handle, which settles with the run's result or, the moment it is
 * terminated, with what the run has so far; `started` is when `runCode` was called, on the context's clock.
 */
export function startRun(context: RunContext, runner: Runner, request: PreparedRun, started: number): Execution {
  const reports: unknown[] = [];
  let settled = false;
  const run = runner(context, request, { reports, settled: () => settled });
  const finish = (ending: Ending): CodeExecutionResult => {
    settled = true;
    const { logs, memoryUsedBytes, fuelUsed, fuelRedone } = run;
    const durationMs = context.clock() - started;
    return resultOf(ending, { reports, logs, durationMs, memoryUsedBytes, fuelUsed, fuelRedone });
  };
  // The run's time limit; its safety cap holds it where this timer cannot fire (see `runSafetyCap`).
  const { timeoutMs } = request.options;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const settle = (result: CodeExecutionResult) => {
    if (timer !== undefined) clearTimeout(timer);
    execution.settle(result);
  };
  const execution = new Execution(reports, (error) => {
    if (timer !== undefined) clearTimeout(timer);
    run.stop(error);
    return finish({ status: "terminated", error });
  });
  if (timeoutMs !== undefined) {
    timer = setTimeout(() => execution.terminate(`The run's time limit of ${timeoutMs} ms ran out`), timeoutMs);
  }
  run.ended.then(
    (ending) => settle(finish(ending)),
    (bug: unknown) => settle(finish(internalFailure(String(bug)))),
  );
  return execution;
}
