/**
 * What importing the Node entry loads before it is used: `@jridgewell/trace-mapping` only for a TypeScript run (only
 * TypeScript sources have source maps), the cell parser (acorn, ~250 KB of code) only once a session runs its first
 * cell. A module's factory below runs when the module is first imported.
 */
import { expect, it, vi } from "vitest";

const loaded = vi.hoisted(() => new Set<string>());
vi.mock(import("acorn"), async (importOriginal) => {
  loaded.add("acorn");
  return importOriginal();
});
vi.mock(import("@jridgewell/trace-mapping"), async (importOriginal) => {
  loaded.add("trace-mapping");
  return importOriginal();
});

it("loads source maps for a TypeScript run and the cell parser for a session's first cell, not with the entry", async () => {
  const { createSandbox, createSession } = await import("../../node/index.js");
  const sandbox = createSandbox({ threads: false });
  const javascript = await sandbox.runCode("export default 1 + 1", { language: "javascript" });
  expect(javascript.result).toBe(2);
  expect([...loaded]).toEqual([]);
  const stripped = await sandbox.runCode("const n: number = 2; export default n * 2;");
  const transformed = await sandbox.runCode("enum E { A = 3 }\nexport default E.A;\nthrow new Error('at line 3');");
  expect(stripped.result).toBe(4);
  expect([transformed.status, transformed.error?.message, transformed.error?.line]).toEqual(["error", "at line 3", 3]);
  expect([...loaded]).toEqual(["trace-mapping"]);
  const session = await createSession();
  try {
    const declared = await session.run("let n: number = 20; n + 1", { language: "typescript" });
    const read = await session.run("n * 2", { language: "javascript" });
    const refused = await session.run("let = ;", { language: "javascript" });
    expect([declared.result, read.result]).toEqual([21, 40]);
    expect([refused.status, refused.error?.name]).toEqual(["link_error", "SyntaxError"]);
  } finally {
    session.close();
  }
  expect([...loaded]).toEqual(["trace-mapping", "acorn"]);
});
