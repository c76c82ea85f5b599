import { nodeWasm, runCode } from "../node/index.js";
import { createSandbox } from "../src/index.js";
import type { SandboxOptions } from "../src/types.js";
import { conformance } from "./conformance/index.js";

conformance(runCode, {
  sandbox: (opts: SandboxOptions) => createSandbox({ ...opts, wasm: nodeWasm }).runCode,
});
