/**
 * From what the user typed to what a run needs: the worker payload (JSON values parsed, function snippets kept
 * as text), the body of the Worker's `POST /run` (data only), and the session mode's settings and cell.
 * @module
 */
import type { JsonValue } from "../src/values/json.js";
import type { CellPayload, HostValue, RunPayload, SessionSettings } from "./messages.js";
import type { HostEntry, Session } from "./session.js";

/** A field the user has to fix, named so the page can say which one. */
export class InputError extends Error {
  override name = "InputError";
}

function parseJson(text: string, what: string): JsonValue {
  try {
    return JSON.parse(text) as JsonValue;
  } catch (error) {
    throw new InputError(`${what}: ${(error as Error).message}`);
  }
}

function hostValue(entry: HostEntry, what: string): HostValue {
  if (entry.kind === "function") return { kind: "function", source: entry.text };
  return { kind: "json", value: parseJson(entry.text, what) };
}

/** An opening or closing Markdown fence: three or more backticks or tildes, then perhaps a language. */
const FENCE = /^ {0,3}(`{3,}|~{3,})[\w+-]*\s*$/;

/**
 * The code of an answer pasted with its Markdown (as a model writes it): when the text has a fenced block, the first
 * block's lines with every other line blanked, so lines and columns stay those of the editor; else the text as is.
 */
export function unfence(source: string): { code: string; fenced: boolean } {
  const lines = source.split("\n");
  const open = lines.findIndex((line) => FENCE.test(line));
  if (open < 0) return { code: source, fenced: false };
  const marker = (FENCE.exec(lines[open] as string) as RegExpExecArray)[1] as string;
  // A closing fence is the opening one's character, at least as many times, and nothing else.
  const closes = (line: string) => {
    const fence = line.trim();
    return fence.length >= marker.length && fence === (marker[0] as string).repeat(fence.length);
  };
  let close = lines.findIndex((line, i) => i > open && closes(line));
  if (close < 0) close = lines.length;
  return { code: lines.map((line, i) => (i > open && i < close ? line : "")).join("\n"), fenced: true };
}

/** The worker payload for `session`; throws an {@link InputError} for a field that does not parse. */
export function toPayload(session: Session): RunPayload {
  const [entry, ...rest] = session.files;
  if (entry === undefined) throw new InputError("there is no entry file");
  const options: RunPayload["options"] = { language: session.language };
  const fn = session.executeFn.trim() === "" ? "default" : session.executeFn.trim();
  const args = session.executeArgs.trim() === "" ? [] : parseJson(session.executeArgs, "execute args");
  if (!Array.isArray(args)) throw new InputError("execute args: must be a JSON array");
  // Pasted code is mostly a script: unless the user names a call, a module without a default export still runs.
  options.execute = fn === "default" && args.length === 0 ? "script" : { fn, args };
  if (rest.length > 0) options.modules = Object.fromEntries(rest.map((f) => [f.name, unfence(f.source).code]));
  if (session.filename.trim() !== "") options.filename = session.filename.trim();
  if (session.memoryLimitBytes.trim() !== "") {
    const bytes = Number(session.memoryLimitBytes.replaceAll("_", ""));
    if (!Number.isSafeInteger(bytes) || bytes <= 0) throw new InputError("memoryLimitBytes: a positive whole number");
    options.memoryLimitBytes = bytes;
  }
  const globals: Record<string, HostValue> = {};
  for (const g of session.globals) {
    if (g.name.trim() === "") throw new InputError("globals: a name is empty");
    globals[g.name.trim()] = hostValue(g, `global ${g.name}`);
  }
  const imports: Record<string, Record<string, HostValue>> = {};
  for (const i of session.imports) {
    if (i.specifier.trim() === "" || i.name.trim() === "")
      throw new InputError("imports: a specifier or name is empty");
    const specifier = i.specifier.trim();
    const namespace = imports[specifier] ?? {};
    imports[specifier] = namespace;
    namespace[i.name.trim()] = hostValue(i, `import ${i.specifier} ${i.name}`);
  }
  return { source: unfence(entry.source).code, options, globals, imports, webApis: session.webApis };
}

/**
 * The `POST /run` body: data-only options. Function globals, all imports and the Web APIs setting (the edge host's
 * `RUNCODE_WEB_APIS` decides) stay behind, and are named.
 */
export function toEdgeBody(payload: RunPayload): { body: { source: string; options: object }; dropped: string[] } {
  const dropped: string[] = [];
  const globals: Record<string, JsonValue> = {};
  for (const [name, value] of Object.entries(payload.globals)) {
    if (value.kind === "json") globals[name] = value.value;
    else dropped.push(`global ${name} (a function)`);
  }
  for (const [specifier, namespace] of Object.entries(payload.imports))
    for (const name of Object.keys(namespace)) dropped.push(`import ${specifier}.${name}`);
  if (payload.webApis) dropped.push("webApis (the edge host's RUNCODE_WEB_APIS decides)");
  const options: Record<string, unknown> = { ...payload.options };
  if (Object.keys(globals).length > 0) options.globals = globals;
  return { body: { source: payload.source, options }, dropped };
}

/**
 * The session mode's parts of a payload: the settings a session is made with (modules, memory cap, host values, Web
 * APIs) and the cell (the entry's code, its language and filename). `execute` has no part: a cell is a script.
 */
export function toSessionParts(payload: RunPayload): { settings: SessionSettings; cell: CellPayload } {
  const { modules, memoryLimitBytes, language, filename } = payload.options;
  const { globals, imports, webApis } = payload;
  return {
    settings: {
      globals,
      imports,
      webApis,
      ...(modules !== undefined && { modules }),
      ...(memoryLimitBytes !== undefined && { memoryLimitBytes }),
    },
    cell: {
      source: payload.source,
      ...(language !== undefined && { language }),
      ...(filename !== undefined && { filename }),
    },
  };
}
