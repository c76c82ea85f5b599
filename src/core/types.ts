/**
 * The caller-facing contract of `runCode` (spec: contract.md §2-§4, §12), plus the host-level settings of a
 * sandbox runner.
 * @module
 */
import type { FetchOptions } from "../fetch/policy.js";
import type { InstancePoolPort, TranspilerPort } from "./ports.js";

export type { FetchOptions, FetchTransport } from "../fetch/policy.js";
export type { FuelAccount, InstancePoolPort, Transpiled, TranspileFailure, TranspilerPort } from "./ports.js";

/** Options of one run (contract.md §3). Unknown keys are rejected with a `TypeError`. */
export interface CodeExecutionOptions {
  /**
   * Export to run and arguments for it when it is a function. Default `{ fn: 'default', args: [] }`. `'script'`:
   * the default export when the module has one, else the module runs for its effects and succeeds with no result.
   */
  execute?: { fn?: string; args?: unknown[] } | "script";
  /** Bare specifier -> named exports of a synthetic module (`default` key = default export). */
  imports?: Record<string, Record<string, unknown>>;
  /** Relative specifier from the graph root (`'./lib/x.js'`) -> module source (JS or TS). */
  modules?: Record<string, string>;
  /** Identifier -> value, visible as free identifiers in every module, never on `globalThis`. */
  globals?: Record<string, unknown>;
  /** Source language of the entry and of every module. Default `'typescript'` (types erased, not checked). */
  language?: "javascript" | "typescript";
  /** Cap on the sandbox heap in bytes; exceeding it settles with `status: 'memory'`. */
  memoryLimitBytes?: number;
  /** Name of the entry module in stacks and errors. Default `'<runCode>'`. */
  filename?: string;
  /** Host-side sink called synchronously for every value the guest passes to `report`. */
  report?: (value: unknown) => void;
  /**
   * Called with every `console` entry of this run as the guest makes it (after the sandbox's own `onLog`; the entry
   * is in `result.logs` too), so a caller can stream them. What it throws, the guest's `console` call throws.
   */
  onLog?: (entry: CodeExecutionLog) => void;
  /**
   * runcode's extension beyond the contract: who the run's work counts for, a string of at most 256 characters.
   * Runs of different tenants take shared resources (worker threads) in turns; hosts pass their tenant. Runs without
   * one count for the library's caller, as one tenant. A run in-thread only carries it.
   */
  tenant?: string;
  /**
   * runcode's extension beyond the contract: the run's time limit in milliseconds (above 0, at most 2^31 - 1). When it
   * runs out the run ends `terminated` ("The run's time limit of N ms ran out"); its safety cap is lowered to as many
   * ms of CPU and as much fuel (`safetyCapWithin`) so that it stops on time where a timer cannot fire
   * (synchronous guest code on the caller's thread) or clocks stand still (deployed Workers). Default none: only the
   * sandbox's safety cap.
   */
  timeoutMs?: number;
}

/** The five outcomes of a run (contract.md §4.1). */
export type CodeExecutionStatus = "success" | "error" | "memory" | "terminated" | "link_error";

/**
 * What the runtime tells apart by `code` where `name` alone does not: `"missing_export"`, the module does not export
 * what `execute.fn` names.
 */
export type CodeExecutionErrorCode = "missing_export";

/** What went wrong, with positions in the caller's original source (contract.md §4.2). */
export interface CodeExecutionError {
  name: string;
  message: string;
  /** See {@link CodeExecutionErrorCode}. */
  code?: CodeExecutionErrorCode;
  stack?: string;
  /** Module specifier that failed to link, when applicable. */
  specifier?: string;
  /** Module the position below belongs to: `filename` for the entry, the `modules` key otherwise. */
  filename?: string;
  /** 1-based line in the original source. */
  line?: number;
  /** 1-based column in the original source. */
  column?: number;
}

/** One captured `console.*` call (contract.md §4.3). */
export interface CodeExecutionLog {
  level: "log" | "info" | "warn" | "error" | "debug";
  args: unknown[];
  /** `Date.now()` of the host when the guest made the call. */
  timestamp: number;
}

