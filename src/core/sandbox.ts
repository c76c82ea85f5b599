/**
 * The sandbox factory: host-level settings (wasm source, default memory limit, safety cap, clock) shared by every run
 * it starts. Each run holds a booted instance alone, from the pool every sandbox shares; the next run gets it back
 * as booted (see core/instance.ts).
 * @module
 */

import { fetchPolicyOf } from "../fetch/policy.js";
import { FunctionTable } from "../values/to-guest.js";
import { compiledModule } from "./engine.js";
import { Execution } from "./execution.js";
import { bootOf } from "./instance.js";
import { sharedPool } from "./instance-pool.js";
import { FUEL_PER_MS } from "./limits.js";
import { BOOT_PREFIX, Linker } from "./linker.js";
import { resolveOptions } from "./options.js";
import { Run } from "./run.js";
import type { CodeExecutionOptions, CodeExecutionResult, SafetyCap, Sandbox, SandboxOptions } from "./types.js";

export { FUEL_PER_MS };

/** Memory limit of a run that sets no `memoryLimitBytes`. */
export const DEFAULT_MEMORY_LIMIT_BYTES = 64 * 1024 * 1024;
/** The runtime's own stop for runaway code (see {@link SafetyCap}). */
export const DEFAULT_SAFETY_CAP: SafetyCap = Object.freeze({ cpuTimeMs: 30_000, fuel: 30_000 * FUEL_PER_MS });

const defaultClock = (): (() => number) => {
  const performance = (globalThis as { performance?: { now(): number } }).performance;
  return performance === undefined ? Date.now : () => performance.now();
};

/** Creates a sandbox runner; see {@link SandboxOptions}. */
export function createSandbox(settings: SandboxOptions = {}): Sandbox {
  const mode = settings.instances ?? "restore";
  if (mode !== "restore" && mode !== "fresh")
    throw new TypeError(`createSandbox: instances must be "restore" or "fresh", not ${JSON.stringify(mode)}`);
  const { webApis = false } = settings;
  if (typeof webApis !== "boolean") throw new TypeError("createSandbox: webApis must be a boolean");
  const fetch = settings.fetch === undefined ? undefined : fetchPolicyOf(settings.fetch);
  if (fetch !== undefined && !webApis)
    throw new TypeError("createSandbox: fetch needs webApis: true (the guest's Request, Response and Headers)");
  const boot = bootOf(settings.bootModules, webApis, fetch !== undefined);
  const bootNames = new Set(Object.keys(boot.modules).map((name) => BOOT_PREFIX + name));
  const context = {
    wasm: compiledModule(settings.wasm),
    instances: sharedPool,
    restore: mode === "restore",
    interrupted: settings.interrupted ?? (() => false),
    boot,
    onLog: settings.onLog,
    fetch,
  };
  const clock = settings.clock ?? defaultClock();
  for (const key of Object.keys(settings.safetyCap ?? {})) {
    if (!(key in DEFAULT_SAFETY_CAP))
      throw new TypeError(`createSandbox: safetyCap has no setting '${key}' (it has cpuTimeMs and fuel)`);
  }
  const safetyCap = { ...DEFAULT_SAFETY_CAP, ...settings.safetyCap };
  const defaultMemoryLimitBytes = settings.defaultMemoryLimitBytes ?? DEFAULT_MEMORY_LIMIT_BYTES;
  for (const [key, value] of Object.entries({ defaultMemoryLimitBytes, ...safetyCap })) {
    if (typeof value !== "number" || !(value > 0))
      throw new TypeError(`createSandbox: ${key} must be a positive number`);
  }

  const runCode = (source: string, options?: CodeExecutionOptions) => {
    const started = clock();
    const resolved = resolveOptions(source, options, defaultMemoryLimitBytes);
    const linker = new Linker(resolved, bootNames);
    const reports: unknown[] = [];
    let settled = false;
    const run = new Run(resolved, { ...context, safetyCap, clock }, linker, new FunctionTable(), {
      reports,
      settled: () => settled,
    });
    const finish = (outcome: Pick<CodeExecutionResult, "status" | "result" | "error">): CodeExecutionResult => {
      settled = true;
      const head = outcome.status === "success" ? { status: outcome.status, result: outcome.result } : { ...outcome };
      const durationMs = clock() - started;
      const result: CodeExecutionResult = {
        ...head,
        reports: [...reports],
        logs: [...run.logs],
        durationMs,
        fuelUsed: run.fuelUsed,
      };
      const peak = run.peakBytes;
      if (peak !== undefined) result.memoryUsedBytes = peak;
      return result;
    };
    const execution = new Execution(reports, (error) => {
      run.stop(error);
      return finish({ status: "terminated", error });
    });
    run.execute(source).then(
      (outcome) => execution.settle(finish(outcome)),
      (bug: unknown) =>
        execution.settle(finish({ status: "error", error: { name: "InternalError", message: String(bug) } })),
    );
    return execution;
  };
  return { runCode };
}
