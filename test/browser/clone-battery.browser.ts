/// <reference types="vite/client" />

import { describe, expect, it } from "vitest";
import { createSandbox } from "../../src/index.js";
import wasmUrl from "../../wasm/quickjs-fuel.wasm?url";
import { BATTERY_CASES, type Clone, cloneBattery, sandboxBattery } from "../conformance/clone-battery.js";

// The battery of the HTML structured clone algorithm as an oracle in Chromium: the platform's own structuredClone
// passes every case, and so does the sandbox's.
describe("the structured clone battery: Chromium's own structuredClone and the sandbox's", () => {
  it("both pass it whole", async () => {
    expect(cloneBattery(structuredClone as Clone)).toEqual({ ran: BATTERY_CASES, failures: [] });
    const { runCode } = createSandbox({ wasm: () => WebAssembly.compileStreaming(fetch(wasmUrl)) });
    expect(await sandboxBattery(runCode)).toEqual({ ran: BATTERY_CASES, failures: [] });
  });
});
