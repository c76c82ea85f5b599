/**
 * The metered engine is built, not hand-made: the committed wasm/quickjs-fuel.wasm must be exactly what
 * scripts/build-fuel-wasm.ts makes from the pinned QuickJS wasm (`npm run build:wasm` rewrites it).
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { meterEngine, pinnedEngine } from "../scripts/build-fuel-wasm.js";
import { METER } from "../src/engine.js";

const committed = new Uint8Array(readFileSync(new URL("../wasm/quickjs-fuel.wasm", import.meta.url)));

describe("the metered engine", () => {
  it("is byte for byte a rebuild from the pinned engine", () => {
    const rebuilt = meterEngine(pinnedEngine());
    expect(rebuilt.length).toBe(committed.length);
    expect(Buffer.compare(Buffer.from(rebuilt), Buffer.from(committed))).toBe(0);
  }, 60_000);

  it("exports its counter and imports the hook, and nothing else changed in its interface", () => {
    const pinned = new WebAssembly.Module(pinnedEngine() as BufferSource);
    const metered = new WebAssembly.Module(committed as BufferSource);
    const sorted = (entries: object[]) => entries.map((entry) => JSON.stringify(entry)).sort();
    expect(sorted(WebAssembly.Module.exports(metered))).toEqual(
      sorted([...WebAssembly.Module.exports(pinned), { name: METER.counter, kind: "global" }]),
    );
    expect(sorted(WebAssembly.Module.imports(metered))).toEqual(
      sorted([...WebAssembly.Module.imports(pinned), { module: METER.module, name: METER.hook, kind: "function" }]),
    );
  });
});
