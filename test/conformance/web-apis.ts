/**
 * §13 The Web APIs of a sandbox made with `webApis: true`: the opt-in (§13.1), the timers, `performance.now()` and
 * `queueMicrotask` (§13.4), `crypto` (§13.5, `crypto.subtle` in web-crypto.ts), and events, abort and `DOMException`
 * (§13.6). URL is web-url.ts, text web-text.ts, blobs and forms web-blob.ts.
 * @module
 */
import { describe, expect, it } from "vitest";
import type { RunCode, SandboxOptions } from "../../src/core/types.js";
import { fails, ok, settle } from "./helpers.js";
import { webBlobSuite } from "./web-blob.js";
import { webCryptoSuite } from "./web-crypto.js";
import { webTextSuite } from "./web-text.js";
import { webUrlSuite } from "./web-url.js";

const js = { language: "javascript" } as const;

/** Every global the Web APIs install. */
const WEB_GLOBALS = [
  "URL",
  "URLSearchParams",
  "TextEncoder",
  "TextDecoder",
  "atob",
  "btoa",
  "crypto",
  "Crypto",
  "SubtleCrypto",
  "CryptoKey",
  "setTimeout",
  "clearTimeout",
  "setInterval",
  "clearInterval",
  "Event",
  "EventTarget",
  "AbortController",
  "AbortSignal",
  "DOMException",
  "performance",
  "Performance",
  "Blob",
  "File",
  "FormData",
];

