/**
 * The worker threads' machinery (node/threads/on-threads.ts) is loaded when a run first needs a worker, not with the
 * Node entry; runs that need one before it is loaded wait for it and hold what a run waiting for a worker holds: a
 * stop, and the queue's bound. `node:worker_threads`'s factory below runs when the machinery first imports it.
 */
import { expect, it, vi } from "vitest";

const loaded = vi.hoisted(() => ({ workerThreads: false }));
vi.mock(import("node:worker_threads"), async (importOriginal) => {
  loaded.workerThreads = true;
  return importOriginal();
});

const JS = { language: "javascript" } as const;

it("the entry and a run that stays on the caller's thread load none of it; a run handed over to a worker loads it", async () => {
  const { createSandbox } = await import("../../node/index.js");
  const sandbox = createSandbox();
  expect((await sandbox.runCode("export default 1 + 1", JS)).result).toBe(2);
  expect(loaded.workerThreads).toBe(false);
  const long = await sandbox.runCode("let i = 0;\nwhile (i < 2e6) i++;\nexport default i;", JS);
  expect([long.status, long.result, long.fuelRedone]).toEqual(["success", 2e6, expect.any(Number)]);
  expect(loaded.workerThreads).toBe(true);
});

it("runs started before it loads wait for it: a stopped one never runs, and past the queue's bound runCode throws", async () => {
  vi.resetModules();
  const { createSandbox, MAX_QUEUED_RUNS, MAX_THREADS } = await import("../../node/index.js");
  const { runCode } = createSandbox({ threads: true });
  let ran = false;
  const stopped = runCode("ran(); export default 1", { ...JS, globals: { ran: () => (ran = true) } });
  stopped.terminate("not now");
  let open!: (value: number) => void;
  const gate = new Promise<number>((resolve) => {
    open = resolve;
  });
  const runs = Array.from({ length: MAX_THREADS + MAX_QUEUED_RUNS }, () =>
    runCode("export default await gate()", { ...JS, globals: { gate: () => gate } }),
  );
  expect(() => runCode("export default 1", JS)).toThrow(
    new RangeError(
      `runCode: ${MAX_QUEUED_RUNS} runs are already waiting for the ${MAX_THREADS} worker threads: await some before starting more`,
    ),
  );
  expect([(await stopped).status, (await stopped).error?.message]).toEqual(["terminated", "not now"]);
  open(1);
  const results = await Promise.all(runs);
  expect(results.every((r) => r.status === "success" && r.result === 1)).toBe(true);
  expect(ran).toBe(false);
}, 60_000);
