/// <reference types="vite/client" />

import type { SandboxOptions } from "../../src/core/types.js";
import { createSandbox } from "../../src/index.js";
import wasmUrl from "../../wasm/quickjs-fuel.wasm?url";
import { conformance } from "../conformance/index.js";
import { restoreImageSuite } from "../conformance/restore-image.js";

// The same suite as in Node, on the page's thread of Chromium: the wasm is fetched and compiled once per sandbox.
const wasm = () => WebAssembly.compileStreaming(fetch(wasmUrl));

conformance(createSandbox({ wasm }).runCode, {
  sandbox: (opts: SandboxOptions) => createSandbox({ ...opts, wasm }).runCode,
});

let compiled: Promise<WebAssembly.Module> | undefined;
restoreImageSuite(() => {
  compiled ??= wasm();
  return compiled;
});
