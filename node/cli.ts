#!/usr/bin/env node
/**
 * `runcode [file]`: runs a JavaScript or TypeScript module (a file, or standard input) in a fresh sandbox, prints its
 * console output on standard error as the guest makes it, and then the `CodeExecutionResult` on standard output (as
 * inspected, or with `--json` in the wire encoding); guest text is escaped, and all of it bounded in size and by
 * `--timeout`. A module without a default export runs as a script (`execute: "script"`) unless `--export` or `--args`
 * name a call. Exits 0 on `success`, 1 otherwise, 2 on bad arguments. `runcode repl` (node/repl.ts) and `runcode run
 * --session` (node/session-command.ts) keep a session; `runcode mcp` serves MCP over stdio; `runcode serve` the HTTP
 * API.
 * @module
 */
import { parseArgs } from "node:util";
import {
  fetchOf,
  jsonFlag,
  languageOf,
  packagesOf,
  RUN_FLAGS,
  readSource,
  timeoutOf,
  usageError,
  webOf,
} from "./cli-flags.js";
import { printedRun } from "./cli-output.js";
import { createSandbox, DEFAULT_MEMORY_LIMIT_BYTES, nodeWasm, safetyCapWithin } from "./index.js";
import { serveMcpOverStdio } from "./mcp.js";

const USAGE = `usage: runcode [file | -] [--js | --ts] [--export name] [--args JSON] [--globals JSON] [--memory bytes] [--timeout ms] [--web-apis] [--json]
               [--allow-fetch origin]... [--package name]... [--intl]
       runcode repl [--js] [--memory bytes] [--timeout ms] [--web-apis] [--allow-fetch origin]... (runcode repl --help)
       runcode run --session FILE [cell | -] [--js | --ts] [--timeout ms] [--json] ... (runcode run --help)
       runcode mcp [--config servers.json] [--web-apis] [--allow-fetch origin]... [--package name]... [--intl]
       runcode packages add name... [--lock runcode-packages.json]
       runcode serve [--port 8080] [--host 127.0.0.1] [--db file:runcode.db] (runcode serve --help)
Runs the module in a fresh QuickJS sandbox: standard input when the file is \`-\` or absent; JavaScript for .js, .mjs
and .cjs files, TypeScript otherwise (--js and --ts decide instead). The result is the default export; a module
without one runs as a script, with no result. --export and --args call an export instead (default: default), which
must then exist. Console output goes to standard error as it happens; the result to standard output at the end, as
JSON in runcode's lossless wire encoding with --json. Exits 0 on success, 1 when the run did not succeed, 2 on bad
arguments. --web-apis gives the code the Web APIs (URL, TextEncoder, TextDecoder, atob, btoa, crypto.getRandomValues,
crypto.randomUUID, timers, AbortController, events). --intl gives it \`Intl\` (NumberFormat, DateTimeFormat with time
zones, Collator, PluralRules, RelativeTimeFormat, ListFormat, Segmenter) and locale-aware toLocaleString, answered by
Node's own ICU with "en-US" and "UTC" where the code names no locale or time zone.
--allow-fetch gives the code the Web APIs and \`fetch\`, reaching only that origin (\`https://api.example.com\`) or
path prefix (\`https://x.org/v1/\`); repeat it for more. Without it there is no \`fetch\`.
--package gives the code an npm package installed where runcode runs (\`--package zod --package date-fns/format\`),
bundled once and imported by its name. \`runcode packages add\` bundles packages into runcode-packages/ and lists them
in runcode-packages.json, which \`runcode serve\` boots (RUNCODE_PACKAGES).
\`runcode repl\` is an interactive session, each input a cell whose declarations stay for the next; \`runcode run
--session FILE cell.ts\` runs one cell of the session kept in FILE and saves it there.
\`runcode mcp\` serves the run_code tool over the Model Context Protocol on standard input and output; the
configuration's "mcpServers" (as MCP clients write them) become modules the code can import.
\`runcode serve\` serves the HTTP API and the playground, with records in a libSQL database.`;

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
  const timeout = timeoutOf(values.timeout);
  const language = languageOf(values, file);
  const source = await readSource(file);
  // The default path: a run past its slice of fuel goes on on a worker thread, where the timeout's terminate() stops
  // any guest work within 50 ms, native loops that never poll included; the timeout is also the run's CPU cap, and
  // its fuel at the rate processes get (the default fuel, 30 s worth, stopped runs given a longer timeout before it).
  const { runCode } = createSandbox({
    wasm: nodeWasm,
    safetyCap: safetyCapWithin(timeout),
    ...webOf(values),
    ...packagesOf(values.package),
  });
  const memory = values.memory === undefined ? DEFAULT_MEMORY_LIMIT_BYTES : Number(values.memory);
  const result = await printedRun(
    (onLog) =>
      runCode(source, {
        language,
        // Most files are scripts: without --export or --args, one without a default export still runs and succeeds.
        execute: values.export === undefined && values.args === undefined ? "script" : { fn, args },
        globals: globals as Record<string, unknown>,
        ...(file === "-" ? {} : { filename: file }),
        ...(values.memory === undefined ? {} : { memoryLimitBytes: memory }),
        onLog,
      }),
    { timeout: values.timeout, json: values.json, maxLength: memory },
  );
  if (result.error?.code === "missing_export") {
    console.error(`runcode: ${file === "-" ? "the module" : file} has no export '${fn}' to call (--export, --args)`);
  }
  process.exitCode = result.status === "success" ? 0 : 1;
}

function parseFlags() {
  return parseArgs({
    allowPositionals: true,
    options: {
      ...RUN_FLAGS,
      export: { type: "string" },
      args: { type: "string" },
      globals: { type: "string", default: "{}" },
      json: { type: "boolean", default: false },
      package: { type: "string", multiple: true },
    },
  });
}

if (process.argv[2] === "mcp") {
  const { values } = parseArgs({
    args: process.argv.slice(3),
    options: {
      config: { type: "string" },
      "web-apis": { type: "boolean", default: false },
      intl: { type: "boolean", default: false },
      "allow-fetch": { type: "string", multiple: true },
      package: { type: "string", multiple: true },
    },
  });
  const fetch = fetchOf(values["allow-fetch"]);
  const { packages } = packagesOf(values.package);
  await serveMcpOverStdio({
    configPath: values.config,
    webApis: values["web-apis"],
    intl: values.intl,
    fetch,
    packages,
  });
} else if (process.argv[2] === "packages") {
  const { packagesCommand } = await import("./packages-command.js");
  packagesCommand(process.argv.slice(3));
} else if (process.argv[2] === "repl") {
  const { startRepl } = await import("./repl.js");
  await startRepl(process.argv.slice(3));
} else if (process.argv[2] === "run") {
  const { runSessionCommand } = await import("./session-command.js");
  await runSessionCommand(process.argv.slice(3));
} else if (process.argv[2] === "serve") {
  // Loaded only here: plain runs need neither the database driver nor the HTTP server.
  const { serveCommand } = await import("./serve/command.js");
  await serveCommand(process.argv.slice(3));
} else {
  await runFile();
}
