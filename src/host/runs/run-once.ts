/**
 * One run for a client, by one path whatever the door: `POST /run` (answered as JSON or as a stream of events) and
 * MCP's `run_code` over HTTP and over stdio. The request's options are decoded from the wire encoding and checked
 * against the host's caps (`limits.ts`); the run is admitted by its heap limit, started with its tenant's services
 * and its time limit (`timeoutMs`, which `runCode` holds), and stopped when its caller goes away; the answer is the result with the length its
 * encoding may take. A caller may follow the run's console entries and reports as they happen, in the same wire
 * encoding and within the same length.
 * @module
 */
import { type SafetyCapNames, safetyCapStopOf, safetyCapStopWords } from "../../core/limits.js";
import type {
  CodeExecution,
  CodeExecutionLog,
  CodeExecutionOptions,
  CodeExecutionResult,
  RunCode,
} from "../../core/types.js";
import { ANONYMOUS_TENANT, type ToolRegistry } from "../../tools/registry.js";
import type { JsonValue } from "../../values/json.js";
import { fromWire, toWireText, WireLengthError } from "../../values/wire.js";
import { type CpuShares, fuelSpentBy } from "../admission/cpu-budget.js";
import type { RunAdmission } from "../admission/run-admission.js";
import { HostError, isHostError } from "../errors.js";
import { MAX_RUN_MEMORY_BYTES, sourcesTooLarge, timeoutWithin } from "../limits.js";

/** The options of `runCode` a client may send: data only (no `imports`, `report` or `onLog`). */
const OPTION_KEYS = ["execute", "modules", "globals", "language", "memoryLimitBytes", "filename"];

/** What a client asks to run, as it sent it. */
interface RunOnceRequest {
  source: string;
  /** The data-only options of `runCode` ({@link OPTION_KEYS}), values JSON cannot carry in the wire encoding. */
  options?: unknown;
  /** Milliseconds the run may take: 1 to `MAX_RUN_TIMEOUT_MS`, default `DEFAULT_RUN_TIMEOUT_MS`. */
  timeoutMs?: unknown;
}

/** A console entry or a reported value of a run in flight. */
export type RunEvent =
  /** `data`: the entry `{level, args, timestamp}` as wire JSON text. */
  | { type: "log"; level: CodeExecutionLog["level"]; data: string }
  /** `data`: the value as wire JSON text. */
  | { type: "report"; data: string };

/** Who asks for a run, and how to reach them while it runs. */
interface RunCaller {
  /** Whose run it is: its services act for this tenant, and admission counts it in the tenant's share. */
  tenant?: string;
  /** Aborts when the caller goes away: the run stops and its room is released. */
  signal?: AbortSignal;
  /** Hears each console entry and report as it is made, until their texts together pass the answer's length. */
  onEvent?: (event: RunEvent) => void;
  /**
   * Keep the run's room in admission once it ends, until the answer's `release`: for an answer the host holds until
   * its client has read it, which then counts in the tenant's share as the run did.
   */
  keepRoom?: boolean;
}

/** A run's answer: its result, and the characters of wire JSON the result's encoding may take (`resultWire*`). */
export interface RunAnswer {
  result: CodeExecutionResult;
  maxLength: number;
  /** With {@link RunCaller.keepRoom}: gives the run's room back; a second call does nothing. */
  release?: () => void;
}

export interface RunOnceOptions {
  /** Starts each run, with its time limit as its `timeoutMs` option. */
  runCode: RunCode;
  /** The heap limit of a run that sets none (the sandbox's `defaultMemoryLimitBytes`), as admission counts it. */
  defaultMemoryLimitBytes: number;
  /** Services a run may import as bare specifiers, bound to the caller's tenant. */
  tools?: ToolRegistry;
  /** Where runs wait for room (`POST /run` and `/mcp` share one). Default: every run starts at once. */
  admission?: RunAdmission;
  /** The tenants' shares of CPU each run's fuel cap is reserved from (cpu-budget.ts). Default: no shares. */
  cpu?: CpuShares;
  /**
   * The settings behind `runCode`'s safety cap, which a run's stop by it names (`RUN_CAP_NAMES` on runcode serve and
   * the edge). Default {@link SANDBOX_CAP_NAMES}.
   */
  capNames?: SafetyCapNames;
}

/** The safety cap's parts by the sandbox option that sets them, for a host that gives them no settings of its own. */
const SANDBOX_CAP_NAMES: SafetyCapNames = Object.freeze({ cpuTimeMs: "safetyCap.cpuTimeMs", fuel: "safetyCap.fuel" });

/**
 * `result`, a stop by its safety cap worded to name the limit that fired and its value (`safetyCapStopWords`):
 * `Execution stopped by the host's CPU cap per run (RUN_CPU_MS = 2000 ms)`.
 */
export function namingItsStop(
  result: CodeExecutionResult,
  timeoutMs: number,
  names: SafetyCapNames = SANDBOX_CAP_NAMES,
): CodeExecutionResult {
  const stop = safetyCapStopOf(result.error);
  if (stop === undefined || result.error === undefined) return result;
  const message = `Execution stopped by ${safetyCapStopWords(stop, timeoutMs, names)}`;
  return { ...result, error: { ...result.error, message } };
}

/** Runs one request to its answer; throws a `HostError`, having run nothing, when the request is refused. */
export type RunToAnswer = (request: RunOnceRequest, caller?: RunCaller) => Promise<RunAnswer>;

