/**
 * The playground page: wires the editor, the options panels, the sandbox worker and the results panel. The page's
 * thread never runs user code; it only renders what the worker (or `POST /run`) answers.
 * @module
 */
import type { CodeExecutionError, CodeExecutionResult } from "../src/core/types.js";
import { packages } from "../worker/packages.generated.js";
import { SessionBranches } from "./branches.js";
import { runOnEdge } from "./edge.js";
import { CodeEditor } from "./editor.js";
import { EXAMPLES } from "./examples.js";
import { formatBytes, formatMs } from "./format.js";
import { renderLog } from "./logs.js";
import type { SessionSettings } from "./messages.js";
import { InputError, toEdgeBody, toPayload, toSessionParts, unfence } from "./payload.js";
import { SandboxRunner } from "./runner.js";
import {
  decodeShare,
  defaultSession,
  encodeShare,
  type HostEntry,
  loadStored,
  type Session,
  store,
} from "./session.js";
import { showTranscript } from "./transcript.js";
import { renderTree } from "./tree.js";

const $ = <T extends HTMLElement = HTMLElement>(id: string): T => {
  const node = document.getElementById(id);
  if (node === null) throw new Error(`missing #${id}`);
  return node as T;
};

const ui = {
  run: $<HTMLButtonElement>("run"),
  sessionMode: $<HTMLInputElement>("session-mode"),
  sessionControls: $("session-controls"),
  branch: $<HTMLSelectElement>("branch"),
  fork: $<HTMLButtonElement>("fork"),
  resetSession: $<HTMLButtonElement>("reset-session"),
  runEdge: $<HTMLButtonElement>("run-edge"),
  stop: $<HTMLButtonElement>("stop"),
  share: $<HTMLButtonElement>("share"),
  engine: $<HTMLOutputElement>("engine"),
  example: $<HTMLSelectElement>("example"),
  tabs: $("tabs"),
  addModule: $<HTMLButtonElement>("add-module"),
  renameModule: $<HTMLButtonElement>("rename-module"),
  removeModule: $<HTMLButtonElement>("remove-module"),
  inputError: $("input-error"),
  options: $<HTMLFormElement>("options"),
  executeFn: $<HTMLInputElement>("execute-fn"),
  executeArgs: $<HTMLInputElement>("execute-args"),
  language: $<HTMLSelectElement>("language"),
  filename: $<HTMLInputElement>("filename"),
  memory: $<HTMLInputElement>("memory"),
  webApis: $<HTMLInputElement>("web-apis"),
  installed: $("installed"),
  globals: $("globals"),
  imports: $("imports"),
  addGlobal: $<HTMLButtonElement>("add-global"),
  addImport: $<HTMLButtonElement>("add-import"),
  edgeKey: $<HTMLInputElement>("edge-key"),
  resetOptions: $<HTMLButtonElement>("reset-options"),
  results: $("results"),
  status: $("status"),
  where: $("where"),
  duration: $("duration"),
  memoryUsed: $("memory-used"),
  roundTrip: $("round-trip"),
  notice: $("notice"),
  error: $("error"),
  result: $("result"),
  reports: $("reports"),
  reportCount: $("report-count"),
  logs: $("logs"),
  logCount: $("log-count"),
  runOutput: $("run-output"),
  sessionOutput: $("session-output"),
  transcriptBranch: $("transcript-branch"),
  sessionNote: $("session-note"),
  transcript: $("transcript"),
};

