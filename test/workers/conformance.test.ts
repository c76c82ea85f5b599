import { createSandbox } from "../../src/index.js";
import wasm from "../../wasm/quickjs-fuel.wasm";
import { conformance } from "../conformance/index.js";
import { restoreImageSuite } from "../conformance/restore-image.js";

// The same suite as in Node, with the wasm as Workers receive it: a module compiled at deploy time.
const { runCode } = createSandbox({ wasm });
conformance(runCode, { sandbox: (options) => createSandbox({ ...options, wasm }).runCode });
restoreImageSuite(async () => wasm);
