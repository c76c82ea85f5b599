import { instantiate } from "../../dist/swc/swc.js";
import swcWasm from "../../dist/swc/swc.wasm";
import { useSwc } from "../../src/transpile.js";

// The tests that import the core, not the Worker, get SWC as the Worker gives it.
useSwc(async () => () => instantiate(swcWasm));
