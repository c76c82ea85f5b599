/**
 * A session worker: keeps sessions' realms for the caller's thread (engine.ts), each a core `Session` made
 * here by the Node entry's `createSession` or `restoreSession` (the package's wasm compiled once for this thread).
 * Its steps (cells, snapshots) run one at a time in the order they came, so the cell running is the one a stop flag
 * names (see protocol.ts): the core reads the flag through `interrupted` at every interrupt poll and fuel
 * refill, which holds where no message can arrive (synchronous guest code). Host functions are stubs that post a call
 * to the caller's thread and await its answer.
 * @module
 */
import { type MessagePort, parentPort, receiveMessageOnPort, workerData } from "node:worker_threads";
import {
  type CodeExecution,
  type CodeExecutionResult,
  createSession,
  restoreSession,
  type SandboxOptions,
  type Session,
} from "../index.js";
import {
  type CrossingOptions,
  crossedError,
  type FromSessionWorker,
  STOP_ALL,
  type ToSessionWorker,
} from "./protocol.js";

const port = parentPort as MessagePort;
const { sandbox } = workerData as { sandbox: SandboxOptions };

type Settlers = { resolve(value: unknown): void; reject(reason: unknown): void };

/** A session of this worker, and the steps and host calls it has under way. */
interface Kept {
  session: Session;
  stop: Int32Array;
  /** The last step queued. */
  tail: Promise<void>;
  /** The number of the cell running, 0 between cells. */
  current: number;
  /** The number of the latest cell started. */
  started: number;
  running: { cell: number; execution: CodeExecution } | undefined;
  /** Cells the caller stopped before their turn. */
  stopped: Set<number>;
  /** Host calls awaiting the caller's answer, by number. */
  calls: Map<number, Settlers>;
}

const sessions = new Map<number, Kept>();
let lastCall = 0;

const post = (message: FromSessionWorker, transfer: ArrayBuffer[] = []) => port.postMessage(message, transfer);

port.on("message", receive);

function receive(message: ToSessionWorker): void {
  if (message.kind === "create" || message.kind === "restore") {
    void make(message);
    return;
  }
  const kept = sessions.get(message.session);
  if (kept === undefined) {
    // Closed: nothing of it is answered but a request, which its caller awaits.
    if (message.kind === "snapshot") {
      const error = { name: "SessionError", code: "closed", message: "Session.snapshot: the session is closed" };
      post({ kind: "failed", request: message.request, error });
    }
    return;
  }
  if (message.kind === "run") queue(kept, () => runCell(message.session, kept, message));
  else if (message.kind === "snapshot") queue(kept, () => snapshot(kept, message.request));
  else if (message.kind === "stop") stop(kept, message.cell, message.reason);
  else if (message.kind === "close") {
    sessions.delete(message.session);
    kept.calls.clear();
    kept.session.close();
  } else {
    const settlers = kept.calls.get(message.call);
    kept.calls.delete(message.call);
    if (message.ok) settlers?.resolve(message.value);
    else settlers?.reject(Object.assign(new Error(message.error.message), { name: message.error.name }));
  }
}

const stateOf = (session: Session) => ({ cells: session.cells, memoryBytes: session.memoryBytes });

async function make(message: Extract<ToSessionWorker, { kind: "create" | "restore" }>): Promise<void> {
  const { request, session: id } = message;
  const parts: Omit<Kept, "session"> = {
    stop: new Int32Array(message.stop),
    tail: Promise.resolve(),
    current: 0,
    started: 0,
    running: undefined,
    stopped: new Set(),
    calls: new Map(),
  };
  const settings = {
    ...sandbox,
    ...withStubs(id, message.crossing, parts.calls),
    interrupted: () => {
      const flag = Atomics.load(parts.stop, 0);
      return flag === STOP_ALL || (flag !== 0 && flag === parts.current);
    },
  };
  try {
    const session =
      message.kind === "create" ? await createSession(settings) : await restoreSession(message.bytes, settings);
    sessions.set(id, Object.assign(parts, { session }));
    post({ kind: "made", request, state: stateOf(session) });
  } catch (error) {
    post({ kind: "failed", request, error: crossedError(error) });
  }
}

