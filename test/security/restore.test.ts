/**
 * Restored instances: a run gets an instance as it was booted, byte for byte, whatever the run before did with it,
 * and an instance that cannot be restored is never lent again.
 */
import { describe, expect, it } from "vitest";
import { nodeWasm } from "../../node/index.js";
import { compiledModule } from "../../src/engine.js";
import { createSandbox } from "../../src/index.js";
import { BootedInstance, type Tenant } from "../../src/instance.js";
import { InstancePool, MAX_IDLE_INSTANCES } from "../../src/instance-pool.js";
import type { CodeExecutionOptions } from "../../src/types.js";
import { outcome } from "./helpers.js";

const MiB = 1024 * 1024;
const wasm = compiledModule(nodeWasm);

/** A tenant for driving an instance by hand: no interrupt, no host calls, no modules. */
const idleTenant: Tenant = {
  poll: () => false,
  hostCall: () => undefined,
  normalize: (_base, specifier) => specifier,
  load: () => ({ error: new Error("no modules") }),
};

/** A restorable instance lent to {@link idleTenant}; `booted` is a copy of its memory as booted. */
async function lent(heapLimitBytes = 64 * MiB): Promise<{ instance: BootedInstance; booted: Uint8Array }> {
  const instance = await BootedInstance.boot(await wasm(), heapLimitBytes, true);
  const booted = new Uint8Array(instance.instance.memory.buffer.slice(0));
  instance.lend(idleTenant, heapLimitBytes);
  return { instance, booted };
}

/** Evaluates a global script in the instance, returning its value dumped (or the error's). */
function evaluate(instance: BootedInstance, source: string): unknown {
  const result = instance.ctx.evalCode(source, "/dirty.js", { type: "global" });
  const handle = result.error ?? result.value;
  return instance.ctx.dump(handle);
}

/** Where `text` occurs in the instance's memory as UTF-8 or Latin-1 bytes (QuickJS keeps ASCII strings as 8-bit). */
function findInMemory(instance: BootedInstance, text: string): number {
  return Buffer.from(instance.instance.memory.buffer).indexOf(Buffer.from(text, "latin1"));
}

describe("the restored memory", () => {
  it("equals the booted memory byte for byte after a run that dirtied heap, stack, atoms and jobs", async () => {
    const { instance, booted: image } = await lent();
    expect(
      evaluate(
        instance,
        `globalThis.kept = Array.from({ length: 20000 }, (_, i) => ({ i, s: "SECRET_HEAP_" + i }));
         globalThis[Symbol.for("SECRET_ATOM_" + 1)] = 1;
         Array.prototype.polluted = "SECRET_PROTO";
         const deep = (n) => (n === 0 ? 0 : 1 + deep(n - 1));
         Promise.resolve().then(() => { globalThis.late = "SECRET_JOB"; });
         new Promise(() => {});
         String(deep(2000)) + kept.length;`,
      ),
    ).toBe("200020000");
    expect(findInMemory(instance, "SECRET_HEAP_19999")).toBeGreaterThan(0);
    expect(instance.reclaim(true)).toBe(true);
    const restored = new Uint8Array(instance.instance.memory.buffer);
    expect(restored.length).toBe(image.length);
    let differing = 0;
    for (let i = 0; i < image.length; i++) if (restored[i] !== image[i]) differing++;
    expect(differing).toBe(0);
    for (const secret of ["SECRET_HEAP_", "SECRET_ATOM_1", "SECRET_PROTO", "SECRET_JOB"])
      expect(findInMemory(instance, secret)).toBe(-1);
  });

  it("is zeroed wherever a run wrote, the deep C stack included", async () => {
    const { instance, booted: image } = await lent();
    const bytes = new Uint8Array(instance.instance.memory.buffer);
    // A byte in the middle of every 64 KiB below the break, as if a run had reached the bottom of the stack.
    const reached = image.findLastIndex((byte) => byte !== 0);
    for (let at = 32 * 1024; at < reached; at += 64 * 1024) bytes[at] = (bytes[at] as number) ^ 0xff;
    expect(instance.reclaim(true)).toBe(true);
    expect(Buffer.compare(Buffer.from(instance.instance.memory.buffer), Buffer.from(image))).toBe(0);
  });

  it("boots to the same state again: the next tenant sees none of the run before", async () => {
    const { instance } = await lent();
    evaluate(instance, "globalThis.leak = 'SECRET'; Object.prototype.polluted = 1; Math.max = () => 42;");
    expect(instance.reclaim(true)).toBe(true);
    instance.lend(idleTenant, 64 * MiB);
    expect(evaluate(instance, "[typeof leak, ({}).polluted, Math.max(1, 2)].join()")).toBe("undefined,,2");
    expect(instance.runtime.hasPendingJob()).toBe(false);
  });

  it("is refused to an instance that grew, faulted or changed the library's state", async () => {
    const { instance: grown } = await lent();
    evaluate(grown, "globalThis.big = new Uint8Array(24 * 1024 * 1024).fill(1); big.length");
    expect(grown.reclaim(true)).toBe(false);

    const { instance: faulted } = await lent();
    expect(faulted.reclaim(false)).toBe(false);

    const { instance: changed } = await lent();
    changed.ctx.newFunction("extra", () => undefined);
    expect(changed.reclaim(true)).toBe(false);
  });
});

