#!/usr/bin/env node
/**
 * `runcode [file]`: runs a JavaScript or TypeScript module (a file, or standard input) in a fresh sandbox, prints its
 * console output on standard error as the guest makes it, and then the `CodeExecutionResult` on standard output (as
 * inspected, or with `--json` in the wire encoding); guest text is escaped, and all of it bounded in size and by
 * `--timeout`. A module without a default export runs as a script (`execute: "script"`) unless `--export` or `--args`
 * name a call. Exits 0 on `success`, 1 otherwise, 2 on bad arguments. `runcode mcp` serves MCP over stdio; `runcode
 * serve` the HTTP API.
 * @module
 */
import { readFile } from "node:fs/promises";
import { parseArgs } from "node:util";
import { resultWireText } from "../src/core/result-wire.js";
import type { CodeExecutionLog, FetchOptions } from "../src/core/types.js";
import { FORMAT_BUDGET, makeInspect } from "../src/environment/inspect.js";
import { AllowList } from "../src/fetch/allow-list.js";
import { MAX_WALK_DEPTH, WorkBudget } from "../src/values/budget.js";
import { createSandbox, DEFAULT_MEMORY_LIMIT_BYTES, nodeWasm, safetyCapWithin } from "./index.js";
import { serveMcpOverStdio } from "./mcp.js";

const USAGE = `usage: runcode [file | -] [--js | --ts] [--export name] [--args JSON] [--globals JSON] [--memory bytes] [--timeout ms] [--web-apis] [--json]
               [--allow-fetch origin]...
       runcode mcp [--config servers.json] [--web-apis] [--allow-fetch origin]...
       runcode serve [--port 8080] [--host 127.0.0.1] [--db file:runcode.db] (runcode serve --help)
Runs the module in a fresh QuickJS sandbox: standard input when the file is \`-\` or absent; JavaScript for .js, .mjs
and .cjs files, TypeScript otherwise (--js and --ts decide instead). The result is the default export; a module
without one runs as a script, with no result. --export and --args call an export instead (default: default), which
must then exist. Console output goes to standard error as it happens; the result to standard output at the end, as
JSON in runcode's lossless wire encoding with --json. Exits 0 on success, 1 when the run did not succeed, 2 on bad
arguments. --web-apis gives the code the Web APIs (URL, TextEncoder, TextDecoder, atob, btoa, crypto.getRandomValues,
crypto.randomUUID, timers, AbortController, events).
--allow-fetch gives the code the Web APIs and \`fetch\`, reaching only that origin (\`https://api.example.com\`) or
path prefix (\`https://x.org/v1/\`); repeat it for more. Without it there is no \`fetch\`.
\`runcode mcp\` serves the run_code tool over the Model Context Protocol on standard input and output; the
configuration's "mcpServers" (as MCP clients write them) become modules the code can import.
\`runcode serve\` serves the HTTP API and the playground, with records in a libSQL database.`;

