/**
 * A worker thread of the threaded sandbox: runs one run at a time on the ordinary core, which passes the run's values
 * through as tapes (`Relay`): what the caller's thread encoded goes to the guest as it is, and what the guest hands
 * the host goes to the caller's thread undecoded. The guest's synchronous host calls block the worker on its call
 * channel (call-channel.ts) until the caller's thread answers. A stop reaches the run through
 * `SandboxOptions.interrupted`, which reads the shared signals (messages cannot arrive while guest code runs).
 * The run's result is posted before its instance is restored, so the caller has it while the worker tidies up; a
 * worker whose run was alone in flight then watches its doorbell a moment for the caller's next run.
 * @module
 */
import { type MessagePort, parentPort, receiveMessageOnPort, workerData } from "node:worker_threads";
import {
  bindingBoot,
  bridged,
  type CodeExecutionLog,
  FunctionTable,
  InstancePool,
  inThread,
  internalFailure,
  type NewSwc,
  Recording,
  type Relay,
  type RunContext,
  SerializationError,
  type StartedRun,
  Tape,
  Thrown,
  TRANSPILE_BASE_FUEL,
  Transpiler,
  threadContext,
  usePlatformExchange,
} from "../../src/core/runner-port.js";
import { httpExchange } from "../http-exchange.js";
import { swcOf } from "../swc.js";
import { CallChannel } from "./call-channel.js";
import {
  COMPUTING,
  DOORBELL,
  type FromWorker,
  type HostRequest,
  now,
  SETTINGS_KEPT,
  type SettingsRef,
  SLICE_STARTED,
  SLICES_SPENT,
  STOP,
  signalViews,
  type ToWorker,
  type WasmRef,
} from "./protocol.js";
import { readyInstance } from "./ready-instance.js";

const port = parentPort as NonNullable<typeof parentPort>;
const data = workerData as { signals: SharedArrayBuffer; calls: SharedArrayBuffer; port: MessagePort };
const { flags, clock } = signalViews(data.signals);
const calls = new CallChannel(data.port, data.calls);
// A run's requests are made by this thread, with Node's client, as on the caller's thread (node/index.ts).
usePlatformExchange(httpExchange);
const modules = new Map<number, WebAssembly.Module>();
/** The sandboxes' contexts, made when their settings arrive, the least recently used first (see `SETTINGS_KEPT`). */
const contexts = new Map<number, RunContext>();
/** SWC's compiled wasm, which the caller's thread sends before the first TypeScript run. */
let resolveSwc!: (swc: NewSwc) => void;
const swc = new Promise<NewSwc>((resolve) => {
  resolveSwc = resolve;
});
/** The worker's SWC and booted instances, for every run it runs; instances restored once a run's result is out. */
const transpiler = new Transpiler(() => swc);
const pool = new InstancePool({ deferRestore: true });
/**
 * How long a synchronous call spins before it sleeps in `Atomics.wait`: most answers come within it, and waking a
 * sleeping thread took ~50 us more per call on an idle machine (1,000 calls: 117-122 ms sleeping at once, 54-65 ms
 * spinning up to 50 us first).
 */
const SPIN_BEFORE_WAIT_MS = 0.05;
/** The number of the latest synchronous call. */
let lastCall = 0;
/** A stopped run's outcome, as the caller's thread has it already. */
const STOPPED = { name: "TerminatedError", message: "Execution terminated by the caller" } as const;

type Settlers = { resolve(value: unknown): void; reject(reason: unknown): void };
let current: { run: number; promises: Map<number, Settlers>; started?: StartedRun; stopped: boolean } | undefined;

const post = (message: FromWorker) => port.postMessage(message);
/** Tells the caller's thread, when it does not watch the call channel, that a call waits there. */
const wakeCaller = () => post({ kind: "call" });

/**
 * How long a worker whose run was alone in flight watches its doorbell for the caller's next message, once the run is
 * over, before it goes back to its event loop: a caller running one run after another posts the next within a
 * fraction of this.
 */
const DOORBELL_WATCH_MS = 1;

port.on("message", receive);
post({ kind: "ready" });

function receive(message: ToWorker): void {
  if (message.kind === "run") void run(message);
  // A warm-up readies what a run would otherwise do itself: one that fails leaves it to the run.
  else if (message.kind === "warm") warm(message).catch(() => {});
  else if (message.run !== current?.run) return;
  else if (message.kind === "stop") stop();
  else {
    for (const { key, ok, value } of message.settled) {
      const settlers = current.promises.get(key);
      current.promises.delete(key);
      const encodedValue = encoded(value, current.promises);
      if (ok) settlers?.resolve(encodedValue);
      else settlers?.reject(encodedValue);
    }
  }
}

