/**
 * A worker thread of the threaded sandbox: runs one run at a time on the ordinary core, which passes the run's values
 * through as tapes (`Relay`): what the caller's thread encoded goes to the guest as it is, and what the guest hands
 * the host goes to the caller's thread undecoded. The guest's synchronous host calls block the worker: the call is
 * posted, the worker waits in `Atomics.wait` until the answer is posted on its answer port, and reads it with
 * `receiveMessageOnPort`. A stop reaches the run through `SandboxOptions.interrupted`, which reads the shared
 * signals (messages cannot arrive while guest code runs).
 * @module
 */
import { type MessagePort, parentPort, receiveMessageOnPort, workerData } from "node:worker_threads";
import type { Relay } from "../../src/core/guest-bridge.js";
import { InstancePool } from "../../src/core/instance-pool.js";
import { internalFailure } from "../../src/core/outcome.js";
import { inThread } from "../../src/core/run.js";
import { createSandbox, sandboxContext, startRun } from "../../src/core/sandbox.js";
import { Transpiler } from "../../src/core/transpile.js";
import type { CodeExecution, CodeExecutionLog } from "../../src/core/types.js";
import { bridged, SerializationError, Thrown } from "../../src/values/errors.js";
import { Encoded, FunctionTable } from "../../src/values/to-guest.js";
import type { GuestTape } from "../../src/values/to-host.js";
import { loadSwc } from "../swc.js";
import {
  ANSWERED,
  type Answer,
  type Crossed,
  type FromWorker,
  type HostRequest,
  now,
  SLICE_STARTED,
  SLICES_SPENT,
  STOP,
  signalViews,
  type ToWorker,
  type WasmRef,
} from "./protocol.js";

const port = parentPort as NonNullable<typeof parentPort>;
const { signals, answers } = workerData as { signals: SharedArrayBuffer; answers: MessagePort };
const { flags, clock } = signalViews(signals);
const modules = new Map<number, WebAssembly.Module>();
/** The worker's SWC and booted instances, for every run it runs. */
const transpiler = new Transpiler(loadSwc);
const pool = new InstancePool();
/**
 * How long a synchronous call spins before it sleeps in `Atomics.wait`: most answers come within it, and waking a
 * sleeping thread took ~50 us more per call on an idle machine (1,000 calls: 117-122 ms sleeping at once, 54-65 ms
 * spinning up to 50 us first).
 */
const SPIN_BEFORE_WAIT_MS = 0.05;
/** The number of the latest synchronous call (see `ANSWERED`). */
let lastCall = 0;

type Settlers = { resolve(value: unknown): void; reject(reason: unknown): void };
let current: { run: number; promises: Map<number, Settlers>; execution?: CodeExecution } | undefined;

const post = (message: FromWorker) => port.postMessage(message);

port.on("message", (message: ToWorker) => {
  if (message.kind === "run") void run(message);
  // A TypeScript run of nothing: boots an instance and loads the type stripper.
  else if (message.kind === "warm")
    void createSandbox({ wasm: moduleOf(message.wasm), transpiler, pool }).runCode("export default 0");
  else if (message.run !== current?.run) return;
  // A run awaiting the host polls nothing: the core's own terminate wakes it.
  else if (message.kind === "stop") current.execution?.terminate();
  else {
    const settlers = current.promises.get(message.key);
    current.promises.delete(message.key);
    const value = encoded(message.value, current.promises);
    if (message.ok) settlers?.resolve(value);
    else settlers?.reject(value);
  }
});
post({ kind: "ready" });

function moduleOf(wasm: WasmRef): WebAssembly.Module {
  if (wasm.module !== undefined) modules.set(wasm.id, wasm.module);
  return modules.get(wasm.id) as WebAssembly.Module;
}

/**
 * A value the caller's thread encoded, for the core to pass to the guest as it is; its promises are settled by the
 * caller's later `settle` messages.
 */
function encoded(crossed: Crossed, promises: Map<number, Settlers>): Encoded {
  const side = crossed.side.map((item) => {
    if (typeof item !== "number") return { kind: "buffer" as const, bytes: new Uint8Array(item) };
    const promise = new Promise((resolve, reject) => promises.set(item, { resolve, reject }));
    // The core awaits it unless the run ended first: a rejection nobody awaits must not end the worker.
    promise.catch(() => {});
    return { kind: "promise" as const, promise };
  });
  return new Encoded(crossed.tape, side);
}

