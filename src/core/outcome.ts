/**
 * How a run ended: from what stopped it (the caller, a cap, a fault of the host) or what the guest threw, the status
 * and the error the caller sees. Nothing here touches the VM; what only the VM can tell (whether user code started)
 * is asked through the run's state.
 * @module
 */
import { BudgetError, stringifyWithin, WorkBudget } from "../values/budget.js";
import { SerializationError } from "../values/errors.js";
import type { Instance } from "./engine.js";
import type { Linker } from "./linker.js";
import { mapPosition, rewriteStack } from "./positions.js";
import type { CodeExecutionError, CodeExecutionResult } from "./types.js";

/** What stopped a run from the host's side. */
export type Stop = { kind: "terminated" | "memory" | "fault"; error: CodeExecutionError };

/** A guest error, described by the guest itself (see `describeError` in the prelude). */
export type Described = {
  name?: string;
  message?: string;
  stack?: string;
  fileName?: string;
  lineNumber?: number;
  columnNumber?: number;
  thrown?: unknown;
};

/** The guest threw (or rejected): what it threw, as the guest described it. */
export class GuestFailure {
  constructor(readonly described: Described) {}
}

/** The run was stopped between two steps (the handle settled, or a stop was recorded). */
export class Stopped {}

/** What the classification reads of the run. */
interface EndState {
  stop: Stop | undefined;
  hostFault: unknown;
  instance: Instance | undefined;
  memoryLimitBytes: number;
  linker: Linker;
  /** Whether user code started evaluating (the phase module in core/linker.ts). */
  evaluating(): boolean;
  /** Raises the run's `memoryUsedBytes` when it ran out of memory. */
  notePeak(bytes: number): void;
}

type Outcome = Pick<CodeExecutionResult, "status" | "error">;

/** How a run ended, as its result says it. */
export type Ending = Pick<CodeExecutionResult, "status" | "result" | "error">;

/** A run that failed for a reason of the host's own, not the guest's. */
export function internalFailure(message: string): Outcome {
  return { status: "error", error: { name: "InternalError", message } };
}

/** Classifies how the run ended; `caught` is what its steps threw. */
export function outcomeOf(state: EndState, caught: unknown): Outcome {
  if (state.stop !== undefined)
    return { status: state.stop.kind === "memory" ? "memory" : "terminated", error: state.stop.error };
  if (state.hostFault !== undefined || !(caught instanceof GuestFailure || caught instanceof Stopped)) {
    return faultOutcome(state, state.hostFault ?? caught);
  }
  if (caught instanceof Stopped) {
    return { status: "terminated", error: { name: "TerminatedError", message: "Execution terminated" } };
  }
  const d = caught.described;
  if (isOutOfMemory(state, d)) return memoryOutcome(state);
  // The phase the host observed decides, never the error's name: once user code runs it can throw anything.
  if (!state.evaluating()) return { status: "link_error", error: linkFailure(state.linker, d) };
  return { status: "error", error: errorOf(state.linker, d) };
}

/** QuickJS's link-time messages (SyntaxErrors with an empty stack); the group is the module's name. */
const LINK_MESSAGE =
  /^(?:Could not find export '[^']*' in module '(.*)'|circular reference when looking for export '[^']*' in module '(.*)'|export '[^']*' in module '(.*)' is ambiguous)$/;

/** A failure before any user code ran: the engine's or the linker's own error, made precise. */
function linkFailure(linker: Linker, d: Described): CodeExecutionError {
  const recorded = d.name === undefined || d.message === undefined ? undefined : linker.failure(d.name, d.message);
  if (recorded !== undefined) return recorded;
  if (d.name === "SyntaxError" && d.fileName !== undefined && d.fileName !== "" && d.lineNumber !== undefined) {
    const at = mapPosition(linker.mapping.bind(linker), d.fileName, d.lineNumber, d.columnNumber ?? 1);
    return { name: "SyntaxError", message: d.message ?? "", ...(at ?? { filename: d.fileName }) };
  }
  const exportFailure = d.name === "SyntaxError" ? LINK_MESSAGE.exec(d.message ?? "") : null;
  if (exportFailure !== null) {
    const name = exportFailure.slice(1).find((group) => group !== undefined) as string;
    const specifier = linker.specifierOf(name);
    const message = (d.message as string).replace(`'${name}'`, `'${specifier}'`);
    return { name: "SyntaxError", message, specifier };
  }
  return { name: d.name || "LinkError", message: d.message ?? "" };
}