/**
 * The options with a stub at each place a host function was: one stub per function, so a function found at two
 * places is one function here too, and the core numbers and names them as it would the caller's.
 */
function withStubs(session: number, crossing: CrossingOptions, calls: Map<number, Settlers>) {
  const stubs = new Map<number, (...args: unknown[]) => Promise<unknown>>();
  for (const { fn, path } of crossing.functions) {
    let stub = stubs.get(fn);
    if (stub === undefined) {
      stub = (...args) =>
        new Promise((resolve, reject) => {
          lastCall = (lastCall % 0x7fffffff) + 1;
          const call = lastCall;
          try {
            post({ kind: "call", session, call, fn, args });
          } catch (error) {
            reject(new TypeError(`The arguments cannot cross to the host's thread: ${(error as Error).message}`));
            return;
          }
          calls.set(call, { resolve, reject });
        });
      stubs.set(fn, stub);
    }
    let parent = crossing.options as Record<string | number, unknown>;
    for (const key of path.slice(0, -1)) parent = parent[key] as Record<string | number, unknown>;
    parent[path.at(-1) as string | number] = stub;
  }
  return crossing.options;
}

function queue(kept: Kept, step: () => Promise<void>): void {
  kept.tail = kept.tail.then(step);
}

function stop(kept: Kept, cell: number, reason: string): void {
  if (kept.running?.cell === cell) kept.running.execution.terminate(reason);
  else if (cell > kept.started) kept.stopped.add(cell);
}

async function runCell(id: number, kept: Kept, message: Extract<ToSessionWorker, { kind: "run" }>): Promise<void> {
  const { cell } = message;
  // A step starts as the last one ends, before the event loop turns: the stops posted meanwhile are read first.
  for (let next = receiveMessageOnPort(port); next !== undefined; next = receiveMessageOnPort(port)) {
    receive(next.message as ToSessionWorker);
  }
  let result: CodeExecutionResult;
  if (kept.stopped.delete(cell) || !sessions.has(id)) {
    // The caller has this cell's result already: what it says does not matter.
    result = { status: "terminated", reports: [], logs: [], durationMs: 0 };
  } else {
    kept.started = cell;
    kept.current = cell;
    try {
      const execution = kept.session.run(message.source, {
        ...message.options,
        onLog: (entry) => postLoose({ kind: "log", session: id, cell, entry }),
        report: (value) => postLoose({ kind: "report", session: id, cell, value }),
      });
      kept.running = { cell, execution };
      result = await execution;
    } catch (error) {
      const { name, message: why } = crossedError(error);
      result = { status: "error", error: { name, message: why }, reports: [], logs: [], durationMs: 0 };
    }
    kept.running = undefined;
    kept.current = 0;
    Atomics.compareExchange(kept.stop, 0, cell, 0);
  }
  const state = stateOf(kept.session);
  try {
    post({ kind: "ended", session: id, cell, result, state });
  } catch (error) {
    const { result: _value, reports: _reports, logs: _logs, ...rest } = result;
    const why = `The cell's result cannot cross to the host's thread: ${(error as Error).message}`;
    const failed = {
      ...rest,
      status: "error" as const,
      reports: [],
      logs: [],
      error: { name: "InternalError", message: why },
    };
    post({ kind: "ended", session: id, cell, result: failed, state });
  }
}

/** Posts a log entry or a report; one that cannot cross is left out of the stream (the result still has it). */
function postLoose(message: FromSessionWorker): void {
  try {
    post(message);
  } catch {}
}

async function snapshot(kept: Kept, request: number): Promise<void> {
  try {
    const bytes = await kept.session.snapshot();
    // The bytes are this step's own: handed over, not copied.
    const transfer = bytes.buffer instanceof ArrayBuffer ? [bytes.buffer] : [];
    post({ kind: "snapshot", request, bytes, state: stateOf(kept.session) }, transfer);
  } catch (error) {
    post({ kind: "failed", request, error: crossedError(error) });
  }
}
