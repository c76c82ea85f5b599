/**
 * The metered wasm is built, not hand-made: the committed wasm/quickjs-fuel.wasm and wasm/swc-fuel.wasm must be
 * exactly what scripts/build-fuel-wasm.ts makes from the pinned QuickJS and SWC wasm (`npm run build:wasm` rewrites
 * them).
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { meterWasm, pinnedEngine, pinnedSwc } from "../../scripts/build-fuel-wasm.js";
import { METER } from "../../src/core/engine.js";

describe.each([
  ["QuickJS", "quickjs-fuel.wasm", pinnedEngine],
  ["SWC", "swc-fuel.wasm", pinnedSwc],
])("the metered %s", (_, file, pinned) => {
  const committed = new Uint8Array(readFileSync(new URL(`../../wasm/${file}`, import.meta.url)));

  it("is byte for byte a rebuild from the pinned wasm", () => {
    const rebuilt = meterWasm(pinned());
    expect(rebuilt.length).toBe(committed.length);
    expect(Buffer.compare(Buffer.from(rebuilt), Buffer.from(committed))).toBe(0);
  }, 120_000);

  it("exports its counter and imports the hook, and nothing else changed in its interface", () => {
    const original = new WebAssembly.Module(pinned() as BufferSource);
    const metered = new WebAssembly.Module(committed as BufferSource);
    const sorted = (entries: object[]) => entries.map((entry) => JSON.stringify(entry)).sort();
    expect(sorted(WebAssembly.Module.exports(metered))).toEqual(
      sorted([...WebAssembly.Module.exports(original), { name: METER.counter, kind: "global" }]),
    );
    expect(sorted(WebAssembly.Module.imports(metered))).toEqual(
      sorted([...WebAssembly.Module.imports(original), { module: METER.module, name: METER.hook, kind: "function" }]),
    );
  });
});
