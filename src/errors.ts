/**
 * Errors the host side of runcode throws. Guest failures never throw: they are a `CodeExecutionResult`.
 * @module
 */

/** A value cannot cross the sandbox boundary (class instance, `WeakMap`, `WeakRef`, symbol, ...). */
export class SerializationError extends TypeError {
  override name = "SerializationError";
}
