/**
 * Validation of `runCode` arguments. Bad options are caller bugs: they throw a `TypeError` naming the key, before
 * any sandbox exists.
 * @module
 */
import { MAX_MEMORY_LIMIT_BYTES } from "./engine.js";
import type { CodeExecutionLog, CodeExecutionOptions } from "./types.js";

/** Options after validation, with every default applied. */
interface ResolvedOptions {
  fn: string;
  args: unknown[];
  /** `execute: "script"`: a module without the default export succeeds with no result instead of failing to link. */
  script: boolean;
  imports: Record<string, Record<string, unknown>>;
  modules: Record<string, string>;
  globals: Record<string, unknown>;
  language: "javascript" | "typescript";
  memoryLimitBytes: number;
  filename: string;
  report: ((value: unknown) => void) | undefined;
  onLog: ((entry: CodeExecutionLog) => void) | undefined;
  /** Who the run's work counts for (see `CodeExecutionOptions.tenant`); `undefined`: the library's caller. */
  tenant: string | undefined;
  /** See `CodeExecutionOptions.timeoutMs`; `undefined`: only the sandbox's safety cap stops the run. */
  timeoutMs: number | undefined;
}

const KEYS = new Set([
  "execute",
  "imports",
  "modules",
  "globals",
  "language",
  "memoryLimitBytes",
  "filename",
  "report",
  "onLog",
  "tenant",
  "timeoutMs",
]);
/** Longest `timeoutMs`: the longest a timer waits (a longer one fires at once). */
const MAX_TIMEOUT_MS = 2 ** 31 - 1;
/** Longest `tenant` name, in UTF-16 code units: a host's own identifier, never a payload. */
const MAX_TENANT_LENGTH = 256;
const IDENTIFIER = /^[\p{ID_Start}$_][\p{ID_Continue}$\u200C\u200D]*$/u;
/** Reserved words, plus globals a script cannot redeclare or that the runtime's own scripts rely on. */
const NOT_BINDABLE = new Set(
  (
    "await break case catch class const continue debugger default delete do else enum export extends false finally " +
    "for function if implements import in instanceof interface let new null package private protected public return " +
    "static super switch this throw true try typeof var void while with yield undefined NaN Infinity globalThis"
  ).split(" "),
);
/** Names of the runtime's own modules begin with this; no user module's name does. */
export const INTERNAL_PREFIX = "runcode:";

/** Specifiers with a scheme (`https:`, `data:`, ...) are URLs and never resolve. */
export const URL_SPECIFIER = /^[a-zA-Z][a-zA-Z\d+.-]*:\/\//;

const fail = (key: string, expected: string, value: unknown): never => {
  const got = value === null ? "null" : Array.isArray(value) ? "an array" : typeof value;
  throw new TypeError(`runCode: options.${key} must be ${expected}, got ${got}`);
};
const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