let session: Session = defaultSession();
// The deployment's npm packages (the packages lock file, built into the sandbox worker), which runs import by name.
if (packages.length > 0) {
  ui.installed.replaceChildren("Intl is on (the browser's own). Installed npm packages, imported by name: ");
  packages.forEach(({ specifier, version }, i) => {
    const code = document.createElement("code");
    code.textContent = specifier;
    ui.installed.append(...(i === 0 ? [] : [", "]), code, ` ${version}`);
  });
  ui.installed.append(".");
}
const runner = new SandboxRunner(
  () => new Worker(new URL("./sandbox.worker.ts", import.meta.url), { type: "module", name: "runcode-sandbox" }),
);
const editor = new CodeEditor(
  $("editor"),
  () => void runInBrowser(),
  (index, text) => {
    const file = session.files[index];
    if (file !== undefined) file.source = text;
    changed();
  },
);
let edgeAbort: AbortController | undefined;
/** Session mode: each Run is a cell of the selected branch's session (runtime sessions, not the editor's). */
let sessionMode = false;
const branches = new SessionBranches(runner);
/** The sandbox worker is warm: until then (and while one restarts after Stop) Run waits disabled. */
let ready = false;

// ---------------------------------------------------------------- session <-> controls

function changed(): void {
  store(localStorage, session);
}

function renderTabs(): void {
  ui.tabs.replaceChildren();
  session.files.forEach((file, index) => {
    const tab = document.createElement("button");
    tab.type = "button";
    tab.role = "tab";
    tab.className = "tab";
    tab.id = `tab-${index}`;
    tab.textContent = index === 0 ? `${file.name} (entry)` : file.name;
    tab.dataset.index = String(index);
    const selected = index === editor.current;
    tab.setAttribute("aria-selected", String(selected));
    tab.tabIndex = selected ? 0 : -1;
    tab.addEventListener("click", () => showFile(index));
    ui.tabs.append(tab);
  });
  ui.removeModule.disabled = editor.current === 0;
  ui.renameModule.disabled = editor.current === 0;
}

function showFile(index: number): void {
  editor.show(index);
  renderTabs();
}

// Arrow keys move between tabs (WAI-ARIA tabs pattern).
ui.tabs.addEventListener("keydown", (event) => {
  const count = session.files.length;
  const step = event.key === "ArrowRight" ? 1 : event.key === "ArrowLeft" ? -1 : 0;
  if (step === 0) return;
  event.preventDefault();
  const index = (editor.current + step + count) % count;
  showFile(index);
  $(`tab-${index}`).focus();
});

function entryRow(entry: HostEntry, list: HostEntry[], container: HTMLElement, withSpecifier: boolean): HTMLElement {
  const row = document.createElement("div");
  row.className = "entry";
  const input = (label: string, value: string, set: (v: string) => void, className: string) => {
    const field = document.createElement("label");
    field.className = `field ${className}`;
    const caption = document.createElement("span");
    caption.textContent = label;
    const control = document.createElement("input");
    control.value = value;
    control.spellcheck = false;
    control.autocomplete = "off";
    control.addEventListener("input", () => {
      set(control.value);
      changed();
    });
    field.append(caption, control);
    return field;
  };
  if (withSpecifier) row.append(input("module", entry.specifier, (v) => (entry.specifier = v), "specifier"));
  row.append(input(withSpecifier ? "export" : "name", entry.name, (v) => (entry.name = v), "name"));
  const kindLabel = document.createElement("label");
  kindLabel.className = "field kind";
  const kindCaption = document.createElement("span");
  kindCaption.textContent = "kind";
  const kind = document.createElement("select");
  for (const k of ["json", "function"]) kind.add(new Option(k === "json" ? "JSON" : "function", k));
  kind.value = entry.kind;
  // Named explicitly: a label wrapping a select would add the selected option to the name.
  kind.setAttribute("aria-label", "kind");
  kindLabel.append(kindCaption, kind);
  const valueLabel = document.createElement("label");
  valueLabel.className = "field value";
  const valueCaption = document.createElement("span");
  valueCaption.textContent = "value";
  const value = document.createElement("textarea");
  value.rows = 1;
  value.spellcheck = false;
  value.value = entry.text;
  value.className = "code";
  valueLabel.append(valueCaption, value);
  kind.addEventListener("change", () => {
    entry.kind = kind.value === "function" ? "function" : "json";
    changed();
  });
  value.addEventListener("input", () => {
    entry.text = value.value;
    changed();
  });
  const remove = document.createElement("button");
  remove.type = "button";
  remove.className = "small remove";
  remove.textContent = "×";
  remove.setAttribute("aria-label", `Remove ${withSpecifier ? "import" : "global"} ${entry.name}`);
  remove.addEventListener("click", () => {
    list.splice(list.indexOf(entry), 1);
    changed();
    renderEntries(container, list, withSpecifier);
  });
  row.append(kindLabel, valueLabel, remove);
  return row;
}