/** The value a run settles with. A run never rejects: its outcome is this value. */
export interface CodeExecutionResult {
  status: CodeExecutionStatus;
  /** The selected export's final value; present only on `success`. */
  result?: unknown;
  reports: unknown[];
  logs: CodeExecutionLog[];
  /** Present iff `status` is not `'success'`. */
  error?: CodeExecutionError;
  /** Milliseconds from the `runCode()` call to settlement. */
  durationMs: number;
  /**
   * The engine's work the run spent (see `SafetyCap.fuel`): the same for the same program on every run and thread
   * mode. Absent when the run ended from outside its thread (a worker ended by a stop).
   */
  fuelUsed?: number;
  /**
   * runcode's extension beyond the contract: the engine's work spent on an attempt of the run that was then run again
   * from the start, not in `fuelUsed`: on Node's default path, the attempt on the caller's thread (at most a slice,
   * `SLICE_FUEL`, and its stop's grace) of a run handed to a worker thread. Present only then. The engine did that work
   * too: a host charging a tenant for CPU charges `fuelUsed + fuelRedone`.
   */
  fuelRedone?: number;
  /** Peak heap of the sandbox in bytes, as the engine counts it. */
  memoryUsedBytes?: number;
}

/** The handle `runCode` returns at once (contract.md §2.2). */
export interface CodeExecution extends PromiseLike<CodeExecutionResult> {
  /** Stop the run; idempotent. Settles with `status: 'terminated'` and `reason` in `error.message`. */
  terminate(reason?: string): void;
  /** `true` until the handle settles. */
  readonly running: boolean;
  /** Live, append-only view of the values reported so far. */
  readonly reports: readonly unknown[];
}

/** The shape every host of the core exposes. */
export type RunCode = (source: string, options?: CodeExecutionOptions) => CodeExecution;

/**
 * Where the QuickJS wasm comes from. A compiled module is the fast path (and the only one on Workers); bytes or a
 * loader of either are compiled once per sandbox; `undefined` lets the variant's own loader fetch and compile it
 * for every run (works in Node and browsers, slower).
 */
export type WasmSource =
  | WebAssembly.Module
  | ArrayBuffer
  | Uint8Array
  | (() => Promise<WebAssembly.Module | ArrayBuffer | Uint8Array>);

/** The runtime's own stop for runaway code (contract.md §6.4). Whichever limit is reached first fires. */
export interface SafetyCap {
  /** Milliseconds of guest execution (time spent awaiting the host does not count). */
  cpuTimeMs: number;
  /**
   * Units of the engine's own work (one per function entry or loop iteration inside the engine, one per 32 bytes it
   * copies or fills, 50 per call into the host), metered inside the wasm, so it holds inside natives and where clocks
   * stand still during synchronous work, as on deployed Cloudflare Workers. Deterministic: the same program spends
   * the same fuel on every run. See docs/limits.md for CPU time per unit.
   */
  fuel: number;
}

