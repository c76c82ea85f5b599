/**
 * What both tool examples share: run a model's program in a fresh runcode sandbox within a deadline and a heap cap,
 * and answer what the model needs to read next: the status, the result, what the program printed, and the error
 * with its line.
 * @module
 */
import { type CodeExecutionResult, type JsonValue, runCode, toWire, WireLengthError } from "runcode";

/** The tool's description, written for the model. */
export const RUN_CODE_DESCRIPTION =
  "Runs a JavaScript or TypeScript program in a fresh sandbox and answers what it printed with console.log and, " +
  "when it has one, its default export. Top-level await works. Only ECMAScript built-ins exist: no fetch, timers, " +
  "require or file system.";

/** What the tool answers: small JSON. */
export interface ToolAnswer {
  status: CodeExecutionResult["status"];
  /** The default export, in runcode's lossless wire JSON (bigint, Map, Date... survive); only on success. */
  result?: JsonValue;
  /** One line per `console` call. */
  logs: string[];
  /** `Name: message (line L)`, enough for the model to fix its program. */
  error?: string;
}

export interface RunLimits {
  /** Wall-clock budget of one run. Default 5,000 ms. */
  timeoutMs?: number;
  /** Heap cap of one run. Default 32 MiB. */
  memoryLimitBytes?: number;
}

/** Characters of one value shown to the model: a program can print far more than a context window holds. */
export const MAX_VALUE_CHARS = 4_000;

/** Runs `code` and answers the model; never throws for anything the program does. */
export async function runForModel(code: string, limits: RunLimits = {}): Promise<ToolAnswer> {
  const { timeoutMs = 5_000, memoryLimitBytes = 32 * 1024 * 1024 } = limits;
  // Models mostly write scripts: one that only prints is a success, not a missing `export default`.
  const run = runCode(code, { execute: "script", memoryLimitBytes });
  const deadline = setTimeout(() => run.terminate(`the ${timeoutMs} ms budget ran out`), timeoutMs);
  const result = await run;
  clearTimeout(deadline);
  const answer: ToolAnswer = {
    status: result.status,
    logs: result.logs.map((log) => {
      const line = log.args.map((arg) => (typeof arg === "string" ? cut(arg) : JSON.stringify(wire(arg)))).join(" ");
      return log.level === "log" ? line : `[${log.level}] ${line}`;
    }),
  };
  if (result.status === "success" && result.result !== undefined) answer.result = wire(result.result);
  if (result.error !== undefined) {
    const { name, message, line } = result.error;
    answer.error = `${name}: ${cut(message)}${line === undefined ? "" : ` (line ${line})`}`;
  }
  return answer;
}

function cut(text: string): string {
  return text.length > MAX_VALUE_CHARS ? `${text.slice(0, MAX_VALUE_CHARS)}... (${text.length} characters)` : text;
}

function wire(value: unknown): JsonValue {
  try {
    return toWire(value, { maxLength: MAX_VALUE_CHARS });
  } catch (error) {
    if (error instanceof WireLengthError) return `(a value longer than ${MAX_VALUE_CHARS} characters of JSON)`;
    throw error;
  }
}
