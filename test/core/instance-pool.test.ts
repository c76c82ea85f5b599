/**
 * The pool's bounds: idle instances follow how many runs were recently in flight, and idle and lent ones together
 * stay within what a host admits, idle ones giving way (the edge sets the admission's budget: a 128 MB isolate);
 * an instance given back unrestored is restored before it is lent again, and one whose run freed what it read as it went
 * (its memory never grew) comes back restored.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import { nodeWasm } from "../../node/index.js";
import { compiledModule } from "../../src/core/engine.js";
import { BootedInstance } from "../../src/core/instance.js";
import {
  DEMAND_WINDOW_MS,
  IDLE_BYTES_PER_INSTANCE,
  InstancePool,
  MAX_IDLE_INSTANCES,
  MIN_IDLE_INSTANCES,
} from "../../src/core/instance-pool.js";
import { createSandbox } from "../../src/core/sandbox.js";

const MiB = 1024 * 1024;
const wasm = compiledModule(nodeWasm);

describe("the instance pool's memory bound", () => {
  it("drops idle instances, least recently used first, when lent and idle memory would pass it", async () => {
    const pool = new InstancePool();
    const module = await wasm();
    // The pool's first run gets an instance booted for it alone; the next four (12 MiB caps: 16 MiB of linear memory
    // each, lent or idle) leave four restorable instances.
    pool.give(await pool.take(module, 12 * MiB, true), true);
    const taken = await Promise.all(Array.from({ length: 4 }, () => pool.take(module, 12 * MiB, true)));
    for (const instance of taken) pool.give(instance, true);
    expect(pool.idle).toBe(4);
    pool.limitMemory(48 * MiB);
    expect(pool.idle).toBe(3);
    // Lending one of them moves its 16 MiB from idle to lent: nothing else has to go.
    const lent = await pool.take(module, 12 * MiB, true);
    expect(lent === taken[3]).toBe(true);
    expect(pool.idle).toBe(2);
    // A run capped at 28 MiB may take 32 MiB: it takes an idle instance (16 MiB and 32 MiB caps are of one memory
    // class), and 16 + 32 lent leave no room for the other.
    const large = await pool.take(module, 28 * MiB, true);
    expect(taken.includes(large)).toBe(true);
    expect(large.instance.maxBytes).toBe(32 * MiB);
    expect(pool.idle).toBe(0);
    pool.give(large, true);
    expect(pool.idle).toBe(1);
    pool.give(lent, true);
    expect(pool.idle).toBe(2);
  });

  /** Grows `booted`'s memory to `bytes`, as a run that needed it would. */
  const grow = (booted: BootedInstance, bytes: number) => {
    const { memory } = booted.instance;
    memory.grow((bytes - memory.buffer.byteLength) / 65_536);
  };

  it("keeps instances a run grew within 16 MiB for each instance it wants idle and room for one grown, the least recently used going first", async () => {
    const pool = new InstancePool();
    const module = await wasm();
    pool.give(await pool.take(module, 100 * MiB, true), true);
    // Twelve runs in flight at once, each growing its memory to 48 MiB: the pool wants one more idle instance for
    // each given back (12 once all are: 192 MiB, and room for one grown to 64 MiB: 240 MiB), so the last five given
    // back are kept.
    const taken = await Promise.all(Array.from({ length: 12 }, () => pool.take(module, 100 * MiB, true)));
    for (const booted of taken) grow(booted, 48 * MiB);
    for (const booted of taken) pool.give(booted, true);
    expect(IDLE_BYTES_PER_INSTANCE).toBe(16 * MiB);
    expect(pool.idle).toBe(5);
    const again = await Promise.all(Array.from({ length: 5 }, () => pool.take(module, 100 * MiB, true)));
    expect(again.every((booted) => taken.slice(7).includes(booted))).toBe(true);
    for (const booted of again) pool.give(booted, true);
  });

  it("keeps one instance grown to 64 MiB where it wants four idle (runs one at a time, as on a worker thread)", async () => {
    // Before, 512 MiB bounded every pool: four runs of other caps, each growing its memory to 64 MiB, left 256 MiB
    // idle in a pool whose booted instances held 64 MiB, on each of the worker threads.
    const pool = new InstancePool();
    const module = await wasm();
    pool.give(await pool.take(module, 64 * MiB, true), true);
    for (const cap of [61, 62, 63, 64]) {
      const booted = await pool.take(module, cap * MiB, true);
      grow(booted, 64 * MiB);
      pool.give(booted, true);
    }
    expect(pool.idle).toBe(1);
  });

  it("lends the instance whose memory grew the most, and drops it last", async () => {
    const pool = new InstancePool();
    const module = await wasm();
    pool.give(await pool.take(module, 100 * MiB, true), true);
    // As many runs at once as can be idle, the first given back having grown its memory as far as the pool keeps it.
    const taken = await Promise.all(
      Array.from({ length: MAX_IDLE_INSTANCES }, () => pool.take(module, 100 * MiB, true)),
    );
    const [grown] = taken as [BootedInstance];
    grow(grown, 64 * MiB);
    for (const booted of taken) pool.give(booted, true);
    // All of them stay idle: the next burst boots none.
    expect(pool.idle).toBe(MAX_IDLE_INSTANCES);
    // The least recently given back, but the most grown: the next run skips the growth.
    const next = await pool.take(module, 100 * MiB, true);
    expect(next === grown).toBe(true);
    pool.give(next, true);
    // Past the memory cap the instances at their booted size go first, however recently used.
    pool.limitMemory(64 * MiB + 16 * MiB);
    expect(pool.idle).toBe(2);
    // Which two: taken again under room for the runs' caps (a run's cap, lent, makes idle instances give way to it).
    pool.limitMemory(1024 * MiB);
    const kept = await Promise.all([pool.take(module, 100 * MiB, true), pool.take(module, 100 * MiB, true)]);
    expect(kept[0] === grown).toBe(true);
    expect(kept[1] === taken[MAX_IDLE_INSTANCES - 1]).toBe(true);
  });

  it("lends a run likely to be stopped (and its instance dropped) the least grown", async () => {
    const pool = new InstancePool();
    const module = await wasm();
    pool.give(await pool.take(module, 100 * MiB, true), true);
    const taken = await Promise.all(Array.from({ length: 2 }, () => pool.take(module, 100 * MiB, true)));
    const [booted, grown] = taken as [BootedInstance, BootedInstance];
    grow(grown, 32 * MiB);
    pool.give(grown, true);
    pool.give(booted, true);
    const attempt = await pool.take(module, 100 * MiB, true, undefined, "least-grown");
    expect(attempt === booted).toBe(true);
    expect((await pool.take(module, 100 * MiB, true)) === grown).toBe(true);
  });
});