function renderEntries(container: HTMLElement, list: HostEntry[], withSpecifier: boolean): void {
  container.replaceChildren(...list.map((e) => entryRow(e, list, container, withSpecifier)));
}

/** The run options a session sets apart from the files, globals and imports, with their controls. */
const SCALAR_OPTIONS = [
  ["execute.fn", "executeFn", () => ui.executeFn],
  ["execute.args", "executeArgs", () => ui.executeArgs],
  ["language", "language", () => ui.language],
  ["filename", "filename", () => ui.filename],
  ["memoryLimitBytes", "memoryLimitBytes", () => ui.memory],
  ["webApis", "webApis", () => ui.webApis],
] as const;

/** The options that differ from a fresh session's, each marked beside its control. */
function markChangedOptions(): string[] {
  const defaults = defaultSession();
  const changedNames: string[] = [];
  for (const [name, key, control] of SCALAR_OPTIONS) {
    const differs = session[key] !== defaults[key];
    control().closest(".field")?.classList.toggle("changed", differs);
    if (differs) changedNames.push(name);
  }
  ui.resetOptions.hidden = changedNames.length === 0;
  return changedNames;
}

function renderOptions(): void {
  ui.executeFn.value = session.executeFn;
  ui.executeArgs.value = session.executeArgs;
  ui.language.value = session.language;
  ui.filename.value = session.filename;
  ui.memory.value = session.memoryLimitBytes;
  ui.webApis.checked = session.webApis;
  renderEntries(ui.globals, session.globals, false);
  renderEntries(ui.imports, session.imports, true);
  markChangedOptions();
}

function loadSession(next: Session): void {
  session = structuredClone(next);
  editor.load(session.files, 0);
  renderTabs();
  renderOptions();
  changed();
}

const bind = (control: HTMLInputElement | HTMLSelectElement, set: (value: string) => void) =>
  control.addEventListener(control instanceof HTMLSelectElement ? "change" : "input", () => {
    set(control.value);
    markChangedOptions();
    changed();
  });
bind(ui.executeFn, (v) => (session.executeFn = v));
bind(ui.executeArgs, (v) => (session.executeArgs = v));
bind(ui.language, (v) => (session.language = v === "javascript" ? "javascript" : "typescript"));
bind(ui.filename, (v) => (session.filename = v));
bind(ui.memory, (v) => (session.memoryLimitBytes = v));
ui.webApis.addEventListener("change", () => {
  session.webApis = ui.webApis.checked;
  markChangedOptions();
  changed();
});
ui.options.addEventListener("submit", (event) => event.preventDefault());
// A field's error goes as soon as what the user typed parses.
ui.options.addEventListener("input", () => {
  if (ui.inputError.hidden) return;
  try {
    toPayload(session);
    ui.inputError.hidden = true;
  } catch (error) {
    if (error instanceof InputError) ui.inputError.textContent = error.message;
  }
});
ui.resetOptions.addEventListener("click", () => {
  const defaults = defaultSession();
  for (const [, key] of SCALAR_OPTIONS) Object.assign(session, { [key]: defaults[key] });
  renderOptions();
  changed();
});

/** The edge API key is a secret: kept in this tab's `sessionStorage`, never in the saved session or a share link. */
const EDGE_KEY_STORAGE = "runcode.edgeKey";
ui.edgeKey.value = sessionStorage.getItem(EDGE_KEY_STORAGE) ?? "";
ui.edgeKey.addEventListener("input", () => sessionStorage.setItem(EDGE_KEY_STORAGE, ui.edgeKey.value));

