/**
 * The thread pool's turns (node/threads/pool.ts): unrelated runs by tenant, nested runs by the root run they belong
 * to, and a nested run ending with the run that started it. Order is observed through host functions the runs call
 * as they start, never through timings: a time bound here only catches a hang.
 */
import { describe, expect, it } from "vitest";
import { createSandbox, MAX_THREADS } from "../../node/index.js";
import type { CodeExecution, CodeExecutionResult } from "../../src/core/types.js";

const { runCode } = createSandbox({ threads: true });
const JS = { language: "javascript" } as const;
const SPIN = "started(name);\nwhile (true) {}";
const HANG_MS = 30_000;

function deferred<T = void>() {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

/** The names runs pass to `started` as they start, in that order, and a wait for the next one. */
function starts() {
  const order: string[] = [];
  let waiters: { count: number; resolve: () => void }[] = [];
  const started = (name: string) => {
    order.push(name);
    for (const waiter of waiters) if (order.length >= waiter.count) waiter.resolve();
    waiters = waiters.filter((waiter) => order.length < waiter.count);
  };
  /** Resolves once `count` runs have started in all. */
  const reached = (count: number) =>
    new Promise<void>((resolve) => {
      if (order.length >= count) resolve();
      else waiters.push({ count, resolve });
    });
  return { order, started, reached };
}

describe("unrelated runs take the workers in turns by tenant", () => {
  it(
    "a tenant's run queued behind another's backlog starts at the first worker that comes free",
    async () => {
      const { order, started, reached } = starts();
      const spin = (tenant: string, name: string) => runCode(SPIN, { ...JS, tenant, globals: { started, name } });
      const holding = Array.from({ length: MAX_THREADS }, (_, i) => spin("a", `a${i}`));
      await reached(MAX_THREADS);
      const backlog = Array.from({ length: 16 }, (_, i) => spin("a", `a-queued${i}`));
      const other = runCode("started(name);\nexport default 'b done';", {
        ...JS,
        tenant: "b",
        globals: { started, name: "b" },
      });
      const all: CodeExecution[] = [...holding, ...backlog, other];
      try {
        // First come, first served, b waited for the 16 runs of a's backlog (and for a's runs to end).
        (holding[0] as CodeExecution).terminate();
        await reached(MAX_THREADS + 1);
        expect(order[MAX_THREADS]).toBe("b");
        expect(await other).toMatchObject({ status: "success", result: "b done" });
        // Then a's backlog, in the order it came, on the worker b's run gave back.
        await reached(MAX_THREADS + 2);
        expect(order[MAX_THREADS + 1]).toBe("a-queued0");
      } finally {
        for (const run of all) run.terminate();
        await Promise.all(all);
      }
    },
    HANG_MS,
  );

  it(
    "runs without a tenant are one tenant, the library's caller's",
    async () => {
      const { order, started, reached } = starts();
      const spin = (tenant: string | undefined, name: string) =>
        runCode(SPIN, { ...JS, ...(tenant === undefined ? {} : { tenant }), globals: { started, name } });
      const holding = Array.from({ length: MAX_THREADS }, (_, i) => spin(undefined, `own${i}`));
      await reached(MAX_THREADS);
      const backlog = [spin(undefined, "own-queued"), spin("t", "t")];
      const all = [...holding, ...backlog];
      try {
        (holding[0] as CodeExecution).terminate();
        await reached(MAX_THREADS + 1);
        expect(order[MAX_THREADS]).toBe("t");
      } finally {
        for (const run of all) run.terminate();
        await Promise.all(all);
      }
    },
    HANG_MS,
  );
});

describe("nested runs belong to their root run", () => {
  it(
    "a caller's nested run completes while another caller's nested run spins",
    async () => {
      const { started, reached } = starts();
      // A long enough cap that, were the trivial run to wait for the spinning one, the test would hang.
      const { runCode: patient } = createSandbox({ threads: true, safetyCap: { cpuTimeMs: 60_000 } });
      const nest = (source: string) => async () =>
        (await patient(source, { ...JS, globals: { started, name: "nested" } })).status;
      const spinning = patient("export default await nest();", { ...JS, globals: { nest: nest(SPIN) } });
      await reached(1);
      try {
        const trivial = patient("export default await nest();", {
          ...JS,
          globals: { nest: nest("export default 1;") },
        });
        expect(await trivial).toMatchObject({ status: "success", result: "success" });
        expect(spinning.running).toBe(true);
      } finally {
        spinning.terminate();
        await spinning;
      }
    },
    HANG_MS,
  );
});

describe("a nested run never outlives the run that started it", () => {
  /**
   * A root run whose host function `nest()` starts a run awaiting `gate()` (which calls `started` first) and hands
   * the guest a promise of its result, and whose `hold()` awaits the test's word; the root runs `source`.
   */
  function withNested(source: string, settings: Parameters<typeof createSandbox>[0]) {
    const sandbox = createSandbox(settings);
    const gate = deferred<string>();
    const hold = deferred<string>();
    const nestedStarted = deferred();
    let nested: CodeExecution | undefined;
    const nest = () => {
      nested = sandbox.runCode("started();\nexport default await gate();", {
        ...JS,
        globals: { started: () => nestedStarted.resolve(), gate: () => gate.promise },
      });
      return nested.then((result) => result.result);
    };
    const root = sandbox.runCode(source, { ...JS, globals: { nest, hold: () => hold.promise } });
    const nestedRun = async (): Promise<CodeExecutionResult> => {
      await nestedStarted.promise;
      return (nested as CodeExecution).then((result) => result);
    };
    return { root, gate, hold, nestedStarted: nestedStarted.promise, nestedRun };
  }
  const ORPHANED = {
    status: "terminated",
    error: { name: "TerminatedError", message: "Execution terminated: the run that started it has ended" },
  };

  for (const threads of [true, false]) {
    describe(threads ? "on threads" : "in-thread", () => {
      it(
        "terminate() of the root ends its nested run, terminated, not run on to success",
        async () => {
          const { root, gate, nestedStarted, nestedRun } = withNested("export default await nest();", { threads });
          await nestedStarted;
          root.terminate("enough");
          expect(await root).toMatchObject({ status: "terminated", error: { message: "enough" } });
          const nested = nestedRun();
          gate.resolve("ran on");
          expect(await nested).toMatchObject(ORPHANED);
        },
        HANG_MS,
      );

      it(
        "the root's end ends a nested run it did not await",
        async () => {
          const { root, gate, hold, nestedStarted, nestedRun } = withNested("nest();\nexport default await hold();", {
            threads,
          });
          await nestedStarted;
          hold.resolve("root done");
          expect(await root).toMatchObject({ status: "success", result: "root done" });
          const nested = nestedRun();
          gate.resolve("ran on");
          expect(await nested).toMatchObject(ORPHANED);
        },
        HANG_MS,
      );
    });
  }

  it(
    "the root's stop by its safety cap ends its nested run",
    async () => {
      const { root, gate, nestedStarted, nestedRun } = withNested("nest();\nwhile (true) {}", {
        threads: true,
        safetyCap: { cpuTimeMs: 200 },
      });
      await nestedStarted;
      expect(await root).toMatchObject({ status: "terminated" });
      const nested = nestedRun();
      gate.resolve("ran on");
      expect(await nested).toMatchObject(ORPHANED);
    },
    HANG_MS,
  );

  it(
    "a nested run's own nested run ends with the root too, and a run the ended one's host function starts later never runs",
    async () => {
      const gate = deferred<string>();
      const deepStarted = deferred();
      let deep: CodeExecution | undefined;
      const late = deferred<CodeExecutionResult>();
      const inner = () => {
        deep = runCode("started();\nexport default await gate();", {
          ...JS,
          globals: { started: () => deepStarted.resolve(), gate: () => gate.promise },
        });
        // Once `deep` is over, in this host call's context: a run of the nested run that started `deep`.
        void deep.then(async () => late.resolve(await runCode("export default 'ran'", JS)));
        return deep.then((result) => result.result);
      };
      const outer = async () => (await runCode("export default await inner();", { ...JS, globals: { inner } })).status;
      const root = runCode("export default await outer();", { ...JS, globals: { outer } });
      await deepStarted.promise;
      root.terminate();
      gate.resolve("ran on");
      expect(await (deep as CodeExecution)).toMatchObject(ORPHANED);
      // Started from the host function of a run that is over: terminated before it runs.
      expect(await late.promise).toMatchObject(ORPHANED);
    },
    HANG_MS,
  );
});
