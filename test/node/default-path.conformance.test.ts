/**
 * The conformance suite against Node's default path (`threads: "auto"`): each run attempted on the caller's thread
 * for a slice of fuel, handed to a worker thread when it needs more or reaches the caller. Settings that are
 * functions (`clock`, `interrupted`, `onLog`, an injected `fetch.fetch`) cannot cross to a worker, so the suite's
 * cases that set them run on the core in-thread, as in threads.conformance.test.ts.
 */
import { createSandbox } from "../../node/index.js";
import type { SandboxOptions } from "../../src/core/types.js";
import { conformance } from "../conformance/index.js";

conformance(createSandbox().runCode, {
  sandbox: (opts: SandboxOptions) =>
    createSandbox({
      ...opts,
      threads:
        opts.clock === undefined &&
        opts.interrupted === undefined &&
        opts.onLog === undefined &&
        opts.fetch === undefined
          ? "auto"
          : false,
    }).runCode,
});