/**
 * Characters a terminal acts on rather than shows: C0 controls but newline and tab, DEL, C1 controls (ESC and BEL
 * would let guest text rewrite the screen, set the title or write the clipboard with OSC 52), and the bidirectional
 * overrides, isolates and marks that reorder what is shown.
 */
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point.
const CONTROLS = /[\0-\x08\v-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;

/** `text` with every control character written as an escape (`\x1B`, `\u202E`), so a terminal shows it. */
function printable(text: string): string {
  return text.replace(CONTROLS, (c) => {
    const code = c.charCodeAt(0);
    return code <= 0xff
      ? `\\x${code.toString(16).toUpperCase().padStart(2, "0")}`
      : `\\u${code.toString(16).toUpperCase()}`;
  });
}

/**
 * JSON `text` with every control character JSON leaves raw (DEL, C1, the bidirectional marks: only ever inside its
 * strings) written as a `\u` escape: the same JSON value, which a terminal shows as it is.
 */
function printableJson(text: string): string {
  return text.replace(CONTROLS, (c) => `\\u${c.charCodeAt(0).toString(16).toUpperCase().padStart(4, "0")}`);
}

/**
 * The printing's budget: {@link FORMAT_BUDGET} units of formatting (about a character written or a value visited
 * each, so shared references cannot multiply the output), spent at once when `deadline` has passed. The clock is
 * read every 1,024 spends, so the status and the head of the result always print.
 */
class PrintBudget extends WorkBudget {
  #spends = 0;
  /** Whether the deadline, not the units, ended the printing. */
  late = false;

  constructor(readonly deadline: number) {
    super(FORMAT_BUDGET, "printing");
  }

  override trySpend(units: number): boolean {
    if (++this.#spends % 1024 === 0 && !this.exhausted && performance.now() > this.deadline) {
      this.late = true;
      super.trySpend(this.left + 1);
    }
    return super.trySpend(units);
  }
}

/**
 * The printing of a run that must be done by `deadline`: its console entries on standard error as the guest makes
 * them (formatted as a console does, sharing one {@link PrintBudget}: past it they are cut and say so, and later ones
 * are not printed), and its result inspected within a budget of its own.
 */
function printer(deadline: number, timeout: string) {
  const within = (budget: PrintBudget) =>
    makeInspect({
      depth: MAX_WALK_DEPTH,
      truncated: () =>
        budget.late
          ? `... [output truncated: the ${timeout} ms timeout ran out]`
          : `... [output truncated: printing budget of ${FORMAT_BUDGET} units spent]`,
    });
  const consoleBudget = new PrintBudget(deadline);
  const { format } = within(consoleBudget);
  return {
    console: (entry: CodeExecutionLog) => {
      if (!consoleBudget.exhausted) process.stderr.write(`${printable(format(entry.args, consoleBudget))}\n`);
    },
    result: (result: unknown) => {
      const resultBudget = new PrintBudget(deadline);
      return printable(within(resultBudget).inspect(result, resultBudget));
    },
  };
}

/** Bad arguments: one line on standard error, exit code 2. */
function usageError(message: string): never {
  console.error(`runcode: ${message} (runcode --help)`);
  process.exit(2);
}

/** A flag's JSON value, or a one-line error naming the flag. */
function jsonFlag(name: string, text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (error) {
    return usageError(`--${name} is not valid JSON: ${(error as Error).message}`);
  }
}

/** The fetch setting of `--allow-fetch` (none: no `fetch`), or a one-line error naming the bad origin. */
function fetchOf(origins: string[] | undefined): FetchOptions | undefined {
  if (origins === undefined) return undefined;
  try {
    return { allow: new AllowList(origins, () => "--allow-fetch").entries };
  } catch (error) {
    return usageError((error as Error).message);
  }
}

async function runFile(): Promise<void> {
  let parsed: ReturnType<typeof parseFlags>;
  try {
    parsed = parseFlags();
  } catch (error) {
    usageError((error as Error).message);
  }
  const { values, positionals } = parsed;
  if (values.help) {
    console.log(USAGE);
    return;
  }
  const [file = "-"] = positionals;
  const args = values.args === undefined ? [] : jsonFlag("args", values.args);
  if (!Array.isArray(args)) usageError("--args must be a JSON array");
  const fn = values.export ?? "default";
  const globals = jsonFlag("globals", values.globals);
  if (typeof globals !== "object" || globals === null || Array.isArray(globals)) {
    usageError("--globals must be a JSON object");
  }
  const timeout = Number(values.timeout);
  if (!(timeout > 0)) usageError(`--timeout must be a positive number of milliseconds, got '${values.timeout}'`);
  const language = values.js
    ? "javascript"
    : values.ts
      ? "typescript"
      : /\.[mc]?js$/i.test(file)
        ? "javascript"
        : "typescript";
  let source: string;
  try {
    source = file === "-" ? await readStdin() : await readFile(file, "utf8");
  } catch (error) {
    usageError(`cannot read ${file}: ${(error as Error).message}`);
  }
  // On a worker thread, the timeout's terminate() stops any guest work within 50 ms, native loops that never poll
  // included; it is also the run's CPU cap, and its fuel at the rate processes get (the default fuel, 30 s worth,
  // stopped runs given a longer timeout before it).
  const fetch = fetchOf(values["allow-fetch"]);
  const { runCode } = createSandbox({
    wasm: nodeWasm,
    safetyCap: safetyCapWithin(timeout),
    threads: true,
    webApis: values["web-apis"] || fetch !== undefined,
    ...(fetch === undefined ? {} : { fetch }),
  });
  const deadline = performance.now() + timeout;
  const printing = printer(deadline, values.timeout);
  const memory = values.memory === undefined ? DEFAULT_MEMORY_LIMIT_BYTES : Number(values.memory);
  const run = runCode(source, {
    language,
    // Most files are scripts: without --export or --args, one without a default export still runs and succeeds.
    execute: values.export === undefined && values.args === undefined ? "script" : { fn, args },
    globals: globals as Record<string, unknown>,
    ...(file === "-" ? {} : { filename: file }),
    ...(values.memory === undefined ? {} : { memoryLimitBytes: memory }),
    onLog: printing.console,
  });
  const budget = setTimeout(() => run.terminate(`${values.timeout} ms budget`), timeout);
  const result = await run;
  clearTimeout(budget);
  // The wire text within the length a host's answer may take (the run's heap limit); the inspected value within the
  // timeout and a bounded size. Every control character of guest text escaped.
  console.log(values.json ? printableJson(resultWireText(result, memory)) : printing.result(result));
  if (result.error?.code === "missing_export") {
    console.error(`runcode: ${file === "-" ? "the module" : file} has no export '${fn}' to call (--export, --args)`);
  }
  process.exitCode = result.status === "success" ? 0 : 1;
}

function parseFlags() {
  return parseArgs({
    allowPositionals: true,
    options: {
      js: { type: "boolean", default: false },
      ts: { type: "boolean", default: false },
      export: { type: "string" },
      args: { type: "string" },
      globals: { type: "string", default: "{}" },
      memory: { type: "string" },
      timeout: { type: "string", default: "30000" },
      "allow-fetch": { type: "string", multiple: true },
      "web-apis": { type: "boolean", default: false },
      json: { type: "boolean", default: false },
      help: { type: "boolean", short: "h", default: false },
    },
  });
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}

if (process.argv[2] === "mcp") {
  const { values } = parseArgs({
    args: process.argv.slice(3),
    options: {
      config: { type: "string" },
      "web-apis": { type: "boolean", default: false },
      "allow-fetch": { type: "string", multiple: true },
    },
  });
  const fetch = fetchOf(values["allow-fetch"]);
  await serveMcpOverStdio({ configPath: values.config, webApis: values["web-apis"], fetch });
} else if (process.argv[2] === "serve") {
  // Loaded only here: plain runs need neither the database driver nor the HTTP server.
  const { serveCommand } = await import("./serve/command.js");
  await serveCommand(process.argv.slice(3));
} else {
  await runFile();
}
