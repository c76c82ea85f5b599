/**
 * §6.8 on restored instances: a secret put through any channel of one run (globals, module caches, intrinsics,
 * prototypes, the heap, the atom table, pending jobs, errors, logs) reaches no later run, and every run draws its own
 * `Math.random` sequence.
 *
 * Every test makes its own sandbox and runs one run after another with one memory cap, so each run after the first
 * gets the instance the run before used, restored: the pool lends the instance of that wasm module and memory size
 * given back last. (Where the suite runs, restore-image.ts shows the platform restores rather than boots fresh.)
 * @module
 */
import { describe, expect, it } from "vitest";
import type { CodeExecutionOptions, CodeExecutionResult, RunCode, SandboxOptions } from "../../src/core/types.js";
import { type ConformanceOptions, sleep } from "./helpers.js";

const MiB = 1024 * 1024;
const js: CodeExecutionOptions = { language: "javascript" };

/**
 * Every object reachable from the global object and the intrinsics only syntax reaches, one line per object and per
 * own property (attributes, value, getter and setter), functions with their source text, in a fixed order: two runs
 * print the same lines exactly when their intrinsics are the same.
 */
const INTRINSICS = `
const source = Function.prototype.toString;
const roots = [
  ["globalThis", globalThis],
  ["AsyncFunction", Object.getPrototypeOf(async function () {})],
  ["GeneratorFunction", Object.getPrototypeOf(function* () {})],
  ["AsyncGeneratorFunction", Object.getPrototypeOf(async function* () {})],
  ["ArrayIterator", Object.getPrototypeOf([][Symbol.iterator]())],
  ["MapIterator", Object.getPrototypeOf(new Map().entries())],
  ["SetIterator", Object.getPrototypeOf(new Set().values())],
  ["StringIterator", Object.getPrototypeOf(""[Symbol.iterator]())],
  ["RegExpStringIterator", Object.getPrototypeOf(/a/g[Symbol.matchAll]("a"))],
  ["IteratorHelper", Object.getPrototypeOf([].values().map((x) => x))],
  ["WrapForValidIterator", Object.getPrototypeOf(Iterator.from({ next() {} }))],
  ["TypedArray", Object.getPrototypeOf(Uint8Array)],
  ["ThrowTypeError", (function () { return Object.getOwnPropertyDescriptor(arguments, "callee").get; })()],
];
const paths = new Map();
const queue = [];
const lines = [];
const name = (value, path) => {
  if (value === null || (typeof value !== "object" && typeof value !== "function")) return typeof value + " " + String(value);
  const known = paths.get(value);
  if (known !== undefined) return "= " + known;
  paths.set(value, path);
  queue.push(value);
  return "new";
};
for (const [path, value] of roots) name(value, path);
for (let i = 0; i < queue.length; i++) {
  const value = queue[i];
  const path = paths.get(value);
  const proto = name(Object.getPrototypeOf(value), path + ".[[Prototype]]");
  const kind = typeof value === "function" ? source.call(value) : "object";
  lines.push(path + " " + kind + (Object.isExtensible(value) ? "" : " non-extensible") + " proto " + proto);
  for (const key of Reflect.ownKeys(value)) {
    const d = Reflect.getOwnPropertyDescriptor(value, key);
    const at = path + "." + String(key);
    const flags = (d.enumerable ? "e" : "-") + (d.configurable ? "c" : "-") + ("value" in d ? (d.writable ? "w" : "-") : "");
    const shown = "value" in d ? name(d.value, at) : "get " + name(d.get, at + "[[Get]]") + " set " + name(d.set, at + "[[Set]]");
    lines.push(at + " " + flags + " " + shown);
  }
}
export default lines;`;

/**
 * What a run shows of itself, less its timing: `memoryUsedBytes` is the heap's high-water mark, the same for the
 * same program on an instance as booted and larger on one that still holds a run's heap.
 */
function observed(r: CodeExecutionResult): unknown {
  const { status, result, error, reports, memoryUsedBytes } = r;
  return { status, result, error, reports, logs: r.logs.map(({ level, args }) => ({ level, args })), memoryUsedBytes };
}

