import { nodeWasm, runCode } from "../../node/index.js";
import type { SandboxOptions } from "../../src/core/types.js";
import { createSandbox } from "../../src/index.js";
import { conformance } from "../conformance/index.js";

conformance(runCode, {
  sandbox: (opts: SandboxOptions) => createSandbox({ ...opts, wasm: nodeWasm }).runCode,
});
