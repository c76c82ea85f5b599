/**
 * The conformance suite of `runCode`: one `describe` per section of docs/contract.md (the `§` numbers).
 * Platform-neutral, so the same suite runs in Node, workerd and the browser; each host passes its own `runCode`
 * (and, optionally, a sandbox factory).
 * @module
 */
import type { RunCode } from "../../src/core/types.js";
import { guestCloneSuite } from "./clone-battery.js";
import { executeSuite } from "./execute.js";
import { fetchSuite } from "./fetch.js";
import { freshRunsSuite } from "./fresh-runs.js";
import { globalsSuite } from "./globals.js";
import { handleSuite } from "./handle.js";
import type { ConformanceOptions } from "./helpers.js";
import { importsSuite } from "./imports.js";
import { intlSuite } from "./intl.js";
import { isolationSuite } from "./isolation.js";
import { limitsSuite } from "./limits.js";
import { logsSuite } from "./logs.js";
import { marshalingSuite } from "./marshaling.js";
import { modulesSuite } from "./modules.js";
import { optionsSuite } from "./options.js";
import { positionsSuite } from "./positions.js";
import { reportSuite } from "./report.js";
import { resultSuite } from "./result.js";
import { structuredCloneSuite } from "./structured-clone.js";
import { typescriptSuite } from "./typescript.js";
import { webApisSuite } from "./web-apis.js";

export type { ConformanceOptions } from "./helpers.js";

/** Declares the whole conformance suite against `runCode`. */
export function conformance(runCode: RunCode, opts: ConformanceOptions = {}): void {
  handleSuite(runCode);
  optionsSuite(runCode);
  executeSuite(runCode);
  importsSuite(runCode);
  modulesSuite(runCode);
  globalsSuite(runCode);
  marshalingSuite(runCode);
  structuredCloneSuite(runCode);
  guestCloneSuite(runCode);
  resultSuite(runCode);
  positionsSuite(runCode);
  logsSuite(runCode);
  reportSuite(runCode);
  limitsSuite(runCode, opts);
  isolationSuite(runCode);
  freshRunsSuite(opts);
  typescriptSuite(runCode);
  fetchSuite(opts);
  if (opts.sandbox !== undefined) webApisSuite(opts.sandbox);
  if (opts.sandbox !== undefined) intlSuite(opts.sandbox);
}
