/**
 * The protocol between the playground page and its sandbox Web Worker. Every message has a `type` and the nonce
 * of the request it belongs to; the page makes a fresh random nonce per request and ignores anything whose nonce
 * is not the one it is waiting for, so stale messages of a stopped run and messages forged inside the worker (user
 * host functions run there) never reach the UI. Values cross as `toWire` JSON (see `src/values/wire.ts`), which keeps
 * what structured clone drops (custom error names, a result that is `undefined` vs. missing).
 * @module
 */
import type { JsonValue } from "../src/values/json.js";

/** A value the worker installs as a global or an import export. */
export type HostValue = { kind: "json"; value: JsonValue } | { kind: "function"; source: string };

/** The data-only options plus the host values the worker turns into real ones. */
export interface RunPayload {
  source: string;
  options: {
    execute?: { fn?: string; args?: unknown[] } | "script";
    modules?: Record<string, string>;
    language?: "javascript" | "typescript";
    memoryLimitBytes?: number;
    filename?: string;
  };
  globals: Record<string, HostValue>;
  imports: Record<string, Record<string, HostValue>>;
  /** Run in the worker's sandbox with the Web APIs. */
  webApis: boolean;
}

/** Page -> worker: answer with `ready` once the engine is warm. */
interface HelloMessage {
  type: "hello";
  nonce: string;
}
/** Page -> worker: start one run. */
interface RunMessage {
  type: "run";
  nonce: string;
  payload: RunPayload;
}
export type ToWorker = HelloMessage | RunMessage;

/** Worker -> page: the engine is compiled and warm. */
interface ReadyMessage {
  type: "ready";
  nonce: string;
  /** Milliseconds the worker spent getting ready (wasm compile + first run). */
  warmupMs: number;
}
/** Worker -> page: one value the guest passed to `report`, as it happens. */
interface ReportMessage {
  type: "report";
  nonce: string;
  value: JsonValue;
}
/** Worker -> page: the run settled. */
interface ResultMessage {
  type: "result";
  nonce: string;
  /** `toWire(CodeExecutionResult)`. */
  result: JsonValue;
  /** Milliseconds from receiving the run message to settlement, measured in the worker. */
  workerMs: number;
}
/** Worker -> page: the run could not start (bad options, a host function snippet that does not compile). */
interface RejectedMessage {
  type: "rejected";
  nonce: string;
  name: string;
  message: string;
}
export type FromWorker = ReadyMessage | ReportMessage | ResultMessage | RejectedMessage;

const isRecord = (data: unknown): data is Record<string, unknown> =>
  typeof data === "object" && data !== null && !Array.isArray(data);
const hasNonce = (data: unknown, type: string): data is Record<string, unknown> =>
  isRecord(data) && data.type === type && typeof data.nonce === "string" && data.nonce.length >= 16;

/** `true` for a well-formed `hello`. */
export const isHello = (data: unknown): data is HelloMessage => hasNonce(data, "hello");

/** `true` for a well-formed `run`. */
export function isRun(data: unknown): data is RunMessage {
  if (!hasNonce(data, "run") || !isRecord(data.payload)) return false;
  const { source, options, globals, imports, webApis } = data.payload;
  return (
    typeof source === "string" &&
    isRecord(options) &&
    isRecord(globals) &&
    isRecord(imports) &&
    typeof webApis === "boolean"
  );
}

/** `true` for a well-formed `ready` answering `nonce`. */
export const isReady = (data: unknown, nonce: string): data is ReadyMessage =>
  hasNonce(data, "ready") && data.nonce === nonce && typeof data.warmupMs === "number";

/** `true` for a well-formed `report` of the run `nonce`. */
export const isReport = (data: unknown, nonce: string): data is ReportMessage =>
  hasNonce(data, "report") && data.nonce === nonce && "value" in data;

/** `true` for a well-formed `result` of the run `nonce`. */
export const isResult = (data: unknown, nonce: string): data is ResultMessage =>
  hasNonce(data, "result") && data.nonce === nonce && "result" in data && typeof data.workerMs === "number";

/** `true` for a well-formed `rejected` of the run `nonce`. */
export const isRejected = (data: unknown, nonce: string): data is RejectedMessage =>
  hasNonce(data, "rejected") &&
  data.nonce === nonce &&
  typeof data.name === "string" &&
  typeof data.message === "string";

/** A fresh unguessable nonce. */
export const newNonce = (): string => crypto.randomUUID();
