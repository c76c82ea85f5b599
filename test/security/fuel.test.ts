/**
 * Fuel: the engine meters its own work (scripts/build-fuel-wasm.ts), so the safety cap stops runaway code where no
 * clock moves (deployed Workers freeze clocks during synchronous work) and inside natives that never poll for
 * interrupts. Every runaway here runs with a frozen clock, in-thread; before the meter the poll count let these run
 * for 3 s to over 300 s (a BigInt loop never stopped). The hang bound is generous: each stop takes well under a second.
 */
import { describe, expect, it, vi } from "vitest";
import { createSandbox } from "../../node/index.js";
import {
  FETCH_READ_FUEL,
  FETCH_REQUEST_FUEL,
  HOST_CALL_FUEL,
  HOST_PROMISE_FUEL,
  INSTANCE_BOOT_FUEL,
  LOG_ENTRY_FUEL,
  MODULE_LOAD_FUEL,
  MODULE_RESOLVE_FUEL,
  randomFuel,
} from "../../src/core/host-fuel.js";
import { InstancePool } from "../../src/core/instance-pool.js";
import { STOP_GRACE_FUEL } from "../../src/core/limits.js";
import type { RunCode } from "../../src/core/types.js";
import { outcome, sandbox } from "./helpers.js";

const FUEL = 20_000_000;
const HANG_MS = 20_000;
const pool = new InstancePool();
const frozen = sandbox({ clock: () => 0, safetyCap: { fuel: FUEL, cpuTimeMs: 1e12 }, pool });
const js = { language: "javascript" } as const;
const STOPPED = {
  status: "terminated",
  error: `TerminatedError: Execution stopped by the safety cap after ${FUEL} units of fuel`,
};

/** Runaways whose work is mostly the engine's own loops (natives) rather than bytecode. */
const runaways: [string, string][] = [
  ["while (true) {}", "while (true) {}"],
  ["a BigInt multiply loop", "let x = 3n ** 200000n; for (;;) x = (x * x) % (3n ** 200000n);"],
  ["a string replace loop over 2 MB", "const s = 'a'.repeat(2 * 1024 * 1024); for (;;) s.replace(/a/g, 'a');"],
  [
    "a JSON round-trip loop",
    "const big = Array.from({ length: 10000 }, (_, i) => ({ i, s: 'x' + i })); for (;;) JSON.parse(JSON.stringify(big));",
  ],
  [
    "a sort loop",
    "const a = Array.from({ length: 100000 }, (_, i) => (i * 7919) % 100003); for (;;) a.slice().sort((x, y) => x - y);",
  ],
  [
    "an array push/pop loop",
    "const a = []; for (;;) { for (let i = 0; i < 1e5; i++) a.push(i); while (a.length) a.pop(); }",
  ],
  ["a regex backtracking loop", "const s = 'ab'.repeat(100000); for (;;) /(a|b)*c/.test(s);"],
  ["catastrophic backtracking in one replace", "('a'.repeat(40) + 'b').replace(/^(a|aa)+$/, 'x');"],
  [
    "a replace loop whose replacement repeats $& 5,000 times (5 MB out of 1,000 matches)",
    "const s = 'ab'.repeat(1000); const r = '$&'.repeat(5000); for (;;) s.replace(/a/g, r).length;",
  ],
  [
    "a global replace through a RegExp subclass whose exec resets lastIndex",
    "class R extends RegExp { exec(s) { this.lastIndex = 0; return super.exec(s) && { length: 1, 0: '', index: 0 }; } }\n'aaa'.replace(new R('a', 'g'), 'b');",
  ],
  ["a matchAll loop over a million matches", "for (;;) for (const m of 'a'.repeat(1e6).matchAll(/a/g));"],
  ["repeat of 8 MB in a loop", "for (;;) 'ab'.repeat(4 * 1024 * 1024).length;"],
  [
    "a mutual recursion loop",
    "function a(n) { return n ? b(n - 1) : 0; } function b(n) { return n ? a(n - 1) : 0; } for (;;) a(1000);",
  ],
];

