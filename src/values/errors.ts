/**
 * Errors the host side of runcode throws. Guest failures never throw: they are a `CodeExecutionResult`.
 * @module
 */

/** A value cannot cross the sandbox boundary (class instance, `WeakMap`, `WeakRef`, symbol, ...). */
export class SerializationError extends TypeError {
  override name = "SerializationError";
}

/** What a {@link bridged} stand-in throws for the far function: `value` is what that function threw. */
export class Thrown {
  constructor(readonly value: unknown) {}
}

const bridges = new WeakSet<object>();

/**
 * Marks `fn` as the stand-in for a function of another thread: what it throws other than a {@link Thrown} is a
 * failure of the crossing itself (the host's stack running out in it, even at its first frame), a fault of the
 * host that drops the instance, never an error the guest could catch.
 */
export function bridged<F extends (...args: never[]) => unknown>(fn: F): F {
  bridges.add(fn);
  return fn;
}

/** Whether `fn` was marked by {@link bridged}. */
export function isBridged(fn: unknown): boolean {
  return typeof fn === "function" && bridges.has(fn);
}
