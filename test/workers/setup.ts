import { instantiate } from "../../dist/swc/swc.js";
import { useSwc } from "../../src/core/transpile.js";
import swcWasm from "../../wasm/swc-fuel.wasm";

// The tests that import the core, not the Worker, get SWC as the Worker gives it.
useSwc(async () => (out) => instantiate(swcWasm, out));
