/**
 * The Markdown an AI client reads to write code for this environment (`generateDocs`) and to call one tool
 * (`generateToolDocs`, rendered from the tool's JSON Schemas with an example call that validates against them).
 * @module
 */

import type { JSONSchema } from "../tools/types.js";
import type { ToolDocsInput } from "./types.js";

/** Settings the runtime documentation states as numbers. */
interface DocsSettings {
  defaultTimeoutMs: number;
  memoryLimitBytes: number;
  concurrency: number;
  /** Units (about characters) one console line, and one output patch or tool call's parameters, may take. */
  consoleLine: number;
  data: number;
  /** The origins (and path prefixes) `fetch` reaches; none: no `fetch`. */
  fetchAllow: readonly string[];
  /** Whether processes have the Web APIs. */
  webApis: boolean;
  /** Milliseconds of synchronous guest work one run may spend whatever its `timeoutMs` (infinite: no such cap). */
  maxCpuMs: number;
  /** Whether processes have \`Intl\`. */
  intl: boolean;
  /** The npm packages process code may import. */
  packages: readonly string[];
}

/** The host's CPU cap per run as a line of the limits, when it has one. */
const cpuCap = (maxCpuMs: number) =>
  Number.isFinite(maxCpuMs)
    ? `\n- **CPU**: at most ${maxCpuMs} ms of synchronous work (time awaiting tools, timers or \`fetch\` does not count) per run, whatever its \`timeoutMs\`; past it the process exits with \`timeout\`, its error naming the host's CPU cap.`
    : "";