describe("the pool", () => {
  it(`keeps at most ${MAX_IDLE_INSTANCES} idle instances and drops what cannot be restored`, async () => {
    const pool = new InstancePool();
    const module = await wasm();
    const taken = await Promise.all(Array.from({ length: MAX_IDLE_INSTANCES + 2 }, () => pool.take(module, MiB, true)));
    expect(new Set(taken).size).toBe(MAX_IDLE_INSTANCES + 2);
    // (Instances are compared by identity: a diff of two would print their whole memory.)
    pool.give(taken[0] as BootedInstance, false);
    expect(pool.idle).toBe(0);
    for (const instance of taken.slice(1)) pool.give(instance, true);
    expect(pool.idle).toBe(MAX_IDLE_INSTANCES);
    // The instance given back last is lent next, with the memory size asked for: another size boots its own.
    expect((await pool.take(module, MiB, true)) === taken.at(-1)).toBe(true);
    const larger = await pool.take(module, 64 * MiB, true);
    expect(taken.includes(larger)).toBe(false);
    expect(larger.instance.maxBytes).toBe(68 * MiB);
  });

  it("never lends an instance booted without an image twice", async () => {
    const pool = new InstancePool();
    const first = await pool.take(await wasm(), MiB, false);
    pool.give(first, true);
    expect(pool.idle).toBe(0);
    expect((await pool.take(await wasm(), MiB, false)) === first).toBe(false);
  });
});

describe("runs on restored instances", () => {
  const js: CodeExecutionOptions = { language: "javascript" };

  it("see no global, prototype, intrinsic, module or pending job of the run before", async () => {
    const { runCode } = createSandbox({ wasm: nodeWasm });
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
    const third = await runCode('import s from "./secret.js"; export default s;', js);
    expect(third.status).toBe("link_error");
  });

  it("draw a different Math.random sequence every run", async () => {
    const { runCode } = createSandbox({ wasm: nodeWasm });
    const sequences = new Set<string>();
    for (let i = 0; i < 20; i++) {
      const result = await runCode("export default [Math.random(), Math.random()];", js);
      sequences.add(JSON.stringify(result.result));
    }
    expect(sequences.size).toBe(20);
  });

  it("start clean after a run stopped by the safety cap, one out of memory and one that overflowed the stack", async () => {
    const { runCode } = createSandbox({ wasm: nodeWasm, safetyCap: { cpuTimeMs: 100 } });
    const attacks = [
      ["globalThis.x = 'SECRET'; while (true) {}", "terminated"],
      ["globalThis.x = 'SECRET'; const a = []; while (true) a.push('x'.repeat(1000) + a.length);", "memory"],
      ["globalThis.x = 'SECRET'; const f = () => f(); f();", "error"],
      ["globalThis.x = 'SECRET'; JSON.stringify(JSON.parse('['.repeat(200000) + ']'.repeat(200000)));", "error"],
    ] as const;
    for (const [source, status] of attacks) {
      expect((await runCode(source, { ...js, memoryLimitBytes: 16 * MiB })).status).toBe(status);
      const after = await runCode("export default [typeof x, [1, 2, 3].map((n) => n * 2)]", {
        ...js,
        memoryLimitBytes: 16 * MiB,
      });
      expect(outcome(after)).toEqual({ status: "success", result: ["undefined", [2, 4, 6]] });
    }
  });

  it("keep each run's memory cap exact when runs with other caps came before", async () => {
    const { runCode } = createSandbox({ wasm: nodeWasm });
    const fill =
      "const kept = []; for (let i = 0; i < 40; i++) kept.push(new Uint8Array(1024 * 1024)); export default kept.length;";
    expect((await runCode(fill, { ...js, memoryLimitBytes: 128 * MiB })).status).toBe("success");
    expect((await runCode(fill, { ...js, memoryLimitBytes: 4 * MiB })).status).toBe("memory");
    expect((await runCode(fill, { ...js, memoryLimitBytes: 128 * MiB })).status).toBe("success");
  });

  it("never deliver a host promise that settles after its run ended into the instance's next run", async () => {
    const { runCode } = createSandbox({ wasm: nodeWasm });
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
    await new Promise((resolve) => setTimeout(resolve, 20));
    release();
    const result = await second;
    expect(outcome(result)).toEqual({ status: "success", result: ["own", "undefined"] });
    expect(result.logs).toEqual([]);
    expect(first.logs).toEqual([]);
  });
});
