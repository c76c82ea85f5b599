/**
 * TypeScript declarations of the bridged services, written from their tools' JSON Schemas, for the `run_code`
 * tool's description: a model reads `declare module "kv" { export function get(...): Promise<...> }` and imports
 * the functions by that bare specifier. Schemas may come from upstream servers, so the walk is bounded: past
 * {@link MAX_DEPTH} levels or {@link MAX_CHARS} characters of declarations a type is written as `unknown`.
 *
 * The subset of JSON Schema a tool signature uses: `type` (one or a list), `enum`, `const`, `anyOf`/`oneOf`,
 * `properties` with `required` and `additionalProperties`, `items`, and `description` (a comment). Anything else
 * (`$ref`, `allOf`, `not`, conditionals) is `unknown`, which is what the guest may pass anyway: the host validates
 * every call against the full schema. A library that writes TypeScript from JSON Schema exists
 * (json-schema-to-typescript), but it formats with Prettier and resolves `$ref`s over the network, neither of which
 * belongs in a Worker; this subset is what a signature needs.
 * @module
 */
import type { JSONSchema, ServiceInfo } from "../environment/types.js";

/** Nesting deeper than this is written as `unknown`. */
export const MAX_DEPTH = 6;
/** Declarations longer than this (all services together) stop adding tools: the rest is listed by name only. */
export const MAX_CHARS = 16_000;

const IDENTIFIER = /^[A-Za-z_$][\w$]*$/;

const isSchema = (value: unknown): value is JSONSchema =>
  typeof value === "object" && value !== null && !Array.isArray(value);

/** A property name as TypeScript reads it: bare when it is an identifier, else quoted. */
const propertyName = (name: string) => (IDENTIFIER.test(name) ? name : JSON.stringify(name));

/** A `/** ... *\/` comment, one line, with what would end it early removed; empty without a description. */
function comment(schema: JSONSchema, indent: string): string {
  const text = typeof schema.description === "string" ? schema.description.replace(/\*\//g, "* /").trim() : "";
  return text === "" ? "" : `${indent}/** ${text.replace(/\s+/g, " ").slice(0, 300)} */\n`;
}

/** A JSON value as a TypeScript literal type (strings, numbers, booleans and null), else `unknown`. */
function literal(value: unknown): string {
  if (value === null || typeof value === "boolean" || typeof value === "string") return JSON.stringify(value);
  return typeof value === "number" && Number.isFinite(value) ? String(value) : "unknown";
}

/** The TypeScript type of `schema`, written at `indent`. */
export function typeOf(schema: unknown, depth = 0, indent = ""): string {
  if (schema === true || schema === undefined) return "unknown";
  if (!isSchema(schema) || depth > MAX_DEPTH) return "unknown";
  if ("const" in schema) return literal(schema.const);
  if (Array.isArray(schema.enum)) return schema.enum.length === 0 ? "never" : schema.enum.map(literal).join(" | ");
  const union = Array.isArray(schema.anyOf) ? schema.anyOf : Array.isArray(schema.oneOf) ? schema.oneOf : undefined;
  if (union !== undefined) {
    return union.length === 0 ? "never" : union.map((s) => wrapUnion(typeOf(s, depth + 1, indent))).join(" | ");
  }
  const types = Array.isArray(schema.type) ? schema.type : schema.type === undefined ? [] : [schema.type];
  if (types.length === 0) return schema.properties !== undefined ? objectType(schema, depth, indent) : "unknown";
  return types.map((type) => wrapUnion(typeNamed(String(type), schema, depth, indent))).join(" | ");
}

const wrapUnion = (type: string) => (type.includes("=>") ? `(${type})` : type);

function typeNamed(type: string, schema: JSONSchema, depth: number, indent: string): string {
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
      const item = typeOf(schema.items, depth + 1, indent);
      return item.includes(" ") ? `Array<${item}>` : `${item}[]`;
    }
    case "object":
      return objectType(schema, depth, indent);
    default:
      return "unknown";
  }
}

function objectType(schema: JSONSchema, depth: number, indent: string): string {
  const properties = isSchema(schema.properties) ? schema.properties : {};
  const required = new Set(Array.isArray(schema.required) ? schema.required.map(String) : []);
  const inner = `${indent}  `;
  const lines = Object.entries(properties).map(([name, property]) => {
    const optional = required.has(name) ? "" : "?";
    const described = isSchema(property) ? comment(property, inner) : "";
    return `${described}${inner}${propertyName(name)}${optional}: ${typeOf(property, depth + 1, inner)};\n`;
  });
  const extra = schema.additionalProperties;
  if (extra !== false && (lines.length === 0 || extra !== undefined)) {
    lines.push(`${inner}[key: string]: ${isSchema(extra) ? typeOf(extra, depth + 1, inner) : "unknown"};\n`);
  }
  return lines.length === 0 ? "{}" : `{\n${lines.join("")}${indent}}`;
}

/** `declare module "<service>" { ... }` for every service, each tool a function of its parameters. */
export function declarationsOf(services: readonly ServiceInfo[]): string {
  let out = "";
  const left: string[] = [];
  for (const service of services) {
    let block = `${comment({ description: `${service.name}: ${service.description}` }, "")}declare module ${JSON.stringify(service.id)} {\n`;
    for (const tool of service.tools) {
      const signature = `(parameters: ${typeOf(tool.inputSchema, 0, "  ")}): Promise<${typeOf(tool.outputSchema, 0, "  ")}>;\n`;
      block += comment({ description: tool.description }, "  ");
      // A tool id with a dash is exported under that string name: `import { "list-keys" as listKeys } from "kv"`.
      block += IDENTIFIER.test(tool.id)
        ? `  export function ${tool.id}${signature}`
        : `  function ${tool.id.replace(/-/g, "_")}${signature}  export { ${tool.id.replace(/-/g, "_")} as ${JSON.stringify(tool.id)} };\n`;
    }
    block += "}\n";
    if (out.length + block.length > MAX_CHARS) left.push(service.id);
    else out += block;
  }
  if (left.length > 0)
    out += `// Also importable, declarations left out for length: ${left.map((id) => JSON.stringify(id)).join(", ")}\n`;
  return out;
}
