/**
 * What the page edits and keeps: code, modules and options as the user typed them. Saved to `localStorage` on
 * every change and shared as `#s=<deflate-raw, base64url JSON>` in the link.
 * @module
 */

/** One global or one import export: JSON data, or a JS function snippet run as a host function in the worker. */
export interface HostEntry {
  /** For imports: the module specifier. Empty for globals. */
  specifier: string;
  name: string;
  kind: "json" | "function";
  text: string;
}

/** One source file: the entry (index 0) or a module keyed by its relative specifier. */
interface SourceFile {
  name: string;
  source: string;
}

export interface Session {
  version: 1;
  files: SourceFile[];
  language: "typescript" | "javascript";
  /** `filename` option; empty = the core's default. */
  filename: string;
  /** Bytes as typed; empty = the core's default. */
  memoryLimitBytes: string;
  executeFn: string;
  /** JSON array text. */
  executeArgs: string;
  globals: HostEntry[];
  imports: HostEntry[];
  /** Runs in the browser get the Web APIs (`createSandbox({ webApis: true })`). */
  webApis: boolean;
}

const STORAGE_KEY = "runcode.playground.session";

/** The session of a first visit. */
export function defaultSession(): Session {
  return {
    version: 1,
    files: [
      {
        name: "main.ts",
        source: `const total: number = input.reduce((a: number, b: number) => a + b, 0);\nexport default { total, at: new Date(0), seen: new Set(input) };\n`,
      },
    ],
    language: "typescript",
    filename: "",
    memoryLimitBytes: "",
    executeFn: "default",
    executeArgs: "[]",
    globals: [{ specifier: "", name: "input", kind: "json", text: "[1, 2, 3]" }],
    imports: [],
    webApis: false,
  };
}

const isString = (value: unknown): value is string => typeof value === "string";

function entries(value: unknown, withSpecifier: boolean): HostEntry[] | undefined {
  if (!Array.isArray(value)) return undefined;
  const out: HostEntry[] = [];
  for (const item of value as unknown[]) {
    const e = item as Partial<HostEntry> | null;
    if (e === null || typeof e !== "object" || !isString(e.name) || !isString(e.text)) return undefined;
    if (e.kind !== "json" && e.kind !== "function") return undefined;
    if (withSpecifier && !isString(e.specifier)) return undefined;
    out.push({ specifier: withSpecifier ? (e.specifier as string) : "", name: e.name, kind: e.kind, text: e.text });
  }
  return out;
}

/** Validates untrusted session data (from a link or storage); `undefined` when it is not a session. */
export function parseSession(value: unknown): Session | undefined {
  if (typeof value !== "object" || value === null) return undefined;
  const s = value as Record<string, unknown>;
  if (s.version !== 1 || !Array.isArray(s.files) || s.files.length === 0) return undefined;
  const files: SourceFile[] = [];
  for (const file of s.files as unknown[]) {
    const f = file as Partial<SourceFile> | null;
    if (f === null || typeof f !== "object" || !isString(f.name) || !isString(f.source)) return undefined;
    files.push({ name: f.name, source: f.source });
  }
  const globals = entries(s.globals, false);
  const imports = entries(s.imports, true);
  if (globals === undefined || imports === undefined) return undefined;
  if (s.language !== "typescript" && s.language !== "javascript") return undefined;
  for (const key of ["filename", "memoryLimitBytes", "executeFn", "executeArgs"] as const)
    if (!isString(s[key])) return undefined;
  // Sessions saved before the setting existed have none: off.
  const webApis = s.webApis ?? false;
  if (typeof webApis !== "boolean") return undefined;
  return {
    version: 1,
    files,
    language: s.language,
    filename: s.filename as string,
    memoryLimitBytes: s.memoryLimitBytes as string,
    executeFn: s.executeFn as string,
    executeArgs: s.executeArgs as string,
    globals,
    imports,
    webApis,
  };
}

function toBase64Url(bytes: Uint8Array): string {
  let binary = "";
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return btoa(binary).replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "");
}

function fromBase64Url(text: string): Uint8Array {
  const binary = atob(text.replaceAll("-", "+").replaceAll("_", "/"));
  return Uint8Array.from(binary, (c) => c.charCodeAt(0));
}

async function pipe(bytes: Uint8Array, stream: CompressionStream | DecompressionStream): Promise<Uint8Array> {
  const out = new Blob([bytes as BlobPart]).stream().pipeThrough(stream);
  return new Uint8Array(await new Response(out).arrayBuffer());
}

/** The hash of a share link for `session`. */
export async function encodeShare(session: Session): Promise<string> {
  const json = new TextEncoder().encode(JSON.stringify(session));
  return `#s=${toBase64Url(await pipe(json, new CompressionStream("deflate-raw")))}`;
}

/** The session in a share link's hash; `undefined` when there is none or it is damaged. */
export async function decodeShare(hash: string): Promise<Session | undefined> {
  const match = /^#s=([A-Za-z0-9_-]+)$/.exec(hash);
  if (match === null) return undefined;
  try {
    const bytes = await pipe(fromBase64Url(match[1] as string), new DecompressionStream("deflate-raw"));
    return parseSession(JSON.parse(new TextDecoder().decode(bytes)));
  } catch {
    return undefined;
  }
}

/** The saved session, if any. */
export function loadStored(storage: Storage): Session | undefined {
  try {
    const text = storage.getItem(STORAGE_KEY);
    return text === null ? undefined : parseSession(JSON.parse(text));
  } catch {
    return undefined;
  }
}

/** Saves `session`; a full or disabled storage is not an error worth showing. */
export function store(storage: Storage, session: Session): void {
  try {
    storage.setItem(STORAGE_KEY, JSON.stringify(session));
  } catch {
    // Quota exceeded or storage disabled (private mode): the session simply is not kept.
  }
}