/** `status` and `result`, or `error` as "name: message", for one exact comparison. */
function outcome(r: CodeExecutionResult): unknown {
  return r.status === "success"
    ? { status: r.status, result: r.result }
    : { status: r.status, error: `${r.error?.name}: ${r.error?.message}` };
}

export function freshRunsSuite(options: ConformanceOptions = {}): void {
  const sandbox = options.sandbox;
  describe.skipIf(sandbox === undefined)("§6.8 each run is fresh: nothing of a run reaches the next", () => {
    const make = (settings: SandboxOptions = {}): RunCode => {
      if (sandbox === undefined) throw new Error("no sandbox factory");
      return sandbox(settings);
    };
    /** The run's view of the intrinsics, checked free of secrets. */
    const intrinsics = async (runCode: RunCode) => {
      const r = observed(await runCode(INTRINSICS, js));
      expect(JSON.stringify(r)).not.toContain("SECRET");
      return r;
    };

    it("no global, prototype, intrinsic, module or pending job of the run before, and none of its logs", async () => {
      const runCode = make();
      const first = await runCode(
        `import secret from "./secret.js";
         globalThis.leak = secret;
         Object.prototype.polluted = secret;
         JSON.stringify = () => secret;
         Math.random = () => 0.5;
         Promise.resolve().then(() => Promise.resolve()).then(() => console.log("late " + secret));
         new Promise(() => {});
         export default secret;`,
        { ...js, modules: { "./secret.js": "export default 'SECRET'" } },
      );
      expect(outcome(first)).toEqual({ status: "success", result: "SECRET" });
      const second = await runCode(
        `export default [typeof leak, ({}).polluted, JSON.stringify({ a: 1 }), Math.random() === 0.5,
           typeof globalThis.late];`,
        js,
      );
      expect(outcome(second)).toEqual({
        status: "success",
        result: ["undefined", undefined, '{"a":1}', false, "undefined"],
      });
      expect(second.logs).toEqual([]);
      // The module cache: a run that names the module without giving it, then one that gives it another source.
      const third = await runCode('import s from "./secret.js"; export default s;', js);
      expect(third.error).toEqual({
        name: "LinkError",
        message: "Cannot find module './secret.js' imported from <runCode>: it is not in options.modules",
        specifier: "./secret.js",
      });
      const fourth = await runCode('import s from "./secret.js"; export default [s, typeof leak];', {
        ...js,
        modules: { "./secret.js": "export default 'own'" },
      });
      expect(outcome(fourth)).toEqual({ status: "success", result: ["own", "undefined"] });
    });

    it("intrinsics and prototypes exactly as a clean run sees them, however the run before changed them", async () => {
      const runCode = make();
      const clean = await intrinsics(runCode);
      const dirty = await runCode(
        `Object.prototype.SECRET_polluted = "SECRET";
         Object.defineProperty(Array.prototype, "SECRET_hidden", { value: "SECRET", enumerable: false });
         Array.prototype.map = function SECRET_map() { return "SECRET"; };
         delete Array.prototype.filter;
         delete globalThis.Map;
         globalThis.Set = function SECRET_Set() {};
         Object.defineProperty(Promise.prototype, "then", { get() { return "SECRET"; } });
         Object.setPrototypeOf(Math, { SECRET: 1 });
         Object.getPrototypeOf(function* () {}).prototype.SECRET = 1;
         Object.getPrototypeOf([][Symbol.iterator]()).next = () => ({ done: true, value: "SECRET" });
         Object.getPrototypeOf(Uint8Array).from = () => "SECRET";
         Function.prototype.toString = () => "SECRET";
         Object.preventExtensions(JSON);
         Object.freeze(Object.prototype);
         export default Object.isFrozen(Object.prototype);`,
        js,
      );
      expect(outcome(dirty)).toEqual({ status: "success", result: true });
      expect(await intrinsics(runCode)).toEqual(clean);
    });

    it("no symbol or property name of the run before: the atom table is as booted", async () => {
      const runCode = make();
      const clean = await intrinsics(runCode);
      const probe = `export default [
        Reflect.ownKeys(globalThis).map(String).filter((k) => k.includes("SECRET")),
        Object.getOwnPropertySymbols(Object.prototype).map(String),
        Object.getOwnPropertySymbols(Symbol).map(String),
        Symbol.for("SECRET_ATOM_1") in {},
        Symbol.keyFor(Symbol.iterator),
      ];`;
      const before = observed(await runCode(probe, js));
      expect(before).toMatchObject({ status: "success", result: [[], [], [], false, undefined] });
      const dirty = await runCode(
        `const registered = [];
         for (let i = 0; i < 5000; i++) registered.push(Symbol.for("SECRET_ATOM_" + i));
         Object.prototype[Symbol.for("SECRET_ATOM_1")] = "SECRET";
         Symbol[Symbol("SECRET_DESCRIPTION")] = 1;
         const named = {};
         for (let i = 0; i < 5000; i++) named["SECRET_NAME_" + i] = i;
         Object.defineProperty(globalThis, "SECRET_NAME_1", { value: 1 });
         globalThis.registered = registered;
         export default [Symbol.keyFor(registered[4999]), Object.keys(named).length, Symbol.for("SECRET_ATOM_1") in {}];`,
        js,
      );
      expect(outcome(dirty)).toEqual({ status: "success", result: ["SECRET_ATOM_4999", 5000, true] });
      expect(observed(await runCode(probe, js))).toEqual(before);
      expect(await intrinsics(runCode)).toEqual(clean);
    });

    it("no error, error prototype or stack of the run before, though they name a secret", async () => {
      const runCode = make();
      const probe = `const caught = (f) => { try { f(); } catch (e) { return [e.name, e.message, String(e), e.stack]; } };
        export default [
          caught(() => null.x),
          caught(() => { throw new RangeError("own"); }),
          String(new Error("own")),
          new TypeError().message,
          typeof Error.prepareStackTrace,
          Error.stackTraceLimit,
          Object.getOwnPropertyNames(Error.prototype),
          typeof globalThis.kept,
        ];`;
      const thrower = 'function own() {\n  throw new TypeError("own");\n}\nown();';
      const cleanProbe = observed(await runCode(probe, js));
      const cleanThrow = observed(await runCode(thrower, js));
      expect(cleanProbe).toMatchObject({
        status: "success",
        result: [
          [
            "TypeError",
            "cannot read property 'x' of null",
            "TypeError: cannot read property 'x' of null",
            "    at <anonymous> (<runCode>:3:28)\n    at caught (<runCode>:1:90)\n    at <anonymous> (<runCode>:3:17)\n",
          ],
          [
            "RangeError",
            "own",
            "RangeError: own",
            "    at <anonymous> (<runCode>:4:46)\n    at caught (<runCode>:1:90)\n    at <anonymous> (<runCode>:4:17)\n",
          ],
          "Error: own",
          "",
          "undefined",
          undefined,
          ["toString", "name", "message", "constructor"],
          "undefined",
        ],
      });
      expect(cleanThrow).toMatchObject({
        status: "error",
        error: {
          name: "TypeError",
          message: "own",
          stack: "    at own (<runCode>:2:22)\n    at <anonymous> (<runCode>:4:4)",
        },
      });
      const dirty = await runCode(
        `Error.prototype.toString = function SECRET_toString() { return "SECRET_TOSTRING"; };
         Error.prototype.name = "SECRET_NAME";
         Error.prepareStackTrace = () => "SECRET_PREPARE";
         Error.stackTraceLimit = 0;
         Object.defineProperty(Error.prototype, "stack", { get() { return "SECRET_STACK"; }, configurable: true });
         TypeError.prototype.message = "SECRET_MESSAGE";
         globalThis.kept = new Error("SECRET_KEPT");
         Promise.reject(new Error("SECRET_REJECTED"));
         function SECRET_FN() { throw new RangeError("SECRET_THROWN"); }
         SECRET_FN();`,
        { ...js, filename: "SECRET_FILE.js" },
      );
      expect(outcome(dirty)).toEqual({ status: "error", error: "RangeError: SECRET_THROWN" });
      expect(dirty.error?.stack).toContain("SECRET_FN (SECRET_FILE.js:");
      const afterProbe = observed(await runCode(probe, js));
      const afterThrow = observed(await runCode(thrower, js));
      expect(afterProbe).toEqual(cleanProbe);
      expect(afterThrow).toEqual(cleanThrow);
      expect(JSON.stringify([afterProbe, afterThrow])).not.toContain("SECRET");
    });

    it("nothing of the run before's heap: no weakly held secret, finalizer or freed bytes, a heap as small as booted", async () => {
      const runCode = make();
      const clean = await intrinsics(runCode);
      const dirty = await runCode(
        `const secrets = Array.from({ length: 20000 }, (_, i) => "SECRET_HEAP_" + i);
         const weak = new WeakMap([[Object.prototype, secrets], [Array, { secrets }]]);
         const registry = new FinalizationRegistry((held) => {
           console.log("finalized " + held);
           globalThis.finalized = held;
         });
         // Cycles: only the cycle collector frees them, at some later allocation.
         for (let i = 0; i < 100; i++) {
           const a = { secrets };
           a.self = { a };
           registry.register(a, "SECRET_FINALIZED_" + i);
         }
         const at = Array.prototype.at;
         Array.prototype.at = function (i) { return weak.get(Object.prototype) ?? at.call(this, i); };
         globalThis.ref = new WeakRef(secrets);
         globalThis.bytes = new Uint8Array(4 * 1024 * 1024).fill(0x53);
         export default [secrets.length, [1].at(0).length, bytes.indexOf(0x53)];`,
        js,
      );
      expect(outcome(dirty)).toEqual({ status: "success", result: [20000, 20000, 0] });
      // No finalizer ran yet: the cycles are still to collect when the run ends.
      expect(dirty.logs).toEqual([]);
      // Enough allocation to run the cycle collector (not to grow the memory, which would drop the instance), and
      // turns of the job queue for any finalizer it scheduled.
      const collected = await runCode(
        `let junk = [];
         for (let i = 0; i < 20000; i++) junk.push([i]);
         junk = null;
         for (let i = 0; i < 10; i++) await null;
         const fresh = new Uint8Array(4 * 1024 * 1024);
         export default [fresh.indexOf(0x53), typeof finalized, typeof ref, [1].at(0)];`,
        js,
      );
      expect(outcome(collected)).toEqual({ status: "success", result: [-1, "undefined", "undefined", 1] });
      expect(collected.logs).toEqual([]);
      expect(await intrinsics(runCode)).toEqual(clean);
    });

    /**
     * Boot modules whose state is mostly zero bytes in memory, and one of many small objects: a run writes into the
     * state (the part far from its end, where a restore that guessed the C stack from long zero runs did not look)
     * and returns what it found first; every run finds the booted values.
     */
    const shapes: [string, string, string][] = [
      [
        "a big zeroed Uint8Array",
        "export const state = new Uint8Array(6 << 20);",
        `let seen = 0;
         for (let i = 0; i < state.length; i += 4096) seen += state[i];
         state.fill(0x53, 1 << 16, 1 << 20);`,
      ],
      [
        "a zero-filled Array",
        "export const state = new Array(1 << 20).fill(0);",
        `let seen = 0;
         for (let i = 0; i < state.length; i += 512) seen += state[i];
         state.fill(0x53, 1 << 13, 1 << 17);`,
      ],
      [
        "a big zeroed ArrayBuffer",
        "export const state = new ArrayBuffer(6 << 20);",
        `const view = new Uint8Array(state);
         let seen = 0;
         for (let i = 0; i < view.length; i += 4096) seen += view[i];
         view.fill(0x53, 1 << 16, 1 << 20);`,
      ],
      [
        "a large string, which a run can release",
        `let text = "\\0".repeat(6 << 20);
         export const state = { get text() { return text; }, release() { text = ""; } };`,
        `let seen = state.text.length - (6 << 20);
         for (let i = 0; i < state.text.length; i += 4096) seen += state.text.charCodeAt(i);
         state.release();
         // The string's memory is free: this lands there.
         new Uint8Array(6 << 20).fill(0x53, 1 << 16, 1 << 20);`,
      ],
      [
        "many small objects",
        "export const state = Array.from({ length: 1 << 16 }, () => ({ n: 0, s: '' }));",
        `let seen = 0;
         for (const item of state) seen += item.n + item.s.length;
         state.forEach((item, i) => { item.n = i; item.s = "SECRET"; });`,
      ],
    ];
    for (const [shape, boot, attack] of shapes) {
      it(`a boot module's state as booted, whatever the run before wrote into it: ${shape}`, async () => {
        const runCode = make({ bootModules: { state: boot } });
        const source = `import { state } from "runcode:boot/state";\n${attack}\nexport default seen;`;
        for (let i = 0; i < 3; i++)
          expect(outcome(await runCode(source, js))).toEqual({ status: "success", result: 0 });
      });
    }

    it("each run draws its own Math.random sequence", async () => {
      const runCode = make();
      const sequences = new Set<string>();
      for (let i = 0; i < 20; i++) {
        const result = await runCode("export default [Math.random(), Math.random()];", js);
        expect(result.status).toBe("success");
        sequences.add(JSON.stringify(result.result));
      }
      expect(sequences.size).toBe(20);
    });

    it("a run starts clean after one stopped by the safety cap, one out of memory and one that overflowed the stack", async () => {
      // A cap on fuel, not CPU time: the endless loop ends in a fraction of a second and the run out of memory is not
      // cut short on a loaded machine.
      const runCode = make({ safetyCap: { fuel: 150_000_000, cpuTimeMs: 60_000 } });
      const capped = { ...js, memoryLimitBytes: 16 * MiB };
      const attacks = [
        ["globalThis.x = 'SECRET'; while (true) {}", "terminated"],
        ["globalThis.x = 'SECRET'; const a = []; while (true) a.push('x'.repeat(1000) + a.length);", "memory"],
        ["globalThis.x = 'SECRET'; const f = () => f(); f();", "error"],
        ["globalThis.x = 'SECRET'; JSON.stringify(JSON.parse('['.repeat(200000) + ']'.repeat(200000)));", "error"],
      ] as const;
      for (const [source, status] of attacks) {
        expect((await runCode(source, capped)).status).toBe(status);
        const after = await runCode("export default [typeof x, [1, 2, 3].map((n) => n * 2)]", capped);
        expect(outcome(after)).toEqual({ status: "success", result: ["undefined", [2, 4, 6]] });
      }
    });

    it("each run's memory cap holds exactly, whatever the caps of the runs before", async () => {
      const runCode = make();
      const fill =
        "const kept = []; for (let i = 0; i < 40; i++) kept.push(new Uint8Array(1024 * 1024)); export default kept.length;";
      for (const [cap, status] of [
        [64 * MiB, "success"],
        [16 * MiB, "memory"],
        [64 * MiB, "success"],
        [16 * MiB, "memory"],
      ] as const) {
        // A small run first, so that the fill runs on the instance it leaves restored (one that fills is dropped).
        expect(outcome(await runCode("export default 1", { ...js, memoryLimitBytes: cap }))).toEqual({
          status: "success",
          result: 1,
        });
        expect((await runCode(fill, { ...js, memoryLimitBytes: cap })).status).toBe(status);
      }
    });

    it("a host promise that settles after its run ended is never delivered into the next run", async () => {
      const runCode = make();
      let settleLate: (value: string) => void = () => {};
      const late = new Promise<string>((resolve) => {
        settleLate = resolve;
      });
      const first = await runCode("later().then((v) => console.log('delivered ' + v)); export default 1;", {
        ...js,
        globals: { later: () => late },
      });
      expect(outcome(first)).toEqual({ status: "success", result: 1 });
      let release: () => void = () => {};
      const gate = new Promise<void>((resolve) => {
        release = resolve;
      });
      const second = runCode("const v = await wait(); export default [v, typeof globalThis.delivered];", {
        ...js,
        globals: { wait: () => gate.then(() => "own") },
      });
      settleLate("SECRET");
      // Host turns in which a late settlement could be delivered before the second run's own.
      await sleep(20);
      release();
      const result = await second;
      expect(outcome(result)).toEqual({ status: "success", result: ["own", "undefined"] });
      expect(result.logs).toEqual([]);
      expect(first.logs).toEqual([]);
    });
  });
}