describe("fuel stops runaway code with a frozen clock, in-thread", () => {
  for (const [name, source] of runaways) {
    it(`${name} ends terminated on fuel; the next run is clean`, async () => {
      const started = performance.now();
      const result = await frozen(source, js);
      expect(performance.now() - started).toBeLessThan(HANG_MS);
      expect(outcome(result)).toEqual(STOPPED);
      // Stopped at the first refill past the cap, or at the end of the stop's grace: a hard stop, which leaves its
      // instance unfit for another run, pays besides for the boot of the next (more than twice the grace).
      const used = result.fuelUsed as number;
      const engine = used > FUEL + 2 * STOP_GRACE_FUEL ? used - INSTANCE_BOOT_FUEL : used;
      expect(engine).toBeGreaterThan(FUEL);
      expect(engine).toBeLessThanOrEqual(FUEL + 2 * STOP_GRACE_FUEL);
      const after = await frozen("export default [typeof x, [1, 2, 3].map((n) => n * 2)]", js);
      expect(outcome(after)).toEqual({ status: "success", result: ["undefined", [2, 4, 6]] });
    });
  }

  it("a stop inside a native that never polls is a hard stop: the instance is dropped, not restored", async () => {
    await frozen("export default 1", js);
    await frozen("export default 1", js);
    const idle = pool.idle;
    expect(idle).toBeGreaterThan(0);
    expect(outcome(await frozen("while (true) {}", js))).toEqual(STOPPED);
    expect(pool.idle).toBe(idle);
    const bigint = await frozen("let x = 3n ** 2000000n; for (;;) x = (x * x) % (3n ** 2000000n);", js);
    expect(outcome(bigint)).toEqual(STOPPED);
    expect(pool.idle).toBe(idle - 1);
    // The boot of the instance in its place is the hard-stopped run's.
    expect(bigint.fuelUsed).toBeGreaterThan(FUEL + INSTANCE_BOOT_FUEL);
    expect(bigint.fuelUsed).toBeLessThanOrEqual(FUEL + 2 * STOP_GRACE_FUEL + INSTANCE_BOOT_FUEL);
  });

  it("catching in the guest does not keep a hard-stopped run going", async () => {
    const source = "for (;;) { try { 3n ** 3000000n; } catch {} try { console.log('x'.repeat(100000)); } catch {} }";
    expect(outcome(await frozen(source, js))).toEqual(STOPPED);
  });
});

describe("fuelUsed", () => {
  const source = "let s = 0; for (let i = 0; i < 20000; i++) s += JSON.stringify({ i }).length; export default s";
  const spent = async (run: RunCode, runs: number) => {
    const used: number[] = [];
    for (let i = 0; i < runs; i++) {
      const result = await run(source, js);
      expect(result.status).toBe("success");
      used.push(result.fuelUsed as number);
    }
    return used;
  };

  it("is exactly the same for the same program on every run, on a fresh instance as on a restored one", async () => {
    // Before: a run's internal module had a random name (a few units apart), and an instance that is not restored
    // (a pool's first run, `instances: "fresh"`) made the marshaling half on first use (1% less).
    const [used] = await spent(sandbox({}), 1);
    expect(used).toBeGreaterThan(10_000_000);
    expect(await spent(sandbox({}), 5)).toEqual(Array(5).fill(used));
    expect(await spent(sandbox({ instances: "fresh" }), 2)).toEqual([used, used]);
  });

  it("does not depend on the host's script path (Emscripten's program name), which a worker thread has none of", async () => {
    const [used] = await spent(sandbox({ instances: "fresh" }), 1);
    const script = process.argv[1];
    process.argv[1] = `/${"a-much-longer-path/".repeat(8)}main.js`;
    try {
      expect(await spent(sandbox({ instances: "fresh" }), 1)).toEqual([used]);
    } finally {
      process.argv[1] = script as string;
    }
  });

  it("is exactly the same on every run on a worker thread, and equal to the in-thread figure", async () => {
    const [inThread] = await spent(sandbox({}), 1);
    expect(await spent(createSandbox({ threads: true }).runCode, 3)).toEqual([inThread, inThread, inThread]);
  });

  it("a safetyCap setting that does not exist is refused, naming the ones that do", () => {
    expect(() => sandbox({ safetyCap: { interruptPolls: 1000 } as never })).toThrow(
      "createSandbox: safetyCap has no setting 'interruptPolls' (it has cpuTimeMs and fuel)",
    );
  });
});