function errorOf(linker: Linker, d: Described): CodeExecutionError {
  if ("thrown" in d) {
    const message = typeof d.thrown === "string" ? d.thrown : formatThrown(d.thrown);
    return { name: "Error", message };
  }
  const { stack, top } = rewriteStack(d.stack ?? "", linker.mapping.bind(linker));
  const error: CodeExecutionError = { name: d.name || "Error", message: d.message ?? "" };
  if (stack !== "") error.stack = stack;
  return top === undefined ? error : { ...error, ...top };
}

function isOutOfMemory({ instance }: EndState, d: Described): boolean {
  if (d.name === "InternalError" && d.message === "out of memory") return true;
  const memory = instance?.memory;
  return (
    "thrown" in d &&
    d.thrown === null &&
    memory !== undefined &&
    (instance?.growthRefused === true || memory.buffer.byteLength >= (instance?.maxBytes ?? 0))
  );
}

function memoryOutcome(state: EndState): Outcome {
  state.notePeak(Math.min(state.memoryLimitBytes, state.instance?.memory.buffer.byteLength ?? 0));
  return {
    status: "memory",
    error: {
      name: "MemoryError",
      message: `The sandbox ran out of memory (memoryLimitBytes: ${state.memoryLimitBytes})`,
    },
  };
}

/** A host exception escaped the VM: the instance is dropped; say what most likely happened. */
function faultOutcome(state: EndState, fault: unknown): Outcome {
  const { instance } = state;
  const memory = instance?.memory;
  if (
    memory !== undefined &&
    (instance?.growthRefused === true ||
      memory.buffer.byteLength + 65_536 >= (instance?.maxBytes ?? Number.POSITIVE_INFINITY))
  ) {
    return memoryOutcome(state);
  }
  return failureOf(fault);
}

/** A host exception, out of the VM or out of the host's work on the run's values: what the caller is told. */
export function failureOf(fault: unknown): Outcome {
  if (fault instanceof RangeError) {
    return {
      status: "error",
      error: {
        name: "RangeError",
        message: "Maximum call stack size exceeded (the code nests or recurses too deeply)",
      },
    };
  }
  if (fault instanceof SerializationError)
    return { status: "error", error: { name: fault.name, message: fault.message } };
  return internalFailure(`The sandbox failed: ${fault instanceof Error ? fault.message : String(fault)}`);
}

/** Most characters of JSON a thrown non-Error value's message shows. */
const THROWN_MESSAGE_UNITS = 65_536;

const bigintAsText = (_key: string, v: unknown): unknown => (typeof v === "bigint" ? `${v}n` : v);

/**
 * A thrown non-Error value as a message a person can read: its JSON, within a budget (a thrown value can be a
 * shared-reference bomb that expands to 2^40 nodes; `String()` of it would too, so it is never called on objects).
 */
function formatThrown(value: unknown): string {
  if (typeof value !== "object" || value === null) return String(typeof value === "bigint" ? `${value}n` : value);
  const kind = Array.isArray(value) ? "array" : "object";
  try {
    return stringifyWithin(value, new WorkBudget(THROWN_MESSAGE_UNITS, "the thrown value"), bigintAsText) ?? kind;
  } catch (error) {
    return error instanceof BudgetError
      ? `Uncaught ${kind} too large to show (more than ${THROWN_MESSAGE_UNITS} characters of JSON)`
      : `Uncaught ${kind} with a reference cycle`;
  }
}