export interface RunOnce {
  /**
   * Checks and admits `request` and starts its run; `answer` settles when the run ends and never rejects. Throws a
   * `HostError` (400, 413, 503), having run nothing, when the request is refused.
   */
  start(request: RunOnceRequest, caller?: RunCaller): Promise<{ answer: Promise<RunAnswer> }>;
  /** {@link RunOnce.start}, then the answer: the port an MCP server takes. */
  run: RunToAnswer;
}

export function createRunOnce(options: RunOnceOptions): RunOnce {
  const { runCode, defaultMemoryLimitBytes, tools, admission, cpu, capNames = SANDBOX_CAP_NAMES } = options;
  const start = async (request: RunOnceRequest, caller: RunCaller = {}) => {
    const { tenant = ANONYMOUS_TENANT, signal = new AbortController().signal, onEvent, keepRoom = false } = caller;
    const { source, runOptions, memory, timeoutMs } = decode(request, defaultMemoryLimitBytes);
    // CPU first: a run its tenant cannot pay for never waits for memory.
    const reserved = cpu === undefined ? 0 : await cpu.budget.reserve(tenant, cpu.fuelOf(timeoutMs));
    // A lost settlement leaves the reservation spent: the tenant waits longer, nobody else does.
    const settle = (used: number) => cpu?.budget.settle(tenant, reserved, used).catch(() => {});
    let release: () => void;
    let run: CodeExecution;
    try {
      release = admission === undefined ? () => {} : await admission.admit(memory, tenant, signal);
    } catch (error) {
      await settle(0);
      throw error;
    }
    try {
      const listeners = onEvent === undefined ? {} : eventsWithin(memory, onEvent);
      run = runCode(source, { ...runOptions, tenant, timeoutMs, imports: tools?.modules(tenant) ?? {}, ...listeners });
    } catch (error) {
      release();
      await settle(0);
      throw isHostError(error) ? error : new HostError("invalid_options", (error as Error).message);
    }
    const stop = () => run.terminate("The request ended");
    signal.addEventListener("abort", stop, { once: true });
    if (signal.aborted) stop();
    const answer = Promise.resolve(run).then(async (result) => {
      signal.removeEventListener("abort", stop);
      if (!keepRoom) release();
      await settle(fuelSpentBy(result, reserved));
      return {
        result: namingItsStop(result, timeoutMs, capNames),
        maxLength: memory,
        ...(keepRoom ? { release } : {}),
      };
    });
    return { answer };
  };
  return { start, run: async (request, caller) => (await start(request, caller)).answer };
}

/**
 * The request checked against the host's caps and its values decoded; a 400 `invalid_request` naming what is wrong,
 * or a 413 for code past `MAX_CODE_BYTES`. What `runCode` itself refuses is left to it.
 */
function decode(request: RunOnceRequest, defaultMemoryLimitBytes: number) {
  const invalid = (message: string) => new HostError("invalid_request", message);
  const { source, options = {} } = request;
  if (typeof options !== "object" || options === null || Array.isArray(options)) {
    throw invalid("'options' must be an object");
  }
  for (const key of Object.keys(options)) {
    if (!OPTION_KEYS.includes(key)) {
      throw invalid(`Unknown or non-data option '${key}': a run takes ${OPTION_KEYS.join(", ")}`);
    }
  }
  const decoded = { ...options } as Record<string, unknown>;
  const { modules, memoryLimitBytes } = decoded;
  const tooLarge = sourcesTooLarge(source, modules);
  if (tooLarge !== undefined) throw tooLarge;
  if (typeof memoryLimitBytes === "number" && memoryLimitBytes > MAX_RUN_MEMORY_BYTES) {
    throw invalid(`'memoryLimitBytes' may be at most ${MAX_RUN_MEMORY_BYTES} here`);
  }
  const timeoutMs = timeoutWithin(request.timeoutMs);
  try {
    // Arguments and globals may use the wire encoding for values JSON cannot carry (bigint, Map, Date, ...).
    if (decoded.globals !== undefined) decoded.globals = fromWire(decoded.globals as JsonValue);
    const execute = decoded.execute as { args?: JsonValue } | undefined;
    if (typeof execute === "object" && execute !== null && execute.args !== undefined) {
      decoded.execute = { ...execute, args: fromWire(execute.args) };
    }
  } catch (error) {
    throw invalid(`A wire-encoded value is malformed: ${(error as Error).message}`);
  }
  const memory =
    typeof memoryLimitBytes === "number" && memoryLimitBytes > 0 ? memoryLimitBytes : defaultMemoryLimitBytes;
  return { source, runOptions: decoded as CodeExecutionOptions, memory, timeoutMs };
}

/**
 * The `onLog` and `report` listeners that hand each entry and value to `onEvent` as wire JSON text while the texts
 * together fit in `maxLength` characters, the most the answer may take; past it the rest are not sent (the result
 * still carries every one). Each text is cut off before it passes what is left, so the work is bounded too.
 */
export function eventsWithin(
  maxLength: number,
  onEvent: (event: RunEvent) => void,
): Pick<CodeExecutionOptions, "onLog" | "report"> {
  let left = maxLength;
  const encode = (value: unknown): string | undefined => {
    if (left === 0) return undefined;
    try {
      const data = toWireText(value, { maxLength: left });
      left -= data.length;
      return data;
    } catch (error) {
      if (!(error instanceof WireLengthError)) throw error;
      left = 0;
      return undefined;
    }
  };
  return {
    onLog: (entry) => {
      const data = encode(entry);
      if (data !== undefined) onEvent({ type: "log", level: entry.level, data });
    },
    report: (value) => {
      const data = encode(value);
      if (data !== undefined) onEvent({ type: "report", data });
    },
  };
}
