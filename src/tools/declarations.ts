/**
 * TypeScript declarations of the bridged services, written from their tools' JSON Schemas, for the `run_code`
 * tool's description: a model reads `declare module "kv" { export function get(...): Promise<...> }` and imports
 * the functions by that bare specifier. Schemas may come from upstream servers, so the walk is bounded: past
 * {@link MAX_DEPTH} levels a type is written as `unknown`, and the walk spends from a budget while it writes (a
 * unit per schema visited, per item of a list it goes through and per character it writes at each level), because
 * a type list or a union repeats its subtree once per entry: 1.1 KB of `"type": ["array", ...]` lists once took
 * 1.6 s and 900 MB, and 1.4 KB ended in a `RangeError` after 8 s. A tool past {@link TOOL_DECLARATION_UNITS} is
 * declared loosely with a note saying so; past {@link DECLARATION_UNITS} in all, or {@link MAX_CHARS} characters,
 * the remaining services are listed by name.
 *
 * The subset of JSON Schema a tool signature uses: `type` (one or a list), `enum`, `const`, `anyOf`/`oneOf`,
 * `properties` with `required` and `additionalProperties`, `items`, and `description` (a comment). Anything else
 * (`$ref`, `allOf`, `not`, conditionals) is `unknown`, which is what the guest may pass anyway: the host validates
 * every call against the schema. A library that writes TypeScript from JSON Schema exists
 * (json-schema-to-typescript), but it formats with Prettier and resolves `$ref`s over the network, neither of which
 * belongs in a Worker; this subset is what a signature needs.
 * @module
 */

import { BudgetError, WorkBudget } from "../values/budget.js";
import type { JSONSchema, ServiceInfo, ToolDefinition } from "./types.js";

/** Nesting deeper than this is written as `unknown`. */
const MAX_DEPTH = 6;
/** Declarations longer than this (all services together) stop adding services: the rest are listed by name only. */
const MAX_CHARS = 16_000;
/** Units of work writing one tool's parameter and result types may take (about 4x the longest declaration kept). */
export const TOOL_DECLARATION_UNITS = 65_536;
/** Units of work all declarations together may take. */
export const DECLARATION_UNITS = 1_048_576;

const IDENTIFIER = /^[A-Za-z_$][\w$]*$/;

const isSchema = (value: unknown): value is JSONSchema =>
  typeof value === "object" && value !== null && !Array.isArray(value);

/** A property name as TypeScript reads it: bare when it is an identifier, else quoted. */
const propertyName = (name: string) => (IDENTIFIER.test(name) ? name : JSON.stringify(name));

/** Longest comment, in characters. */
const COMMENT_CHARS = 300;

/**
 * A `/** ... *\/` comment, one line, with what would end it early removed; empty without a description. Only the
 * description's start is read, as a schema's comment may be written once per visit of the schema.
 */
