/**
 * Values and host calls crossing into and out of a run, beside the same work done on the bare engine (a fresh
 * runtime and context per run, data as JSON text, host functions called by handle): the floor runCode is held to.
 */
import type { QuickJSContext, QuickJSWASMModule } from "quickjs-emscripten-core";
import type { CodeExecutionResult } from "../src/index.js";

type RunCode = (source: string, options: Record<string, unknown>) => PromiseLike<CodeExecutionResult>;

/** The crossings measured: ~1.1 MB of data in and out, and 1,000 synchronous host calls. */
interface Crossings {
  data: () => unknown;
  calls: () => unknown;
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

function check(result: CodeExecutionResult, expected: unknown): void {
  if (result.status !== "success") throw new Error(`bench run failed: ${result.error?.message}`);
  if (expected !== undefined && result.result !== expected) throw new Error(`bench run returned ${result.result}`);
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
        const out = JSON.parse(ctx.getString(value)) as unknown[];
        value.dispose();
        if (out.length !== DATA.length) throw new Error("bench floor lost data");
      }),
    calls: () =>
      withContext((ctx) => {
        const add = ctx.newFunction("add", (a, b) => ctx.newNumber(ctx.getNumber(a) + ctx.getNumber(b)));
        ctx.setProp(ctx.global, "add", add);
        add.dispose();
        const value = module(ctx, CALLS);
        const out = ctx.getNumber(value);
        value.dispose();
        if (out !== 500_500) throw new Error("bench floor miscounted");
      }),
  };
}

/** The same through runCode. */
export function runCodeCrossings(runCode: RunCode): Crossings {
  const add = (a: number, b: number) => a + b;
  return {
    data: async () => {
      const result = await runCode("export default data", { language: "javascript", globals: { data: DATA } });
      check(result, undefined);
      if ((result.result as unknown[]).length !== DATA.length) throw new Error("bench run lost data");
    },
    calls: async () => check(await runCode(CALLS, { language: "javascript", globals: { add } }), 500_500),
  };
}
