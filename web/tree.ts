/**
 * An expandable tree of any result value, faithful to what structured clone carries: `Map`, `Set`, `Date`,
 * `RegExp`, `Error`, bigint, `-0`, `undefined`, holes, typed arrays, `ArrayBuffer`, `DataView`. Children are built
 * when a node is first opened, so cycles and huge values cost nothing until looked at. Built on `<details>`, so it
 * is keyboard-usable as is.
 * @module
 */

const el = <K extends keyof HTMLElementTagNameMap>(tag: K, className: string, text?: string) => {
  const node = document.createElement(tag);
  node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
};

function typeName(value: object): string {
  return Object.prototype.toString.call(value).slice(8, -1);
}

type View = ArrayBufferView & { length?: number; [index: number]: number | bigint };

/** One-line text of a primitive. */
function primitive(value: unknown): { text: string; kind: string } {
  switch (typeof value) {
    case "string":
      return { text: JSON.stringify(value), kind: "string" };
    case "number":
      return { text: Object.is(value, -0) ? "-0" : String(value), kind: "number" };
    case "bigint":
      return { text: `${value}n`, kind: "bigint" };
    case "boolean":
      return { text: String(value), kind: "boolean" };
    case "undefined":
      return { text: "undefined", kind: "undefined" };
    default:
      return value === null ? { text: "null", kind: "null" } : { text: String(value), kind: "other" };
  }
}

function hex(bytes: Uint8Array, max = 64): string {
  const shown = [...bytes.subarray(0, max)].map((b) => b.toString(16).padStart(2, "0")).join(" ");
  return bytes.length > max ? `${shown} …` : shown;
}

/** Children of an expandable value, as [label, value] pairs (label `null` for Set items). */
function children(value: object): { label: string | null; value: unknown; hole?: boolean; arrow?: unknown }[] {
  if (value instanceof Map) return [...value].map(([k, v]) => ({ label: null, value: v, arrow: k }));
  if (value instanceof Set) return [...value].map((v) => ({ label: null, value: v }));
  if (value instanceof Error) {
    const out: { label: string; value: unknown }[] = [
      { label: "name", value: value.name },
      { label: "message", value: value.message },
    ];
    if (typeof value.stack === "string" && value.stack !== "") out.push({ label: "stack", value: value.stack });
    if ("cause" in value) out.push({ label: "cause", value: value.cause });
    return out;
  }
  if (ArrayBuffer.isView(value) && !(value instanceof DataView)) {
    const view = value as View;
    return Array.from({ length: view.length ?? 0 }, (_, i) => ({ label: String(i), value: view[i] }));
  }
  if (Array.isArray(value)) {
    const out: { label: string; value: unknown; hole?: boolean }[] = [];
    for (let i = 0; i < value.length; i++)
      out.push(i in value ? { label: String(i), value: value[i] } : { label: String(i), value: undefined, hole: true });
    for (const key of Object.keys(value))
      if (!/^\d+$/.test(key)) out.push({ label: key, value: (value as never)[key] });
    return out;
  }
  return Object.keys(value).map((key) => ({ label: key, value: (value as Record<string, unknown>)[key] }));
}

/** Short text of a value inside a parent's preview. */
function short(value: unknown): string {
  if (typeof value !== "object" || value === null) {
    const text = primitive(value).text;
    return text.length > 24 ? `${text.slice(0, 23)}…` : text;
  }
  return summary(value);
}

/** The header of an expandable value. */
function summary(value: object): string {
  if (value instanceof Date) return Number.isNaN(value.getTime()) ? "Invalid Date" : value.toISOString();
  if (value instanceof RegExp) return String(value);
  if (value instanceof Error) return `${value.name}: ${value.message}`;
  if (value instanceof Map) return `Map(${value.size})`;
  if (value instanceof Set) return `Set(${value.size})`;
  if (value instanceof ArrayBuffer) return `ArrayBuffer(${value.byteLength})`;
  if (value instanceof DataView) return `DataView(${value.byteLength})`;
  if (ArrayBuffer.isView(value)) return `${typeName(value)}(${(value as View).length ?? 0})`;
  if (Array.isArray(value)) return `Array(${value.length})`;
  const name = typeName(value);
  return name === "Object" ? "{…}" : name;
}

function preview(value: object): string {
  const items = children(value).slice(0, 5);
  const parts = items.map((c) => {
    if ("arrow" in c) return `${short(c.arrow)} => ${short(c.value)}`;
    if (c.hole === true) return "empty";
    if (c.label === null || Array.isArray(value) || ArrayBuffer.isView(value)) return short(c.value);
    return `${c.label}: ${short(c.value)}`;
  });
  const more = children(value).length > items.length ? ", …" : "";
  const [open, close] = Array.isArray(value) || ArrayBuffer.isView(value) ? ["[", "]"] : ["{", "}"];
  return `${open}${parts.join(", ")}${more}${close}`;
}

/** Leaf objects: shown on one line, not expandable. */
function leaf(value: object): { text: string; kind: string } | undefined {
  if (value instanceof Date) return { text: `Date ${summary(value)}`, kind: "date" };
  if (value instanceof RegExp) return { text: String(value), kind: "regexp" };
  if (value instanceof ArrayBuffer)
    return { text: `ArrayBuffer(${value.byteLength}) <${hex(new Uint8Array(value))}>`, kind: "binary" };
  if (value instanceof DataView) {
    const bytes = new Uint8Array(value.buffer, value.byteOffset, value.byteLength);
    return { text: `DataView(${value.byteLength}) <${hex(bytes)}>`, kind: "binary" };
  }
  return undefined;
}

/** Renders `value` as a tree node labelled `label`. */
export function renderTree(value: unknown, label?: string, open = true): HTMLElement {
  const row = (content: HTMLElement) => {
    const line = el("div", "tree-row");
    if (label !== undefined) line.append(el("span", "tree-key", `${label}: `));
    line.append(content);
    return line;
  };
  if (typeof value !== "object" || value === null) {
    const { text, kind } = primitive(value);
    return row(el("span", `tree-value t-${kind}`, text));
  }
  const flat = leaf(value);
  if (flat !== undefined) return row(el("span", `tree-value t-${flat.kind}`, flat.text));

  const details = el("details", "tree-node");
  const head = el("summary", "tree-summary");
  if (label !== undefined) head.append(el("span", "tree-key", `${label}: `));
  head.append(el("span", "tree-type", summary(value)));
  if (!(value instanceof Error)) head.append(el("span", "tree-preview", ` ${preview(value)}`));
  details.append(head);
  let built = false;
  const build = () => {
    if (built) return;
    built = true;
    const body = el("div", "tree-children");
    for (const child of children(value)) {
      if (child.hole === true) {
        body.append(renderTree(undefined, child.label ?? undefined, false));
        (body.lastElementChild?.querySelector(".tree-value") as HTMLElement).textContent = "empty";
      } else if ("arrow" in child) {
        const pair = el("div", "tree-entry");
        pair.append(renderTree(child.arrow, "key", false), renderTree(child.value, "value", false));
        body.append(pair);
      } else body.append(renderTree(child.value, child.label ?? undefined, false));
    }
    details.append(body);
  };
  details.addEventListener("toggle", () => {
    if (details.open) build();
  });
  if (open) {
    details.open = true;
    build();
  }
  return details;
}
