/**
 * A worker thread of the threaded sandbox: runs one run at a time on the ordinary core. Its host functions are
 * stand-ins that call the caller's thread synchronously: the call is posted, the worker blocks in `Atomics.wait`
 * until the answer is posted on its answer port, and reads it with `receiveMessageOnPort`. A stop reaches the run
 * through `SandboxOptions.interrupted`, which reads the shared signals (messages cannot arrive while guest code runs).
 * @module
 */
import { type MessagePort, parentPort, receiveMessageOnPort, workerData } from "node:worker_threads";
import { createSandbox } from "../../src/core/sandbox.js";
import { useSwc } from "../../src/core/transpile.js";
import type { CodeExecution, CodeExecutionResult } from "../../src/core/types.js";
import { bridged, SerializationError, Thrown } from "../../src/values/errors.js";
import { loadSwc } from "../swc.js";
import { Crossing } from "./crossing.js";
import {
  ANSWERED,
  type Answer,
  type FromWorker,
  now,
  REPORT,
  SLICE_STARTED,
  SLICES_SPENT,
  STOP,
  signalViews,
  type ToWorker,
  type WasmRef,
} from "./protocol.js";

useSwc(loadSwc);

const port = parentPort as NonNullable<typeof parentPort>;
const { signals, answers } = workerData as { signals: SharedArrayBuffer; answers: MessagePort };
const { flags, clock } = signalViews(signals);
const modules = new Map<number, WebAssembly.Module>();
/**
 * How long a synchronous call spins before it sleeps in `Atomics.wait`: most answers come within it, and waking a
 * sleeping thread took ~50 us more per call on an idle machine (1,000 calls: 117-122 ms sleeping at once, 54-65 ms
 * spinning up to 50 us first).
 */
const SPIN_BEFORE_WAIT_MS = 0.05;
/** The number of the latest synchronous call (see `ANSWERED`). */
let lastCall = 0;
let current: { run: number; crossing: Crossing; execution?: CodeExecution } | undefined;

const post = (message: FromWorker) => port.postMessage(message);

port.on("message", (message: ToWorker) => {
  if (message.kind === "run") void run(message);
  // A TypeScript run of nothing: boots an instance and loads the type stripper.
  else if (message.kind === "warm") void createSandbox({ wasm: moduleOf(message.wasm) }).runCode("export default 0");
  else if (message.run !== current?.run) return;
  // A run awaiting the host polls nothing: the core's own terminate wakes it.
  else if (message.kind === "stop") current.execution?.terminate();
  else current.crossing.settle(message.key, message.ok, message.value);
});
post({ kind: "ready" });

function moduleOf(wasm: WasmRef): WebAssembly.Module {
  if (wasm.module !== undefined) modules.set(wasm.id, wasm.module);
  return modules.get(wasm.id) as WebAssembly.Module;
}

async function run(request: Extract<ToWorker, { kind: "run" }>): Promise<void> {
  const { run: id } = request;
  const wasm = moduleOf(request.wasm);
  const crossing: Crossing = new Crossing(
    (key, ok, value) => post({ kind: "settle", run: id, key, ok, value }),
    (fn, shape) => {
      const stub = bridged((...args: unknown[]) => call(id, crossing, fn, args));
      Object.defineProperty(stub, "name", { value: shape.name });
      Object.defineProperty(stub, "length", { value: shape.length });
      return stub;
    },
  );
  current = { run: id, crossing };
  clock[SLICES_SPENT] = 0;
  let done: FromWorker;
  try {
    const sandbox = createSandbox({
      ...request.settings,
      wasm,
      interrupted: () => {
        inSlice();
        return Atomics.load(flags, STOP) === id;
      },
      onLog: bridged((entry) => post({ kind: "log", run: id, entry: crossing.encode(entry) })),
    });
    const [globals, imports] = crossing.decode(request.values) as [Record<string, unknown>, never];
    const { fn, script, ...options } = request.options;
    const execution = sandbox.runCode(request.source, {
      ...options,
      execute: script ? "script" : { fn, args: crossing.decode(request.args) as unknown[] },
      globals,
      imports,
      report: bridged((value: unknown) => call(id, crossing, REPORT, [value])),
    });
    current.execution = execution;
    const result: CodeExecutionResult = await execution;
    done = {
      kind: "done",
      run: id,
      status: result.status,
      ...(result.error === undefined ? {} : { error: result.error }),
      result: crossing.encode(result.result),
      ...(result.memoryUsedBytes === undefined ? {} : { memoryUsedBytes: result.memoryUsedBytes }),
      ...(result.fuelUsed === undefined ? {} : { fuelUsed: result.fuelUsed }),
    };
  } catch (bug) {
    const error = { name: "InternalError", message: String(bug) };
    done = { kind: "done", run: id, status: "error", error, result: crossing.encode(undefined) };
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
 * Calls the caller's host function `fn` (or the report sink) and blocks until it answers. Stand-ins are `bridged`:
 * what the function threw (or arguments that cannot cross) comes out as a `Thrown`; anything else thrown here is a
 * failure of the crossing itself, which the core takes as a fault of the host, as it would in-thread.
 */
function call(run: number, crossing: Crossing, fn: number, args: unknown[]): unknown {
  let crossed: Answer["value"];
  try {
    crossed = crossing.encode(args);
  } catch (failure) {
    if (failure instanceof SerializationError) throw new Thrown(failure);
    throw failure;
  }
  lastCall = (lastCall % 0x7fffffff) + 1;
  const number = lastCall;
  post({ kind: "call", run, call: number, fn, args: crossed });
  const spinUntil = performance.now() + SPIN_BEFORE_WAIT_MS;
  while (Atomics.load(flags, ANSWERED) !== number && performance.now() < spinUntil);
  for (let answered = Atomics.load(flags, ANSWERED); answered !== number; answered = Atomics.load(flags, ANSWERED)) {
    Atomics.wait(flags, ANSWERED, answered);
  }
  let answer: Answer;
  do answer = (receiveMessageOnPort(answers) as { message: Answer }).message;
  while (answer.call !== number);
  const value = crossing.decode(answer.value);
  if (!answer.ok) throw new Thrown(value);
  return value;
}
