/**
 * runcode: run JavaScript and TypeScript written by an LLM or a user in a QuickJS-WASM sandbox. This entry is
 * platform-neutral (no Node, Workers or DOM APIs): `runCode` lets the QuickJS variant load its own wasm and fetches
 * SWC's from the package on its first TypeScript run, and `createSandbox({ wasm })` takes a compiled
 * `WebAssembly.Module` (the only way on Cloudflare Workers), bytes, or a loader. The Node entry (`node/index.ts`) hands
 * in the wasm compiled once from disk.
 * @module
 */
import { createSandbox as createCoreSandbox } from "./core/sandbox.js";
import { createSession as createCoreSession, restoreSession as restoreCoreSession } from "./core/session.js";
import { Transpiler } from "./core/transpile.js";
import type {
  CodeExecution,
  CodeExecutionOptions,
  Sandbox,
  SandboxOptions,
  Session,
  SessionOptions,
} from "./core/types.js";

export { InstancePool } from "./core/instance-pool.js";
export { MAX_HOST_CALLS_IN_FLIGHT } from "./core/run.js";
export { DEFAULT_MEMORY_LIMIT_BYTES, DEFAULT_SAFETY_CAP, FUEL_PER_MS, safetyCapWithin } from "./core/sandbox.js";
export { MAX_QUEUED_CELLS, SessionError, type SessionErrorCode } from "./core/session.js";
export { type NewSwc, type Swc, type SwcOptions, Transpiler } from "./core/transpile.js";
export type {
  CellOptions,
  CodeExecution,
  CodeExecutionError,
  CodeExecutionErrorCode,
  CodeExecutionLog,
  CodeExecutionOptions,
  CodeExecutionResult,
  CodeExecutionStatus,
  FetchOptions,
  FetchTransport,
  FuelAccount,
  InstancePoolPort,
  RunCode,
  SafetyCap,
  Sandbox,
  SandboxOptions,
  Session,
  SessionOptions,
  Transpiled,
  TranspileFailure,
  TranspilerPort,
  WasmSource,
} from "./core/types.js";
export { MAX_PENDING_TIMERS } from "./core/web-apis.js";
export { SerializationError } from "./values/errors.js";
export type { JsonValue } from "./values/json.js";
export { fromWire, toWire, toWireText, WireLengthError, type WireOptions } from "./values/wire.js";

/**
 * The `transpiler` of this entry's sandboxes given none: on the first TypeScript run, SWC's glue imported from the
 * package and its wasm fetched from beside it (`runcode/swc`'s `load`), which a bundler such as Vite emits as an
 * asset. On Workers, which compile wasm only at deploy time, pass a `transpiler` of the deployed module.
 */
const transpiler = new Transpiler(async () => {
  try {
    return await (await import("runcode/swc")).load();
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new TypeError(
      `TypeScript needs SWC: this sandbox was given no transpiler, and SWC's wasm could not be loaded from the package (${reason}): pass SandboxOptions.transpiler`,
    );
  }
});

/** Creates a sandbox runner; see {@link SandboxOptions}. */
export function createSandbox(settings: SandboxOptions = {}): Sandbox {
  return createCoreSandbox({ transpiler, ...settings });
}

let shared: Sandbox | undefined;

/** Runs `source` as an ES module in a fresh sandbox with the default settings (contract.md §2.1). */
export function runCode(source: string, options?: CodeExecutionOptions): CodeExecution {
  shared ??= createSandbox();
  return shared.runCode(source, options);
}

/** Creates a session: state kept between calls (docs/sessions.md); see {@link Session}. */
export function createSession(options: SessionOptions = {}): Promise<Session> {
  return createCoreSession({ transpiler, ...options });
}

/** A session in the state a snapshot holds (`Session.snapshot`); see docs/sessions.md. */
export function restoreSession(bytes: Uint8Array, options: SessionOptions = {}): Promise<Session> {
  return restoreCoreSession(bytes, { transpiler, ...options });
}