export function resolveOptions(
  source: unknown,
  options: CodeExecutionOptions | undefined,
  defaultMemoryLimitBytes: number,
): ResolvedOptions {
  if (typeof source !== "string") {
    throw new TypeError(`runCode: source must be a string, got ${source === null ? "null" : typeof source}`);
  }
  if (options === undefined) options = {};
  else if (!isRecord(options)) throw new TypeError("runCode: options must be an object");
  for (const key of Object.keys(options)) {
    if (!KEYS.has(key)) throw new TypeError(`runCode: unknown option '${key}' (options.${key})`);
  }
  const {
    execute = {},
    imports = {},
    modules = {},
    globals = {},
    language = "typescript",
  } = options as Record<string, unknown>;
  const {
    memoryLimitBytes = defaultMemoryLimitBytes,
    filename = "<runCode>",
    report,
    onLog,
    tenant,
    timeoutMs,
  } = options as Record<string, unknown>;

  const script = execute === "script";
  const call = script ? {} : execute;
  if (!isRecord(call)) return fail("execute", "an object { fn?, args? } or 'script'", call);
  for (const key of Object.keys(call)) {
    if (key !== "fn" && key !== "args") throw new TypeError(`runCode: unknown option 'execute.${key}'`);
  }
  const { fn = "default", args = [] } = call;
  if (typeof fn !== "string") fail("execute.fn", "a string", fn);
  if (!Array.isArray(args)) fail("execute.args", "an array", args);

  if (!isRecord(imports)) return fail("imports", "an object of specifier -> exports object", imports);
  for (const [specifier, exports] of Object.entries(imports)) {
    if (specifier === "" || specifier.startsWith(".") || specifier.startsWith("/") || URL_SPECIFIER.test(specifier)) {
      throw new TypeError(
        `runCode: options.imports key '${specifier}' must be a bare specifier such as 'fs' or '@scope/pkg'`,
      );
    }
    if (!isRecord(exports)) fail(`imports['${specifier}']`, "an object of named exports", exports);
  }

  if (!isRecord(modules)) return fail("modules", "an object of relative specifier -> source", modules);
  for (const [key, text] of Object.entries(modules)) {
    if (!key.startsWith("./")) {
      throw new TypeError(`runCode: options.modules key '${key}' must be a relative specifier such as './helpers.js'`);
    }
    if (typeof text !== "string") fail(`modules['${key}']`, "a source string", text);
  }

  if (!isRecord(globals)) return fail("globals", "an object of identifier -> value", globals);
  for (const name of Object.keys(globals)) {
    if (!IDENTIFIER.test(name) || NOT_BINDABLE.has(name)) {
      throw new TypeError(`runCode: options.globals key '${name}' is not an identifier a global can be bound to`);
    }
  }

  if (language !== "javascript" && language !== "typescript") {
    fail("language", "'javascript' or 'typescript'", language);
  }
  if (typeof memoryLimitBytes !== "number" || !Number.isSafeInteger(memoryLimitBytes) || memoryLimitBytes <= 0) {
    fail("memoryLimitBytes", "a positive integer number of bytes", memoryLimitBytes);
  }
  if ((memoryLimitBytes as number) > MAX_MEMORY_LIMIT_BYTES) {
    throw new RangeError(
      `runCode: options.memoryLimitBytes must be at most ${MAX_MEMORY_LIMIT_BYTES} (the engine's memory holds 2 GiB with its overhead), got ${memoryLimitBytes}`,
    );
  }
  if (typeof filename !== "string" || filename === "") return fail("filename", "a non-empty string", filename);
  if (report !== undefined && typeof report !== "function") fail("report", "a function", report);
  if (onLog !== undefined && typeof onLog !== "function") fail("onLog", "a function", onLog);
  if (tenant !== undefined && (typeof tenant !== "string" || tenant.length > MAX_TENANT_LENGTH)) {
    fail("tenant", `a string of at most ${MAX_TENANT_LENGTH} characters`, tenant);
  }
  if (timeoutMs !== undefined && !(typeof timeoutMs === "number" && timeoutMs > 0 && timeoutMs <= MAX_TIMEOUT_MS)) {
    fail("timeoutMs", `a number of milliseconds above 0 and at most ${MAX_TIMEOUT_MS}`, timeoutMs);
  }
  if (filename.startsWith(INTERNAL_PREFIX)) {
    throw new TypeError(`runCode: options.filename must not start with '${INTERNAL_PREFIX}'`);
  }
  const entry = entryKey(filename);
  if (Object.hasOwn(modules, entry)) {
    throw new TypeError(`runCode: options.modules['${entry}'] collides with options.filename`);
  }

  return {
    fn,
    args,
    script,
    imports,
    modules,
    globals,
    language,
    memoryLimitBytes,
    filename,
    report,
    onLog,
    tenant,
    timeoutMs,
  } as ResolvedOptions;
}

/** The `modules` key the entry stands for: its filename from the root of the module graph. */
export function entryKey(filename: string): string {
  return `./${stripRoot(filename)}`;
}

/** `filename` without the `./` or `/` it may start with. */
export function stripRoot(filename: string): string {
  return filename.replace(/^(\.\/|\/)+/, "");
}
