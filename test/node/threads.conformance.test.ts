/**
 * The conformance suite against the threaded sandbox: every run on a worker thread, host functions and `report` on
 * the caller's thread. Settings that are functions (`clock`, `interrupted`, `onLog`, an injected `fetch.fetch`)
 * cannot cross to a worker, so the suite's cases that set them run on the core in-thread, as Node's
 * `createSandbox({ threads: false })` does (test/fetch/ runs fetch on threads against real servers).
 */
import { createSandbox, nodeWasm } from "../../node/index.js";
import { createThreadedSandbox } from "../../node/threads/sandbox.js";
import type { SandboxOptions } from "../../src/core/types.js";
import { conformance } from "../conformance/index.js";

conformance(createThreadedSandbox({ wasm: nodeWasm }).runCode, {
  sandbox: (opts: SandboxOptions) =>
    opts.clock === undefined && opts.interrupted === undefined && opts.onLog === undefined && opts.fetch === undefined
      ? createThreadedSandbox({ ...opts, wasm: nodeWasm }).runCode
      : createSandbox({ ...opts, threads: false }).runCode,
});