function comment(schema: JSONSchema, indent: string): string {
  const description = typeof schema.description === "string" ? schema.description.slice(0, 4 * COMMENT_CHARS) : "";
  const text = description.replace(/\*\//g, "* /").trim();
  return text === "" ? "" : `${indent}/** ${text.replace(/\s+/g, " ").slice(0, COMMENT_CHARS)} */\n`;
}

/** A JSON value as a TypeScript literal type (strings, numbers, booleans and null), else `unknown`. */
function literal(value: unknown, budget: WorkBudget): string {
  if (typeof value === "string") budget.spend(value.length);
  if (value === null || typeof value === "boolean" || typeof value === "string") return JSON.stringify(value);
  return typeof value === "number" && Number.isFinite(value) ? String(value) : "unknown";
}

/** `items`, after paying a unit for each: a list is paid for before it is gone through. */
function paid<T>(items: readonly T[], budget: WorkBudget): readonly T[] {
  budget.spend(items.length);
  return items;
}

/** The TypeScript type of `schema`, written at `indent`; its text is paid for at every level it is part of. */
function typeOf(schema: unknown, depth: number, indent: string, budget: WorkBudget): string {
  budget.spend(1);
  const type = typeText(schema, depth, indent, budget);
  budget.spend(type.length);
  return type;
}

function typeText(schema: unknown, depth: number, indent: string, budget: WorkBudget): string {
  if (schema === true || schema === undefined) return "unknown";
  if (!isSchema(schema) || depth > MAX_DEPTH) return "unknown";
  if ("const" in schema) return literal(schema.const, budget);
  if (Array.isArray(schema.enum)) {
    const values = paid(schema.enum, budget);
    return values.length === 0 ? "never" : values.map((value) => literal(value, budget)).join(" | ");
  }
  const union = Array.isArray(schema.anyOf) ? schema.anyOf : Array.isArray(schema.oneOf) ? schema.oneOf : undefined;
  if (union !== undefined) {
    const members = paid(union, budget);
    return members.length === 0
      ? "never"
      : members.map((s) => wrapUnion(typeOf(s, depth + 1, indent, budget))).join(" | ");
  }
  const types = paid(Array.isArray(schema.type) ? schema.type : schema.type === undefined ? [] : [schema.type], budget);
  if (types.length === 0)
    return schema.properties !== undefined ? objectType(schema, depth, indent, budget) : "unknown";
  return types.map((type) => wrapUnion(typeNamed(String(type), schema, depth, indent, budget))).join(" | ");
}

const wrapUnion = (type: string) => (type.includes("=>") ? `(${type})` : type);

function typeNamed(type: string, schema: JSONSchema, depth: number, indent: string, budget: WorkBudget): string {
  switch (type) {
    case "string":
      return "string";
    case "number":
    case "integer":
      return "number";
    case "boolean":
      return "boolean";
    case "null":
      return "null";
    case "array": {
      const item = typeOf(schema.items, depth + 1, indent, budget);
      return item.includes(" ") ? `Array<${item}>` : `${item}[]`;
    }
    case "object":
      return objectType(schema, depth, indent, budget);
    default:
      return "unknown";
  }
}

function objectType(schema: JSONSchema, depth: number, indent: string, budget: WorkBudget): string {
  const properties = isSchema(schema.properties) ? schema.properties : {};
  const required = new Set(Array.isArray(schema.required) ? paid(schema.required, budget) : []);
  const inner = `${indent}  `;
  const lines = paid(Object.entries(properties), budget).map(([name, property]) => {
    const optional = required.has(name) ? "" : "?";
    const described = isSchema(property) ? comment(property, inner) : "";
    return `${described}${inner}${propertyName(name)}${optional}: ${typeOf(property, depth + 1, inner, budget)};\n`;
  });
  const extra = schema.additionalProperties;
  if (extra !== false && (lines.length === 0 || extra !== undefined)) {
    lines.push(`${inner}[key: string]: ${isSchema(extra) ? typeOf(extra, depth + 1, inner, budget) : "unknown"};\n`);
  }
  return lines.length === 0 ? "{}" : `{\n${lines.join("")}${indent}}`;
}

/**
 * A tool's exported function. Its types are written within `budget`; past it (when `budget` is the tool's own,
 * not what is left of all declarations) the tool is declared loosely, with a note saying why.
 */
function toolDeclaration(tool: ToolDefinition, budget: WorkBudget): string {
  let signature: string;
  let note = "";
  try {
    signature = `(parameters: ${typeOf(tool.inputSchema, 0, "  ", budget)}): Promise<${typeOf(tool.outputSchema, 0, "  ", budget)}>;\n`;
  } catch (error) {
    if (!(error instanceof BudgetError) || budget.limit < TOOL_DECLARATION_UNITS) throw error;
    signature = "(parameters: Record<string, unknown>): Promise<unknown>;\n";
    note = `  // Declared loosely: writing its JSON Schemas as types takes more than ${TOOL_DECLARATION_UNITS} units of work.\n`;
  }
  // A tool id with a dash is exported under that string name: `import { "list-keys" as listKeys } from "kv"`.
  const declaration = IDENTIFIER.test(tool.id)
    ? `  export function ${tool.id}${signature}`
    : `  function ${tool.id.replace(/-/g, "_")}${signature}  export { ${tool.id.replace(/-/g, "_")} as ${JSON.stringify(tool.id)} };\n`;
  return `${comment({ description: tool.description }, "  ")}${note}${declaration}`;
}

/** `declare module "<service>" { ... }`, or `undefined` once it is longer than `room` or `total` is spent. */
function serviceDeclaration(service: ServiceInfo, room: number, total: WorkBudget): string | undefined {
  let block = `${comment({ description: `${service.name}: ${service.description}` }, "")}declare module ${JSON.stringify(service.id)} {\n`;
  for (const tool of service.tools) {
    if (block.length > room) return undefined;
    const budget = new WorkBudget(Math.min(TOOL_DECLARATION_UNITS, total.left), "declaring a tool");
    try {
      block += toolDeclaration(tool, budget);
    } catch (error) {
      if (error instanceof BudgetError) return undefined;
      throw error;
    } finally {
      total.spend(Math.min(budget.spent, total.left));
    }
  }
  block += "}\n";
  return block.length > room ? undefined : block;
}

/** `declare module "<service>" { ... }` for every service, each tool a function of its parameters. */
export function declarationsOf(services: readonly ServiceInfo[]): string {
  const total = new WorkBudget(DECLARATION_UNITS, "the declarations");
  let out = "";
  const left: string[] = [];
  for (const service of services) {
    const block = serviceDeclaration(service, MAX_CHARS - out.length, total);
    if (block === undefined) left.push(service.id);
    else out += block;
  }
  if (left.length > 0)
    out += `// Also importable, declarations left out for length: ${left.map((id) => JSON.stringify(id)).join(", ")}\n`;
  return out;
}
