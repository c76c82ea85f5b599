/**
 * The process host's budgets (SECURITY.md, "What the host bounds"): everything a guest or a client hands the host
 * (output patches, tool arguments, kv values, event-stream subscriptions, listings) costs the host work and memory
 * bounded before the work starts and charged to the run's or the store's limits. Every attack asserts its exact
 * outcome and a host-side bound (units a budget spent, records a store copied, bytes a stream held); wall-clock
 * bounds are generous and only catch a hang.
 *
 * Measured before these bounds (Node 20, this machine), for the record:
 * - output patch `x = [x, x]` x40: over 300 s (killed); a Uint8Array of 50 MB shared five times: 164 s, 8.8 GB RSS
 * - 8,000 one-key patches after 250 KB of output: 6.2 s (each patch stringified the whole output)
 * - kv.set of `x = [x, x]` x40: over 300 s (killed)
 * - a recursive schema over `x = [x, x]` x22: 18 s, four times longer per two steps
 * - `uniqueItems` over 32,000 numbers: 0.93 s, quadratic (120,000: ~13 s)
 * - `format: "url"` over 27 characters: 1.5 s, doubling per character
 * - an unknown key of `Property "` x20,000: 2.8 s in the message's regex, quadratic
 * - an event stream nobody read: 10 MB buffered for 50 output patches, unbounded
 * - `GET /processes?limit=1` over 20,000 records: every record read and copied
 */
import { describe, expect, test, vi } from "vitest";
import type { EnvironmentBindings, InvokeInput } from "../../src/environment/index.js";
import { createApp } from "../../src/host/http/app.js";
import { ProcessService, type ProcessServiceOptions } from "../../src/host/processes/process-service.js";
import {
  MemoryProcessStore,
  type ProcessFilter,
  type ProcessRecord,
  type ProcessStore,
  type ProcessSummary,
} from "../../src/host/processes/storage.js";
import { kvService, memoryKeyValueStores } from "../../src/tools/kv.js";
import { KeyValueQuotaError, MemoryKeyValueStore } from "../../src/tools/kv-store.js";
import { type Tool, ToolError, ToolRegistry, ToolScope } from "../../src/tools/registry.js";
import { deferred } from "../environment/helpers.js";
import { processRecord } from "../host/processes/records.js";
import { sseEvents } from "../host/sse.js";

/** `x = [x, x]` `steps` times: a few hundred bytes as a clone, 2^steps leaves as a tree. */
function dag(steps: number): unknown {
  let x: unknown = 0;
  for (let i = 0; i < steps; i++) x = [x, x];
  return x;
}

const utf8 = (text: string) => new TextEncoder().encode(text).length;

/** Runs `f` and fails if it took longer than `ms` (a hang, not a performance figure). */
async function within<T>(ms: number, f: () => T | Promise<T>): Promise<T> {
  const start = performance.now();
  const result = await f();
  expect(performance.now() - start).toBeLessThan(ms);
  return result;
}

async function until(check: () => boolean): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!check()) {
    if (Date.now() > deadline) throw new Error("condition not reached");
    await new Promise((r) => setTimeout(r, 2));
  }
}

/** A service with a scripted environment and one process held `running` until `finish()`. */
async function running(options: Partial<ProcessServiceOptions> = {}) {
  let b!: EnvironmentBindings;
  const gate = deferred<void>();
  const svc = new ProcessService({
    store: new MemoryProcessStore(),
    onError: (e) => {
      throw e;
    },
    ...options,
  });
  await svc.environments.activate("test", {
    setup: async (context) => {
      b = context.bindings;
    },
    teardown: async () => {},
    execute: async ({ eid }) => {
      b.setState(eid, "running");
      await gate.promise;
      return "success";
    },
    kill: async () => gate.resolve(),
    generateDocs: async () => "",
    generateToolDocs: async () => "",
  });
  const { pid } = await svc.create({ code: "x" });
  await until(() => svc.usage(pid) !== undefined);
  return {
    svc,
    pid,
    b,
    finish: async () => {
      gate.resolve();
      return (await svc.wait(pid)) as ProcessRecord;
    },
  };
}

