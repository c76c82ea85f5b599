/**
 * `performance.now()` (High Resolution Time) of a sandbox made with `webApis: true`: milliseconds since the run's
 * time origin, 1 ms before the run began (as an event's `timeStamp`, see web-events.ts). Shipped as source text (see
 * core.ts).
 *
 * The host reads it (`OP_NOW`, see src/core/timers.ts): the later of the timer clock and the run's clock since the run
 * began, to a tenth of a millisecond, never going back. Where the run's clock stands still (a frozen clock, a deployed
 * Worker) it is the timer clock alone, so the same program reads the same times on every run.
 * @module
 */
import type { HostCall } from "./core.js";
import type { WebKit } from "./web-kit.js";

export function guestWebPerformance(hostCall: HostCall, kit: WebKit): void {
  // biome-ignore lint/suspicious/noRedundantUseStrict: shipped as source text and evaluated as a sloppy script.
  "use strict";
  const OP_NOW = 13;
  const { defineProperty } = Object;
  const TypeErrorCtor = TypeError;
  const EMPTY: unknown[] = [];
  const { EventTarget } = globalThis as unknown as { EventTarget: new () => object };

  let creating = false;
  let performance: Performance | undefined;
  class Performance extends EventTarget {
    constructor() {
      if (!creating) throw new TypeErrorCtor("Illegal constructor");
      creating = false;
      super();
    }
    now(): number {
      if (this !== performance) throw new TypeErrorCtor("Illegal invocation");
      return hostCall(OP_NOW, 0, "", EMPTY) as number;
    }
    toJSON(): object {
      if (this !== performance) throw new TypeErrorCtor("Illegal invocation");
      return {};
    }
  }
  defineProperty(Performance.prototype, Symbol.toStringTag, { value: "Performance", configurable: true });
  creating = true;
  performance = new Performance();
  kit.install("Performance", Performance);
  kit.install("performance", performance);
}
