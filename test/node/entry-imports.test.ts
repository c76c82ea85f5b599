/**
 * What importing the Node entry loads before it is used: the cell parser (acorn, ~250 KB of code) only once a session
 * runs its first cell, never for a sandbox's runs. A module's factory below runs when the module is first imported.
 */
import { expect, it, vi } from "vitest";

const loaded = vi.hoisted(() => new Set<string>());
vi.mock(import("acorn"), async (importOriginal) => {
  loaded.add("acorn");
  return importOriginal();
});

it("loads the cell parser for a session's first cell, not for the entry or a sandbox's runs", async () => {
  const { createSandbox, createSession } = await import("../../node/index.js");
  const sandbox = createSandbox({ threads: false });
  const javascript = await sandbox.runCode("export default 1 + 1", { language: "javascript" });
  const typescript = await sandbox.runCode("const n: number = 2; export default n * 2;");
  expect([javascript.result, typescript.result]).toEqual([2, 4]);
  expect([...loaded]).toEqual([]);
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
  expect([...loaded]).toEqual(["acorn"]);
});
