/**
 * Errors the host side of runcode throws. Guest failures never throw: they are a `CodeExecutionResult`.
 * @module
 */

/** A value cannot cross the sandbox boundary (class instance, `WeakMap`, `WeakRef`, symbol, ...). */
export class SerializationError extends TypeError {
  override name = "SerializationError";
}

/**
 * `instanceof` fails across realms and bundles; compare names too (a guest-made error only carries its name).
 */
export function isSerializationError(error: unknown): error is SerializationError {
  return error instanceof SerializationError || (error instanceof Error && error.name === "SerializationError");
}
