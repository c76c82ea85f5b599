/**
 * Memory classes: an instance's memory is booted with its class's maximum and capped at its run's own limit where it
 * grows, so runs whose `memoryLimitBytes` differ share instances (a client choosing a new limit each run makes the
 * host boot nothing for it), each still ending `memory` at its own limit; and a run that leaves its instance unfit for
 * another pays for the boot of the one in its place (`INSTANCE_BOOT_FUEL`).
 */
import { readFileSync } from "node:fs";
import binaryen from "binaryen";
import { afterEach, describe, expect, it, vi } from "vitest";
import { nodeWasm } from "../../node/index.js";
import { pinnedEngine } from "../../scripts/build-fuel-wasm.js";
import { compiledModule, linearMemoryBytes, memoryClassBytes, newInstance } from "../../src/core/engine.js";
import { INSTANCE_BOOT_FUEL } from "../../src/core/host-fuel.js";
import { BootedInstance } from "../../src/core/instance.js";
import { InstancePool } from "../../src/core/instance-pool.js";
import { createSandbox } from "../../src/core/sandbox.js";

const MiB = 1024 * 1024;

afterEach(() => {
  vi.restoreAllMocks();
});

/** A sandbox in-thread on a pool of its own with a frozen clock, and a count of the instances its pool booted. */
function frozenSandbox() {
  const boots = vi.spyOn(BootedInstance, "boot");
  const sandbox = createSandbox({ wasm: nodeWasm, pool: new InstancePool(), clock: () => 0 });
  return { boots, sandbox };
}

/** The fuel of three runs of `source` one after the other, each of which must end with `status`. */
async function threeRuns(
  sandbox: ReturnType<typeof frozenSandbox>["sandbox"],
  source: string,
  status: string,
  memoryLimitBytes?: number,
): Promise<unknown[]> {
  const used: unknown[] = [];
  for (let i = 0; i < 3; i++) {
    const options = {
      language: "javascript",
      ...(memoryLimitBytes === undefined ? {} : { memoryLimitBytes }),
    } as const;
    const run = await sandbox.runCode(source, options);
    expect(run.status).toBe(status);
    used.push(run.fuelUsed);
  }
  return used;
}

describe("memory classes", () => {
  it("are powers of two from 128 MiB: every cap a served host allows (64 MiB of heap) is in the first", () => {
    expect(memoryClassBytes(linearMemoryBytes(1))).toBe(128 * MiB);
    expect(memoryClassBytes(linearMemoryBytes(64 * MiB))).toBe(128 * MiB);
    expect(memoryClassBytes(128 * MiB)).toBe(128 * MiB);
    expect(memoryClassBytes(128 * MiB + 65_536)).toBe(256 * MiB);
    expect(memoryClassBytes(linearMemoryBytes(1024 * MiB))).toBe(2048 * MiB);
  });

  it("hold because the engine grows its memory only through the host's resize, which the run's cap refuses", () => {
    // A `memory.grow` of the wasm's own would pass the cap up to the class's maximum.
    for (const bytes of [
      new Uint8Array(readFileSync(new URL("../../wasm/quickjs-fuel.wasm", import.meta.url))),
      pinnedEngine(),
    ]) {
      const module = binaryen.readBinary(bytes);
      try {
        expect(module.emitText().includes("memory.grow")).toBe(false);
      } finally {
        module.dispose();
      }
    }
  }, 60_000);
  it("only for such an engine: another module (a host's own build, which may grow its memory itself) is booted with its memory's maximum at the run's cap", async () => {
    const heap = 16 * MiB;
    const own = () => new WebAssembly.Module(pinnedEngine() as Uint8Array<ArrayBuffer>);
    const booted = await Promise.all([
      newInstance(undefined, heap),
      newInstance(await compiledModule(nodeWasm)(), heap),
      newInstance(own(), heap),
    ]);
    expect(booted.map((instance) => instance.classBytes)).toEqual([128 * MiB, 128 * MiB, 20 * MiB]);
    // Its instances serve runs of that cap only.
    const instance = await BootedInstance.boot(own(), heap, true);
    expect([instance.fits(20 * MiB), instance.fits(21 * MiB)]).toEqual([true, false]);
  });
});

