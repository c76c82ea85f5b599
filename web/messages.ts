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

/**
 * What a session is made with, once (`createSession`'s options): the run options that outlive a cell (modules, the
 * memory cap), the host values and the Web APIs setting.
 */
export interface SessionSettings {
  modules?: Record<string, string>;
  memoryLimitBytes?: number;
  globals: Record<string, HostValue>;
  imports: Record<string, Record<string, HostValue>>;
  webApis: boolean;
}

/** One cell of a session: its source and the options a cell takes (`CellOptions`). */
export interface CellPayload {
  source: string;
  language?: "javascript" | "typescript";
  filename?: string;
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
/**
 * Page -> worker: make session `session` (an id the page picks): empty, or in the state of `snapshot` (a session
 * brought back into a fresh worker after a hard stop). Answered by `opened` or `rejected`.
 */
interface OpenMessage {
  type: "open";
  nonce: string;
  session: string;
  settings: SessionSettings;
  snapshot?: Uint8Array;
}
/** Page -> worker: make session `session` a fork of session `from`. Answered by `opened` or `rejected`. */
interface ForkMessage {
  type: "fork";
  nonce: string;
  session: string;
  from: string;
}
/** Page -> worker: close session `session`; not answered. */
interface CloseMessage {
  type: "close";
  nonce: string;
  session: string;
}
/** Page -> worker: run one cell in session `session`; answered as a run is, then by a `snapshot`. */
interface CellMessage {
  type: "cell";
  nonce: string;
  session: string;
  cell: CellPayload;
}
/**
 * Page -> worker: terminate the cell of nonce `nonce`, answered by `stopping`. Reaches the worker only while the cell
 * waits (on a timer, a host function); a cell running synchronously holds the thread, and the page, never answered,
 * terminates the worker.
 */
interface StopCellMessage {
  type: "stop-cell";
  nonce: string;
}
export type ToWorker =
  | HelloMessage
  | RunMessage
  | OpenMessage
  | ForkMessage
  | CloseMessage
  | CellMessage
  | StopCellMessage;
/** A request the page waits on, without its nonce (the runner adds a fresh one). */
export type SessionRequest = Omit<OpenMessage, "nonce"> | Omit<ForkMessage, "nonce"> | Omit<CellMessage, "nonce">;

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
/**
 * Worker -> page, after a cell's `result`: the session's state as the cell left it (`Session.snapshot()`), for bringing
 * it back after a hard stop; none when the session was closed meanwhile. Sent before any later cell of the session
 * starts, as the session queues that cell behind the snapshot.
 */
interface SnapshotMessage {
  type: "snapshot";
  nonce: string;
  snapshot?: Uint8Array;
}
/** Worker -> page: the cell of a `stop-cell` is terminated; its result follows. */
interface StoppingMessage {
  type: "stopping";
  nonce: string;
}
/** Worker -> page: the session of an `open` or `fork` is made. */
interface OpenedMessage {
  type: "opened";
  nonce: string;
}
/** Worker -> page: the run could not start (bad options, a host function snippet that does not compile). */
interface RejectedMessage {
  type: "rejected";
  nonce: string;
  name: string;
  message: string;
}
export type FromWorker =
  | ReadyMessage
  | ReportMessage
  | ResultMessage
  | SnapshotMessage
  | StoppingMessage
  | OpenedMessage
  | RejectedMessage;

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

const isId = (value: unknown): value is string => typeof value === "string" && value !== "";

function isSettings(value: unknown): value is SessionSettings {
  if (!isRecord(value)) return false;
  const { modules, memoryLimitBytes, globals, imports, webApis } = value;
  return (
    (modules === undefined || isRecord(modules)) &&
    (memoryLimitBytes === undefined || typeof memoryLimitBytes === "number") &&
    isRecord(globals) &&
    isRecord(imports) &&
    typeof webApis === "boolean"
  );
}

/** `true` for a well-formed `open`. */
export const isOpen = (data: unknown): data is OpenMessage =>
  hasNonce(data, "open") &&
  isId(data.session) &&
  isSettings(data.settings) &&
  (data.snapshot === undefined || data.snapshot instanceof Uint8Array);

/** `true` for a well-formed `fork`. */
export const isFork = (data: unknown): data is ForkMessage =>
  hasNonce(data, "fork") && isId(data.session) && isId(data.from);

/** `true` for a well-formed `close`. */
export const isClose = (data: unknown): data is CloseMessage => hasNonce(data, "close") && isId(data.session);

/** `true` for a well-formed `cell`. */
export const isCell = (data: unknown): data is CellMessage =>
  hasNonce(data, "cell") && isId(data.session) && isRecord(data.cell) && typeof data.cell.source === "string";

/** `true` for a well-formed `stop-cell`. */
export const isStopCell = (data: unknown): data is StopCellMessage => hasNonce(data, "stop-cell");

/** `true` for a well-formed `ready` answering `nonce`. */
export const isReady = (data: unknown, nonce: string): data is ReadyMessage =>
  hasNonce(data, "ready") && data.nonce === nonce && typeof data.warmupMs === "number";

/** `true` for a well-formed `report` of the run `nonce`. */
export const isReport = (data: unknown, nonce: string): data is ReportMessage =>
  hasNonce(data, "report") && data.nonce === nonce && "value" in data;

/** `true` for a well-formed `result` of the run `nonce`. */
export const isResult = (data: unknown, nonce: string): data is ResultMessage =>
  hasNonce(data, "result") && data.nonce === nonce && "result" in data && typeof data.workerMs === "number";

/** `true` for a well-formed `snapshot` (of whichever cell its nonce names). */
export const isSnapshot = (data: unknown): data is SnapshotMessage =>
  hasNonce(data, "snapshot") && (data.snapshot === undefined || data.snapshot instanceof Uint8Array);

/** `true` for a well-formed `stopping` of the cell `nonce`. */
export const isStopping = (data: unknown, nonce: string): data is StoppingMessage =>
  hasNonce(data, "stopping") && data.nonce === nonce;

/** `true` for a well-formed `opened` of the request `nonce`. */
export const isOpened = (data: unknown, nonce: string): data is OpenedMessage =>
  hasNonce(data, "opened") && data.nonce === nonce;

/** `true` for a well-formed `rejected` of the run `nonce`. */
export const isRejected = (data: unknown, nonce: string): data is RejectedMessage =>
  hasNonce(data, "rejected") &&
  data.nonce === nonce &&
  typeof data.name === "string" &&
  typeof data.message === "string";

/** A fresh unguessable nonce. */
export const newNonce = (): string => crypto.randomUUID();
