/**
 * The `runcode` command's flags shared by its runs: bad arguments end the command with one line and exit code 2.
 * @module
 */
import { readFile } from "node:fs/promises";
import type { FetchOptions } from "../src/core/types.js";
import { AllowList } from "../src/fetch/allow-list.js";
import { bundlePackages } from "./packages.js";

/** Bad arguments: one line on standard error, exit code 2. */
export function usageError(message: string): never {
  console.error(`runcode: ${message} (runcode --help)`);
  process.exit(2);
}

/** A flag's JSON value, or a one-line error naming the flag. */
export function jsonFlag(name: string, text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (error) {
    return usageError(`--${name} is not valid JSON: ${(error as Error).message}`);
  }
}

/** The fetch setting of `--allow-fetch` (none: no `fetch`), or a one-line error naming the bad origin. */
export function fetchOf(origins: string[] | undefined): FetchOptions | undefined {
  if (origins === undefined) return undefined;
  try {
    return { allow: new AllowList(origins, () => "--allow-fetch").entries };
  } catch (error) {
    return usageError((error as Error).message);
  }
}

/** The flags of every way to run code: the language, the sandbox's settings and the time limit (`parseArgs`). */
export const RUN_FLAGS = {
  js: { type: "boolean", default: false },
  ts: { type: "boolean", default: false },
  memory: { type: "string" },
  timeout: { type: "string", default: "30000" },
  "allow-fetch": { type: "string", multiple: true },
  "web-apis": { type: "boolean", default: false },
  intl: { type: "boolean", default: false },
  help: { type: "boolean", short: "h", default: false },
} as const;

/** `--timeout`'s milliseconds, or a one-line error. */
export function timeoutOf(text: string): number {
  const timeout = Number(text);
  if (!(timeout > 0)) usageError(`--timeout must be a positive number of milliseconds, got '${text}'`);
  return timeout;
}

/** The language of `file`: JavaScript for .js, .mjs and .cjs, TypeScript otherwise, unless `--js` or `--ts` say. */
export function languageOf(flags: { js: boolean; ts: boolean }, file: string): "javascript" | "typescript" {
  if (flags.js) return "javascript";
  if (flags.ts) return "typescript";
  return /\.[mc]?js$/i.test(file) ? "javascript" : "typescript";
}

/** The sandbox settings of `--web-apis`, `--allow-fetch` (which gives the Web APIs too) and `--intl`. */
export function webOf(flags: { "web-apis": boolean; intl: boolean; "allow-fetch"?: string[] | undefined }): {
  webApis: boolean;
  intl: boolean;
  fetch?: FetchOptions;
} {
  const fetch = fetchOf(flags["allow-fetch"]);
  return {
    webApis: flags["web-apis"] || fetch !== undefined,
    intl: flags.intl,
    ...(fetch === undefined ? {} : { fetch }),
  };
}

/**
 * The packages of `--package` (none: no setting), each bundled now so that one that cannot be (not installed, needing
 * a Node built-in) is a one-line error naming it.
 */
export function packagesOf(names: string[] | undefined): { packages?: readonly string[] } {
  if (names === undefined) return {};
  try {
    bundlePackages(names);
  } catch (error) {
    usageError(`--package: ${(error as Error).message.replace(/^createSandbox: /, "")}`);
  }
  return { packages: names };
}

/** The text of `file`, or of standard input for `-`; a one-line error when it cannot be read. */
export async function readSource(file: string): Promise<string> {
  try {
    if (file !== "-") return await readFile(file, "utf8");
    const chunks: Buffer[] = [];
    for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks).toString("utf8");
  } catch (error) {
    return usageError(`cannot read ${file}: ${(error as Error).message}`);
  }
}
