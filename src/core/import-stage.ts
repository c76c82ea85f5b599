/**
 * A run's `options.imports` in the guest, when each crossed as a tape of its own (see `PreparedRun.imports`): an
 * import's values are decoded and handed to the internals module (core/linker.ts) when the linker loads that import's
 * module, the only way the guest reaches them. An import the code never names is never decoded, and costs the run
 * nothing, not a unit of fuel.
 * @module
 */
import type { QuickJSContext, QuickJSHandle } from "quickjs-emscripten-core";
import type { Tape } from "../values/tape.js";
import { type GuestBridge, objectCrossingFuel } from "./guest-bridge.js";
import type { Limits } from "./limits.js";

export class ImportStage {
  readonly #ctx: QuickJSContext;
  /** The internals module's `provide`. */
  readonly #provide: QuickJSHandle;
  /** The tapes of the imports not decoded yet. */
  readonly #pending: Map<string, Tape>;

  /** `tapes[i]` is the import `specifiers[i]`'s. */
  constructor(ctx: QuickJSContext, provide: QuickJSHandle, specifiers: readonly string[], tapes: readonly Tape[]) {
    this.#ctx = ctx;
    this.#provide = provide;
    this.#pending = new Map(specifiers.map((specifier, i) => [specifier, tapes[i] as Tape]));
  }

  /**
   * Stages the import `specifier` unless it was, as its module loads: its crossing's fuel is charged first, and a run
   * that cannot pay it stops on its fuel without decoding anything. What fails the decoder (out of the run's memory or
   * stack) fails the import.
   */
  load(specifier: string, bridge: GuestBridge, limits: Limits): { error: Error } | undefined {
    const tape = this.#pending.get(specifier);
    if (tape === undefined) return undefined;
    if (!limits.affords(objectCrossingFuel(tape))) {
      return { error: new Error("The run's fuel cannot pay for the import's values") };
    }
    const ctx = this.#ctx;
    const decoded = bridge.toGuestResult(tape);
    const provided =
      decoded.error === undefined
        ? limits.enter(() => ctx.callFunction(this.#provide, ctx.undefined, [ctx.newString(specifier), decoded.value]))
        : decoded;
    if (provided.error !== undefined) {
      const { name, message } = bridge.describe(provided.error);
      return { error: Object.assign(new Error(message), { name }) };
    }
    this.#pending.delete(specifier);
    return undefined;
  }

  /** Stages every import now (a session's, which later cells import); throws what fails the run. */
  loadAll(bridge: GuestBridge): void {
    const ctx = this.#ctx;
    for (const [specifier, tape] of this.#pending) {
      const values = bridge.toGuest(tape);
      bridge.guard(() => ctx.callFunction(this.#provide, ctx.undefined, [ctx.newString(specifier), values]));
    }
    this.#pending.clear();
  }
}
