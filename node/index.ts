/**
 * The Node entry: the platform-neutral core with the QuickJS wasm and SWC's read from disk and compiled once, from
 * the moment the entry is imported (node/process-wasm.ts), so every run only instantiates them; by default each run
 * starts on the caller's thread for a slice of fuel and goes on on a worker thread (node/threads/) only if it needs
 * more or reaches the caller, so short runs cost what they do in-thread while a stop holds whatever the guest does
 * and guest code never blocks the caller's event loop longer than the slice.
 * @module
 */
import { resolve } from "node:path";
import { InstancePool } from "../src/core/instance-pool.js";
import { createSandbox as createCoreSandbox } from "../src/core/sandbox.js";
import { createSession as createCoreSession, restoreSession as restoreCoreSession } from "../src/core/session.js";
import { Transpiler } from "../src/core/transpile.js";
import type {
  CodeExecution,
  CodeExecutionOptions,
  Sandbox,
  SandboxOptions,
  Session,
  SessionOptions,
  WasmSource,
} from "../src/core/types.js";
import { usePlatformExchange } from "../src/fetch/exchange.js";
import { httpExchange } from "./http-exchange.js";
import { bundlePackages } from "./packages.js";
import { processWasm, readWasm } from "./process-wasm.js";
import { loadSwc } from "./swc.js";
import { createThreadedSandbox } from "./threads/sandbox.js";

export * from "../src/index.js";
export { SLICE_CALLS, SLICE_FUEL } from "./threads/in-thread-first.js";
export {
  CPU_SLOTS,
  CPU_WAIT_MS,
  MAX_NESTING_DEPTH,
  MAX_QUEUED_RUNS,
  MAX_THREADS,
  STOP_GRACE_MS,
  WATCHDOG_MARGIN_MS,
} from "./threads/limits.js";

// The guest's requests are made with undici's dispatcher rather than Node's fetch (node/http-exchange.ts).
usePlatformExchange(httpExchange);

/** The metered QuickJS wasm of this package (`runcode/wasm`), as a loader for `createSandbox({ wasm })`. */
export const nodeWasm: WasmSource = readWasm;

/** Where Node's sandboxes run when `threads` is not given (see docs/limits.md, "Worker threads in Node"). */
export const THREADS_BY_DEFAULT = "auto";

/**
 * The SWC and the booted instances of every sandbox this entry makes on the caller's thread. The first run's instance
 * is restorable, so the second run restores it rather than boot another, and is booted where the run takes it: a
 * TypeScript run transpiles first, which a fresh process's first TypeScript result is faster for (docs/performance.md,
 * "The boot, round four").
 */
const transpiler = new Transpiler(loadSwc);
const pool = new InstancePool({ restoreFirst: true });

/** Settings of Node's sandbox runner. */
export interface NodeSandboxOptions extends SandboxOptions {
  /**
   * Where runs execute (default {@link THREADS_BY_DEFAULT}). `true`: on the worker threads of the process's pool:
   * `terminate()` and the safety cap stop any guest work within 50 ms, and guest code never blocks the caller's event
   * loop. `"auto"`: each run first on the caller's thread, for {@link SLICE_FUEL} units of fuel at most (~2 ms; the
   * fees of its first {@link SLICE_CALLS} synchronous host calls not counted), and on a worker thread, from the start
   * and fed what the attempt's guest got from the host, when it needs more, calls a `report` sink or an `onLog`
   * listener, waits for the host or a timer, or makes requests: short runs cost what they do in-thread, long ones
   * stop as on threads. Host functions and `report` run on the caller's thread either way, once per call. `false`: on the caller's thread
   * only, as the core runs on Workers and in browsers. `clock`, `interrupted`, `onLog`, `transpiler` and `pool` need
   * `threads: false`.
   */
  threads?: boolean | "auto";
  /**
   * npm packages the guest imports by name (`["zod", "lodash", "date-fns", "date-fns/format"]`: a subpath is named
   * as the guest imports it), each resolved from {@link packagesFrom} as Node resolves it, bundled once by esbuild
   * (cached in its `node_modules/.cache/runcode/packages`) and booted into the sandbox's image with `bootModules`,
   * so a run pays nothing for them. A package needing a Node built-in or native code is refused here
   * (docs/library.md, "Packages").
   */
  packages?: readonly string[];
  /** The directory {@link packages} are resolved from (default: `process.cwd()`). */
  packagesFrom?: string;
}

