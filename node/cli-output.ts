/**
 * How the `runcode` command prints guest output on a terminal: every control character escaped, console entries and
 * results formatted as a console does within a budget of formatting units and a deadline. Shared by `runcode
 * file.ts`, `runcode run --session` and `runcode repl`.
 * @module
 */
import { resultWireText } from "../src/core/result-wire.js";
import type { CodeExecution, CodeExecutionLog, CodeExecutionResult } from "../src/core/types.js";
import { FORMAT_BUDGET, makeInspect } from "../src/environment/inspect.js";
import { MAX_WALK_DEPTH, WorkBudget } from "../src/values/budget.js";

/**
 * Characters a terminal acts on rather than shows: C0 controls but newline and tab, DEL, C1 controls (ESC and BEL
 * would let guest text rewrite the screen, set the title or write the clipboard with OSC 52), and the bidirectional
 * overrides, isolates and marks that reorder what is shown.
 */
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point.
const CONTROLS = /[\0-\x08\v-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;

/** `text` with every control character written as an escape (`\x1B`, `\u202E`), so a terminal shows it. */
export function printable(text: string): string {
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
export function printer(deadline: number, timeout: string) {
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

/** How {@link printedRun} prints. */
interface PrintedRunOptions {
  /** `--timeout` as given: the run is terminated past it, and the printing ends by it. */
  timeout: string;
  /** The result as wire JSON (`--json`) rather than inspected. */
  json: boolean;
  /** Characters the wire JSON may take: the run's heap limit, as a host's answer. */
  maxLength: number;
}

/**
 * Starts a run with the console printer as its `onLog`, terminates it past the timeout, and prints its result on
 * standard output: the printing of `runcode file.ts`, and of each cell of `runcode run --session`.
 */
export async function printedRun(
  start: (onLog: (entry: CodeExecutionLog) => void) => CodeExecution,
  { timeout, json, maxLength }: PrintedRunOptions,
): Promise<CodeExecutionResult> {
  const printing = printer(performance.now() + Number(timeout), timeout);
  const run = start(printing.console);
  const budget = setTimeout(() => run.terminate(`${timeout} ms budget`), Number(timeout));
  const result = await run;
  clearTimeout(budget);
  // The wire text within the length a host's answer may take (the run's heap limit); the inspected value within the
  // timeout and a bounded size. Every control character of guest text escaped.
  console.log(json ? printableJson(resultWireText(result, maxLength)) : printing.result(result));
  return result;
}
