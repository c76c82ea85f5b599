/**
 * The sandbox's thread: a module Web Worker that owns one `createSandbox` (wasm compiled once) and runs what the
 * page asks, and the sessions of the page's session mode (cells, forks, closes). The page never waits on this
 * thread, and stops a runaway run by terminating the whole worker.
 * @module
 */

import type { CodeExecution, CodeExecutionOptions } from "../src/core/types.js";
import { createSandbox, createSession, restoreSession, type Session } from "../src/index.js";
import type { JsonValue } from "../src/values/json.js";
import { toWire } from "../src/values/wire.js";
import wasmUrl from "../wasm/quickjs-fuel.wasm?url";
import { bootModules } from "../worker/packages.generated.js";
import {
  type CellPayload,
  type FromWorker,
  type HostValue,
  isCell,
  isClose,
  isFork,
  isHello,
  isOpen,
  isRun,
  isStopCell,
  type SessionSettings,
} from "./messages.js";

interface WorkerScope {
  postMessage(message: FromWorker, transfer?: Transferable[]): void;
  addEventListener(type: "message", listener: (event: MessageEvent) => void): void;
}
const scope = self as unknown as WorkerScope;

// One compiled module for both sandboxes: the one with the Web APIs boots its own instances on its first run. Every
// sandbox and session has `Intl` (the browser's own) and the deployment's npm packages (the packages lock file's
// bundles, built into this worker's script: web/packages-plugin.ts), as the edge's do.
const compiled = WebAssembly.compileStreaming(fetch(wasmUrl));
const booted = { wasm: () => compiled, intl: true, ...(Object.keys(bootModules).length > 0 && { bootModules }) };
const sandbox = createSandbox(booted);
const webSandbox = createSandbox({ ...booted, webApis: true });
const warm = (async () => {
  const started = performance.now();
  await sandbox.runCode("export default 1", { language: "javascript" });
  return performance.now() - started;
})();
// The first run had an instance booted for it alone (no image recorded while the engine is cold: ready sooner); a
// second one, once ready is out, boots the instance with an image that the user's runs then get restored.
void warm.then(() => sandbox.runCode("export default 1", { language: "javascript" }));
// TypeScript is the default language: a second after the engine is warm, fetch and compile SWC's wasm (not part of
// the page's initial transfer) so the first TypeScript run does not wait for it. Delayed so it does not hold up a
// run the user starts right away.
const TYPESCRIPT_WARMUP_DELAY_MS = 1000;
void warm.then(() =>
  setTimeout(
    () => void sandbox.runCode("export default (1 as number)", { language: "typescript" }),
    TYPESCRIPT_WARMUP_DELAY_MS,
  ),
);

/** Turns a function snippet into a host function; it runs in this thread, as the user's own code in their page. */
function hostValue(name: string, value: HostValue): unknown {
  if (value.kind === "json") return value.value;
  let fn: unknown;
  try {
    fn = new Function(`"use strict"; return (${value.source}\n);`)();
  } catch (error) {
    throw new SyntaxError(`${name}: ${(error as Error).message}`);
  }
  if (typeof fn !== "function") throw new TypeError(`${name}: the snippet is not a function`);
  return fn;
}

/** The real globals and imports of a run's or a session's host values; the empty ones left out. */
function hostValues(
  payload: Pick<SessionSettings, "globals" | "imports">,
): Pick<CodeExecutionOptions, "globals" | "imports"> {
  const globals: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(payload.globals)) globals[name] = hostValue(name, value);
  const imports: Record<string, Record<string, unknown>> = {};
  for (const [specifier, exports] of Object.entries(payload.imports)) {
    const namespace: Record<string, unknown> = {};
    for (const [name, value] of Object.entries(exports)) namespace[name] = hostValue(`${specifier}.${name}`, value);
    imports[specifier] = namespace;
  }
  return {
    ...(Object.keys(globals).length > 0 && { globals }),
    ...(Object.keys(imports).length > 0 && { imports }),
  };
}

/** A value as wire JSON; a value the wire cannot carry becomes its description rather than a lost message. */
function wire(value: unknown): JsonValue {
  try {
    return toWire(value);
  } catch (error) {
    return { unserializable: String((error as Error).message) };
  }
}