/**
 * Watches the doorbell, up to {@link DOORBELL_WATCH_MS}, for the caller's next message, and receives what was posted.
 * The bell is silenced before the port is looked at, so a message posted meanwhile rings it again: none is missed.
 * The worker spins rather than sleeps: on a machine whose idle cores sleep, a thread woken from `Atomics.wait` or
 * from its event loop ran the next run up to half again slower, as cold as after an idle gap.
 */
function watchDoorbell(): void {
  Atomics.store(flags, DOORBELL, 0);
  if (receivePosted()) return;
  const until = performance.now() + DOORBELL_WATCH_MS;
  while (Atomics.load(flags, DOORBELL) === 0) if (performance.now() > until) return;
  receivePosted();
}

/** Receives the messages waiting on the port; whether there were any. */
function receivePosted(): boolean {
  let received = false;
  for (let next = receiveMessageOnPort(port); next !== undefined; next = receiveMessageOnPort(port)) {
    receive(next.message as ToWorker);
    received = true;
  }
  return received;
}

function moduleOf(wasm: WasmRef): WebAssembly.Module {
  if (wasm.module !== undefined) modules.set(wasm.id, wasm.module);
  return modules.get(wasm.id) as WebAssembly.Module;
}

/** A sandbox's context on this worker: its settings as the core derived them on the caller's thread. */
function contextOf(ref: SettingsRef, wasm: WebAssembly.Module): RunContext {
  let context = contexts.get(ref.id);
  contexts.delete(ref.id);
  if (ref.settings !== undefined) {
    context = threadContext(ref.settings, {
      wasm,
      transpiler,
      pool,
      interrupted: () => {
        inSlice();
        return current !== undefined && Atomics.load(flags, STOP) === current.run;
      },
    });
  }
  if (context === undefined) throw new Error(`The worker holds no settings numbered ${ref.id}`);
  contexts.set(ref.id, context);
  if (contexts.size > SETTINGS_KEPT) contexts.delete(contexts.keys().next().value as number);
  return context;
}

/** Readies the worker for runs like the caller's latest: an instance in its pool, SWC loaded and its code warm. */
async function warm(message: Extract<ToWorker, { kind: "warm" }>): Promise<void> {
  const module = moduleOf(message.wasm);
  if (message.swc !== undefined) resolveSwc(swcOf(message.swc));
  if (message.instance !== undefined) {
    const { boot, memoryLimitBytes } = message.instance;
    // For the runs whose globals do not name `console` or `report`: most.
    await pool.prepare(module, memoryLimitBytes, bindingBoot(boot));
  }
  if (message.swc === undefined) return;
  await transpiler.load();
  transpiler.transpile("export default 0 as number;\n", {
    fuelLeft: TRANSPILE_BASE_FUEL,
    spend() {},
    stopped: () => false,
  });
}

/**
 * A value the caller's thread encoded, for the core to pass to the guest as it is; its promises are settled by the
 * caller's later `settle` messages.
 */
function encoded(crossed: Tape<ArrayBuffer | number>, promises: Map<number, Settlers>): Tape {
  const side = crossed.side.map((item) => {
    if (typeof item !== "number") return { kind: "buffer" as const, bytes: new Uint8Array(item) };
    const promise = new Promise((resolve, reject) => promises.set(item, { resolve, reject }));
    // The core awaits it unless the run ended first: a rejection nobody awaits must not end the worker.
    promise.catch(() => {});
    return { kind: "promise" as const, promise };
  });
  return new Tape(crossed.tape, side);
}

