/**
 * `runcode run --session FILE [cell | -]`: one cell of a session kept in FILE, for scripts and agents that call the
 * command once per step. Restores FILE (a new session when it does not exist), runs the cell (a script with top-level
 * `await` whose completion value is the result; declarations stay for later cells), prints its console output and
 * result as `runcode file.ts` does, and saves the session to FILE again (node/session-file.ts: atomically). A cell
 * that fails still saves what it did before it stopped, as a REPL keeps it; a session that cannot go on is not saved.
 * Exits 0 when the cell succeeded, 1 when it did not or the session could not be saved, 2 on bad arguments or a FILE
 * that cannot be restored (left as it is).
 * @module
 */
import { parseArgs } from "node:util";
import { languageOf, RUN_FLAGS, readSource, timeoutOf, usageError, webOf } from "./cli-flags.js";
import { printedRun } from "./cli-output.js";
import {
  createSession,
  DEFAULT_MEMORY_LIMIT_BYTES,
  restoreSession,
  type Session,
  type SessionOptions,
} from "./index.js";
import { readSessionFile, restoreRefusal, writeSessionFile } from "./session-file.js";

/** `runcode run`'s usage, printed for `--help`. */
export const RUN_USAGE = `usage: runcode run --session FILE [cell | -] [--js | --ts] [--memory bytes] [--timeout ms] [--web-apis] [--json]
               [--allow-fetch origin]...
Runs one cell of the session kept in FILE (a new session when FILE does not exist) and saves the session to FILE.
The cell (standard input when it is \`-\` or absent) is a script with top-level await: its top-level declarations stay
for later cells and its result is its completion value (\`x + 1\`). Prints as \`runcode file.ts\` does; exits 0 on
success, 1 when the cell did not succeed, 2 on bad arguments or a FILE that is not a session snapshot (left as it
is). Give the same --web-apis and --allow-fetch on every call of one FILE.`;

export async function runSessionCommand(argv: string[]): Promise<void> {
  let parsed: ReturnType<typeof parseFlags>;
  try {
    parsed = parseFlags(argv);
  } catch (error) {
    usageError((error as Error).message);
  }
  const { values, positionals } = parsed;
  if (values.help) {
    console.log(RUN_USAGE);
    return;
  }
  const path = values.session;
  if (path === undefined) usageError("runcode run needs --session FILE");
  if (positionals.length > 1) usageError(`runcode run takes one cell, got ${positionals.length}`);
  const [file = "-"] = positionals;
  const timeout = timeoutOf(values.timeout);
  const memory = values.memory === undefined ? DEFAULT_MEMORY_LIMIT_BYTES : Number(values.memory);
  const options: SessionOptions = {
    ...webOf(values),
    ...(values.memory === undefined ? {} : { memoryLimitBytes: memory }),
  };
  const source = await readSource(file);
  const session = await open(path, options);
  const result = await printedRun(
    (onLog) =>
      session.run(source, {
        language: languageOf(values, file),
        timeoutMs: timeout,
        ...(file === "-" ? {} : { filename: file }),
        onLog,
      }),
    { timeout: values.timeout, json: values.json, maxLength: memory },
  );
  process.exitCode = result.status === "success" ? 0 : 1;
  let bytes: Uint8Array;
  try {
    bytes = await session.snapshot();
  } catch (error) {
    console.error(`runcode: the session could not go on (${(error as Error).message}); ${path} is left as it was`);
    process.exitCode = 1;
    return;
  } finally {
    session.close();
  }
  try {
    await writeSessionFile(path, bytes);
  } catch (error) {
    console.error(`runcode: cannot save the session to ${path} (${(error as Error).message}); it is left as it was`);
    process.exitCode = 1;
  }
}

/** The session of `path`, restored, or a new one when there is no such file; a refused file ends the command. */
async function open(path: string, options: SessionOptions): Promise<Session> {
  let bytes: Uint8Array | undefined;
  try {
    bytes = await readSessionFile(path);
  } catch (error) {
    usageError(`cannot read ${path}: ${(error as Error).message}`);
  }
  if (bytes === undefined) return createSession(options);
  try {
    return await restoreSession(bytes, options);
  } catch (error) {
    console.error(`runcode: ${restoreRefusal(path, error)}`);
    return process.exit(2);
  }
}

function parseFlags(argv: string[]) {
  return parseArgs({
    args: argv,
    allowPositionals: true,
    options: { ...RUN_FLAGS, session: { type: "string" }, json: { type: "boolean", default: false } },
  });
}