/**
 * The boot modules of packages already bundled in this process, by directory and list: a host that makes a sandbox
 * per request passes the same object, whose instances it then shares (the core checks a frozen setting once).
 */
const packaged = new Map<string, Readonly<Record<string, string>>>();

/** `bootModules` with `packages` bundled into them (by specifier), refusing a name given twice. */
function withPackages(
  bootModules: Readonly<Record<string, string>> | undefined,
  packages: readonly string[] | undefined,
  from: string | undefined,
): Readonly<Record<string, string>> | undefined {
  if (packages === undefined) return bootModules;
  const key = JSON.stringify([resolve(from ?? process.cwd()), packages]);
  let modules = packaged.get(key);
  if (modules === undefined) {
    const bundled: Record<string, string> = {};
    for (const { specifier, source } of bundlePackages(packages, from)) {
      if (Object.hasOwn(bundled, specifier))
        throw new TypeError(`createSandbox: package '${specifier}' is given twice`);
      bundled[specifier] = source;
    }
    modules = Object.freeze(bundled);
    packaged.set(key, modules);
  }
  if (bootModules === undefined) return modules;
  for (const name of Object.keys(modules))
    if (Object.hasOwn(bootModules, name)) throw new TypeError(`createSandbox: package '${name}' is in bootModules too`);
  return Object.freeze({ ...bootModules, ...modules });
}

/**
 * The core's `createSandbox` with this package's wasm as the default `wasm`, where `threads` says (see
 * {@link NodeSandboxOptions.threads}); on the caller's thread the `transpiler` and `pool` are the entry's own, shared by
 * its sandboxes.
 */
export function createSandbox(settings: NodeSandboxOptions = {}): Sandbox {
  const { threads = THREADS_BY_DEFAULT, packages, packagesFrom, ...rest } = settings;
  if (threads !== true && threads !== false && threads !== "auto")
    throw new TypeError('createSandbox: threads must be true, false or "auto"');
  const bootModules = withPackages(rest.bootModules, packages, packagesFrom);
  const core = bootModules === undefined ? rest : { ...rest, bootModules };
  const wasm = core.wasm ?? processWasm;
  if (threads === false) return createCoreSandbox({ transpiler, pool, ...core, wasm });
  return createThreadedSandbox({ ...core, wasm }, threads === "auto" ? { transpiler, pool } : undefined);
}

let shared: Sandbox | undefined;

/** Runs `source` as an ES module in a fresh sandbox with the default settings (contract.md §2.1). */
export function runCode(source: string, options?: CodeExecutionOptions): CodeExecution {
  shared ??= createSandbox();
  return shared.runCode(source, options);
}

/**
 * Creates a session (docs/sessions.md) with this package's wasm and the entry's SWC and pool. Its cells run on the
 * caller's thread, where fuel bounds their CPU (see docs/limits.md, "Sessions").
 */
export function createSession(options: NodeSessionOptions = {}): Promise<Session> {
  return createCoreSession({ transpiler, pool, ...sessionOptionsOf(options) });
}

/** A session in the state a snapshot holds, made as {@link createSession} makes one. */
export function restoreSession(bytes: Uint8Array, options: NodeSessionOptions = {}): Promise<Session> {
  return restoreCoreSession(bytes, { transpiler, pool, ...sessionOptionsOf(options) });
}

/** Settings of Node's sessions: the core's, and npm packages as {@link NodeSandboxOptions} takes them. */
export interface NodeSessionOptions extends SessionOptions, Pick<NodeSandboxOptions, "packages" | "packagesFrom"> {}

/** The core's session options of `options`: the entry's wasm, and the packages bundled into `bootModules`. */
function sessionOptionsOf(options: NodeSessionOptions): SessionOptions {
  const { packages, packagesFrom, ...rest } = options;
  const bootModules = withPackages(rest.bootModules, packages, packagesFrom);
  return { ...rest, ...(bootModules === undefined ? {} : { bootModules }), wasm: rest.wasm ?? processWasm };
}