describe("fuel charges the host's work for the guest, before it is done", () => {
  const CAP = 20_000_000;
  const hostWork = (settings: Parameters<typeof sandbox>[0] = {}) =>
    sandbox({ ...settings, clock: () => 0, safetyCap: { fuel: CAP, cpuTimeMs: 1e12 }, pool: new InstancePool() });
  const capped = hostWork();
  const web = hostWork({ webApis: true });
  const STOPPED_AT_CAP = `TerminatedError: Execution stopped by the safety cap after ${CAP} units of fuel`;
  // Before: a host call cost the engine's flat 50 units for the import (76 in all), so 20,000,000 units made
  // ~260,000 calls (5.5 us each: 1.4 s of host CPU for what fuel rated as 0.08 s of the engine's).
  it("a host-call loop stops with the calls made within what the cap pays for", async () => {
    let calls = 0;
    const f = () => {
      calls++;
    };
    const result = await capped("for (;;) f();", { ...js, globals: { f } });
    expect(outcome(result)).toEqual({ status: "terminated", error: STOPPED_AT_CAP });
    expect(calls * HOST_CALL_FUEL).toBeLessThanOrEqual(CAP);
    expect(calls).toBeGreaterThan(CAP / HOST_CALL_FUEL / 2);
    expect(result.fuelUsed).toBeLessThanOrEqual(CAP + 2 * STOP_GRACE_FUEL);
  });

  it("a string argument past ASCII pays for the host's decoding of its UTF-8, 4 units a character more", async () => {
    // Before, both paid the engine's copy alone, ~1 unit a character: 1,000,000 characters of `€` took the host 20.5 ns
    // a unit of that fuel (emoji 29), ASCII 3.5.
    let received = "";
    const f = (text: string) => {
      received = text;
    };
    const fuel = async (char: string) => {
      const result = await capped(`f(${JSON.stringify(char)}.repeat(100000)); export default 1`, {
        ...js,
        globals: { f },
      });
      expect([result.status, received.length]).toEqual(["success", 100_000 * char.length]);
      return result.fuelUsed as number;
    };
    const ascii = await fuel("x");
    expect((await fuel("\u20ac")) - ascii).toBeGreaterThanOrEqual(4 * 100_000);
    expect((await fuel("\u{1F600}")) - ascii).toBeGreaterThanOrEqual(4 * 200_000);
  });

  it("a console loop stops with the entries kept within what the cap pays for", async () => {
    const result = await capped("for (;;) console.log('x');", js);
    expect(outcome(result)).toEqual({ status: "terminated", error: STOPPED_AT_CAP });
    expect(result.logs.length * LOG_ENTRY_FUEL).toBeLessThanOrEqual(CAP);
    expect(result.fuelUsed).toBeLessThanOrEqual(CAP + 2 * STOP_GRACE_FUEL);
  });

  it("a random-bytes loop stops with the bytes made within what the cap pays for", async () => {
    const spy = vi.spyOn(crypto, "getRandomValues");
    try {
      const result = await web("const u = new Uint8Array(65536); for (;;) crypto.getRandomValues(u);", js);
      expect(outcome(result)).toEqual({ status: "terminated", error: STOPPED_AT_CAP });
      expect(spy.mock.calls.length * randomFuel(65536)).toBeLessThanOrEqual(CAP);
      expect(spy.mock.calls.length).toBeGreaterThan(0);
    } finally {
      spy.mockRestore();
    }
  });

  it("an import loop stops with the modules resolved and loaded within what the cap pays for", async () => {
    let imports = 0;
    const tick = () => {
      imports++;
    };
    const source = "for (let i = 0; ; i++) { try { await import('./missing-' + i + '.js'); } catch {} tick(); }";
    const result = await capped(source, { ...js, globals: { tick } });
    expect(outcome(result)).toEqual({ status: "terminated", error: STOPPED_AT_CAP });
    expect(imports * (MODULE_RESOLVE_FUEL + MODULE_LOAD_FUEL + HOST_CALL_FUEL)).toBeLessThanOrEqual(CAP);
    expect(result.fuelUsed).toBeLessThanOrEqual(CAP + 2 * STOP_GRACE_FUEL);
  });

  it("a fetch loop stops with the requests sent within what the cap pays for", async () => {
    let requests = 0;
    const fetch = async () => {
      requests++;
      return new Response("ok");
    };
    const fetching = hostWork({ webApis: true, fetch: { allow: ["http://local.test"], fetch, maxRequests: 1e6 } });
    const result = await fetching("for (;;) await (await fetch('http://local.test/')).text();", js);
    expect(outcome(result)).toEqual({ status: "terminated", error: STOPPED_AT_CAP });
    expect(requests * FETCH_REQUEST_FUEL).toBeLessThanOrEqual(CAP);
    expect(requests).toBeGreaterThan(0);
  });

  it("a body dripped a byte a read stops the run with the reads made within what the cap pays for", async () => {
    // Before: a read paid only for its byte (a unit per 4), so this 1 MB drip (a million reads of the host, 30-70 us
    // of its CPU each over a network) cost the run 250,000 units and ended `success`.
    let reads = 0;
    const drip = async () =>
      new Response(
        new ReadableStream({
          pull(stream) {
            reads++;
            if (reads > 1_000_000) stream.close();
            else stream.enqueue(new Uint8Array(1));
          },
        }),
      );
    const fetching = hostWork({ webApis: true, fetch: { allow: ["http://local.test"], fetch: drip } });
    const result = await fetching(
      "export default (await (await fetch('http://local.test/')).arrayBuffer()).byteLength",
      js,
    );
    expect(outcome(result)).toEqual({ status: "terminated", error: STOPPED_AT_CAP });
    expect(reads * FETCH_READ_FUEL).toBeLessThanOrEqual(CAP + FETCH_READ_FUEL);
    expect(reads).toBeGreaterThan(0);
  });

  it(
    "a body the run cannot pay for stops the run awaiting it (no hang)",
    async () => {
      // Before: the refused payment rejected the body's read, the rejection was dropped as the run had stopped, and
      // nothing woke the run: it awaited forever.
      const chunk = new Uint8Array(64 * 1024);
      const endless = async () => new Response(new ReadableStream({ pull: (stream) => stream.enqueue(chunk) }));
      // A cap the body's first 8 MiB (fetch.maxResponseBytes) runs past: 1 unit a 4 bytes.
      const cap = 1_500_000;
      const fetching = sandbox({
        clock: () => 0,
        safetyCap: { fuel: cap, cpuTimeMs: 1e12 },
        webApis: true,
        fetch: { allow: ["http://local.test"], fetch: endless },
      });
      const result = await fetching("await (await fetch('http://local.test/')).arrayBuffer();", js);
      expect(outcome(result)).toEqual({
        status: "terminated",
        error: `TerminatedError: Execution stopped by the safety cap after ${cap} units of fuel`,
      });
      expect(result.fuelUsed).toBeLessThanOrEqual(cap);
    },
    HANG_MS,
  );

  it("a wait the run's fuel cannot pay for stops it billed as nothing", async () => {
    // Before: the refused wait of 2^31 - 1 ms was billed, fuelUsed 2,147,483,647,013,083.
    const source = "setTimeout(() => {}, 2 ** 31 - 1); export default 1";
    const [first, second] = [await web(source, js), await web(source, js)];
    expect(outcome(first)).toEqual({ status: "terminated", error: STOPPED_AT_CAP });
    const noWait = await web("setTimeout(() => {}, 0); export default 1", js);
    expect(first.fuelUsed).toBe(second.fuelUsed);
    expect(first.fuelUsed).toBeLessThan(noWait.fuelUsed as number);
  });

  it("charges the same on every run: host calls, crossings, logs, random bytes, imports", async () => {
    const source = `const u = new Uint8Array(1000);
      for (let i = 0; i < 200; i++) {
        f(i, 'text');
        f({ i, list: [1, 2, 3] });
        await g();
        console.log('entry', i, { i });
        crypto.getRandomValues(u);
        try { await import('./missing-' + i + '.js'); } catch {}
        await import('./m.js');
      }
      export default 1`;
    const options = {
      ...js,
      globals: { f: () => ({ ok: true }), g: async () => "x".repeat(100) },
      modules: { "./m.js": "export default 1" },
    };
    const spent = [];
    for (let i = 0; i < 3; i++) {
      const result = await web(source, options);
      expect(result.status).toBe("success");
      spent.push(result.fuelUsed);
    }
    expect(spent).toEqual(Array(3).fill(spent[0]));
    // The host's fees alone: two calls, a promise, an entry, a random call and two resolves and a load a round.
    const fees =
      2 * HOST_CALL_FUEL +
      HOST_PROMISE_FUEL +
      LOG_ENTRY_FUEL +
      randomFuel(1000) +
      2 * MODULE_RESOLVE_FUEL +
      MODULE_LOAD_FUEL;
    expect(spent[0]).toBeGreaterThan(200 * fees);
  });
});