/** What process code may import: the host's tools, and its packages. */
const imports = (packages: readonly string[]) =>
  `- **Imports**: each service of the host is a module of its tools: \`import { get } from "kv"; await get({ key: "a" })\` is the call \`cyrnel.services.kv.tools.get.invoke({ key: "a" })\` makes${packages.length === 0 ? "" : `; the host's npm packages are imported by name (${packages.map((name) => `\`${name}\``).join(", ")})`}; the process's own modules, when it was created with some, by their relative names (\`import { f } from "./util.js"\`). Nothing else: \`require\` and any other import fail (there is no file system${packages.length === 0 ? ", no npm" : ""}, no Node or browser API).`;
/** The row of `Intl`. */
const INTL_ROW =
  '| `Intl` | `NumberFormat`, `DateTimeFormat`, `Collator`, `PluralRules`, `RelativeTimeFormat`, `ListFormat`, `Segmenter`; `toLocaleString`, `localeCompare` and `toLocaleUpperCase` follow the locale; "en-US" and "UTC" where none is named |\n';

/** The Web APIs' row of the globals table, and what a process still lacks with and without them. */
const WEB_APIS_ROW =
  "| Web APIs | `URL`, `URLSearchParams`, `TextEncoder`, `TextDecoder` (UTF-8), `atob`, `btoa`, `crypto.getRandomValues`, `crypto.randomUUID`, `crypto.subtle` (SHA digests, HMAC, AES-GCM), `performance.now`, `setTimeout`, `setInterval`, `clearTimeout`, `clearInterval`, `AbortController`, `AbortSignal`, `Event`, `EventTarget`, `DOMException`, `Headers`, `Request`, `Response`, `Blob`, `File`, `FormData`, as browsers have them |\n";
/** The row of `fetch`, which reaches `allow` only. */
const fetchRow = (allow: readonly string[]) =>
  `| \`fetch(url, init?)\` | HTTP requests to ${allow.map((entry) => `\`${entry}\``).join(", ")} only (any other URL, or a redirect to one, rejects with a \`TypeError\`); responses are read whole (\`text()\`, \`json()\`, \`arrayBuffer()\`), within the host's limits on requests, bytes and time |\n`;
const withWebApis = (
  fetches: boolean,
) => `Not available: ${fetches ? "" : "`fetch`, "}\`process\`, \`require\`, \`eval\`, \`new Function\`, \`WebAssembly\`, \`crypto.subtle\`.
A process waits for its pending timers before it ends, and an exception a timer callback or an event listener throws
fails it; the time its timers wait counts against its \`timeoutMs\`. \`Date.now()\` and \`Math.random()\` work.`;
const WITHOUT_WEB_APIS = `Not available: \`fetch\`, \`setTimeout\`/\`setInterval\`, \`process\`, \`require\`, \`eval\`, \`new Function\`,
\`TextEncoder\`, \`crypto\`, \`WebAssembly\`. \`Date.now()\` and \`Math.random()\` work.`;

export function environmentDocs(limits: DocsSettings): string {
  const mib = Math.round(limits.memoryLimitBytes / 1048576);
  const fetches = limits.fetchAllow.length > 0;
  return `# QuickJS TypeScript environment

Process code runs in a fresh QuickJS-WASM sandbox per execution. Nothing of the host is reachable except the
globals below.

## The program
- The code is **one ES module written in TypeScript** (types are erased, not checked; \`enum\` and \`namespace\` work).
  Plain JavaScript is valid TypeScript.
- **Top-level \`await\` works.** The module body runs top to bottom; the process succeeds when it finishes.
- If the module has a **default export that is a function**, it is called with no arguments and awaited after the
  module body (so \`export default async function main() { ... }\` works too). Its return value is ignored: use
  \`cyrnel.output\`.
${imports(limits.packages)}
- A thrown error or rejected promise that nobody catches fails the process; its message and the line and column in
  your code are recorded as the process \`error\`, e.g. \`TypeError: cannot read property 'x' of undefined (at line 4,
  column 15)\`.

## Globals
| global | what it does |
|---|---|
| \`console.log/info/debug(...args)\` | one line to **stdout** per call |
| \`console.warn/error(...args)\` | one line to **stderr** per call |
| \`cyrnel.output(patch)\` | merges a **plain object** into the process output (\`Object.assign\` semantics: same key overwrites) |
| \`cyrnel.services[serviceId].tools[toolId].invoke(parameters)\` | calls a host tool; returns a Promise of its result |
| ECMAScript built-ins | \`JSON\`, \`Math\`, \`Date\`, \`Map\`, \`Set\`, \`Promise\`, typed arrays, \`structuredClone\`, \`queueMicrotask\`, ... |
${limits.webApis ? WEB_APIS_ROW : ""}${limits.intl ? INTL_ROW : ""}${fetches ? fetchRow(limits.fetchAllow) : ""}
${limits.webApis ? withWebApis(fetches) : WITHOUT_WEB_APIS}

### console
Arguments are joined with a space. Strings print as they are; other values print like Node's \`util.inspect\`
(\`{ a: 1, b: [ 'x' ] }\`, \`Map(1) { 'k' => 1 }\`, \`[Function: f]\`, nesting deeper than 2 levels as \`[Object]\`). A
first string argument may use \`%s %d %i %f %j %o %O %c %%\`. Output is UTF-8 and streamed while the process runs.
A line longer than about ${limits.consoleLine} characters (a value that repeats one big object many times counts every
repetition) is cut and ends with \`... [console output truncated: ...]\`; console calls never throw.

### cyrnel.output(patch)
\`patch\` must be a plain object (\`{...}\`), otherwise a \`TypeError\` is thrown. Values must be cloneable: primitives,
plain objects, arrays, \`Map\`, \`Set\`, \`Date\` (functions and class instances throw). The patch crosses as JSON:
\`Date\` becomes an ISO string, \`bigint\` a string, \`Map\` an object, \`Set\` an array, \`undefined\` is dropped. An object
used in several places is copied to each. A patch larger than about ${limits.data} characters of JSON (repetitions
counted) throws a \`SerializationError\`, one that contains itself a \`TypeError\`, and so does a \`"__proto__"\` key at its
top level; catch them with \`try/catch\`.

### Tools
\`cyrnel.services\` lists the services of the host; each has \`id\`, \`name\`, \`description\` and \`tools\`; each tool has \`id\`,
\`name\`, \`description\` and \`invoke(parameters)\`. \`parameters\` is a plain object that crosses as JSON, like an output
patch (same conversions and size limit: a violation rejects the Promise), validated against the tool's input schema
before the tool runs (read a tool's docs for its parameters). \`invoke\` returns a Promise: always \`await\` it. A
tool error rejects that Promise with an \`Error\` whose message says what went wrong; catch it with \`try/catch\`.
Naming an unknown service or tool throws a \`TypeError\` listing the available ones.

## Limits
- **Timeout**: the process is stopped when it runs longer than its \`timeoutMs\` (default ${limits.defaultTimeoutMs} ms),
  also inside \`while (true) {}\` and also while it awaits a tool; it then exits with \`timeout\`.${cpuCap(limits.maxCpuMs)}
- **Memory**: ${mib} MiB of heap; over it the process fails with \`MemoryError\`.
- **Stack**: deep recursion fails with \`RangeError: Maximum call stack size exceeded\`.
- At most ${limits.concurrency} processes run at once in this environment; the others wait in \`queued\`.
- A process can be killed at any time (exit state \`canceled\`).

## Examples
\`\`\`ts
interface Row { name: string; score: number }
const rows: Row[] = [{ name: "a", score: 3 }, { name: "b", score: 5 }];
const total = rows.reduce((sum, r) => sum + r.score, 0);
console.log("total", total);               // stdout: total 8
cyrnel.output({ total, best: rows[1] });   // output: { "total": 8, "best": { "name": "b", "score": 5 } }
\`\`\`

\`\`\`ts
// Keep state between runs with the built-in kv service (when the host provides it).
const { value } = await cyrnel.services.kv.tools.get.invoke({ key: "runs" });
const runs = (typeof value === "number" ? value : 0) + 1;
await cyrnel.services.kv.tools.set.invoke({ key: "runs", value: runs });
cyrnel.output({ runs });
\`\`\`

\`\`\`ts
try {
  await cyrnel.services.kv.tools.get.invoke({ key: 42 });   // wrong type
} catch (error) {
  console.error((error as Error).message);                 // stderr: why the parameters were refused
}
\`\`\`
`;
}

const IDENTIFIER = /^[A-Za-z_$][\w$]*$/;
const access = (name: string) => (IDENTIFIER.test(name) ? `.${name}` : `[${JSON.stringify(name)}]`);

const typeOf = (schema: JSONSchema): string => {
  if (Array.isArray(schema.enum)) return schema.enum.map((v) => JSON.stringify(v)).join(" \\| ");
  if ("const" in schema) return JSON.stringify(schema.const);
  const type = schema.type;
  if (Array.isArray(type)) return type.join(" \\| ");
  if (type === "array" && isSchema(schema.items)) return `${typeOf(schema.items)}[]`;
  return typeof type === "string" ? type : "any";
};
const isSchema = (value: unknown): value is JSONSchema =>
  typeof value === "object" && value !== null && !Array.isArray(value);
const cell = (text: string) => text.replace(/\|/g, "\\|").replace(/\n/g, " ");

/** A table of an object schema's properties, nested objects flattened with dotted names. */
function propertyRows(schema: JSONSchema, prefix = ""): string[] {
  const properties = isSchema(schema.properties) ? schema.properties : {};
  const required = Array.isArray(schema.required) ? schema.required : [];
  const rows: string[] = [];
  for (const [key, value] of Object.entries(properties)) {
    if (!isSchema(value)) continue;
    const description = typeof value.description === "string" ? value.description : "";
    const limits: string[] = [];
    for (const k of ["minimum", "maximum", "minLength", "maxLength", "minItems", "maxItems", "pattern", "default"]) {
      if (k in value) limits.push(`${k}: ${JSON.stringify(value[k])}`);
    }
    const notes = [description, limits.length > 0 ? `(${limits.join(", ")})` : ""].filter((s) => s !== "").join(" ");
    rows.push(
      `| \`${prefix}${key}\` | \`${typeOf(value)}\` | ${required.includes(key) ? "yes" : "no"} | ${cell(notes)} |`,
    );
    if (value.type === "object" && isSchema(value.properties)) rows.push(...propertyRows(value, `${prefix}${key}.`));
  }
  return rows;
}

function schemaSection(schema: JSONSchema, empty: string): string {
  const rows = propertyRows(schema);
  if (rows.length === 0) {
    return schema.type === "object" || schema.type === undefined ? empty : `A value of type \`${typeOf(schema)}\`.`;
  }
  return ["| name | type | required | notes |", "|---|---|---|---|", ...rows].join("\n");
}

/** A value that validates against `schema` (examples, defaults, enums and bounds first). */
export function exampleValue(schema: unknown, depth = 0): unknown {
  if (!isSchema(schema) || depth > 6) return null;
  if (Array.isArray(schema.examples) && schema.examples.length > 0) return schema.examples[0];
  if ("const" in schema) return schema.const;
  if ("default" in schema) return schema.default;
  if (Array.isArray(schema.enum) && schema.enum.length > 0) return schema.enum[0];
  for (const key of ["oneOf", "anyOf"]) {
    const options = schema[key];
    if (Array.isArray(options) && options.length > 0) return exampleValue(options[0], depth + 1);
  }
  const type = Array.isArray(schema.type) ? schema.type[0] : schema.type;
  switch (type) {
    case "string": {
      const min = typeof schema.minLength === "number" ? schema.minLength : 0;
      const max = typeof schema.maxLength === "number" ? schema.maxLength : Number.POSITIVE_INFINITY;
      return "example".padEnd(min, "x").slice(0, max);
    }
    case "integer":
    case "number": {
      const min = typeof schema.minimum === "number" ? schema.minimum : undefined;
      const max = typeof schema.maximum === "number" ? schema.maximum : undefined;
      const value = min ?? (max !== undefined ? Math.min(max, 1) : 1);
      return type === "integer" ? Math.ceil(value) : value;
    }
    case "boolean":
      return true;
    case "null":
      return null;
    case "array": {
      const min = typeof schema.minItems === "number" ? schema.minItems : 1;
      return Array.from({ length: Math.max(1, min) }, () => exampleValue(schema.items, depth + 1));
    }
    case "object": {
      const out: Record<string, unknown> = {};
      const properties = isSchema(schema.properties) ? schema.properties : {};
      for (const [key, value] of Object.entries(properties)) out[key] = exampleValue(value, depth + 1);
      return out;
    }
    default:
      return "example";
  }
}

/** Markdown for one tool, as it is called inside this environment. */
export function toolDocs(input: ToolDocsInput): string {
  const path = `cyrnel.services${access(input.serviceId)}.tools${access(input.toolId)}`;
  const example = exampleValue({ type: "object", ...input.inputSchema });
  const args = JSON.stringify(example, null, 2);
  return `# ${input.serviceId}.${input.toolId}

${input.description}

\`\`\`ts
const result = await ${path}.invoke(parameters);
\`\`\`

## Parameters
${schemaSection(input.inputSchema, "No parameters: pass `{}` or nothing.")}

## Returns
A Promise of the result.

${schemaSection(input.outputSchema, "The result is an object.")}

## Example
\`\`\`ts
const result = await ${path}.invoke(${args});
console.log(result);
\`\`\`

Errors (invalid parameters, a failing tool) reject the Promise with an \`Error\`; use \`try/catch\` to handle them.
`;
}