describe("the largest memoryLimitBytes", () => {
  it("is what the engine's 2 GiB of memory holds with its overhead; a larger one is refused before anything runs", async () => {
    const { sandbox } = frozenSandbox();
    const js = { language: "javascript" } as const;
    const most = 2 * 1024 * MiB - 4 * MiB;
    expect((await sandbox.runCode("export default 1", { ...js, memoryLimitBytes: most })).result).toBe(1);
    // Before: an error result naming neither (a larger maximum than the module's), past 4 GiB one blaming nesting.
    for (const memoryLimitBytes of [most + 1, 4 * 1024 * MiB]) {
      expect(() => sandbox.runCode("export default 1", { ...js, memoryLimitBytes })).toThrow(
        new RangeError(
          `runCode: options.memoryLimitBytes must be at most ${most} (the engine's memory holds 2 GiB with its overhead), got ${memoryLimitBytes}`,
        ),
      );
    }
  });
});

describe("a tenant choosing a new memoryLimitBytes each run, in-thread with a frozen clock", () => {
  it("makes the pool boot no instance for it: runs of every limit take the one instance", async () => {
    const { boots, sandbox } = frozenSandbox();
    // Each limit a linear memory of its own size (past the 16 MiB an instance starts with).
    for (let mebibytes = 12; mebibytes < 60; mebibytes += 3) {
      const { status, result } = await sandbox.runCode("export default 6 * 7", {
        language: "javascript",
        memoryLimitBytes: mebibytes * MiB + 4096,
      });
      expect([status, result]).toEqual(["success", 42]);
    }
    // The pool's first run gets an instance booted for it alone; the second boots the one every later run restores.
    expect(boots).toHaveBeenCalledTimes(2);
  });

  it("ends each run `memory` at its own limit on the shared instance", async () => {
    const { boots, sandbox } = frozenSandbox();
    const source = "const bytes = new Uint8Array(20 * 1024 * 1024); export default bytes.length;";
    for (const [memoryLimitBytes, status] of [
      [40 * MiB, "success"],
      [8 * MiB, "memory"],
      [24 * MiB, "success"],
      [12 * MiB, "memory"],
      [16 * MiB, "memory"],
    ] as const) {
      const outcome = await sandbox.runCode(source, { language: "javascript", memoryLimitBytes });
      expect(outcome.status).toBe(status);
      if (status === "memory")
        expect(outcome.error?.message).toBe(`The sandbox ran out of memory (memoryLimitBytes: ${memoryLimitBytes})`);
    }
    // The first run's instance was booted for it alone; the 40 MiB run's grew past 16 MiB, where it stays: the 8 MiB
    // run cannot take it and boots one, which the runs capped at 12 and 16 MiB take in turn.
    expect(boots).toHaveBeenCalledTimes(3);
  });

  it("alternating a run that grows its memory with one capped below it boots no instance a round", async () => {
    const { boots, sandbox } = frozenSandbox();
    const grows = "const bytes = new Uint8Array(20 * 1024 * 1024); export default bytes.length;";
    for (let round = 0; round < 6; round++) {
      const large = await sandbox.runCode(grows, { language: "javascript", memoryLimitBytes: 60 * MiB });
      expect(large.status).toBe("success");
      const small = await sandbox.runCode("export default 1", { language: "javascript", memoryLimitBytes: MiB });
      expect(small.status).toBe("success");
    }
    // The large runs take the instance a large run grew, leaving the small ones theirs: after the first round (the
    // pool's first run's instance, the grown one, the small runs' one), nothing is booted.
    expect(boots).toHaveBeenCalledTimes(3);
  });
});