ui.addGlobal.addEventListener("click", () => {
  session.globals.push({ specifier: "", name: `g${session.globals.length + 1}`, kind: "json", text: "null" });
  renderEntries(ui.globals, session.globals, false);
  changed();
  ui.globals.querySelector<HTMLInputElement>(".entry:last-child .name input")?.focus();
});
ui.addImport.addEventListener("click", () => {
  session.imports.push({ specifier: "lib", name: "hello", kind: "function", text: '(name) => "hi " + name' });
  renderEntries(ui.imports, session.imports, true);
  changed();
  ui.imports.querySelector<HTMLInputElement>(".entry:last-child .specifier input")?.focus();
});

const moduleName = (name: string | null): string | undefined => {
  const trimmed = name?.trim();
  if (trimmed === undefined || trimmed === "") return undefined;
  return trimmed.startsWith("./") || trimmed.startsWith("../") ? trimmed : `./${trimmed}`;
};

ui.addModule.addEventListener("click", () => {
  const name = moduleName(
    prompt("Module specifier (relative, e.g. ./lib/math.ts)", `./module${session.files.length}.ts`),
  );
  if (name === undefined) return;
  if (session.files.some((f) => f.name === name)) return showNotice(`A module named ${name} exists already.`);
  session.files.push({ name, source: "export const value = 1;\n" });
  const current = editor.current;
  editor.load(session.files, current);
  showFile(session.files.length - 1);
  changed();
});
ui.renameModule.addEventListener("click", () => {
  const file = session.files[editor.current];
  if (file === undefined || editor.current === 0) return;
  const name = moduleName(prompt("New module specifier", file.name));
  if (name === undefined || name === file.name) return;
  if (session.files.some((f) => f.name === name)) return showNotice(`A module named ${name} exists already.`);
  file.name = name;
  renderTabs();
  changed();
});
ui.removeModule.addEventListener("click", () => {
  const index = editor.current;
  if (index === 0) return;
  session.files.splice(index, 1);
  editor.load(session.files, index - 1);
  renderTabs();
  changed();
});

for (const example of EXAMPLES) ui.example.add(new Option(example.title, example.id));
ui.example.addEventListener("change", () => {
  const example = EXAMPLES.find((e) => e.id === ui.example.value);
  if (example !== undefined) {
    loadSession(example.session);
    clearResults();
    const set = markChangedOptions();
    if (set.length > 0)
      showNotice(
        `This example sets ${set.join(", ")} (marked below); Reset options gives your own code the defaults.`,
        "info",
      );
  }
  ui.example.value = "";
});

ui.share.addEventListener("click", async () => {
  const hash = await encodeShare(session);
  history.replaceState(null, "", hash);
  const url = location.href;
  try {
    await navigator.clipboard.writeText(url);
    showNotice("Share link copied to the clipboard (and put in the address bar).", "info");
  } catch {
    showNotice("Share link is in the address bar.", "info");
  }
});

// ---------------------------------------------------------------- results

function showNotice(message: string, level: "warn" | "info" = "warn"): void {
  ui.notice.hidden = false;
  ui.notice.className = `notice ${level}`;
  ui.notice.textContent = message;
}

function setStatus(status: string): void {
  ui.status.textContent = status;
  ui.status.className = `badge ${status.replace(/[^a-z_]/g, "")}`;
}

function clearResults(): void {
  setStatus("idle");
  ui.where.textContent = "";
  ui.notice.hidden = true;
  ui.error.hidden = true;
  ui.error.replaceChildren();
  ui.result.replaceChildren();
  ui.reports.replaceChildren();
  ui.logs.replaceChildren();
  ui.reportCount.textContent = "0";
  ui.logCount.textContent = "0";
  ui.duration.textContent = "–";
  ui.memoryUsed.textContent = "–";
  ui.roundTrip.textContent = "–";
  ui.inputError.hidden = true;
  editor.clearMarks();
}