const reject = (nonce: string, error: unknown) => {
  const { name, message } = error as Error;
  scope.postMessage({ type: "rejected", nonce, name: String(name), message: String(message) });
};

/** The session mode's sessions, by the page's ids, and the cells running in them, by nonce (for `stop-cell`). */
const sessions = new Map<string, Session>();
const cells = new Map<string, CodeExecution>();

function session(id: string): Session {
  const found = sessions.get(id);
  if (found === undefined) throw new ReferenceError(`no session ${id} in this worker`);
  return found;
}

/** Makes a session (empty, or restored from a snapshot) with the playground's settings of its making. */
function open(settings: SessionSettings, snapshot: Uint8Array | undefined): Promise<Session> {
  const { modules, memoryLimitBytes, webApis } = settings;
  const options = {
    ...booted,
    webApis,
    ...hostValues(settings),
    ...(modules !== undefined && { modules }),
    ...(memoryLimitBytes !== undefined && { memoryLimitBytes }),
  };
  return snapshot === undefined ? createSession(options) : restoreSession(snapshot, options);
}

/** Answers a request that makes session `id`; a failure is the request's `rejected`. */
function making(nonce: string, id: string, made: () => Promise<Session>): void {
  void (async () => {
    try {
      if (sessions.has(id)) throw new RangeError(`session ${id} exists already`);
      sessions.set(id, await made());
      scope.postMessage({ type: "opened", nonce });
    } catch (error) {
      reject(nonce, error);
    }
  })();
}

scope.addEventListener("message", (event) => {
  const data: unknown = event.data;
  if (isHello(data)) {
    const { nonce } = data;
    warm.then((warmupMs) => scope.postMessage({ type: "ready", nonce, warmupMs }));
    return;
  }
  if (isOpen(data)) return making(data.nonce, data.session, () => open(data.settings, data.snapshot));
  if (isFork(data)) return making(data.nonce, data.session, () => session(data.from).fork());
  if (isClose(data)) {
    sessions.get(data.session)?.close();
    sessions.delete(data.session);
    return;
  }
  if (isStopCell(data)) {
    const cell = cells.get(data.nonce);
    if (cell === undefined) return;
    cell.terminate("Stopped by the user");
    scope.postMessage({ type: "stopping", nonce: data.nonce });
    return;
  }
  if (isCell(data)) return runCell(data.nonce, data.session, data.cell);
  if (!isRun(data)) return;
  const { nonce, payload } = data;
  const started = performance.now();
  let run: PromiseLike<unknown>;
  try {
    const report = (value: unknown) => scope.postMessage({ type: "report", nonce, value: wire(value) });
    const options: CodeExecutionOptions = { ...payload.options, report, ...hostValues(payload) };
    run = (payload.webApis ? webSandbox : sandbox).runCode(payload.source, options);
  } catch (error) {
    return reject(nonce, error);
  }
  run.then((result) =>
    scope.postMessage({ type: "result", nonce, result: wire(result), workerMs: performance.now() - started }),
  );
});

/** Runs one cell; its result goes back, then the session's snapshot as the cell left it. */
function runCell(nonce: string, id: string, cell: CellPayload): void {
  const started = performance.now();
  let execution: CodeExecution;
  try {
    const report = (value: unknown) => scope.postMessage({ type: "report", nonce, value: wire(value) });
    const { source, ...options } = cell;
    execution = session(id).run(source, { ...options, report });
  } catch (error) {
    reject(nonce, error);
    return;
  }
  cells.set(nonce, execution);
  void (async () => {
    const result = await execution;
    cells.delete(nonce);
    scope.postMessage({ type: "result", nonce, result: wire(result), workerMs: performance.now() - started });
    // After the result, so the page shows it at once (encoding takes tens of ms); asked in this same microtask, so
    // the session queues any later cell behind it. A session closed meanwhile has no state left to keep.
    const snapshot = await sessions
      .get(id)
      ?.snapshot()
      .catch(() => undefined);
    // Bytes that own their whole buffer move to the page instead of being copied (MiBs for a big session).
    const owned =
      snapshot !== undefined && snapshot.byteOffset === 0 && snapshot.byteLength === snapshot.buffer.byteLength;
    scope.postMessage(
      { type: "snapshot", nonce, ...(snapshot && { snapshot }) },
      owned ? [snapshot.buffer as ArrayBuffer] : [],
    );
  })();
}