export function webApisSuite(sandbox: (settings: SandboxOptions) => RunCode): void {
  const runCode = sandbox({ webApis: true });
  const plain = sandbox({});

  describe("§13.1 Web APIs are opt-in per sandbox", () => {
    const types = `export default names.map((name) => typeof globalThis[name])`;

    it("a sandbox made without webApis has none of them", async () => {
      const result = await ok(plain, types, { ...js, globals: { names: WEB_GLOBALS } });
      expect(result).toEqual(WEB_GLOBALS.map(() => "undefined"));
    });

    it("a sandbox made with webApis: true has every one, none of them enumerable on globalThis", async () => {
      const source = `${types.replace("export default", "const found =")}\nexport default [found, Object.keys(globalThis)]`;
      const result = await ok(runCode, source, { ...js, globals: { names: WEB_GLOBALS } });
      expect(result).toEqual([
        WEB_GLOBALS.map((name) => (name === "crypto" || name === "performance" ? "object" : "function")),
        [],
      ]);
    });

    it("runs of both kinds take turns without one's instances reaching the other", async () => {
      const probe = "export default [typeof URL, globalThis.mark]";
      const seen = [];
      for (let i = 0; i < 3; i++) {
        seen.push(await ok(runCode, `globalThis.mark = ${i};\n${probe}`, js), await ok(plain, probe, js));
      }
      expect(seen).toEqual([
        ["function", 0],
        ["undefined", undefined],
        ["function", 1],
        ["undefined", undefined],
        ["function", 2],
        ["undefined", undefined],
      ]);
    });

    it("a run's changes to them are gone in the next run", async () => {
      const first = "URL.prototype.extra = 1; globalThis.URL = 5; setTimeout(() => {}, 10); export default 0";
      await ok(runCode, first, js);
      const second = "export default [typeof URL, URL.prototype.extra, new URL('https://x').href]";
      expect(await ok(runCode, second, js)).toEqual(["function", undefined, "https://x/"]);
    });

    it("a global the caller passes shadows the Web API of that name", async () => {
      const source = "export default [setTimeout(), typeof globalThis.setTimeout]";
      expect(await ok(runCode, source, { ...js, globals: { setTimeout: () => "mine" } })).toEqual(["mine", "function"]);
    });

    it("webApis must be a boolean", () => {
      expect(() => sandbox({ webApis: "yes" as unknown as boolean })).toThrow(
        new TypeError("createSandbox: webApis must be a boolean"),
      );
    });
  });

  webUrlSuite(runCode);
  webTextSuite(runCode);
  webCryptoSuite(sandbox);
  webBlobSuite(sandbox);

  describe("§13.4 timers", () => {
    it("fire in the order of their due times, equal ones in the order they were set, jobs between them", async () => {
      const source = `const log = [];
      setTimeout(() => log.push("a20"), 20);
      setTimeout(() => log.push("b10"), 10);
      setTimeout(() => { log.push("c10"); Promise.resolve().then(() => log.push("c10 job")); }, 10);
      setTimeout(() => log.push("d0"), 0);
      setTimeout(() => log.push("e-5"), -5);
      setTimeout((x, y) => log.push([x, y, this === undefined, globalThis === globalThis]), "3", "x", "y");
      await new Promise((resolve) => setTimeout(resolve, 30));
      export default log`;
      expect(await ok(runCode, source, js)).toEqual([
        "d0",
        "e-5",
        ["x", "y", true, true],
        "b10",
        "c10",
        "c10 job",
        "a20",
      ]);
    });

    it("the run waits for pending timers after its export settles, and reads the result at its end", async () => {
      const source = `const out = ["now"];
      setTimeout(() => { report("fired"); out.push("later"); }, 50);
      export default out`;
      const result = await settle(runCode, source, js);
      expect([result.status, result.result, result.reports]).toEqual(["success", ["now", "later"], ["fired"]]);
    });

    it("setInterval repeats until cleared; ids are positive and distinct; clearTimeout clears either kind", async () => {
      const source = `let n = 0;
      const id = setInterval((step) => { n += step; if (n === 3) clearInterval(id); }, 5, 1);
      const cleared = setTimeout(() => { n = 100; }, 1);
      clearTimeout(cleared);
      const other = setInterval(() => { n = 200; }, 1);
      clearTimeout(other);
      clearTimeout();
      clearTimeout("nothing");
      export default [id > 0, new Set([id, cleared, other]).size]
      setTimeout(() => report(n), 50);`;
      const result = await settle(runCode, source, js);
      expect([result.status, result.result, result.reports]).toEqual(["success", [true, 3], [3]]);
    });

    it("a handler must be a function: the sandbox compiles no code from strings", async () => {
      const error = await fails(runCode, "error", "setTimeout('report(1)', 0)", js);
      expect([error.name, error.message]).toEqual([
        "TypeError",
        "setTimeout: the handler must be a function (the sandbox compiles no code from strings)",
      ]);
    });

    it("an exception a timer callback throws ends the run as an error, at its line", async () => {
      const source = "setTimeout(() => {\n  JSON.parse('{');\n}, 5);\nexport default 1";
      const error = await fails(runCode, "error", source, js);
      expect([error.name, error.line]).toEqual(["SyntaxError", 2]);
    });

    it("at most 10,000 are pending at once", async () => {
      const source = `for (let i = 0; i < 10_000; i++) setTimeout(() => {}, 1);
      let message;
      try { setTimeout(() => {}, 1); } catch (e) { message = e.constructor.name + ": " + e.message; }
      export default message`;
      expect(await ok(runCode, source, js)).toBe(
        "RangeError: 10000 timers are pending: clear some before setting more",
      );
    });

    it("their time is fuel, 10^6 units a millisecond of the timer clock, the same on every run", async () => {
      const source = "await new Promise((resolve) => setTimeout(resolve, delay));\nexport default 1";
      const short = await settle(runCode, source, { ...js, globals: { delay: 10 } });
      const long = await settle(runCode, source, { ...js, globals: { delay: 90 } });
      expect((long.fuelUsed ?? 0) - (short.fuelUsed ?? 0)).toBe(80_000_000);
    });

    it("with a frozen clock a setInterval loop still ends at the safety cap's fuel", async () => {
      const frozen = sandbox({ webApis: true, clock: () => 0, safetyCap: { fuel: 100_000_000 } });
      const error = await fails(frozen, "terminated", "setInterval(() => {}, 1); export default 1", js);
      expect(error.message).toBe("Execution stopped by the safety cap after 100000000 units of fuel");
    });

    it("a timer past what the run's fuel can pay for stops it at once, not after the wait", async () => {
      const frozen = sandbox({ webApis: true, clock: () => 0, safetyCap: { fuel: 100_000_000 } });
      const error = await fails(frozen, "terminated", "setTimeout(() => {}, 3_600_000); export default 1", js);
      expect(error.message).toBe("Execution stopped by the safety cap after 100000000 units of fuel");
    });

    it("waiting is not CPU time: a run capped at 200 ms of CPU waits 500 ms for a timer", async () => {
      const capped = sandbox({ webApis: true, safetyCap: { cpuTimeMs: 200 } });
      expect(await ok(capped, "await new Promise((r) => setTimeout(r, 500)); export default 'waited'", js)).toBe(
        "waited",
      );
    });

    it("terminate() ends a run waiting for a timer, and the timer is gone from the next run", async () => {
      let run: ReturnType<RunCode> | undefined;
      const report = () => run?.terminate("enough");
      run = runCode("setTimeout(() => {}, 3_600_000); report('waiting'); export default 1", { ...js, report });
      const result = await run;
      expect([result.status, result.error?.message]).toEqual(["terminated", "enough"]);
      expect(await ok(runCode, "export default 'next'", js)).toBe("next");
    });

    it("AbortSignal.timeout's timer does not keep the run going, but fires while the run waits", async () => {
      expect(await ok(runCode, "AbortSignal.timeout(3_600_000); export default 'done'", js)).toBe("done");
      const source = `const signal = AbortSignal.timeout(10);
      const reason = await new Promise((resolve) => { signal.onabort = () => resolve(signal.reason); });
      export default [reason.name, reason.message, reason instanceof DOMException, signal.aborted]`;
      expect(await ok(runCode, source, js)).toEqual(["TimeoutError", "signal timed out", true, true]);
    });

    it("performance.now() reads the timer clock from 1 ms where the clock stands still: the same on every run", async () => {
      const frozen = sandbox({ webApis: true, clock: () => 0 });
      const source = `const seen = [performance.now()];
      await new Promise((resolve) => setTimeout(resolve, 5));
      seen.push(performance.now());
      let x = 0; for (let i = 0; i < 100_000; i++) x += i;
      seen.push(performance.now());
      const event = new Event("e");
      await new Promise((resolve) => setTimeout(resolve, 20));
      let illegal;
      try { const { now } = performance; now(); } catch (e) { illegal = e.message; }
      export default [seen, performance.now(), event.timeStamp, String(performance), performance instanceof EventTarget,
        illegal, JSON.stringify(performance)]`;
      const expected = [[1, 6, 6], 26, 6, "[object Performance]", true, "Illegal invocation", "{}"];
      expect(await ok(frozen, source, js)).toEqual(expected);
      expect(await ok(frozen, source, js)).toEqual(expected);
    });

    it("performance.now() never goes back and moves with the run's clock, in tenths of a millisecond", async () => {
      const source = `const seen = [];
      for (let round = 0; round < 5; round++) {
        for (let i = 0; i < 20_000; i++) if (i % 1000 === 0) seen.push(performance.now());
        await new Promise((resolve) => setTimeout(resolve, 4));
        seen.push(performance.now());
      }
      export default [seen.every((t, i) => i === 0 || t >= seen[i - 1]), seen.at(-1) - seen[0] >= 15, seen[0] < 1000,
        seen.every((t) => Math.abs(t * 10 - Math.round(t * 10)) < 1e-6)]`;
      expect(await ok(runCode, source, js)).toEqual([true, true, true, true]);
    });

    it("queueMicrotask's callbacks run in order with promise jobs, all before a timer", async () => {
      const source = `const order = [];
      setTimeout(() => order.push("timeout"), 0);
      Promise.resolve().then(() => order.push("p1"));
      queueMicrotask(() => { order.push("m1"); queueMicrotask(() => order.push("m3")); });
      Promise.resolve().then(() => order.push("p2"));
      order.push("sync");
      await new Promise((resolve) => setTimeout(resolve, 1));
      export default order`;
      expect(await ok(runCode, source, js)).toEqual(["sync", "p1", "m1", "p2", "m3", "timeout"]);
    });
  });

  describe("§13.5 crypto", () => {
    it("getRandomValues fills integer typed arrays from the host's randomness and returns them", async () => {
      const source = `const a = new Uint8Array(32);
      const b = crypto.getRandomValues(new Uint8Array(32));
      const same = crypto.getRandomValues(a) === a;
      const view = new Uint32Array(new ArrayBuffer(16), 4, 2);
      crypto.getRandomValues(view);
      export default [same, a.some((x) => x !== 0), a.join() !== b.join(), new Uint32Array(view.buffer, 0, 1)[0],
        crypto.getRandomValues(new BigInt64Array(2)).length, crypto.getRandomValues(new Uint8Array(65_536)).length]`;
      expect(await ok(runCode, source, js)).toEqual([true, true, true, 0, 2, 65_536]);
    });

    it("getRandomValues refuses more than 65,536 bytes and arrays that are not of integers", async () => {
      const source = `const caught = (f) => { try { f(); return "no error"; } catch (e) { return [e.name, e.code ?? null]; } };
      export default [
        caught(() => crypto.getRandomValues(new Uint8Array(65_537))),
        caught(() => crypto.getRandomValues(new Float64Array(2))),
        caught(() => crypto.getRandomValues(new DataView(new ArrayBuffer(2)))),
        caught(() => crypto.getRandomValues([1, 2])),
        caught(() => crypto.getRandomValues()),
      ]`;
      expect(await ok(runCode, source, js)).toEqual([
        ["QuotaExceededError", 22],
        ["TypeMismatchError", 17],
        ["TypeMismatchError", 17],
        ["TypeError", null],
        ["TypeError", null],
      ]);
    });

    it("randomUUID gives version 4 UUIDs; Crypto and SubtleCrypto cannot be constructed", async () => {
      const source = `const ids = Array.from({ length: 50 }, () => crypto.randomUUID());
      let constructed;
      try { new Crypto(); } catch (e) { constructed = e.message; }
      try { new SubtleCrypto(); } catch (e) { constructed += "; " + e.message; }
      export default [ids.every((id) => /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/.test(id)),
        new Set(ids).size, constructed, crypto.subtle instanceof SubtleCrypto, Object.prototype.toString.call(crypto)]`;
      expect(await ok(runCode, source, js)).toEqual([
        true,
        50,
        "Illegal constructor; Illegal constructor",
        true,
        "[object Crypto]",
      ]);
    });
  });

  describe("§13.6 events, abort and DOMException", () => {
    it("EventTarget runs capturing listeners, then the others, each once, in the order added", async () => {
      const source = `const t = new EventTarget();
      const log = [];
      const listener = (e) => log.push("fn " + e.eventPhase + " " + (e.currentTarget === t));
      t.addEventListener("x", listener);
      t.addEventListener("x", listener);
      t.addEventListener("x", () => log.push("capture"), { capture: true });
      t.addEventListener("x", { handleEvent(e) { log.push("object " + (this !== t)); } });
      t.addEventListener("x", () => log.push("once"), { once: true });
      t.addEventListener("y", () => log.push("other type"));
      const e = new Event("x");
      t.dispatchEvent(e);
      t.removeEventListener("x", listener);
      t.dispatchEvent(new Event("x"));
      export default [log, e.target === t, e.currentTarget, e.eventPhase, e.isTrusted, e.composedPath()]`;
      expect(await ok(runCode, source, js)).toEqual([
        ["capture", "fn 2 true", "object true", "once", "capture", "object true"],
        true,
        null,
        0,
        false,
        [],
      ]);
    });

    it("stopImmediatePropagation, preventDefault with cancelable and passive, and dispatch's answer", async () => {
      const source = `const t = new EventTarget();
      const log = [];
      t.addEventListener("x", (e) => { e.preventDefault(); log.push(e.defaultPrevented); }, { passive: true });
      t.addEventListener("x", (e) => { e.preventDefault(); e.stopImmediatePropagation(); log.push(e.defaultPrevented); });
      t.addEventListener("x", () => log.push("never"));
      const cancelable = new Event("x", { cancelable: true });
      const answers = [t.dispatchEvent(cancelable), t.dispatchEvent(new Event("x"))];
      let again;
      t.addEventListener("y", (e) => { try { t.dispatchEvent(e); } catch (error) { again = error.name; } });
      t.dispatchEvent(new Event("y"));
      export default [log, answers, cancelable.defaultPrevented, again, new Event("z").bubbles, Event.AT_TARGET]`;
      expect(await ok(runCode, source, js)).toEqual([
        [false, true, false, false],
        [false, true],
        true,
        "InvalidStateError",
        false,
        2,
      ]);
    });

    it("an exception a listener throws ends the run as an error once dispatch is over", async () => {
      const source = `const t = new EventTarget();
      const log = [];
      t.addEventListener("x", () => { throw new RangeError("boom"); });
      t.addEventListener("x", () => log.push("second listener ran"));
      t.dispatchEvent(new Event("x"));
      report(log);
      export default 1`;
      const result = await settle(runCode, source, js);
      expect([result.status, result.error?.name, result.error?.message, result.error?.line, result.reports]).toEqual([
        "error",
        "RangeError",
        "boom",
        3,
        [["second listener ran"]],
      ]);
    });

    it("AbortController aborts its signal once, with a reason, firing abort at listeners and onabort", async () => {
      const source = `const c = new AbortController();
      const log = [];
      c.signal.addEventListener("abort", (e) => log.push(["listener", e.type, e.isTrusted, c.signal.aborted]));
      c.signal.onabort = () => log.push("onabort");
      const before = [c.signal.aborted, c.signal.reason];
      c.abort("why");
      c.abort("again");
      let thrown;
      try { c.signal.throwIfAborted(); } catch (e) { thrown = e; }
      const d = new AbortController();
      d.abort();
      export default [before, log, c.signal.reason, thrown, d.signal.reason.name, d.signal.reason.message, d.signal.reason instanceof Error]`;
      expect(await ok(runCode, source, js)).toEqual([
        [false, undefined],
        [["listener", "abort", true, true], "onabort"],
        "why",
        "why",
        "AbortError",
        "signal is aborted without reason",
        true,
      ]);
    });

    it("AbortSignal.abort and AbortSignal.any; a listener added with a signal goes when it aborts", async () => {
      const source = `const a = new AbortController();
      const b = new AbortController();
      const any = AbortSignal.any([a.signal, b.signal]);
      const nested = AbortSignal.any([any]);
      const log = [];
      any.addEventListener("abort", () => log.push("any"));
      nested.addEventListener("abort", () => log.push("nested"));
      const remover = new AbortController();
      const t = new EventTarget();
      t.addEventListener("x", () => log.push("x"), { signal: remover.signal });
      t.dispatchEvent(new Event("x"));
      remover.abort();
      t.dispatchEvent(new Event("x"));
      b.abort("b's reason");
      a.abort("a's reason");
      let illegal;
      try { new AbortSignal(); } catch (e) { illegal = e.message; }
      export default [log, any.reason, nested.reason, AbortSignal.abort(7).reason, AbortSignal.any([AbortSignal.abort(8)]).aborted, illegal]`;
      expect(await ok(runCode, source, js)).toEqual([
        ["x", "any", "nested"],
        "b's reason",
        "b's reason",
        7,
        true,
        "Illegal constructor",
      ]);
    });

    it("DOMException has a name, a message, its legacy code and Error's prototype", async () => {
      const source = `const e = new DOMException("m", "NotFoundError");
      const plain = new DOMException();
      export default [e.name, e.message, e.code, e instanceof Error, String(e), plain.name, plain.message, plain.code,
        DOMException.NOT_FOUND_ERR, new DOMException("x", "Custom").code, Object.prototype.toString.call(e)]`;
      expect(await ok(runCode, source, js)).toEqual([
        "NotFoundError",
        "m",
        8,
        true,
        "NotFoundError: m",
        "Error",
        "",
        0,
        8,
        0,
        "[object DOMException]",
      ]);
    });

    it("an event's timeStamp is positive from the run's start and follows the timer clock", async () => {
      const source = `const first = new Event("a").timeStamp;
        const second = new Event("b").timeStamp;
        await new Promise((resolve) => setTimeout(resolve, 5));
        const later = new Event("c").timeStamp;
        export default [first > 0, second >= first, later >= first + 5, typeof later];`;
      expect(await ok(runCode, source)).toEqual([true, true, true, "number"]);
    });

    it("never read an index through the prototypes, where the guest may have put getters", async () => {
      const source = `for (let i = 0; i < 4; i++) {
          Object.defineProperty(Object.prototype, i, {
            get() { throw new Error("index " + i + " read"); },
            set(value) { Object.defineProperty(this, i, { value, writable: true, enumerable: true, configurable: true }); },
            configurable: true,
          });
        }
        const url = new URL("https://x.org/?a=1#f");
        url.search = "";
        url.hash = "";
        const params = new URLSearchParams("");
        export default [url.href, params.size, new URLSearchParams("?b=2").get("b")];`;
      expect(await ok(runCode, source)).toEqual(["https://x.org/", 0, "2"]);
    });

    it("an uncaught DOMException is the run's error, with its name", async () => {
      const error = await fails(runCode, "error", "AbortSignal.abort().throwIfAborted();\nexport default 1", js);
      expect([error.name, error.message, error.line]).toEqual(["AbortError", "signal is aborted without reason", 1]);
    });
  });
}
