import wasm from "../../wasm/quickjs-fuel.wasm";
import { edgeSandbox } from "../../worker/sandboxes.js";
import { conformance } from "../conformance/index.js";
import { restoreImageSuite } from "../conformance/restore-image.js";

// The same suite as in Node, with the wasm as Workers receive it (a module compiled at deploy time) and the Worker's
// transpiler and pool.
const { runCode } = edgeSandbox({ wasm });
conformance(runCode, { sandbox: (options) => edgeSandbox({ ...options, wasm }).runCode });
restoreImageSuite(async () => wasm);