/** Host-level settings of a sandbox runner. */
export interface SandboxOptions {
  /** The QuickJS wasm; see {@link WasmSource}. */
  wasm?: WasmSource;
  /** Heap cap of a run that sets no `memoryLimitBytes`. */
  defaultMemoryLimitBytes?: number;
  /** The runtime's own stop for runaway code; partial settings keep the other default. */
  safetyCap?: Partial<SafetyCap>;
  /** Monotonic milliseconds used for `durationMs` and the safety cap. Default `performance.now`. */
  clock?: () => number;
  /**
   * `"restore"` (default): a run gets an instance booted once, whose memory is written back to the booted image
   * after every run. `"fresh"`: every run boots a new instance (slower; for comparison).
   */
  instances?: "restore" | "fresh";
  /**
   * Read with every interrupt poll and at every yield point: once it returns `true` the run stops as `terminated`,
   * native work included at its next poll. For a flag another thread sets (a run on a worker thread cannot receive
   * messages while guest code runs synchronously).
   */
  interrupted?: () => boolean;
  /**
   * ES modules evaluated once when an instance boots and kept in its booted image, so that runs pay neither their
   * compile nor their evaluation: every module of a run can import one as `runcode:boot/<name>`, and by `<name>`
   * itself when it is a bare specifier (`zod`, `date-fns/format`: Node's `packages` are booted so), after
   * `options.imports`. They import nothing; what they hold is as booted at the start of every run (a run's changes go
   * with the restore).
   */
  bootModules?: Readonly<Record<string, string>>;
  /**
   * Installs the Web APIs on the sandbox's global object (contract.md §13): `URL`, `URLSearchParams`, `TextEncoder`,
   * `TextDecoder`, `atob`, `btoa`, `crypto.getRandomValues`, `crypto.randomUUID`, `crypto.subtle`, the timers,
   * `performance.now`, `Event`, `EventTarget`, `AbortController`, `AbortSignal`, `DOMException`, `Headers`, `Request`,
   * `Response`, `Blob`, `File` and `FormData`. They are part of the booted image, so a run pays nothing for them.
   * Default `false`: only ECMAScript's built-ins, `structuredClone` and `queueMicrotask`.
   */
  webApis?: boolean;
  /**
   * Installs `Intl` (contract.md §14): `NumberFormat`, `DateTimeFormat`, `Collator`, `PluralRules`,
   * `RelativeTimeFormat`, `ListFormat`, `Segmenter` and `getCanonicalLocales`, and makes the `toLocaleString` family,
   * `localeCompare` and `toLocale{Upper,Lower}Case` locale-sensitive. The host's own `Intl` answers each call (charged
   * as fuel), with "en-US" and "UTC" where the guest names no locale or time zone, never the host's. Part of the booted
   * image. Default `false`: no `Intl`, and those methods as QuickJS has them. `webApis` does not imply it.
   */
  intl?: boolean;
  /**
   * Called with every `console` entry as the guest makes it (the entry is in `result.logs` too), so a host can
   * stream them. What it throws, the guest's `console` call throws; a promise it returns is awaited by no one.
   */
  onLog?: (entry: CodeExecutionLog) => void;
  /**
   * Erases TypeScript (the default `language`): the core's `Transpiler` over SWC's metered wasm (`runcode/swc` and
   * `runcode/swc.wasm`); sandboxes given the same one share its SWC instance and its cache. Without one a TypeScript
   * run fails. Node's entry gives its own.
   */
  transpiler?: TranspilerPort;
  /**
   * The booted instances runs take and give back: an `InstancePool` (see {@link InstancePoolPort}); sandboxes given
   * the same pool share its idle instances and its memory bound. Default: a pool of this sandbox's own.
   */
  pool?: InstancePoolPort;
  /**
   * Gives the guest `fetch` (contract.md §13.8), reaching only the origins (and path prefixes) of `allow`; needs
   * `webApis: true`. Without it `fetch` does not exist in the guest.
   */
  fetch?: FetchOptions;
}

/** A sandbox runner: every `runCode` call holds its own wasm instance and linear memory, as booted, while it runs. */
export interface Sandbox {
  runCode: RunCode;
}

/** A session's settings (`createSession`): its sandbox's, and the run options every cell shares, given once. */
export interface SessionOptions extends SandboxOptions {
  imports?: CodeExecutionOptions["imports"];
  modules?: CodeExecutionOptions["modules"];
  /** Identifier -> value, bound as properties of the session's global object (a cell may declare the name again). */
  globals?: CodeExecutionOptions["globals"];
  memoryLimitBytes?: number;
  tenant?: string;
}

/** Options of one cell (`Session.run`). Unknown keys are rejected with a `TypeError`. */
export interface CellOptions {
  /** Default `'typescript'` (types erased, not checked), as `runCode`'s. */
  language?: "javascript" | "typescript";
  /** The cell's time limit in milliseconds, from the call of `run` (see `CodeExecutionOptions.timeoutMs`). */
  timeoutMs?: number;
  /** Terminates the cell when it aborts. */
  signal?: AbortSignal;
  /** Name of the cell in stacks and errors. Default `'<cell>'`. */
  filename?: string;
  report?: (value: unknown) => void;
  onLog?: (entry: CodeExecutionLog) => void;
}

/**
 * State kept between calls: one realm whose cells run one at a time, REPL style (docs/sessions.md). A cell that
 * throws, runs out of fuel, memory or time, or is terminated leaves the session usable.
 */
export interface Session {
  /** Evaluates one cell; its result is the cell's completion value. Waits for the cells before it. */
  run(cell: string, options?: CellOptions): CodeExecution;
  /** The whole state as bytes, between cells (docs/wire-format.md); `restoreSession` takes them. */
  snapshot(): Promise<Uint8Array>;
  /** An independent session with the same state. */
  fork(): Promise<Session>;
  /** Frees the session; later calls throw `SessionError` "closed". Idempotent. */
  close(): void;
  readonly closed: boolean;
  /** Cells run so far (forks and restores keep the count). */
  readonly cells: number;
  /** Bytes of linear memory the session's state spans (what a snapshot holds before elision and compression). */
  readonly memoryBytes: number;
}