describe("output patches", () => {
  test("a patch of shared references (x = [x, x] forty times) is refused unexpanded: the output says truncated", async () => {
    const { svc, pid, b, finish } = await running();
    b.emitOutput(pid, { ok: 1 });
    await within(5_000, () => b.emitOutput(pid, { x: dag(40) }));
    // The patch's walk stopped at 16 units per byte of the 262,144-byte cap.
    expect(svc.usage(pid)?.outputWork.spent).toBeLessThanOrEqual(16 * 262_144 + 40);
    b.emitOutput(pid, { later: true });
    const record = await finish();
    expect(record.output).toEqual({ ok: 1, $truncated: "output exceeded 262144 bytes: later patches were dropped" });
    expect(record.truncated.output).toBe(true);
  });

  test("a typed array shared five times is refused before any copy of it is made", async () => {
    const { svc, pid, b, finish } = await running();
    const bytes = new Uint8Array(8 * 1024 * 1024);
    await within(5_000, () => b.emitOutput(pid, { a: bytes, b: bytes, c: bytes, d: bytes, e: bytes }));
    expect(svc.usage(pid)?.outputWork.spent).toBeLessThanOrEqual(16 * 262_144);
    expect((await finish()).output).toEqual({ $truncated: "output exceeded 262144 bytes: later patches were dropped" });
  });

  test("a Map keyed by an array of shared references: the key's text is paid for as it is joined", async () => {
    const { svc, pid, b, finish } = await running();
    // `String(key)` joins nested arrays recursively: 2^40 joins before.
    await within(5_000, () => b.emitOutput(pid, { m: new Map([[dag(40), 1]]) } as Record<string, unknown>));
    expect(svc.usage(pid)?.outputWork.spent).toBeLessThanOrEqual(16 * 262_144);
    b.emitOutput(pid, { after: 1 });
    expect((await finish()).output).toEqual({ $truncated: "output exceeded 262144 bytes: later patches were dropped" });
    const { toJson } = await import("../../src/values/json.js");
    expect(
      toJson(
        new Map<unknown, number>([
          [[1, [2, null]], 1],
          [new Date(0), 2],
          [{}, 3],
        ]),
      ),
    ).toEqual({
      "1,2,": 1,
      [String(new Date(0))]: 2,
      "[object Object]": 3,
    });
  });

  test("a patch costs its own size, not the output's: 20,000 one-key patches after 250 KB", async () => {
    const { svc, pid, b, finish } = await running();
    const big = "x".repeat(250_000);
    await within(10_000, () => {
      b.emitOutput(pid, { big });
      for (let i = 0; i < 20_000; i++) b.emitOutput(pid, { [`k${i % 50}`]: i });
    });
    const usage = svc.usage(pid);
    // 250,002 units for the big string, about 40 for each small patch: never the 250 KB output again.
    expect(usage?.outputWork.spent).toBeLessThan(250_010 + 20_000 * 40);
    const expected: Record<string, unknown> = { big };
    for (let i = 19_950; i < 20_000; i++) expected[`k${i % 50}`] = i;
    const record = await finish();
    expect(record.output).toEqual(expected);
    expect(usage?.outputBytes).toBe(utf8(JSON.stringify(record.output)));
  });

  test("a patch is converted and sized in one walk: no JSON text is made or parsed before storage", async () => {
    const { svc, pid, b, finish } = await running();
    const stringify = vi.spyOn(JSON, "stringify");
    const parse = vi.spyOn(JSON, "parse");
    b.emitOutput(pid, { a: [1, "é", new Map([["k", 2n]])], b: { c: null } } as Record<string, unknown>);
    const calls = [stringify.mock.calls.length, parse.mock.calls.length];
    stringify.mockRestore();
    parse.mockRestore();
    expect(calls).toEqual([0, 0]);
    expect(svc.usage(pid)?.outputBytes).toBe(utf8('{"a":[1,"é",{"k":"2"}],"b":{"c":null}}'));
    expect((await finish()).output).toEqual({ a: [1, "é", { k: "2" }], b: { c: null } });
  });

  test("the cap is exact in UTF-8 bytes, reckoned from the entries a patch replaces", async () => {
    const { svc, pid, b, finish } = await running({ limits: { outputBytes: 1000 } });
    const current = () => svc.usage(pid)?.outputBytes;
    b.emitOutput(pid, { a: `${"€".repeat(100)}😀`, "é\n": null });
    b.emitOutput(pid, JSON.parse('{"__proto__": "\\n\\n\\n", "constructor": {"prototype": {"polluted": 1}}}'));
    b.emitOutput(pid, { a: 1 }); // Replaces 305 bytes of value with 1.
    const before = current() as number;
    // `,"fill":"xx…"` adds the string's length plus 10 bytes: land exactly on the cap.
    b.emitOutput(pid, { fill: "x".repeat(1000 - before - 10) });
    expect(current()).toBe(1000);
    b.emitOutput(pid, { z: 0 });
    expect(current()).toBe(1000);
    const record = await finish();
    const { $truncated, ...kept } = record.output;
    expect($truncated).toBe("output exceeded 1000 bytes: later patches were dropped");
    expect(utf8(JSON.stringify(kept))).toBe(1000);
    expect(Object.keys(kept)).toEqual(["a", "é\n", "__proto__", "constructor", "fill"]);
    expect(Object.getPrototypeOf(record.output)).toBe(Object.prototype);
    expect(Object.getOwnPropertyDescriptor(record.output, "__proto__")?.value).toBe("\n\n\n");
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  test("__proto__ and constructor keys stay own keys in the stored record, GET /output and the event stream", async () => {
    const store = new MemoryProcessStore();
    const { svc, pid, b, finish } = await running({ store });
    const app = createApp({ processes: svc, catalog: svc });
    const stream = await app.fetch(new Request(`http://host/processes/${pid}/events`));
    const hostile = JSON.parse('{"__proto__": {"polluted": 1}, "constructor": {"prototype": {"polluted": 2}}}');
    b.emitOutput(pid, hostile);
    b.emitOutput(pid, { nested: hostile, map: new Map([["__proto__", 3]]) } as Record<string, unknown>);
    await finish();
    const own = (o: object) => Object.getOwnPropertyNames(o).sort();
    const stored = (await store.get(pid))?.output as Record<string, unknown>;
    const served = JSON.parse(await (await app.fetch(new Request(`http://host/processes/${pid}/output`))).text());
    for (const output of [stored, served]) {
      expect(Object.getPrototypeOf(output)).toBe(Object.prototype);
      expect(own(output)).toEqual(["__proto__", "constructor", "map", "nested"]);
      expect(Object.getOwnPropertyDescriptor(output, "__proto__")?.value).toEqual({ polluted: 1 });
      expect(own(output.nested as object)).toEqual(["__proto__", "constructor"]);
      expect(own(output.map as object)).toEqual(["__proto__"]);
      expect((output as { polluted?: unknown }).polluted).toBeUndefined();
    }
    const text = await stream.text();
    expect(text).toContain('"patch":{"__proto__":{"polluted":1},"constructor":{"prototype":{"polluted":2}}}');
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });
});

/** A registry with one `demo` service of the given tools (each records what it ran with). */
function demo(tools: Record<string, Tool["inputSchema"]>, workPerRun?: number) {
  const ran: unknown[] = [];
  const registry = new ToolRegistry(workPerRun === undefined ? {} : { workPerRun }).register({
    id: "demo",
    description: "Test tools",
    tools: Object.entries(tools).map(([id, inputSchema]) => ({
      id,
      description: id,
      inputSchema,
      run: (p) => {
        ran.push(p);
        return "ran";
      },
    })),
  });
  const call = (toolId: string, parameters: unknown, scope?: ToolScope) =>
    registry.invoke({ serviceId: "demo", toolId, parameters: parameters as Record<string, unknown> }, scope).then(
      (value) => ["ok", value],
      (e: unknown) => (e instanceof ToolError ? [e.code, e.message] : ["thrown", String(e)]),
    );
  return { registry, ran, call };
}

const RECURSIVE = {
  type: "object",
  properties: { x: { $ref: "#/$defs/n" } },
  $defs: { n: { anyOf: [{ type: "number" }, { type: "array", items: { $ref: "#/$defs/n" } }] } },
};

describe("tool arguments", () => {
  test("arguments of shared references are refused as too large, unexpanded, before any schema or tool sees them", async () => {
    const { call, ran, registry } = demo({ tree: RECURSIVE });
    const scope = registry.scope();
    expect(await within(5_000, () => call("tree", { x: dag(40) }, scope))).toEqual([
      "invalid_parameters",
      "Invalid parameters for demo.tree: the arguments are more than 1048576 bytes of JSON (shared references count each time they are reached)",
    ]);
    expect(scope.work.spent).toBe(16 * 1_048_576);
    expect(ran).toEqual([]);
    // Within the cap the tool runs with the JSON tree, shared references written out.
    expect(await call("tree", { x: dag(3) })).toEqual(["ok", "ran"]);
    expect(ran).toEqual([
      {
        x: [
          [
            [0, 0],
            [0, 0],
          ],
          [
            [0, 0],
            [0, 0],
          ],
        ],
      },
    ]);
  });

  test("uniqueItems over a guest-sized array stops at the validation budget; small arrays are checked exactly", async () => {
    const { call, registry } = demo({
      tags: { type: "object", properties: { tags: { type: "array", uniqueItems: true } } },
    });
    const scope = registry.scope();
    const many = Array.from({ length: 120_000 }, (_, i) => i);
    expect(await within(10_000, () => call("tags", { tags: many }, scope))).toEqual([
      "invalid_parameters",
      "Invalid parameters for demo.tags: the arguments are too large to validate against this tool's schema (more than 8388608 units of work)",
    ]);
    // Converting (about 25 units per number) plus at most the validation budget.
    expect(scope.work.spent).toBeLessThanOrEqual(120_000 * 32 + 8_388_608);
    const few = Array.from({ length: 300 }, (_, i) => i);
    expect(await call("tags", { tags: few })).toEqual(["ok", "ran"]);
    expect(await call("tags", { tags: [...few.slice(0, 299), 0] })).toEqual([
      "invalid_parameters",
      "Invalid parameters for demo.tags: tags: Duplicate items at indexes 0 and 299.",
    ]);
  });

  test("a recursive schema that visits each level twice stops at the budget (2^depth visits)", async () => {
    const schema = {
      type: "object",
      properties: { x: { $ref: "#/$defs/n" } },
      $defs: {
        n: {
          anyOf: [
            { type: "number" },
            { type: "array", items: { $ref: "#/$defs/n" } },
            { type: "array", minItems: 1, items: { $ref: "#/$defs/n" } },
          ],
        },
      },
    };
    const { call, registry } = demo({ twice: schema });
    let nested: unknown = 1;
    for (let i = 0; i < 40; i++) nested = [nested];
    const scope = registry.scope();
    expect(await within(10_000, () => call("twice", { x: nested }, scope))).toEqual([
      "invalid_parameters",
      "Invalid parameters for demo.twice: the arguments are too large to validate against this tool's schema (more than 8388608 units of work)",
    ]);
    expect(scope.work.spent).toBeLessThanOrEqual(2_000 + 8_388_608);
    // Subschemas that read nothing are paid for too: 200 of them per level, over 100,000 items.
    const wide = {
      type: "object",
      properties: { x: { type: "array", items: { anyOf: Array.from({ length: 200 }, (_, i) => ({ minimum: i })) } } },
    };
    const w = demo({ wide });
    const wideScope = w.registry.scope();
    expect(
      await within(10_000, () => w.call("wide", { x: Array.from({ length: 100_000 }, () => 500) }, wideScope)),
    ).toEqual([
      "invalid_parameters",
      "Invalid parameters for demo.wide: the arguments are too large to validate against this tool's schema (more than 8388608 units of work)",
    ]);
  });

  test("nesting is capped at 64 levels; 250,000 bad items give the first problem, not 110 MB of errors", async () => {
    const { call } = demo({
      any: { type: "object" },
      nums: { type: "object", properties: { nums: { type: "array", items: { type: "number" } } } },
    });
    const nest = (levels: number) => {
      let v: unknown = 0;
      for (let i = 0; i < levels; i++) v = [v];
      return v;
    };
    expect(await call("any", { x: nest(63) })).toEqual(["ok", "ran"]);
    expect(await call("any", { x: nest(64) })).toEqual([
      "invalid_parameters",
      "Invalid parameters for demo.any: the arguments are nested deeper than 64 levels",
    ]);
    expect(await within(10_000, () => call("nums", { nums: Array.from({ length: 250_000 }, () => "a") }))).toEqual([
      "invalid_parameters",
      'Invalid parameters for demo.nums: nums/0: Instance type "string" is invalid. Expected "number".',
    ]);
  });

  test("an unknown key the guest chose is sliced out of the message, not matched by a regex, and clipped", async () => {
    const { call } = demo({ strict: { type: "object", additionalProperties: false } });
    const key = `${'Property "'.repeat(90_000)}\n`;
    expect(await within(5_000, () => call("strict", { [key]: 1 }))).toEqual([
      "invalid_parameters",
      `Invalid parameters for demo.strict: unknown field ${JSON.stringify(`${key.slice(0, 199)}…`)}`,
    ]);
  });

  test("a run's tool calls share one budget: past it every call is refused until the next run", async () => {
    const { call, registry } = demo({ tree: RECURSIVE, any: { type: "object" } });
    const scope = registry.scope();
    const tooLarge: unknown[] = [
      "invalid_parameters",
      "Invalid parameters for demo.tree: the arguments are more than 1048576 bytes of JSON (shared references count each time they are reached)",
    ];
    expect(await call("tree", { x: dag(40) }, scope)).toEqual(tooLarge);
    // The second walk spends the other half: the run's budget is dry, and says so.
    const spent = (tool: string) => [
      "quota_exceeded",
      `demo.${tool} failed: quota exceeded: a run may spend at most 33554432 units of work on tool arguments`,
    ];
    expect(await call("tree", { x: dag(40) }, scope)).toEqual(spent("tree"));
    expect(scope.work.left).toBe(0);
    expect(await call("any", {}, scope)).toEqual(spent("any"));
    expect(await call("any", {}, registry.scope())).toEqual(["ok", "ran"]);
  });

  test("the process service charges each process's calls to its own run", async () => {
    const tools = new ToolRegistry({ workPerRun: 5_000 }).register({
      id: "demo",
      description: "",
      tools: [{ id: "any", description: "", inputSchema: { type: "object" }, run: () => "ran" }],
    });
    const { svc, pid, b, finish } = await running({ tools });
    const invoke = (parameters: Record<string, unknown>) =>
      b.invokeTool({ serviceId: "demo", toolId: "any", parameters } as InvokeInput).catch((e: Error) => e.message);
    expect(await invoke({ s: "x".repeat(3_000) })).toBe("ran");
    expect(svc.usage(pid)?.toolWork).toEqual({ spent: expect.any(Number), limit: 5_000 });
    expect(svc.usage(pid)?.toolWork.spent).toBeGreaterThan(3_000);
    // The second call's conversion meets the run's budget, not its own cap.
    expect(await invoke({ s: "x".repeat(3_000) })).toBe(
      "demo.any failed: quota exceeded: a run may spend at most 5000 units of work on tool arguments",
    );
    expect(svc.usage(pid)?.toolWork).toEqual({ spent: 5_000, limit: 5_000 });
    expect(await invoke({})).toBe(
      "demo.any failed: quota exceeded: a run may spend at most 5000 units of work on tool arguments",
    );
    await finish();
    await svc.run(pid);
    await until(() => svc.usage(pid) !== undefined);
    expect(await invoke({})).toBe("ran");
  });
});

/** Every `format: "url"` the library's regex accepts, that regex copied from @cfworker/json-schema 4.1.6. */
const LIBRARY_URL =
  /^(?:(?:https?|ftp):\/\/)(?:\S+(?::\S*)?@)?(?:(?!10(?:\.\d{1,3}){3})(?!127(?:\.\d{1,3}){3})(?!169\.254(?:\.\d{1,3}){2})(?!192\.168(?:\.\d{1,3}){2})(?!172\.(?:1[6-9]|2\d|3[0-1])(?:\.\d{1,3}){2})(?:[1-9]\d?|1\d\d|2[01]\d|22[0-3])(?:\.(?:1?\d{1,2}|2[0-4]\d|25[0-5])){2}(?:\.(?:[1-9]\d?|1\d\d|2[0-4]\d|25[0-4]))|(?:(?:[a-z\u{00a1}-\u{ffff}0-9]+-?)*[a-z\u{00a1}-\u{ffff}0-9]+)(?:\.(?:[a-z\u{00a1}-\u{ffff}0-9]+-?)*[a-z\u{00a1}-\u{ffff}0-9]+)*(?:\.(?:[a-z\u{00a1}-\u{ffff}]{2,})))(?::\d{2,5})?(?:\/[^\s]*)?$/iu;

describe('format: "url" (the library\'s regex backtracked exponentially)', () => {
  test("a 40-character host is answered at once, and urls still validate", async () => {
    const { call } = demo({ link: { type: "object", properties: { u: { type: "string", format: "url" } } } });
    expect(await within(2_000, () => call("link", { u: `http://${"a".repeat(40)}!` }))).toEqual([
      "invalid_parameters",
      'Invalid parameters for demo.link: u: String does not match format "url".',
    ]);
    expect(await call("link", { u: "https://user:pw@example.com:8080/a?b#c" })).toEqual(["ok", "ran"]);
    expect(await call("link", { u: "http://10.0.0.1/" })).toEqual([
      "invalid_parameters",
      'Invalid parameters for demo.link: u: String does not match format "url".',
    ]);
  });

  test("accepts exactly what the library's regex accepts", async () => {
    const { format } = await import("@cfworker/json-schema");
    const isUrl = format.url as (s: string) => boolean;
    const corpus = [
      "http://example.com",
      "HTTPS://EXAMPLE.COM/x",
      "ftp://a-b.c-d.ef:21/",
      "http://a--b.com",
      "http://-a.com",
      "http://a-.com",
      "http://é.ça",
      "http://a.b",
      "http://1.2.3.4",
      "http://1.2.3.4:80/p",
      "http://127.0.0.1",
      "http://172.16.0.1",
      "http://172.32.0.1",
      "http://223.255.255.254",
      "http://224.0.0.1",
      "http://u@a.com",
      "http://u:p@a.com",
      "http://@a.com",
      "http://a@b@c.com",
      "http://a/b@c.com",
      "http://a b@c.com",
      "http://a@b.com/ x",
      "http://a.com:1",
      "http://a.com:123456",
      "http://a.com:99/",
      "http://a.com/\u3000",
      "http://a\u3000b.com",
      "http://x.com\u00a0",
      "http://a.com?x",
      "mailto:a@b.com",
      "http://",
      "http://:80@a.com",
      "http://a:b:c@d.com:8080",
    ];
    for (const s of corpus) expect([s, isUrl(s)]).toEqual([s, LIBRARY_URL.test(s)]);
    // Generated strings over the characters that matter, short enough for the library's regex.
    const alphabet = ["a", "B", "1", "0", ".", "-", "@", ":", "/", " ", "\u3000", "é", "?"];
    let seed = 7;
    const random = () => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    for (let n = 0; n < 20_000; n++) {
      let s = ["http://", "https://", "ftp://", "HTTP://", "http:/"][Math.floor(random() * 5)] as string;
      const length = Math.floor(random() * 12);
      for (let i = 0; i < length; i++) s += alphabet[Math.floor(random() * alphabet.length)];
      if (random() < 0.3) s += [".com", ".ab", ":8080", "/p", "@x.io"][Math.floor(random() * 5)];
      expect([s, isUrl(s)]).toEqual([s, LIBRARY_URL.test(s)]);
    }
  });

  test("runs in linear time on a megabyte of each adversarial shape", async () => {
    const { format } = await import("@cfworker/json-schema");
    const isUrl = format.url as (s: string) => boolean;
    const n = 1_048_576;
    for (const body of ["a", "a-", "a.", "a@", "a:", ":@", "@a.bb/", "a.bb:1@", "1."]) {
      const s = `http://${body.repeat(n / body.length)}\u3000`;
      await within(2_000, () => isUrl(s));
      await within(2_000, () => isUrl(`${s.slice(0, -1)}!`));
    }
  });
});

describe("the kv service's quotas", () => {
  const setTool = (store: MemoryKeyValueStore, options = {}) =>
    kvService(() => store, options).tools.find((t) => t.id === "set") as Tool;

  test("a value of shared references is refused by a walk that stops at the value cap", async () => {
    const store = new MemoryKeyValueStore();
    const error = (await within(5_000, () =>
      Promise.resolve(setTool(store).run({ key: "k", value: dag(40) }, { scope: new ToolScope() })).catch((e) => e),
    )) as ToolError;
    expect([error.code, error.message]).toEqual([
      "quota_exceeded",
      "kv.set failed: the value is more than 65536 bytes of JSON (shared references count each time they are reached)",
    ]);
    expect(await store.usage()).toEqual({ keys: 0, bytes: 0 });
    // Through the registry, arguments over 1 MiB stop first; under it the value cap speaks.
    const registry = new ToolRegistry().register(kvService(() => store));
    const set = (value: unknown) =>
      registry
        .invoke({ serviceId: "kv", toolId: "set", parameters: { key: "k", value } })
        .catch((e: ToolError) => [e.code, e.message]);
    expect(await set(dag(40))).toEqual([
      "invalid_parameters",
      "Invalid parameters for kv.set: the arguments are more than 1048576 bytes of JSON (shared references count each time they are reached)",
    ]);
    expect(await set(dag(15))).toEqual([
      "quota_exceeded",
      "kv.set failed: the value is 131069 bytes of JSON, over 65536",
    ]);
    expect(await set("x".repeat(65_534))).toEqual({ bytes: 65_536 });
    expect(await set("x".repeat(65_535))).toEqual([
      "quota_exceeded",
      "kv.set failed: the value is 65537 bytes of JSON, over 65536",
    ]);
    expect(await store.usage()).toEqual({ keys: 1, bytes: 1 + 65_536 });
  });

  test("keys per store: a new key past the quota is refused; overwriting and deleting still work", async () => {
    const store = new MemoryKeyValueStore();
    const registry = new ToolRegistry().register(kvService(() => store, { maxKeys: 3 }));
    const call = (toolId: string, parameters: Record<string, unknown>) =>
      registry.invoke({ serviceId: "kv", toolId, parameters }).catch((e: ToolError) => [e.code, e.message]);
    for (const key of ["a", "b", "c"]) expect(await call("set", { key, value: 1 })).toEqual({ bytes: 1 });
    expect(await call("set", { key: "d", value: 1 })).toEqual([
      "quota_exceeded",
      "kv.set failed: quota exceeded: the store may hold at most 3 keys",
    ]);
    expect(await call("set", { key: "a", value: 22 })).toEqual({ bytes: 2 });
    expect(await call("delete", { key: "b" })).toEqual({ deleted: true });
    expect(await call("set", { key: "d", value: 1 })).toEqual({ bytes: 1 });
    expect(await call("list", {})).toEqual({ keys: ["a", "c", "d"] });
    expect(await store.usage()).toEqual({ keys: 3, bytes: 3 + 2 + 2 });
  });

  test("bytes per store: keys and values in UTF-8; a write that shrinks the store is always allowed", async () => {
    const store = new MemoryKeyValueStore();
    const registry = new ToolRegistry().register(kvService(() => store, { maxStoreBytes: 100 }));
    const set = (key: string, value: unknown) =>
      registry
        .invoke({ serviceId: "kv", toolId: "set", parameters: { key, value } })
        .catch((e: ToolError) => [e.code, e.message]);
    expect(await set("a", "€".repeat(13))).toEqual({ bytes: 41 });
    expect(await set("b", "y".repeat(40))).toEqual({ bytes: 42 });
    expect(await store.usage()).toEqual({ keys: 2, bytes: 42 + 43 });
    expect(await set("c", "z".repeat(20))).toEqual([
      "quota_exceeded",
      "kv.set failed: quota exceeded: the store may hold at most 100 bytes of keys and values (this write would make it 108)",
    ]);
    expect(await set("a", 1)).toEqual({ bytes: 1 });
    expect(await set("c", "z".repeat(20))).toEqual({ bytes: 22 });
    expect(await store.usage()).toEqual({ keys: 3, bytes: 2 + 43 + 23 });
    await expect(store.set("d", "x".repeat(100), { maxKeys: 10, maxBytes: 100 })).rejects.toThrow(KeyValueQuotaError);
  });

  test("calls per run: the run's scope counts every kv call; the next run starts again", async () => {
    const tools = new ToolRegistry().register(kvService(memoryKeyValueStores(), { maxCallsPerRun: 5 }));
    const { svc, pid, b, finish } = await running({ tools });
    const call = (toolId: string, parameters: Record<string, unknown>) =>
      b.invokeTool({ serviceId: "kv", toolId, parameters }).catch((e: ToolError) => [e.code, e.message]);
    expect(await call("set", { key: "k", value: 1 })).toEqual({ bytes: 1 });
    expect(await call("get", { key: "k" })).toEqual({ found: true, value: 1 });
    expect(await call("list", {})).toEqual({ keys: ["k"] });
    expect(await call("get", { key: 7 })).toEqual([
      "invalid_parameters",
      'Invalid parameters for kv.get: key: Instance type "number" is invalid. Expected "string".',
    ]);
    expect(await call("get", { key: "k" })).toEqual({ found: true, value: 1 });
    expect(await call("delete", { key: "k" })).toEqual({ deleted: true });
    expect(await call("get", { key: "k" })).toEqual([
      "quota_exceeded",
      "kv.get failed: quota exceeded: a run may make at most 5 kv calls",
    ]);
    await finish();
    await svc.run(pid);
    await until(() => svc.usage(pid) !== undefined);
    expect(await call("get", { key: "k" })).toEqual({ found: false, value: null });
  });
});

/** Reads a whole SSE body into `[event, data]` pairs, and its length in bytes. */
async function readEvents(response: Response): Promise<{ bytes: number; events: [string, Record<string, unknown>][] }> {
  const text = await response.text();
  return { bytes: utf8(text), events: sseEvents(text) };
}

describe("event streams", () => {
  test("a subscriber that never reads is dropped once 1 MiB waits: its stream ends with `dropped`", async () => {
    const { svc, pid, b, finish } = await running();
    const app = createApp({ processes: svc, catalog: svc });
    const slow = await app.fetch(new Request(`http://host/processes/${pid}/events`));
    expect(svc.usage(pid)?.subscribers).toBe(1);
    for (let i = 0; i < 50; i++) b.emitOutput(pid, { x: String(i % 10).repeat(200_000) });
    b.emitStdout(pid, new TextEncoder().encode("é".repeat(1_000_000)));
    expect(svc.usage(pid)?.subscribers).toBe(0);
    await finish();
    const { bytes, events } = await readEvents(slow);
    const snapshot = utf8(`event: snapshot\ndata: ${JSON.stringify({ pid, record: events[0]?.[1].record })}\n\n`);
    expect(bytes).toBeLessThan(snapshot + 1_048_576 + 300);
    expect(events.map(([event]) => event)).toEqual([
      "snapshot",
      "output",
      "output",
      "output",
      "output",
      "output",
      "dropped",
    ]);
    expect(events.at(-1)?.[1]).toEqual({
      pid,
      reason: `the client read too slowly: ${5 * (200_047 + String(pid).length)} bytes of events were waiting, at most 1048576 are kept`,
    });
  });

  test("HEAD answers the stream's headers and subscribes to nothing", async () => {
    const { svc, pid, finish } = await running();
    const app = createApp({ processes: svc, catalog: svc });
    for (let i = 0; i < 3; i++) {
      const head = await app.fetch(new Request(`http://host/processes/${pid}/events`, { method: "HEAD" }));
      expect([head.status, head.headers.get("content-type"), await head.text()]).toEqual([
        200,
        "text/event-stream; charset=utf-8",
        "",
      ]);
    }
    expect(svc.usage(pid)?.subscribers).toBe(0);
    expect((await app.fetch(new Request("http://host/processes/99/events", { method: "HEAD" }))).status).toBe(404);
    const get = await app.fetch(new Request(`http://host/processes/${pid}/events`));
    expect(svc.usage(pid)?.subscribers).toBe(1);
    await get.body?.cancel();
    expect(svc.usage(pid)?.subscribers).toBe(0);
    await finish();
  });

  test("a process takes at most maxSubscribers streams (429 too_many_subscribers)", async () => {
    const { svc, pid, finish } = await running({ maxSubscribers: 2 });
    const app = createApp({ processes: svc, catalog: svc });
    const open = [0, 1].map(() => app.fetch(new Request(`http://host/processes/${pid}/events`)));
    await Promise.all(open);
    const third = await app.fetch(new Request(`http://host/processes/${pid}/events`));
    expect([third.status, await third.json()]).toEqual([
      429,
      {
        error: {
          code: "too_many_subscribers",
          message: `Process ${pid} has 2 event streams open already: close one first`,
        },
      },
    ]);
    await finish();
    expect(svc.usage(pid)).toBeUndefined();
  });
});

describe("event streams of a tenant", () => {
  test("a tenant's processes take at most 64 streams together (429 too_many_subscribers), another tenant's are its own", async () => {
    // Before: 32 a process whatever the tenant's processes, so its 32 active ones held 1,024 streams, each keeping up
    // to 1 MiB of events its client did not read.
    const svc = new ProcessService({ store: new MemoryProcessStore() });
    let b!: EnvironmentBindings;
    const ends = new Map<number, () => void>();
    await svc.environments.activate("test", {
      setup: async (context) => {
        b = context.bindings;
      },
      teardown: async () => {},
      execute: ({ eid }) =>
        new Promise((resolve) => {
          b.setState(eid, "running");
          ends.set(eid, () => resolve("success"));
        }),
      kill: async (eid) => ends.get(eid)?.(),
      generateDocs: async () => "",
      generateToolDocs: async () => "",
    });
    const started = async (tenant?: string) => {
      const { pid } = await svc.create({ code: "x", ...(tenant === undefined ? {} : { tenant }) });
      await until(() => ends.has(pid));
      return pid;
    };
    const [first, second, third, betas] = [await started(), await started(), await started(), await started("beta")];
    const streams = (pid: number) => svc.events(pid);
    const open = await Promise.all([...Array(32).fill(first), ...Array(32).fill(second)].map(streams));
    const refusal = {
      code: "too_many_subscribers",
      message: "This tenant's processes have 64 event streams open already: close one first",
    };
    await expect(streams(third)).rejects.toMatchObject(refusal);
    // Another tenant's processes count for it alone.
    expect(await streams(betas)).toBeInstanceOf(ReadableStream);
    // A stream closed gives its place back.
    await open.pop()?.cancel();
    expect(await streams(third)).toBeInstanceOf(ReadableStream);
    await expect(streams(third)).rejects.toMatchObject(refusal);
    // A process that ends ends its streams, and gives their places back.
    ends.get(first)?.();
    await svc.wait(first);
    const more = await Promise.all([...Array(31).fill(third), second].map(streams));
    expect(more.length).toBe(32);
    const fourth = await started();
    await expect(streams(fourth)).rejects.toMatchObject(refusal);
    for (const end of ends.values()) end();
    await Promise.all([second, third, fourth, betas].map((pid) => svc.wait(pid)));
  });
});

/** A store that counts the records its `list` hands out (each one read and copied). */
class CountingStore extends MemoryProcessStore implements ProcessStore {
  listed = 0;
  filters: ProcessFilter[] = [];
  override async list(filter: ProcessFilter = {}): Promise<ProcessSummary[]> {
    const out = await super.list(filter);
    this.listed += out.length;
    this.filters.push(filter);
    return out;
  }
}

describe("listing", () => {
  test("GET /processes?limit=1 copies one record, not every record ever stored", async () => {
    const store = new CountingStore();
    const pids: number[] = [];
    for (let i = 0; i < 2_000; i++) {
      const pid = await store.nextPid("anonymous");
      pids.push(pid);
      await store.create(
        processRecord(pid, { exitState: i % 2 === 0 ? "success" : "failed", code: "c".repeat(1_000), timeoutMs: 1 }),
      );
    }
    const svc = new ProcessService({ store });
    const app = createApp({ processes: svc, catalog: svc });
    const page = await (await app.fetch(new Request("http://host/processes?limit=1&exitState=failed"))).json();
    expect(page).toMatchObject({ processes: [{ pid: pids[1], exitState: "failed" }] });
    expect(store.listed).toBe(1);
    expect(store.filters).toEqual([{ exitState: "failed", tenant: "anonymous", limit: 1 }]);
  });

  test("with active processes the store is asked for one more record per active process, and order holds", async () => {
    const store = new CountingStore();
    const { svc, pid, finish } = await running({ store });
    for (let i = 1; i <= 5; i++)
      await store.create({ ...((await store.get(pid)) as ProcessRecord), pid: pid + i, state: "idle" });
    // The running process's stored copy lags (still queued or running); the listing shows it as it is now.
    store.listed = 0;
    expect((await svc.list({ limit: 2 })).map((r) => [r.pid - pid, r.state])).toEqual([
      [0, "running"],
      [1, "idle"],
    ]);
    expect(store.listed).toBe(3);
    expect((await svc.list({ state: "running", limit: 1 })).map((r) => r.pid)).toEqual([pid]);
    expect((await svc.list({ state: "idle", limit: 2 })).map((r) => r.pid)).toEqual([pid + 1, pid + 2]);
    await finish();
  });
});
