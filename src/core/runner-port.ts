/**
 * The core's door for a runner that runs a sandbox's runs on other threads (Node's, node/threads/): everything such a
 * runner takes from the core, here and nowhere else. The caller's thread gets a sandbox's settings derived once
 * (`threadSettingsOf`), the thread that runs its runs takes them as they come (`threadContext`); values cross as the
 * tapes of the core's encoders.
 * @module
 */
export { usePlatformExchange } from "../fetch/exchange.js";
export { bridged, SerializationError, Thrown } from "../values/errors.js";
export { Tape } from "../values/tape.js";
export { encodeForGuest, FunctionTable } from "../values/to-guest.js";
export { decodeFromGuest } from "../values/to-host.js";
export { ForwardingRun } from "./forwarding-run.js";
export type { Relay } from "./guest-bridge.js";
export { type Boot, bindingBoot } from "./instance.js";
export { InstancePool } from "./instance-pool.js";
export { runSafetyCap, safetyCapStopOf } from "./limits.js";
export { type Ending, failureOf, internalFailure } from "./outcome.js";
export type { TranspilerPort } from "./ports.js";
export { type Reading, Recording } from "./recording.js";
export type { PreparedRun, RunOptions } from "./request.js";
export {
  callingAs,
  inThread,
  type Nesting,
  ORPHANED,
  type RunChannel,
  type RunContext,
  type Runner,
  type StartedRun,
} from "./run.js";
export { createSandbox, type ThreadSettings, threadContext, threadSettingsOf } from "./sandbox.js";
export { type NewSwc, TRANSPILE_BASE_FUEL, Transpiler } from "./transpile.js";
export type { CodeExecutionError, CodeExecutionLog, CodeExecutionStatus, Sandbox, SandboxOptions } from "./types.js";
