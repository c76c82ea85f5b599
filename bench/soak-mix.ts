/** The mix of the soak (bench/soak.ts and its short version in test/security/soak.test.ts): every status. */
import type { CodeExecution, CodeExecutionStatus, RunCode } from "../src/core/types.js";

const js = { language: "javascript" } as const;
const never = () => new Promise(() => {});

/** Starts run `i` (of kind `i % 8`) with `runCode`; returns it with the status it must settle with. */
export function startMixed(runCode: RunCode, i: number): [CodeExecution, CodeExecutionStatus] {
  switch (i % 8) {
    case 0:
      return [
        runCode(`export default input.map((x) => x * ${i % 97});`, { ...js, globals: { input: [1, 2, 3] } }),
        "success",
      ];
    case 1: {
      const tool = async (n: number) => ({ n });
      return [
        runCode(`report(${i}); console.log("x"); export default await tool(${i});`, { ...js, globals: { tool } }),
        "success",
      ];
    }
    case 2:
      return [runCode(`throw new TypeError("bad ${i}");`, js), "error"];
    case 3:
      return [
        runCode("const keep = []; for (;;) keep.push(new Uint8Array(1 << 20));", { ...js, memoryLimitBytes: 1 << 20 }),
        "memory",
      ];
    case 4:
      return [runCode("let i = 0; for (;;) i++;", js), "terminated"];
    case 5: {
      const handle = runCode("export default await never();", { ...js, globals: { never } });
      setTimeout(() => handle.terminate("soak"), 0);
      return [handle, "terminated"];
    }
    case 6:
      return [runCode(`import { x } from "missing-${i % 3}";`, js), "link_error"];
    default:
      return [runCode("export default fn(() => 1);", { ...js, globals: { fn: (x: unknown) => x } }), "error"];
  }
}
