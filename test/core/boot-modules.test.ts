/**
 * `SandboxOptions.bootModules`: modules compiled and evaluated when an instance boots, importable by every run as
 * `runcode:boot/<name>`, and as booted at the start of every run.
 */
import { describe, expect, it } from "vitest";
import { nodeWasm } from "../../node/index.js";
import type { CodeExecutionOptions } from "../../src/core/types.js";
import { createSandbox } from "../../src/index.js";
import { outcome } from "../security/helpers.js";

const js: CodeExecutionOptions = { language: "javascript" };
const counter = "let count = 0;\nexport const next = () => ++count;\nexport const box = { secret: null };\n";

describe("boot modules", () => {
  it("are imported by name from every run, each run starting from their booted state", async () => {
    const { runCode } = createSandbox({ wasm: nodeWasm, bootModules: { counter } });
    const source = `import { next, box } from "runcode:boot/counter";
      const seen = box.secret;
      box.secret = "SECRET";
      export default [next(), next(), seen];`;
    for (let i = 0; i < 3; i++)
      expect(outcome(await runCode(source, js))).toEqual({ status: "success", result: [1, 2, null] });
  });

  it("reach the user's modules too, but no sandbox booted without them", async () => {
    const withCounter = createSandbox({ wasm: nodeWasm, bootModules: { counter } });
    const modules = { "./lib.js": 'export { next } from "runcode:boot/counter";' };
    const source = 'import { next } from "./lib.js"; export default next();';
    expect(outcome(await withCounter.runCode(source, { ...js, modules }))).toEqual({ status: "success", result: 1 });
    const without = createSandbox({ wasm: nodeWasm });
    expect(outcome(await without.runCode(source, { ...js, modules }))).toEqual({
      status: "link_error",
      error: "LinkError: Cannot find module 'runcode:boot/counter': only options.imports and options.modules resolve",
    });
  });

  it("named by a bare specifier are named by a failed bare import's message, twelve at most", async () => {
    const names = Array.from({ length: 14 }, (_, i) => `pkg${String(i).padStart(2, "0")}`);
    const { runCode } = createSandbox({
      wasm: nodeWasm,
      bootModules: Object.fromEntries(names.map((name) => [name, "export default 1;"])),
    });
    expect(outcome(await runCode('import x from "lodash"; export default x;', js))).toEqual({
      status: "link_error",
      error: `LinkError: Cannot find module 'lodash': only options.imports, options.modules and the sandbox's packages resolve (${names.slice(0, 12).join(", ")}, and 2 more)`,
    });
  });

  it("named by a bare specifier are imported by it too, after options.imports, and may run guarded natives at boot", async () => {
    // `concat` of objects runs the guarded natives' JS implementation, compiled on first use: here at boot.
    const slow = "export const joined = [1].concat([{ a: 1 }], { b: 2 });\nexport const scope = 'boot';\n";
    const { runCode } = createSandbox({ wasm: nodeWasm, bootModules: { slow, "pkg/sub": counter } });
    const source = `import { joined, scope } from "slow";
      import { next } from "pkg/sub";
      import { next as again } from "runcode:boot/pkg/sub";
      export default [joined, scope, next(), again()];`;
    expect(outcome(await runCode(source, js))).toEqual({
      status: "success",
      result: [[1, { a: 1 }, { b: 2 }], "boot", 1, 2],
    });
    const imports = { slow: { scope: "host" } };
    expect(outcome(await runCode('import { scope } from "slow"; export default scope;', { ...js, imports }))).toEqual({
      status: "success",
      result: "host",
    });
  });

  it("that fail to boot end every run with the module's error, and a module that is not source is refused", async () => {
    const thrower = createSandbox({ wasm: nodeWasm, bootModules: { bad: "throw new TypeError('boom');" } });
    expect(outcome(await thrower.runCode("export default 1", js))).toEqual({
      status: "error",
      error:
        'InternalError: The sandbox failed: Boot module \'bad\' failed to boot: {"name":"TypeError","message":"boom","stack":"    at <anonymous> (runcode:boot/bad:1:20)\\n"}',
    });
    const pending = createSandbox({ wasm: nodeWasm, bootModules: { pending: "await new Promise(() => {});" } });
    expect(outcome(await pending.runCode("export default 1", js))).toEqual({
      status: "error",
      error: "InternalError: The sandbox failed: Boot module 'pending' awaits what nothing at boot can settle",
    });
    expect(() => createSandbox({ bootModules: { bad: 1 as unknown as string } })).toThrow(
      new TypeError('createSandbox: bootModules["bad"] must be a string of module source'),
    );
  });
});