function addReport(value: unknown, index: number): void {
  const item = document.createElement("li");
  item.append(renderTree(value, String(index), false));
  ui.reports.append(item);
  ui.reportCount.textContent = String(index + 1);
}

/** Which tab an error position belongs to: the entry (`filename` or the default) or a module key. */
function fileIndex(error: CodeExecutionError): number {
  if (error.filename === undefined) return 0;
  const index = session.files.findIndex((f, i) => i > 0 && f.name === error.filename);
  return Math.max(index, 0);
}

function renderError(error: CodeExecutionError): void {
  ui.error.hidden = false;
  const head = document.createElement("div");
  head.className = "error-message";
  head.textContent = `${error.name}: ${error.message}`;
  ui.error.append(head);
  if (error.line !== undefined) {
    const index = fileIndex(error);
    const file = session.files[index];
    const position = document.createElement("button");
    position.type = "button";
    position.className = "position";
    const label = `${error.filename ?? file?.name ?? "entry"}:${error.line}:${error.column ?? 1}`;
    position.textContent = label;
    position.setAttribute("aria-label", `Show ${label} in the editor`);
    position.addEventListener("click", () => {
      editor.select(index, error.line ?? 1, error.column ?? 1);
      renderTabs();
    });
    ui.error.append(position);
    editor.markError(index, error.line, error.column ?? 1);
  }
  if (error.specifier !== undefined) {
    const spec = document.createElement("div");
    spec.textContent = `specifier: ${error.specifier}`;
    ui.error.append(spec);
  }
  if (error.stack !== undefined && error.stack !== "") {
    const stack = document.createElement("pre");
    stack.className = "stack";
    stack.textContent = error.stack;
    ui.error.append(stack);
  }
}

/** The status, metrics and error of a run or a cell. */
function renderSummary(result: CodeExecutionResult, where: string, roundTripMs: number): void {
  setStatus(result.status);
  ui.where.textContent = where;
  ui.duration.textContent = formatMs(result.durationMs);
  ui.memoryUsed.textContent = result.memoryUsedBytes === undefined ? "–" : formatBytes(result.memoryUsedBytes);
  ui.roundTrip.textContent = formatMs(roundTripMs);
  if (result.error !== undefined) renderError(result.error);
}

function renderResult(result: CodeExecutionResult, where: string, roundTripMs: number): void {
  renderSummary(result, where, roundTripMs);
  ui.result.replaceChildren("result" in result ? renderTree(result.result) : document.createTextNode("(none)"));
  // Reports already streamed in live for browser runs; edge runs (and anything missed) are filled in here.
  for (let i = ui.reports.children.length; i < result.reports.length; i++) addReport(result.reports[i], i);
  ui.logs.replaceChildren(...result.logs.map(renderLog));
  ui.logCount.textContent = String(result.logs.length);
}

function setRunning(running: boolean): void {
  ui.run.disabled = running || !ready;
  ui.runEdge.disabled = running || !ready || sessionMode;
  ui.stop.disabled = !running;
  for (const control of [ui.sessionMode, ui.branch, ui.fork, ui.resetSession]) control.disabled = running || !ready;
  document.body.classList.toggle("running", running);
}

/** Shows what a run starts with: the results panel on a narrow screen (below the options), pasted Markdown unwrapped. */
function started(where: string): void {
  clearResults();
  setStatus("running");
  ui.where.textContent = where;
  setRunning(true);
  const fenced = session.files.filter((file) => unfence(file.source).fenced).map((file) => file.name);
  if (fenced.length > 0)
    showNotice(`Ran the code inside the Markdown fence of ${fenced.join(", ")} (the rest is left out).`, "info");
  if (getComputedStyle(ui.results.parentElement as HTMLElement).gridTemplateColumns.split(" ").length === 1)
    ui.results.scrollIntoView({ block: "start" });
}

function payloadOrShow(): ReturnType<typeof toPayload> | undefined {
  try {
    ui.inputError.hidden = true;
    return toPayload(session);
  } catch (error) {
    if (!(error instanceof InputError)) throw error;
    ui.inputError.hidden = false;
    ui.inputError.textContent = error.message;
    return undefined;
  }
}