/** Takes `count` instances at once (12 MiB caps), as that many concurrent runs would. */
async function takeAtOnce(pool: InstancePool, count: number): Promise<BootedInstance[]> {
  const module = await wasm();
  return Promise.all(Array.from({ length: count }, () => pool.take(module, 12 * MiB, true)));
}

/** A pool past its first run, which gets an instance booted for it alone. */
async function warmPool(options?: ConstructorParameters<typeof InstancePool>[0]): Promise<InstancePool> {
  const pool = new InstancePool(options);
  const [first] = await takeAtOnce(pool, 1);
  pool.give(first as BootedInstance, true);
  return pool;
}

describe("the instance pool follows the load", () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it("keeps an idle instance for every run recently in flight, so the next burst boots none", async () => {
    const pool = await warmPool();
    const burst = await takeAtOnce(pool, 12);
    for (const instance of burst) pool.give(instance, true);
    expect(pool.idle).toBe(12);
    const again = await takeAtOnce(pool, 12);
    expect(again.filter((instance) => burst.includes(instance)).length).toBe(12);
    expect(pool.idle).toBe(0);
    for (const instance of again) pool.give(instance, true);
    expect(pool.idle).toBe(12);
  });

  it(`drops those the load no longer needs once fewer runs are in flight for two windows, down to ${MIN_IDLE_INSTANCES}`, async () => {
    const pool = await warmPool();
    vi.useFakeTimers({ toFake: ["Date", "setTimeout", "clearTimeout"] });
    const burst = await takeAtOnce(pool, 12);
    for (const instance of burst) pool.give(instance, true);
    const oneRun = async () => {
      const [instance] = await takeAtOnce(pool, 1);
      pool.give(instance as BootedInstance, true);
    };
    // Within the window after the burst's, its demand still counts.
    vi.setSystemTime(Date.now() + DEMAND_WINDOW_MS);
    await oneRun();
    expect(pool.idle).toBe(12);
    vi.setSystemTime(Date.now() + DEMAND_WINDOW_MS);
    await oneRun();
    expect(pool.idle).toBe(MIN_IDLE_INSTANCES);
  });

  it("drops them when no run comes at all, on a timer that does not keep the process alive", async () => {
    const pool = await warmPool();
    vi.useFakeTimers({ toFake: ["Date", "setTimeout", "clearTimeout"] });
    const burst = await takeAtOnce(pool, 12);
    for (const instance of burst) pool.give(instance, true);
    expect(pool.idle).toBe(12);
    vi.advanceTimersByTime(2 * DEMAND_WINDOW_MS - 1);
    expect(pool.idle).toBe(12);
    vi.advanceTimersByTime(1);
    expect(pool.idle).toBe(MIN_IDLE_INSTANCES);
  });

  it("within its memory bound all the same", async () => {
    const pool = await warmPool();
    pool.limitMemory(6 * 16 * MiB);
    const burst = await takeAtOnce(pool, 12);
    for (const instance of burst) pool.give(instance, true);
    expect(pool.idle).toBe(6);
  });
});

