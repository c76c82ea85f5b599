import { createSandbox, runCode } from "../../node/index.js";
import type { SandboxOptions } from "../../src/core/types.js";
import { conformance } from "../conformance/index.js";

conformance(runCode, {
  sandbox: (opts: SandboxOptions) => createSandbox({ ...opts, threads: false }).runCode,
});
