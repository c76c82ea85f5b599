/**
 * A session branch's transcript as the session mode shows it: each cell numbered, with its source, its logs and
 * reports, and its result or error, one after the other as a REPL prints them.
 * @module
 */
import type { TranscriptEntry } from "./branches.js";
import { formatMs } from "./format.js";
import { renderLog } from "./logs.js";
import { renderTree } from "./tree.js";

const el = <K extends keyof HTMLElementTagNameMap>(tag: K, className: string, text?: string) => {
  const node = document.createElement(tag);
  node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
};

function renderCell(entry: Extract<TranscriptEntry, { kind: "cell" }>, number: number): HTMLLIElement {
  const item = el("li", "cell");
  const head = el("div", "cell-head");
  const { outcome } = entry;
  const status = outcome.kind === "result" ? outcome.result.status : "rejected";
  head.append(el("span", "cell-number", `[${number}]`), el("span", `badge ${status}`, status));
  if (outcome.kind === "result") head.append(el("span", "where", formatMs(outcome.result.durationMs)));
  const source = el("pre", "cell-source");
  source.append(el("code", "", entry.source.trimEnd()));
  item.append(head, source);
  if (outcome.kind === "rejected") {
    item.append(el("div", "cell-error", `${outcome.name}: ${outcome.message}`));
    return item;
  }
  const { result } = outcome;
  if (result.logs.length > 0) {
    const logs = el("ol", "logs");
    logs.append(...result.logs.map(renderLog));
    item.append(logs);
  }
  if (result.reports.length > 0) {
    const reports = el("ol", "reports");
    for (const [index, value] of result.reports.entries()) {
      const report = document.createElement("li");
      report.append(renderTree(value, `report ${index}`, false));
      reports.append(report);
    }
    item.append(reports);
  }
  if (result.error !== undefined) {
    const { name, message, line, column } = result.error;
    const at = line === undefined ? "" : ` (line ${line}, column ${column ?? 1})`;
    item.append(el("div", "cell-error", `${name}: ${message}${at}`));
  } else if ("result" in result) {
    const out = el("div", "cell-result tree");
    out.append(renderTree(result.result));
    item.append(out);
  }
  if (entry.rolledBack)
    item.append(
      el(
        "p",
        "hint",
        "The cell held the sandbox's thread, so Stop ended the worker: the session is back as it was before this cell.",
      ),
    );
  return item;
}

/**
 * Appends to `list` the entries of `transcript` it does not show yet (what is shown stays, trees opened included);
 * cells are numbered from 1, a fork's inherited ones included. Empty `list` first to show another branch.
 */
export function showTranscript(list: HTMLElement, transcript: readonly TranscriptEntry[]): void {
  const shown = list.children.length;
  let number = transcript.slice(0, shown).filter((entry) => entry.kind === "cell").length;
  for (const entry of transcript.slice(shown))
    list.append(
      entry.kind === "fork" ? el("li", "fork-mark", `forked from ${entry.from}`) : renderCell(entry, ++number),
    );
}
