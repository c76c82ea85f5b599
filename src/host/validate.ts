/**
 * JSON Schema validation with `@cfworker/json-schema`: an interpreter, no code generation, so it runs on Workers
 * where `new Function` is refused. Messages name the failing location and are short enough for an error response.
 * @module
 */
import { type OutputUnit, type Schema, Validator } from "@cfworker/json-schema";
import type { JSONSchema } from "../environment/types.js";

/** Keywords whose own message only says "a child failed"; the child's message is the useful one. */
const CONTAINERS = new Set(["properties", "items", "prefixItems", "allOf", "$ref", "false", "additionalItems"]);

function describe(unit: OutputUnit): string | undefined {
  if (CONTAINERS.has(unit.keyword)) return undefined;
  const at = unit.instanceLocation.replace(/^#\/?/, "");
  if (unit.keyword === "additionalProperties") {
    const name = /Property "(.*)" does not match/.exec(unit.error)?.[1] ?? "?";
    return `unknown field ${JSON.stringify(at === "" ? name : `${at}/${name}`)}`;
  }
  return at === "" ? unit.error : `${at}: ${unit.error}`;
}

/** A compiled schema: `check(value)` returns `undefined` when valid, else one message listing the problems. */
export type Check = (value: unknown) => string | undefined;

export function compileSchema(schema: JSONSchema): Check {
  const validator = new Validator(schema as Schema, "2020-12", false);
  return (value) => {
    const result = validator.validate(value);
    if (result.valid) return undefined;
    const messages = [...new Set(result.errors.map(describe).filter((m): m is string => m !== undefined))];
    return messages.length === 0 ? "does not match the schema" : messages.slice(0, 5).join("; ");
  };
}
