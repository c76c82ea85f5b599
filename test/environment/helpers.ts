/**
 * Shared helpers of the environment and host tests: the wasm compiled once, sandboxes on the caller's thread, and
 * bindings that record calls.
 */
import { createSandbox, nodeWasm } from "../../node/index.js";
import type { SandboxOptions } from "../../src/core/types.js";
import type { EnvironmentBindings, ExecutionState, InvokeInput, ServiceInfo } from "../../src/environment/index.js";

let compiled: Promise<WebAssembly.Module> | undefined;
/** The QuickJS wasm, compiled once per test file. */
export function wasm(): Promise<WebAssembly.Module> {
  compiled ??= (async () => {
    const bytes = await (nodeWasm as () => Promise<Uint8Array>)();
    return WebAssembly.compile(bytes as BufferSource);
  })();
  return compiled;
}

/** The environment's `createSandbox` on the caller's thread, with Node's transpiler and pool. */
export const inThread = (settings: SandboxOptions) => createSandbox({ ...settings, threads: false });

export type Call =
  | { kind: "state"; eid: number; state: ExecutionState }
  | { kind: "error"; eid: number; message: string }
  | { kind: "stdout" | "stderr"; eid: number; bytes: Uint8Array }
  | { kind: "output"; eid: number; patch: Record<string, unknown> }
  | { kind: "invoke"; input: InvokeInput };

export interface Recorder extends EnvironmentBindings {
  calls: Call[];
  /** Everything written to a stream of `eid`, decoded. */
  text(eid: number, stream: "stdout" | "stderr"): string;
  errors(eid: number): string[];
  states(eid: number): ExecutionState[];
  outputs(eid: number): Record<string, unknown>[];
}

/** Bindings that record every call; `tools` answers `invokeTool`, `services` answers discovery. */
export function recorder(
  tools: (input: InvokeInput) => Promise<unknown> = async () => undefined,
  services?: ServiceInfo[],
): Recorder {
  const calls: Call[] = [];
  const of = <K extends Call["kind"]>(eid: number, kind: K) =>
    calls.filter((c): c is Extract<Call, { kind: K }> => c.kind === kind && "eid" in c && c.eid === eid);
  const bindings: Recorder = {
    calls,
    invokeTool: (input) => {
      calls.push({ kind: "invoke", input });
      return tools(input);
    },
    setState: (eid, state) => calls.push({ kind: "state", eid, state }) && undefined,
    setError: (eid, message) => calls.push({ kind: "error", eid, message }) && undefined,
    emitStdout: (eid, bytes) => calls.push({ kind: "stdout", eid, bytes }) && undefined,
    emitStderr: (eid, bytes) => calls.push({ kind: "stderr", eid, bytes }) && undefined,
    emitOutput: (eid, patch) => calls.push({ kind: "output", eid, patch }) && undefined,
    text: (eid, stream) => {
      const decoder = new TextDecoder();
      return of(eid, stream)
        .map((c) => decoder.decode(c.bytes, { stream: true }))
        .join("");
    },
    errors: (eid) => of(eid, "error").map((c) => c.message),
    states: (eid) => of(eid, "state").map((c) => c.state),
    outputs: (eid) => of(eid, "output").map((c) => c.patch),
  };
  if (services !== undefined) bindings.listServices = async () => services;
  return bindings;
}

/** A promise with its resolvers outside. */
export function deferred<T>(): { promise: Promise<T>; resolve(value: T): void; reject(error: unknown): void } {
  let resolve!: (value: T) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}
