/**
 * One `console` entry as a list item (time, level, arguments as trees), for the run's logs and a cell's.
 * @module
 */
import type { CodeExecutionLog } from "../src/core/types.js";
import { formatTime } from "./format.js";
import { renderTree } from "./tree.js";

/** `log` as an `<li>`: strings as they are, other values as closed trees. */
export function renderLog(log: CodeExecutionLog): HTMLLIElement {
  const item = document.createElement("li");
  item.className = `log ${log.level}`;
  const meta = document.createElement("span");
  meta.className = "log-meta";
  meta.textContent = `${formatTime(log.timestamp)} ${log.level}`;
  const args = document.createElement("span");
  args.className = "log-args";
  log.args.forEach((arg, i) => {
    args.append(
      typeof arg === "string"
        ? Object.assign(document.createElement("span"), { textContent: arg })
        : renderTree(arg, undefined, false),
    );
    if (i < log.args.length - 1) args.append(" ");
  });
  item.append(meta, args);
  return item;
}