async function runInBrowser(): Promise<void> {
  if (sessionMode) return runCell();
  if (runner.running || edgeAbort !== undefined) return;
  const payload = payloadOrShow();
  if (payload === undefined) return;
  started("in browser");
  const outcome = await runner.run(payload, addReport);
  setRunning(false);
  if (outcome.kind === "rejected") {
    setStatus("rejected");
    showNotice(`${outcome.name}: ${outcome.message}`);
    return;
  }
  renderResult(outcome.result, `in browser (worker ${formatMs(outcome.workerMs)})`, outcome.roundTripMs);
}

async function runEdge(): Promise<void> {
  if (runner.running || edgeAbort !== undefined) return;
  const payload = payloadOrShow();
  if (payload === undefined) return;
  const { body, dropped } = toEdgeBody(payload);
  started("on edge");
  edgeAbort = new AbortController();
  const outcome = await runOnEdge(body, { key: ui.edgeKey.value.trim(), signal: edgeAbort.signal });
  edgeAbort = undefined;
  setRunning(false);
  if (outcome.kind === "unavailable") {
    setStatus("unavailable");
    showNotice(outcome.message);
    return;
  }
  renderResult(outcome.result, "on edge", outcome.roundTripMs);
  if (dropped.length > 0) showNotice(`Not sent to the edge (data-only options): ${dropped.join(", ")}.`, "info");
}

// ---------------------------------------------------------------- session mode

/** What a branch's session was made with, in a few words. */
function describeSettings(settings: SessionSettings): string {
  const names = (record: object) => Object.keys(record).join(", ") || "none";
  const parts = [
    `webApis ${settings.webApis ? "on" : "off"}`,
    `globals ${names(settings.globals)}`,
    `imports ${names(settings.imports)}`,
    `modules ${names(settings.modules ?? {})}`,
  ];
  if (settings.memoryLimitBytes !== undefined) parts.push(`memoryLimitBytes ${settings.memoryLimitBytes}`);
  return parts.join("; ");
}

/** The branch select, and the selected branch's transcript (appended to unless `fresh`). */
function renderBranches(fresh: boolean): void {
  ui.branch.replaceChildren(
    ...branches.branches.map(
      (branch, index) => new Option(branch.name, String(index), false, index === branches.selected),
    ),
  );
  const branch = branches.current;
  ui.transcriptBranch.textContent = branch.name;
  ui.sessionNote.textContent =
    branch.settings === undefined
      ? "A new session: the next Run makes it with the options as they are then (its cells run the entry's code as a script; execute is not used)."
      : `Made with ${describeSettings(branch.settings)}. Option changes apply to the session Reset makes next.`;
  if (fresh) ui.transcript.replaceChildren();
  showTranscript(ui.transcript, branch.transcript);
}

function setSessionMode(on: boolean): void {
  sessionMode = on;
  if (!on) branches.closeAll();
  ui.sessionControls.hidden = !on;
  ui.sessionOutput.hidden = !on;
  ui.runOutput.hidden = on;
  ui.run.textContent = on ? "Run cell" : "Run in browser";
  ui.executeFn.disabled = on;
  ui.executeArgs.disabled = on;
  clearResults();
  renderBranches(true);
  setRunning(runner.running);
}

async function runCell(): Promise<void> {
  if (runner.running) return;
  const payload = payloadOrShow();
  if (payload === undefined) return;
  const { name } = branches.current;
  started(`session ${name}`);
  const outcome = await branches.run(toSessionParts(payload));
  setRunning(false);
  renderBranches(false);
  if (outcome.kind === "rejected") {
    setStatus("rejected");
    showNotice(`${outcome.name}: ${outcome.message}`);
    return;
  }
  const cells = branches.current.transcript.filter((entry) => entry.kind === "cell").length;
  renderSummary(
    outcome.result,
    `session ${name}, cell ${cells} (worker ${formatMs(outcome.workerMs)})`,
    outcome.roundTripMs,
  );
}