async function run(message: Extract<ToWorker, { kind: "run" }>): Promise<void> {
  const { run: id } = message;
  const promises = new Map<number, Settlers>();
  current = { run: id, promises };
  clock[SLICES_SPENT] = 0;
  const ask = (request: HostRequest) => call(id, request, promises);
  const relay: Relay = {
    call: bridged((fn: number, args: GuestTape) => ask({ op: "call", fn, args })),
    report: bridged((value: GuestTape) => ask({ op: "report", value })),
    settle: (promise, ok, value) => void ask({ op: "settle", promise, ok, value }),
    log: message.listened
      ? bridged((level: CodeExecutionLog["level"], timestamp: number, args: GuestTape) =>
          ask({ op: "log", level, timestamp, args }),
        )
      : (level, timestamp, args) => post({ kind: "log", run: id, level, timestamp, args }),
  };
  let done: FromWorker;
  try {
    const { fetch, ...settings } = message.settings;
    const context = sandboxContext({
      ...settings,
      ...(fetch === undefined ? {} : { fetch }),
      wasm: moduleOf(message.wasm),
      transpiler,
      pool,
      interrupted: () => {
        inSlice();
        return Atomics.load(flags, STOP) === id;
      },
    });
    const request = {
      source: message.source,
      options: message.options,
      values: encoded(message.values, promises),
      args: encoded(message.args, promises),
      functions: new FunctionTable(),
      report: undefined,
      // The run's listener is the caller's: its entries go there through the relay.
      onLog: undefined,
    };
    const execution = startRun(context, inThread(relay), request, context.clock());
    current.execution = execution;
    const { status, error, result, memoryUsedBytes, fuelUsed } = await execution;
    done = {
      kind: "done",
      run: id,
      status,
      ...(error === undefined ? {} : { error }),
      ...(status === "success" ? { result: result as GuestTape } : {}),
      ...(memoryUsedBytes === undefined ? {} : { memoryUsedBytes }),
      ...(fuelUsed === undefined ? {} : { fuelUsed }),
    };
  } catch (bug) {
    done = { kind: "done", run: id, ...internalFailure(String(bug)) };
  }
  current = undefined;
  post(done);
}

/**
 * Marks synchronous guest work under way until the worker's event loop turns, when the run awaits the host (the
 * caller's thread ends a worker whose guest work outlasts the safety cap: native work that never polls included).
 * The run reads `interrupted` at every poll and yield point, so the slice starts with the guest's work.
 */
function inSlice(): void {
  if (clock[SLICE_STARTED] !== 0) return;
  clock[SLICE_STARTED] = now();
  setImmediate(() => {
    clock[SLICES_SPENT] = (clock[SLICES_SPENT] as number) + now() - (clock[SLICE_STARTED] as number);
    clock[SLICE_STARTED] = 0;
  });
}

/**
 * Asks the caller's thread and blocks until it answers: the value the host function returned, encoded there, or a
 * `Thrown` of what it threw; what the guest handed over and the caller's thread could not decode is a
 * `SerializationError`, a fault of the host, as in-thread.
 */
function call(run: number, request: HostRequest, promises: Map<number, Settlers>): Encoded {
  lastCall = (lastCall % 0x7fffffff) + 1;
  const number = lastCall;
  post({ kind: "call", run, call: number, request });
  const spinUntil = performance.now() + SPIN_BEFORE_WAIT_MS;
  while (Atomics.load(flags, ANSWERED) !== number && performance.now() < spinUntil);
  for (let answered = Atomics.load(flags, ANSWERED); answered !== number; answered = Atomics.load(flags, ANSWERED)) {
    Atomics.wait(flags, ANSWERED, answered);
  }
  let answer: Answer;
  do answer = (receiveMessageOnPort(answers) as { message: Answer }).message;
  while (answer.call !== number);
  if ("fault" in answer) throw new SerializationError(answer.fault);
  const value = encoded(answer.value, promises);
  if (!answer.ok) throw new Thrown(value);
  return value;
}
