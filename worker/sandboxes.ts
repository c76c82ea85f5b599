/**
 * How the edge makes its sandboxes: every sandbox of the isolate, the environment's and `POST /run`'s, gets SWC's
 * wasm compiled at deploy time like QuickJS's (its glue: `npm run build` writes dist/swc/) and the isolate's one
 * pool, whose idle booted instances (16 MiB each) and the runs in flight share the admission's cap of the 128 MB
 * isolate. Sessions get the same transpiler; each holds an instance of its own for its life, so none comes from
 * the pool of runs. Every sandbox boots the deployment's npm packages (worker/packages.generated.js, which the build
 * writes from the packages lock file; none without one), which the guest imports by name.
 * @module
 */
import { instantiate as instantiateSwc } from "../dist/swc/swc.js";
import { InstancePool } from "../src/core/instance-pool.js";
import { RUN_MEMORY_CAP_BYTES } from "../src/host/admission/run-admission.js";
import type { SessionEngine } from "../src/host/sessions/engine.js";
import {
  createSandbox,
  createSession,
  restoreSession,
  type Sandbox,
  type SandboxOptions,
  Transpiler,
} from "../src/index.js";
import swcWasm from "../wasm/swc-fuel.wasm";
import { bootModules } from "./packages.generated.js";

const transpiler = new Transpiler(async () => (out) => instantiateSwc(swcWasm, out));
const pool = new InstancePool();
pool.limitMemory(RUN_MEMORY_CAP_BYTES);

/** `settings` with the deployment's packages among its boot modules (without packages: `settings` as they are). */
function withPackages(settings: SandboxOptions): SandboxOptions {
  return Object.keys(bootModules).length === 0
    ? settings
    : { ...settings, bootModules: { ...bootModules, ...settings.bootModules } };
}

/** The core's `createSandbox` with the deployment's packages, the isolate's transpiler and pool. */
export function edgeSandbox(settings: SandboxOptions): Sandbox {
  return createSandbox({ ...withPackages(settings), transpiler, pool });
}

/**
 * The core's `createSession` and `restoreSession` with `settings` (a session object's, as `/run`'s), the deployment's
 * packages and the transpiler.
 */
export function edgeSessionEngine(settings: SandboxOptions): SessionEngine {
  const booted = withPackages(settings);
  return {
    create: (options) => createSession({ ...booted, ...options, transpiler }),
    restore: (bytes, options) => restoreSession(bytes, { ...booted, ...options, transpiler }),
  };
}