/** Stop in session mode: the cell ends, the session goes on (see `SessionBranches.stop`). */
async function stopCell(): Promise<void> {
  const before = performance.now();
  ready = false;
  ui.stop.disabled = true;
  const { how, lost } = await branches.stop();
  renderBranches(true);
  if (lost.length > 0) showNotice(`Could not bring back ${lost.join(", ")}: reset.`);
  await waitReady();
  if (how === "hard")
    ui.engine.textContent = `Stopped by ending the worker; the sessions were back in a fresh one in ${formatMs(performance.now() - before)}`;
}

async function forkBranch(): Promise<void> {
  if (runner.running) return;
  const payload = payloadOrShow();
  if (payload === undefined) return;
  setRunning(true);
  ui.stop.disabled = true;
  const refused = await branches.fork(toSessionParts(payload).settings);
  setRunning(false);
  clearResults();
  renderBranches(true);
  if (refused?.kind === "rejected") showNotice(`${refused.name}: ${refused.message}`);
}

ui.sessionMode.addEventListener("change", () => setSessionMode(ui.sessionMode.checked));
ui.branch.addEventListener("change", () => {
  branches.selected = Number(ui.branch.value);
  clearResults();
  renderBranches(true);
});
ui.fork.addEventListener("click", () => void forkBranch());
ui.resetSession.addEventListener("click", () => {
  branches.reset();
  clearResults();
  renderBranches(true);
});

ui.run.addEventListener("click", () => void runInBrowser());
ui.runEdge.addEventListener("click", () => void runEdge());
ui.stop.addEventListener("click", () => {
  if (edgeAbort !== undefined) {
    edgeAbort.abort();
    return;
  }
  if (sessionMode) return void stopCell();
  const before = performance.now();
  runner.stop();
  ready = false;
  ui.engine.textContent = `Stopped in ${formatMs(performance.now() - before)}; restarting the sandbox…`;
  void waitReady();
});
document.addEventListener("keydown", (event) => {
  if (event.key === "Enter" && (event.ctrlKey || event.metaKey) && !event.defaultPrevented) {
    event.preventDefault();
    void runInBrowser();
  }
});

async function waitReady(): Promise<void> {
  const warmupMs = await runner.ready;
  ui.engine.textContent = `Sandbox ready (worker warm-up ${formatMs(warmupMs)})`;
  ready = true;
  setRunning(runner.running);
  document.body.dataset.ready = "true";
}

// ---------------------------------------------------------------- start

async function start(): Promise<void> {
  const shared = await decodeShare(location.hash);
  const initial = shared ?? loadStored(localStorage) ?? defaultSession();
  loadSession(initial);
  setRunning(false);
  if (location.hash !== "" && shared === undefined)
    showNotice("The share link in the address is damaged; showing your last session.");
  await waitReady();
}

void start();

/**
 * For tests and the bench: ignored (forged or stale) worker messages, where the editor's cursor is, and runs
 * through the same runner as the Run button without touching the panels.
 */
let benchRun: Promise<unknown> | undefined;
(window as unknown as { runcode: object }).runcode = {
  ignored: () => runner.ignored,
  runRaw: async (source: string, language: "javascript" | "typescript" = "javascript") => {
    const run = runner.run({ source, options: { language }, globals: {}, imports: {}, webApis: false });
    benchRun = run;
    const outcome = await run;
    if (outcome.kind === "rejected") return { status: "rejected", worker: 0, roundTrip: 0 };
    return { status: outcome.result.status, worker: outcome.workerMs, roundTrip: outcome.roundTripMs };
  },
  stopRaw: async () => {
    const started = performance.now();
    runner.stop();
    await benchRun;
    return performance.now() - started;
  },
  selection: () => {
    const { state } = editor.view;
    const head = state.selection.main.from;
    const line = state.doc.lineAt(head);
    return { file: session.files[editor.current]?.name, line: line.number, column: head - line.from + 1 };
  },
};
