/**
 * Values and host calls crossing into and out of a run, beside the same work done on the bare engine (a fresh
 * runtime and context per run, data as JSON text, host functions called by handle): the floor runCode is held to.
 */
import type { QuickJSContext, QuickJSWASMModule } from "quickjs-emscripten-core";
import type { CodeExecutionResult } from "../src/index.js";
import { expect, resultOf, succeeded } from "./checks.js";
import { runOnPeer } from "./engines.js";

type RunCode = (source: string, options: Record<string, unknown>) => PromiseLike<CodeExecutionResult>;

/** The crossings measured: ~1.1 MB of data in and out, 1,000 synchronous host calls and 1,000 awaited async ones. */
export interface Crossings {
  data: () => unknown;
  calls: () => unknown;
  awaited: () => unknown;
}

/** About 1.1 MB of JSON: 5,000 records of strings, numbers, booleans, null, a nested object and an array. */
const DATA = Array.from({ length: 5000 }, (_, i) => ({
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
const SUM = 500_500;

function sameLength(out: unknown): void {
  if ((out as unknown[]).length !== DATA.length) throw new Error("bench run lost data");
}

/** The floors: the same work on the bare engine. */
export function rawCrossings(quickjs: QuickJSWASMModule): Crossings {
  const withContext = (work: (ctx: QuickJSContext) => void) => {
    const runtime = quickjs.newRuntime();
    const ctx = runtime.newContext();
    try {
      work(ctx);
    } finally {
      ctx.dispose();
      runtime.dispose();
    }
  };
  const module = (ctx: QuickJSContext, source: string) => {
    const namespace = ctx.unwrapResult(ctx.evalCode(source, "bench.js", { type: "module" }));
    const value = ctx.getProp(namespace, "default");
    namespace.dispose();
    return value;
  };
  return {
    data: () =>
      withContext((ctx) => {
        const text = ctx.newString(JSON.stringify(DATA));
        ctx.setProp(ctx.global, "text", text);
        text.dispose();
        const value = module(ctx, "export default JSON.stringify(JSON.parse(text))");
        const out = JSON.parse(ctx.getString(value));
        value.dispose();
        sameLength(out);
      }),
    calls: () =>
      withContext((ctx) => {
        const add = ctx.newFunction("add", (a, b) => ctx.newNumber(ctx.getNumber(a) + ctx.getNumber(b)));
        ctx.setProp(ctx.global, "add", add);
        add.dispose();
        const value = module(ctx, CALLS);
        const out = ctx.getNumber(value);
        value.dispose();
        expect(out, SUM);
      }),
    // Its own context: the work is asynchronous, so the context outlives the call that made it.
    awaited: async () => {
      const runtime = quickjs.newRuntime();
      const ctx = runtime.newContext();
      try {
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
          await new Promise((resolve) => setImmediate(resolve));
          state = ctx.getPromiseState(promise);
        }
        ctx.unwrapResult(state).dispose();
        promise.dispose();
      } finally {
        ctx.dispose();
        runtime.dispose();
      }
    },
  };
}

const add = (a: number, b: number) => a + b;
const addAsync = async (a: number, b: number) => a + b;

/** The same through runCode. */
export function runCodeCrossings(runCode: RunCode): Crossings {
  return {
    data: async () =>
      sameLength(resultOf(await runCode("export default data", { language: "javascript", globals: { data: DATA } }))),
    calls: async () => succeeded(await runCode(CALLS, { language: "javascript", globals: { add } }), SUM),
    awaited: async () => succeeded(await runCode(AWAITED, { language: "javascript", globals: { add: addAsync } }), SUM),
  };
}

/** The same through the peer, its values and functions given as `env`. */
export function peerCrossings(): Crossings {
  return {
    data: async () => sameLength(await runOnPeer("export default env.data", { data: DATA })),
    calls: async () => expect(await runOnPeer(`const { add } = env;\n${CALLS}`, { add }), SUM),
    awaited: async () => expect(await runOnPeer(`const { add } = env;\n${AWAITED}`, { add: addAsync }), SUM),
  };
}
