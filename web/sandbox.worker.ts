/**
 * The sandbox's thread: a module Web Worker that owns one `createSandbox` (wasm compiled once) and runs what the
 * page asks. The page never waits on this thread, and stops a runaway run by terminating the whole worker.
 * @module
 */

import type { CodeExecutionOptions } from "../src/core/types.js";
import { createSandbox } from "../src/index.js";
import type { JsonValue } from "../src/values/json.js";
import { toWire } from "../src/values/wire.js";
import wasmUrl from "../wasm/quickjs-fuel.wasm?url";
import { type FromWorker, type HostValue, isHello, isRun, type RunPayload } from "./messages.js";

interface WorkerScope {
  postMessage(message: FromWorker): void;
  addEventListener(type: "message", listener: (event: MessageEvent) => void): void;
}
const scope = self as unknown as WorkerScope;

// One compiled module for both sandboxes: the one with the Web APIs boots its own instances on its first run.
const compiled = WebAssembly.compileStreaming(fetch(wasmUrl));
const sandbox = createSandbox({ wasm: () => compiled });
const webSandbox = createSandbox({ wasm: () => compiled, webApis: true });
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

function options(payload: RunPayload, report: (value: unknown) => void): CodeExecutionOptions {
  const globals: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(payload.globals)) globals[name] = hostValue(name, value);
  const imports: Record<string, Record<string, unknown>> = {};
  for (const [specifier, exports] of Object.entries(payload.imports)) {
    const namespace: Record<string, unknown> = {};
    for (const [name, value] of Object.entries(exports)) namespace[name] = hostValue(`${specifier}.${name}`, value);
    imports[specifier] = namespace;
  }
  const result: CodeExecutionOptions = { ...payload.options, report };
  if (Object.keys(globals).length > 0) result.globals = globals;
  if (Object.keys(imports).length > 0) result.imports = imports;
  return result;
}

/** A value as wire JSON; a value the wire cannot carry becomes its description rather than a lost message. */
function wire(value: unknown): JsonValue {
  try {
    return toWire(value);
  } catch (error) {
    return { unserializable: String((error as Error).message) };
  }
}

scope.addEventListener("message", (event) => {
  const data: unknown = event.data;
  if (isHello(data)) {
    const { nonce } = data;
    warm.then((warmupMs) => scope.postMessage({ type: "ready", nonce, warmupMs }));
    return;
  }
  if (!isRun(data)) return;
  const { nonce, payload } = data;
  const started = performance.now();
  let run: PromiseLike<unknown>;
  try {
    const report = (value: unknown) => scope.postMessage({ type: "report", nonce, value: wire(value) });
    run = (payload.webApis ? webSandbox : sandbox).runCode(payload.source, options(payload, report));
  } catch (error) {
    const { name, message } = error as Error;
    scope.postMessage({ type: "rejected", nonce, name: String(name), message: String(message) });
    return;
  }
  run.then((result) =>
    scope.postMessage({ type: "result", nonce, result: wire(result), workerMs: performance.now() - started }),
  );
});
