/**
 * A sandbox's transpiler and pool are its settings, never what a module set when it was imported: sandboxes of one
 * process, the Node entry's among them, differ in both as they were made.
 */
import { describe, expect, it } from "vitest";
import { loadSwc } from "../../node/swc.js";
import { InstancePool } from "../../src/core/instance-pool.js";
import { createSandbox as createCoreSandbox } from "../../src/core/sandbox.js";
import { Transpiler } from "../../src/core/transpile.js";
import { createSandbox } from "../../src/index.js";
import { wasm } from "../environment/helpers.js";
import { outcome } from "../security/helpers.js";

const TYPESCRIPT = "const n: number = 41;\nexport default n + 1;";
const js = { language: "javascript" } as const;

describe("sandbox settings", () => {
  it("TypeScript runs on a sandbox given a transpiler, and fails on one without, beside the Node entry", async () => {
    const given = createSandbox({ wasm: await wasm(), transpiler: new Transpiler(loadSwc) });
    expect(outcome(await given.runCode(TYPESCRIPT))).toEqual({ status: "success", result: 42 });
    const without = createCoreSandbox({ wasm: await wasm() });
    expect(outcome(await without.runCode(TYPESCRIPT))).toEqual({
      status: "error",
      error:
        "InternalError: The sandbox failed: TypeScript needs SWC: this sandbox was given no transpiler (see SandboxOptions.transpiler)",
    });
  });

  it("the platform-neutral entry's sandboxes load SWC from the package, and say so where they cannot", async () => {
    // Node's fetch reads no file: URLs, so the package's wasm beside the module cannot be fetched here (a bundler
    // serves it as an asset).
    const entry = createSandbox({ wasm: await wasm() });
    expect(outcome(await entry.runCode(TYPESCRIPT))).toEqual({
      status: "error",
      error:
        "InternalError: The sandbox failed: TypeScript needs SWC: this sandbox was given no transpiler, and SWC's wasm could not be loaded from the package (fetch failed): pass SandboxOptions.transpiler",
    });
    expect(outcome(await entry.runCode("export default 1", js))).toEqual({ status: "success", result: 1 });
  });

  it("sandboxes given one pool share its idle instances; a sandbox given none keeps its own", async () => {
    const pool = new InstancePool();
    const sharing = async () => createSandbox({ wasm: await wasm(), pool }).runCode;
    const first = await sharing();
    // The pool's first run gets an instance booted for it alone; the second leaves its instance idle.
    await first("export default 1", js);
    await first("export default 1", js);
    expect(pool.idle).toBe(1);
    // Two at once: one takes the idle instance, the other boots one; both come back.
    const second = await sharing();
    await Promise.all([second("export default 1", js), second("export default 1", js)]);
    expect(pool.idle).toBe(2);
    const own = createSandbox({ wasm: await wasm() }).runCode;
    for (let i = 0; i < 3; i++) await own("export default 1", js);
    expect(pool.idle).toBe(2);
  });

  it("a pool that is not an InstancePool is refused when the sandbox is made", () => {
    const pool = { limitMemory: () => {} };
    expect(() => createSandbox({ pool })).toThrow(new TypeError("createSandbox: pool must be an InstancePool"));
  });
});