describe("failed imports the host keeps for the run", () => {
  it("count against its memory: a loop importing long missing specifiers ends with memory, not the host's heap", async () => {
    // Before: each failure (its 1 MiB specifier, twice in its message) stayed on the host until the fuel cap: at
    // 10^9 units some 2 GB.
    const run = sandbox({ clock: () => 0, safetyCap: { fuel: 1e9, cpuTimeMs: 1e12 } });
    const source = "const s = 'x'.repeat(1 << 20); for (let i = 0; ; i++) try { await import('./' + s + i); } catch {}";
    const result = await run(source, { ...js, memoryLimitBytes: 8 * 1024 * 1024 });
    expect(outcome(result)).toEqual({
      status: "memory",
      error: `MemoryError: The run's logs, reports and failed imports exceeded memoryLimitBytes (${8 * 1024 * 1024}): the host keeps them for the run`,
    });
    expect(result.fuelUsed).toBeLessThan(20_000_000);
  });
});

describe("imports the code never loads", () => {
  // Four host functions, as a tenant's `kv` service puts into every run.
  const service = () => ({ get: () => 1, set: () => {}, list: () => [], delete: () => true });
  const fuelOf = async (source: string, imports: Record<string, Record<string, unknown>>) => {
    const result = await frozen(source, { ...js, imports });
    expect(result.status).toBe("success");
    return result.fuelUsed;
  };

  it("cost a run no fuel: the same as none, to the unit", async () => {
    // Before: each run with the import spent the decoding of its four functions (a few thousand units more).
    const trivial = "export default 1";
    const none = await fuelOf(trivial, {});
    expect(await fuelOf(trivial, { kv: service() })).toBe(none);
    expect(await fuelOf(trivial, { kv: service(), other: service() })).toBe(none);
    const branch = "if (globalThis.never) await import('kv');\nexport default 1";
    expect(await fuelOf(branch, { kv: service() })).toBe(await fuelOf(branch, {}));
  });

  it("beside one it loads cost nothing either; the one it loads is charged when it loads, the same every run", async () => {
    const source = "import { get } from 'kv';\nexport default get()";
    const used = await fuelOf(source, { kv: service() });
    expect(await fuelOf(source, { kv: service(), other: service(), more: service() })).toBe(used);
    expect(await fuelOf(source, { kv: service() })).toBe(used);
    const dynamic = "const { get } = await import('kv');\nexport default get()";
    const loaded = await fuelOf(dynamic, { kv: service() });
    expect(await fuelOf(dynamic, { kv: service(), other: service() })).toBe(loaded);
    // Importing it twice decodes it once: the module is the engine's after its first load.
    const twice = "await import('kv');\nconst { get } = await import('kv');\nexport default get()";
    expect(await fuelOf(twice, { kv: service() })).toBeLessThan(2 * (loaded as number));
    expect(loaded).toBeGreaterThan((await fuelOf("export default 1", {})) as number);
  });

  it("nor memory: an import larger than the run's memory fails only a run that loads it, as before", async () => {
    // Before: every run given it ran out of memory decoding it, whether its code imported it or not.
    const roomy = sandbox({
      clock: () => 0,
      safetyCap: { fuel: 10 * FUEL, cpuTimeMs: 1e12 },
      pool: new InstancePool(),
    });
    const big = { s: "x".repeat(6 * 1024 * 1024) };
    const options = { ...js, imports: { big }, memoryLimitBytes: 8 * 1024 * 1024 };
    expect(outcome(await roomy("export default 1", options))).toEqual({ status: "success", result: 1 });
    const loaded = "const { s } = await import('big');\nexport default s.length";
    expect(outcome(await roomy(loaded, options))).toEqual({
      status: "memory",
      error: `MemoryError: The sandbox ran out of memory (memoryLimitBytes: ${8 * 1024 * 1024})`,
    });
  });

  it("an import whose crossing the run cannot pay for stops it on its fuel, nothing decoded", async () => {
    const CAP = 1_000_000;
    const capped = sandbox({ clock: () => 0, safetyCap: { fuel: CAP, cpuTimeMs: 1e12 }, pool: new InstancePool() });
    const source = "let r;\ntry { r = (await import('big')).s.length; } catch (e) { r = String(e); }\nexport default r";
    const result = await capped(source, { ...js, imports: { big: { s: "x".repeat(1e6) } } });
    expect(outcome(result)).toEqual({
      status: "terminated",
      error: `TerminatedError: Execution stopped by the safety cap after ${CAP} units of fuel`,
    });
    // Before: charged at the run's start and decoded past the cap and its grace, 3,108,582 units.
    expect(result.fuelUsed).toBeLessThan(CAP);
  });
});
