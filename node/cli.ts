#!/usr/bin/env node
/**
 * `runcode [file]`: runs a JavaScript or TypeScript module (a file, or standard input) in a fresh sandbox and
 * prints the `CodeExecutionResult`. Exits 0 on `success`, 1 otherwise. `runcode mcp` serves MCP over stdio.
 * @module
 */
import { readFile } from "node:fs/promises";
import { inspect, parseArgs } from "node:util";
import { runCode } from "./index.js";
import { serveMcpOverStdio } from "./mcp.js";

if (process.argv[2] === "mcp") {
  const { values } = parseArgs({ args: process.argv.slice(3), options: { config: { type: "string" } } });
  await serveMcpOverStdio(values.config);
} else {
  await runFile();
}

async function runFile(): Promise<void> {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: {
      js: { type: "boolean", default: false },
      export: { type: "string", default: "default" },
      args: { type: "string", default: "[]" },
      globals: { type: "string", default: "{}" },
      memory: { type: "string" },
      timeout: { type: "string", default: "30000" },
      help: { type: "boolean", short: "h", default: false },
    },
  });

  if (values.help) {
    console.log(`usage: runcode [file] [--js] [--export name] [--args JSON] [--globals JSON] [--memory bytes] [--timeout ms]
       runcode mcp [--config servers.json]
Runs the module in a fresh QuickJS sandbox (standard input when no file is given) and prints the result.
\`runcode mcp\` serves the run_code tool over the Model Context Protocol on standard input and output; the
configuration's "mcpServers" (as MCP clients write them) become modules the code can import.`);
    process.exit(0);
  }

  const [file] = positionals;
  const source = file === undefined ? await readStdin() : await readFile(file, "utf8");
  const run = runCode(source, {
    language: values.js ? "javascript" : "typescript",
    execute: { fn: values.export, args: JSON.parse(values.args) as unknown[] },
    globals: JSON.parse(values.globals) as Record<string, unknown>,
    ...(file === undefined ? {} : { filename: file }),
    ...(values.memory === undefined ? {} : { memoryLimitBytes: Number(values.memory) }),
  });
  const budget = setTimeout(() => run.terminate(`${values.timeout} ms budget`), Number(values.timeout));
  const result = await run;
  clearTimeout(budget);
  console.log(inspect(result, { depth: null, colors: process.stdout.isTTY }));
  process.exitCode = result.status === "success" ? 0 : 1;
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}