describe("a run that leaves its instance unfit for another, in-thread with a frozen clock", () => {
  it("pays for the boot of the one in its place: its memory's growth refused, the same fuel on every run", async () => {
    const { boots, sandbox } = frozenSandbox();
    const source = "const a = []; for (;;) a.push(new Uint8Array(1024 * 1024));";
    const used = await threeRuns(sandbox, source, "memory", 8 * MiB);
    // Each run's instance is dropped, the pool's first run's included, and booted again for the next run.
    expect(boots).toHaveBeenCalledTimes(3);
    expect(new Set(used).size).toBe(1);
    expect(used[0]).toBeGreaterThan(INSTANCE_BOOT_FUEL);
    expect(used[0]).toBeLessThan(INSTANCE_BOOT_FUEL + 1_000_000);
  });

  it("pays for it too when its memory grew past where an instance is kept, with no growth refused", async () => {
    const { boots, sandbox } = frozenSandbox();
    // Under the default limit (64 MiB of heap, a cap of 68 MiB), 60 MiB grows the memory past the 64 MiB an instance
    // is kept with: each run's instance is dropped and another booted (before, for 1,979,612 units of the run's).
    const source = "export default new Uint8Array(60 * 1024 * 1024).length";
    const used = await threeRuns(sandbox, source, "success");
    expect(boots).toHaveBeenCalledTimes(3);
    expect(new Set(used).size).toBe(1);
    expect(used[0]).toBeGreaterThan(INSTANCE_BOOT_FUEL);
    expect(used[0]).toBeLessThan(INSTANCE_BOOT_FUEL + 3_000_000);
  });

  it("decided by how far its heap reached, so a program pays the same on a fresh instance as on one left grown", async () => {
    const { sandbox } = frozenSandbox();
    const grows = (mib: number) => `export default new Uint8Array(${mib} * 1024 * 1024).length`;
    const spent: Record<number, Set<unknown>> = { 30: new Set(), 52: new Set() };
    // 52 MiB takes the memory near the cap from some lengths an earlier run leaves it at and not from others.
    for (const mib of [52, 30, 52, 30, 30, 52]) {
      const { status, fuelUsed } = await sandbox.runCode(grows(mib), { language: "javascript" });
      expect(status).toBe("success");
      spent[mib]?.add(fuelUsed);
    }
    expect([spent[30]?.size, spent[52]?.size]).toEqual([1, 1]);
    expect([...(spent[30] ?? [])][0]).toBeLessThan(INSTANCE_BOOT_FUEL);
    expect([...(spent[52] ?? [])][0]).toBeGreaterThan(INSTANCE_BOOT_FUEL);
  });

  it("and only then: a run out of memory whose instance is restored pays no boot", async () => {
    const { boots, sandbox } = frozenSandbox();
    const source = "const bytes = new Uint8Array(64 * 1024 * 1024); export default bytes.length;";
    for (const fuelUsed of await threeRuns(sandbox, source, "memory", 8 * MiB)) expect(fuelUsed).toBeLessThan(100_000);
    expect(boots).toHaveBeenCalledTimes(2);
  });
});

describe("the pool", () => {
  it("lends an idle instance to runs of any cap of its class, capped at the run's", async () => {
    const pool = new InstancePool();
    const module = await compiledModule(nodeWasm)();
    pool.give(await pool.take(module, MiB, true), true);
    pool.give(await pool.take(module, MiB, true), true);
    expect(pool.hasIdle(module, 60 * MiB)).toBe(true);
    expect(pool.hasIdle(module, 200 * MiB)).toBe(false);
    const booted = await pool.take(module, 60 * MiB, true);
    expect(booted.instance.maxBytes).toBe(64 * MiB);
    expect(booted.instance.classBytes).toBe(128 * MiB);
    // Growth past the run's cap is refused as past the memory's maximum.
    expect(() =>
      booted.instance.memory.grow((64 * MiB - booted.instance.memory.buffer.byteLength) / 65_536 + 1),
    ).toThrow(RangeError);
    expect(booted.instance.growthRefused).toBe(true);
    pool.give(booted, false);
  });
});
