/**
 * `runcode repl`: an interactive session. Each input is a cell of one session (a script with top-level `await` whose
 * declarations stay for later cells); an input the parser finds cut short (a syntax error at the end of input)
 * continues on the next line after a `... ` prompt. Console output goes to standard error as the cell makes it, and
 * the cell's result (its completion value, `undefined` included, as Node's REPL shows it) or its error to standard
 * output, formatted as `runcode file.ts` prints and within the same bounds. On a terminal the REPL prompts and keeps
 * a history (in memory and in `~/.runcode_history`, the last {@link HISTORY_SIZE} inputs); from a pipe it reads cells
 * silently. Ctrl-C stops a running cell (the session goes on), clears a line being typed, and twice in a row at the
 * prompt exits, as Ctrl-D and `.exit` do. `.save FILE` and `.load FILE` keep the session in a file as `runcode run
 * --session` does.
 * @module
 */
import { readFile, writeFile } from "node:fs/promises";
import { homedir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { parseArgs } from "node:util";
import type { CodeExecutionResult } from "../src/core/types.js";
import { RUN_FLAGS, timeoutOf, usageError, webOf } from "./cli-flags.js";
import { printable, printer } from "./cli-output.js";
import { ReplThread } from "./repl-thread.js";
import { readSessionFile, restoreRefusal, writeSessionFile } from "./session-file.js";

/** `runcode repl`'s usage, printed for `--help`. */
export const REPL_USAGE = `usage: runcode repl [--js] [--memory bytes] [--timeout ms] [--web-apis] [--allow-fetch origin]...
An interactive session: each input is a cell (TypeScript unless --js) whose top-level declarations stay for later
cells; its result is its completion value. --timeout bounds each cell. Commands:
${commandHelp()}`;

/** Inputs kept in the history, as Node's REPL keeps by default. */
const HISTORY_SIZE = 1000;
const HISTORY_FILE = join(homedir(), ".runcode_history");

/**
 * Whether `result` is a syntax error that says `source` is cut short, so that the input continues on the next line:
 * one at the end of the source (QuickJS's "unexpected token in expression: ''", SWC's "Expected '}', got '<eof>'" or
 * "Expression expected"), or a template literal left open (a string left open is a mistake, as in Node's REPL).
 */
function cutShort(source: string, result: CodeExecutionResult): boolean {
  const { error } = result;
  if (result.status === "success" || error?.name !== "SyntaxError" || error.line === undefined) return false;
  const lines = source.split("\n");
  const before = lines.slice(0, error.line - 1).reduce((sum, line) => sum + line.length + 1, 0);
  const offset = before + (error.column ?? 1) - 1;
  return (
    offset >= source.trimEnd().length || (source[offset] === "`" && /unterminated|end of string/i.test(error.message))
  );
}

/** The REPL's line for a cell that did not succeed: its error as Node's REPL shows an uncaught one. */
function failure(result: CodeExecutionResult): string {
  const { status, error } = result;
  const head = `${status === "error" ? "Uncaught" : `[${status}]`} ${error?.name ?? "Error"}: ${error?.message ?? ""}`;
  const at =
    error?.stack !== undefined && error.stack !== ""
      ? `\n${error.stack}`
      : error?.filename === undefined
        ? ""
        : `\n    at ${error.filename}:${error.line ?? 1}:${error.column ?? 1}`;
  return printable(head + at);
}

function commandHelp(): string {
  return `.save FILE  write the session's snapshot to FILE
.load FILE  replace the session with the one saved in FILE
.help       this list
.exit       leave (also Ctrl-D, or Ctrl-C twice)`;
}

export async function startRepl(argv: string[]): Promise<void> {
  let parsed: ReturnType<typeof parseFlags>;
  try {
    parsed = parseFlags(argv);
  } catch (error) {
    usageError((error as Error).message);
  }
  const { values } = parsed;
  if (values.help) {
    console.log(REPL_USAGE);
    return;
  }
  const timeout = timeoutOf(values.timeout);
  const language = values.js ? "javascript" : "typescript";
  const thread = new ReplThread({
    ...webOf(values),
    ...(values.memory === undefined ? {} : { memoryLimitBytes: Number(values.memory) }),
  });
  await thread.open();

  const terminal = process.stdin.isTTY === true;
  const history = terminal ? await readHistory() : [];
  const rl = createInterface({
    input: process.stdin,
    output: process.stdout,
    terminal,
    history,
    historySize: HISTORY_SIZE,
    removeHistoryDuplicates: true,
  });
  if (terminal) {
    // Each change is written as it happens (Node's REPL does the same), in order.
    let writing = Promise.resolve();
    rl.on("history", (lines: string[]) => {
      writing = writing.then(() => writeHistory(lines));
    });
  }
  let pending = "";
  /** The syntax error of `pending`, shown if the input ends before it is complete. */
  let cutResult: CodeExecutionResult | undefined;
  let running = false;
  let interruptedOnce = false;
  const prompt = () => {
    if (!terminal) return;
    rl.setPrompt(pending === "" ? "> " : "... ");
    rl.prompt();
  };
  const interrupt = () => {
    if (running) return thread.interrupt();
    if (!terminal) return rl.close();
    if (pending !== "" || rl.line !== "") {
      pending = "";
      interruptedOnce = false;
      // As Node's REPL: the line stays on the screen, and the input starts again below it.
      process.stdout.write("\n");
      rl.write(null, { ctrl: true, name: "u" });
      return prompt();
    }
    if (interruptedOnce) return rl.close();
    interruptedOnce = true;
    process.stdout.write("\n(To exit, press Ctrl+C again or Ctrl+D or type .exit)\n");
    prompt();
  };
  rl.on("SIGINT", interrupt);
  process.on("SIGINT", interrupt);

  const save = async (file: string) => {
    try {
      await writeSessionFile(file, await thread.snapshot());
      console.log(`Session saved to ${file}`);
    } catch (error) {
      console.log(`.save ${file} failed: ${(error as Error).message}`);
    }
  };
  const load = async (file: string) => {
    let bytes: Uint8Array | undefined;
    try {
      bytes = await readSessionFile(file);
    } catch (error) {
      return console.log(`.load: cannot read ${file}: ${(error as Error).message}`);
    }
    if (bytes === undefined) return console.log(`.load: ${file}: no such file`);
    try {
      await thread.open(bytes);
      console.log(`Session loaded from ${file}`);
    } catch (error) {
      console.log(restoreRefusal(file, error));
    }
  };

  /** Runs a command line; `false` when it asks to leave. */
  const command = async (name: string, argument: string): Promise<boolean> => {
    switch (name) {
      case "exit":
        return false;
      case "help":
        console.log(commandHelp());
        return true;
      case "save":
      case "load": {
        if (argument === "") {
          console.log(`.${name} needs a FILE`);
          return true;
        }
        await (name === "save" ? save(argument) : load(argument));
        return true;
      }
      default:
        console.log(`Invalid REPL keyword: .${name} (.help lists them)`);
        return true;
    }
  };

  prompt();
  for await (const line of rl) {
    interruptedOnce = false;
    const commandLine = pending === "" ? /^\.(\w+)\s*(.*)$/.exec(line.trim()) : null;
    if (commandLine !== null) {
      if (!(await command(commandLine[1] as string, (commandLine[2] as string).trim()))) break;
      prompt();
      continue;
    }
    const source = pending === "" ? line : `${pending}\n${line}`;
    if (source.trim() === "") {
      prompt();
      continue;
    }
    const printing = printer(performance.now() + timeout, values.timeout);
    running = true;
    let result: CodeExecutionResult;
    try {
      result = await thread.run({ source, language, timeoutMs: timeout }, printing.console);
    } catch (error) {
      // The session's thread is gone (a fault of the host): nothing more can run.
      console.error(`runcode: the session failed: ${(error as Error).message}`);
      process.exitCode = 1;
      break;
    } finally {
      running = false;
    }
    if (cutShort(source, result)) {
      pending = source;
      cutResult = result;
    } else {
      pending = "";
      console.log(result.status === "success" ? printing.result(result.result) : failure(result));
    }
    prompt();
  }
  if (pending !== "" && cutResult !== undefined) console.log(failure(cutResult));
  rl.close();
  process.off("SIGINT", interrupt);
  await thread.close();
}

/** The saved history, most recent first as readline keeps it; none when the file is missing or unreadable. */
async function readHistory(): Promise<string[]> {
  try {
    const text = await readFile(HISTORY_FILE, "utf8");
    return text
      .split("\n")
      .filter((line) => line !== "")
      .slice(0, HISTORY_SIZE);
  } catch {
    return [];
  }
}

/** Writes the history, most recent first, readable by its owner only; a failure costs only the history. */
async function writeHistory(lines: readonly string[]): Promise<void> {
  try {
    await writeFile(HISTORY_FILE, `${lines.slice(0, HISTORY_SIZE).join("\n")}\n`, { mode: 0o600 });
  } catch {}
}

function parseFlags(argv: string[]) {
  const { ts: _ts, ...flags } = RUN_FLAGS;
  return parseArgs({ args: argv, allowPositionals: false, options: flags });
}
