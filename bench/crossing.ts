/**
 * Values and host calls crossing into and out of a run, beside the same work done on the bare engine (a fresh
 * runtime and context per run, data as JSON text, host functions called by handle): the floor runCode is held to.
 */
import type { loadQuickJs } from "@sebastianwessel/quickjs";
import type { QuickJSWASMModule } from "quickjs-emscripten-core";
import type { CodeExecutionResult } from "../src/index.js";

type RunCode = (source: string, options: Record<string, unknown>) => PromiseLike<CodeExecutionResult>;

/** About 1.1 MB of JSON: 5,000 records of strings, numbers, booleans, null, a nested object and an array. */
export const DATA = Array.from({ length: 5000 }, (_, i) => ({
  id: i,
  name: `item-${i}`,
  description: `The ${i}th item of the bench's data, with some text to carry.`,
  price: i * 1.25,
  active: i % 3 === 0,
  owner: i % 7 === 0 ? null : { id: i % 97, login: `user${i % 97}`, score: (i % 13) / 7 },
  tags: ["alpha", "beta", `t${i % 10}`],
}));

const CALLS = "let s = 0;\nfor (let i = 0; i < 1000; i++) s += add(i, 1);\nexport default s;";
const AWAITED = "let s = 0;\nfor (let i = 0; i < 1000; i++) s += await add(i, 1);\nexport default s;";

function check(result: CodeExecutionResult, expected: unknown): void {
  if (result.status !== "success") throw new Error(`bench run failed: ${result.error?.message}`);
  if (expected !== undefined && result.result !== expected) throw new Error(`bench run returned ${result.result}`);
}

/** The floors: the same work on the bare engine. */
export function rawCases(quickjs: QuickJSWASMModule): Record<string, () => unknown> {
  const withContext = async <T>(
    work: (ctx: ReturnType<ReturnType<QuickJSWASMModule["newRuntime"]>["newContext"]>) => T | Promise<T>,
  ) => {
    const runtime = quickjs.newRuntime();
    const ctx = runtime.newContext();
    try {
      return await work(ctx);
    } finally {
      ctx.dispose();
      runtime.dispose();
    }
  };
  const module = (ctx: Parameters<Parameters<typeof withContext>[0]>[0], source: string) => {
    const namespace = ctx.unwrapResult(ctx.evalCode(source, "bench.js", { type: "module" }));
    const value = ctx.getProp(namespace, "default");
    namespace.dispose();
    return value;
  };
  return {
    "raw engine: 1.1 MB in and out as JSON text": () =>
      withContext((ctx) => {
        const text = ctx.newString(JSON.stringify(DATA));
        ctx.setProp(ctx.global, "text", text);
        text.dispose();
        const value = module(ctx, "export default JSON.stringify(JSON.parse(text))");
        const out = JSON.parse(ctx.getString(value)) as unknown[];
        value.dispose();
        if (out.length !== DATA.length) throw new Error("bench floor lost data");
      }),
    "raw engine: 1,000 sync host calls": () =>
      withContext((ctx) => {
        const add = ctx.newFunction("add", (a, b) => ctx.newNumber(ctx.getNumber(a) + ctx.getNumber(b)));
        ctx.setProp(ctx.global, "add", add);
        add.dispose();
        const value = module(ctx, CALLS);
        const out = ctx.getNumber(value);
        value.dispose();
        if (out !== 500_500) throw new Error("bench floor miscounted");
      }),
    "raw engine: 1,000 awaited async host calls": () =>
      withContext(async (ctx) => {
        const runtime = ctx.runtime;
        const add = ctx.newFunction("add", (a, b) => {
          const sum = ctx.getNumber(a) + ctx.getNumber(b);
          const deferred = ctx.newPromise();
          void Promise.resolve(sum).then((n) => {
            const handle = ctx.newNumber(n);
            deferred.resolve(handle);
            handle.dispose();
            deferred.dispose();
            runtime.executePendingJobs();
          });
          return deferred.handle;
        });
        ctx.setProp(ctx.global, "add", add);
        add.dispose();
        const promise = ctx.unwrapResult(ctx.evalCode(AWAITED, "bench.js", { type: "module" }));
        runtime.executePendingJobs();
        let state = ctx.getPromiseState(promise);
        while (state.type === "pending") {
          await new Promise((r) => setImmediate(r));
          state = ctx.getPromiseState(promise);
        }
        const value = ctx.unwrapResult(state);
        value.dispose();
        promise.dispose();
      }),
  };
}

/** The same through runCode, labelled `runCode${where}`. */
export function runCodeCases(runCode: RunCode, where = ""): Record<string, () => unknown> {
  const add = (a: number, b: number) => a + b;
  const addAsync = async (a: number, b: number) => a + b;
  return {
    [`runCode${where}: 1.1 MB in (globals) and out (result)`]: async () => {
      const result = await runCode("export default data", { language: "javascript", globals: { data: DATA } });
      check(result, undefined);
      if ((result.result as unknown[]).length !== DATA.length) throw new Error("bench run lost data");
    },
    [`runCode${where}: 1,000 sync host calls`]: async () =>
      check(await runCode(CALLS, { language: "javascript", globals: { add } }), 500_500),
    [`runCode${where}: 1,000 awaited async host calls`]: async () =>
      check(await runCode(AWAITED, { language: "javascript", globals: { add: addAsync } }), 500_500),
  };
}

/**
 * The same through a peer on the same engine build (`@sebastianwessel/quickjs`, dev only): values and functions
 * reach the guest as `env`, a fresh runtime and context per run in one shared instance.
 */
export function peerCases(peer: Awaited<ReturnType<typeof loadQuickJs>>): Record<string, () => unknown> {
  const run = async (code: string, env: Record<string, unknown>) => {
    const answer = await peer.runSandboxed(async ({ evalCode }) => evalCode(code), { env });
    if (!answer.ok) throw new Error(`peer run failed: ${JSON.stringify(answer.error)}`);
    return answer.data;
  };
  const expect = (value: unknown, expected: unknown) => {
    if (value !== expected) throw new Error(`peer run returned ${String(value)}`);
  };
  return {
    "peer: 1.1 MB in (env) and out (result)": async () => {
      if (((await run("export default env.data", { data: DATA })) as unknown[]).length !== DATA.length)
        throw new Error("peer run lost data");
    },
    "peer: 1,000 sync host calls": async () =>
      expect(await run(`const { add } = env;\n${CALLS}`, { add: (a: number, b: number) => a + b }), 500_500),
    "peer: 1,000 awaited async host calls": async () =>
      expect(await run(`const { add } = env;\n${AWAITED}`, { add: async (a: number, b: number) => a + b }), 500_500),
  };
}