describe("an instance given back unrestored (deferRestore)", () => {
  /** A pool's restorable instance with bytes written in its heap, and a copy of its memory as it was lent. */
  async function scribbled(pool: InstancePool) {
    const [booted] = (await takeAtOnce(pool, 1)) as [BootedInstance];
    const bytes = new Uint8Array(booted.instance.memory.buffer);
    const lent = bytes.slice();
    // In the booted heap, right above the C stack: below the allocator's break.
    const at = booted.stack.top;
    bytes.fill(0xa5, at, at + 4096);
    return { booted, bytes, lent, at };
  }

  it("keeps the run's memory until restoreReturned(), then holds the booted image", async () => {
    const pool = await warmPool({ deferRestore: true });
    const { booted, bytes, lent, at } = await scribbled(pool);
    pool.give(booted, true);
    expect(pool.idle).toBe(1);
    expect(bytes[at]).toBe(0xa5);
    pool.restoreReturned();
    expect(Buffer.compare(bytes, lent)).toBe(0);
  });

  it("is restored before it is lent again", async () => {
    const pool = await warmPool({ deferRestore: true });
    const { booted, bytes, lent } = await scribbled(pool);
    pool.give(booted, true);
    const [next] = await takeAtOnce(pool, 1);
    expect(next === booted).toBe(true);
    expect(Buffer.compare(bytes, lent)).toBe(0);
  });

  it("is dropped at once when its run was not sound", async () => {
    const pool = await warmPool({ deferRestore: true });
    const { booted } = await scribbled(pool);
    pool.give(booted, false);
    expect(pool.idle).toBe(0);
  });
});

describe("the pool's first run", () => {
  it("gets an instance booted for it alone, or a restorable one with restoreFirst, which the second run restores", async () => {
    const module = await wasm();
    const boot = vi.spyOn(BootedInstance, "boot");
    for (const restoreFirst of [false, true]) {
      const pool = new InstancePool({ restoreFirst });
      const first = await pool.take(module, 12 * MiB, true);
      pool.give(first, true);
      expect(pool.idle).toBe(restoreFirst ? 1 : 0);
      const second = await pool.take(module, 12 * MiB, true);
      expect(second === first).toBe(restoreFirst);
      pool.give(second, true);
    }
    expect(boot.mock.calls.map(([, , restorable]) => restorable)).toEqual([false, true, true]);
    boot.mockRestore();
  });
});

describe("a run's instance back in the pool", () => {
  it("is restored after a run that read 24 responses of 1 MiB in turn: its memory did not grow", async () => {
    const pool = new InstancePool();
    const mebibyte = new Uint8Array(MiB);
    const origin = "https://api.example.com";
    const { runCode } = createSandbox({
      wasm: nodeWasm,
      pool,
      webApis: true,
      fetch: { allow: [origin], fetch: async () => new Response(mebibyte) },
    });
    const source = `let bytes = 0;
      for (let i = 0; i < 24; i++) bytes += (await (await fetch("${origin}/large")).arrayBuffer()).byteLength;
      export default bytes;`;
    // What the guest dropped of each response is freed, so the heap never needs more than the 16 MiB an instance
    // boots with; the pool's first run gets an instance booted for it alone, the second's comes back restored.
    for (let i = 0; i < 2; i++) {
      const { result, memoryUsedBytes } = await runCode(source, { language: "javascript" });
      expect(result).toBe(24 * MiB);
      // (Without freeing them, the run's heap peaked at 22.9 MB.)
      expect(memoryUsedBytes).toBeLessThan(16 * MiB);
    }
    expect(pool.idle).toBe(1);
  });
});