async function run(message: Extract<ToWorker, { kind: "run" }>): Promise<void> {
  const { run: id } = message;
  const promises = new Map<number, Settlers>();
  const state: NonNullable<typeof current> = { run: id, promises, stopped: false };
  current = state;
  clock[SLICES_SPENT] = 0;
  if (message.swc !== undefined) resolveSwc(swcOf(message.swc));
  const ask = (request: HostRequest, value: Tape<ArrayBuffer>) => call(id, request, value, promises);
  const relay: Relay = {
    call: bridged((fn: number, args: Tape<ArrayBuffer>) => ask({ op: "call", fn }, args)),
    // The guest gets what the caller's sink returns only when it is a promise (see `RemoteRun.serve`): otherwise
    // nothing, as in-thread, so a report costs the guest no decoding there either.
    report: bridged((value: Tape<ArrayBuffer>) => {
      const answer = ask({ op: "report" }, value);
      return answer.side.length > 0 ? answer : undefined;
    }),
    settle: (promise, ok, value) => void ask({ op: "settle", promise, ok }, value),
    log: message.listened
      ? bridged((level: CodeExecutionLog["level"], timestamp: number, args: Tape<ArrayBuffer>) =>
          ask({ op: "log", level, timestamp }, args),
        )
      : (level, timestamp, args) => post({ kind: "log", run: id, level, timestamp, args }),
  };
  let done: FromWorker;
  try {
    const module = moduleOf(message.wasm);
    const context = contextOf(message.settings, module);
    const request = {
      source: message.source,
      options: message.options,
      values: encoded(message.values, promises),
      imports: message.imports?.map((tape) => encoded(tape, promises)),
      args: encoded(message.args, promises),
      functions: new FunctionTable(),
      report: undefined,
      // The run's listener is the caller's: its entries go there through the relay.
      onLog: undefined,
      // Its turn for a worker was taken on the caller's thread.
      tenant: undefined,
      ...(message.readings === undefined ? {} : { recording: Recording.replay(message.readings) }),
    };
    await readyInstance(context, message.options.memoryLimitBytes);
    const started = inThread(relay)(context, request, { reports: [], settled: () => state.stopped });
    state.started = started;
    const { status, ...ending } = await started.ended;
    const { memoryUsedBytes, fuelUsed } = started;
    done = {
      kind: "done",
      run: id,
      status,
      ...("error" in ending ? { error: ending.error } : {}),
      ...("result" in ending ? { result: ending.result as Tape<ArrayBuffer> } : {}),
      ...(memoryUsedBytes === undefined ? {} : { memoryUsedBytes }),
      ...(fuelUsed === undefined ? {} : { fuelUsed }),
    };
  } catch (bug) {
    done = { kind: "done", run: id, ...internalFailure(String(bug)) };
  }
  // A stopped run was reported over when it was stopped.
  if (current === state) finish(done);
  pool.restoreReturned();
  // A run that started meanwhile (after a stop) must not be held up.
  if (message.alone && current === undefined) watchDoorbell();
}

/** Stops the current run: the caller's thread has its result already, so it is reported over at once. */
function stop(): void {
  const state = current as NonNullable<typeof current>;
  state.stopped = true;
  state.started?.stop(STOPPED);
  finish({ kind: "done", run: state.run, status: "terminated", error: STOPPED });
}

/** Reports the current run over: its slice ended, the worker free for the next. */
function finish(done: FromWorker): void {
  current = undefined;
  endSlice();
  post(done);
}

/** The number of the slice under way, so the turn of the event loop that ends it ends no later one. */
let slice = 0;

/**
 * Marks synchronous guest work under way until the worker's event loop turns, when the run awaits the host (the
 * caller's thread ends a worker whose guest work outlasts the safety cap: native work that never polls included).
 * The run reads `interrupted` at every poll and yield point, so the slice starts with the guest's work.
 */
function inSlice(): void {
  if (clock[SLICE_STARTED] !== 0) return;
  clock[SLICE_STARTED] = now();
  Atomics.store(flags, COMPUTING, 1);
  const mine = ++slice;
  setImmediate(() => {
    if (slice !== mine) return;
    endSlice();
    // A run between slices waits for the caller's promises, or else for its own work (a timer, a fetch, a boot).
    if (current !== undefined && current.promises.size > 0) Atomics.store(flags, COMPUTING, 0);
  });
}

/** Ends the slice under way, if any. */
function endSlice(): void {
  const started = clock[SLICE_STARTED] as number;
  if (started !== 0) clock[SLICES_SPENT] = (clock[SLICES_SPENT] as number) + now() - started;
  clock[SLICE_STARTED] = 0;
  slice++;
}

/**
 * Asks the caller's thread and blocks until it answers: the value the host function returned, encoded there, or a
 * `Thrown` of what it threw; what the guest handed over and the caller's thread could not decode is a
 * `SerializationError`, a fault of the host, as in-thread.
 */
function call(run: number, request: HostRequest, value: Tape<ArrayBuffer>, promises: Map<number, Settlers>): Tape {
  lastCall = (lastCall % 0x7fffffff) + 1;
  const number = lastCall;
  calls.publish(number, { run, request, value }, wakeCaller);
  calls.awaitAnswer(number, SPIN_BEFORE_WAIT_MS);
  const answer = calls.answerTo(number);
  if ("fault" in answer) throw new SerializationError(answer.fault);
  const result = encoded(answer.value, promises);
  if (!answer.ok) throw new Thrown(result);
  return result;
}
