/**
 * A session cell's source as the engine evaluates it: one sloppy global script with top-level `await`
 * (JS_EVAL_TYPE_GLOBAL | JS_EVAL_FLAG_ASYNC), whose top-level declarations outlive it as in a browser console.
 * The engine keeps a script's top-level `let`, `const` and `class` in one scope shared by all scripts, where a second
 * `let x` throws "redeclaration of 'x'"; so those declarations, and `import` declarations (which a script cannot
 * hold), are rewritten into assignments to properties of the global object, reached through the session's helper
 * (`CELL_HELPER_SOURCE` of core/cell-helper.ts, installed under `CELL_HELPER_KEY`):
 * - before the cell's first declaring statement, `open` replaces each name it declares with `let`, `const`, `class` or
 *   `import` by an accessor that throws "x is not initialized" until the declaration assigns it, and makes a name it
 *   declares with `var` writable again if an earlier cell's `const` sealed it;
 * - `const x = 1` becomes `var {} = ( x = 1, <helper>.seal(["x"]), 0)`, whose destructuring of nothing declares
 *   nothing and, like every declaration, gives the cell no completion value; `seal` makes `const` and `import` names
 *   read-only; `class A {}` becomes `var {} = (A = class A {}, 0);`;
 * - `import d, { a as b } from "m"` becomes `var {} = ({"default": d, "a": b} = <helper>.imports(await import("m"),
 *   "m", ["default","a"]), <helper>.seal(["d","b"]), 0);`, its line breaks kept after it.
 * Every edit stays on the lines of the statement it rewrites and no line is added, so a position keeps its line, and
 * its column unless the rewrite put text before it on its line. `var` and `function` declarations stay as written:
 * a global script already makes them properties of the global object. A cell that declares nothing runs as written.
 * @module
 */
import {
  type AnonymousClassDeclaration,
  type AnyNode,
  type ClassDeclaration,
  getLineInfo,
  type Identifier,
  type ImportDeclaration,
  type Pattern,
  type Program,
  type Statement,
  type VariableDeclaration,
  type VariableDeclarator,
} from "acorn";
import { CELL_HELPER_KEY } from "./cell-helper.js";
import { parseCellSource } from "./cell-parser.js";

/** A cell as the engine evaluates it. */
export interface CellScript {
  /** Sloppy global script for JS_EVAL_TYPE_GLOBAL | JS_EVAL_FLAG_ASYNC. */
  script: string;
  /**
   * The specifiers of the cell's top-level `import` declarations, each once, in the order they first appear (the
   * caller resolves them before the cell runs, so a missing module is a link error).
   */
  specifiers: string[];
}

/** A cell the parser refused: the parser's message without its "(line:col)" suffix, 1-based line and column. */
export class CellSyntaxError extends Error {
  override readonly name = "SyntaxError";
  constructor(
    message: string,
    readonly line: number,
    readonly column: number,
  ) {
    super(message);
  }
}

/** The helper as the script reaches it: top-level `this` is the global object, whatever user code did to names. */
const HELPER = `this[${JSON.stringify(CELL_HELPER_KEY)}]`;

/** Replaces `source.slice(start, end)` by `text`; a script's edits are in source order and never overlap. */
interface Edit {
  start: number;
  end: number;
  text: string;
}

/** What the parser refuses a cell beyond the language: it is a script whose only module syntax is a top-level import. */
const EXPORT = "A cell cannot export: it is a script";
const NESTED_IMPORT = "'import' and 'export' may only appear at the top level";
const IMPORT_META = "Cannot use 'import.meta' outside a module";

/** Rewrites one cell (JavaScript); throws {@link CellSyntaxError} for a cell the parser refuses. */
export function cellScript(source: string): CellScript {
  const body = parseCell(source).body;
  const lexicals: string[] = [];
  const vars = new Set<string>();
  const specifiers = new Set<string>();
  const edits: Edit[] = [];
  let prologue: Prologue | undefined;
  for (const [index, statement] of body.entries()) {
    const varCount = vars.size;
    scanStatement(source, statement, (name) => vars.add(name));
    const statementEdits = declarationEdits(source, statement, lexicals, specifiers);
    if (prologue === undefined && (statementEdits.length > 0 || vars.size > varCount)) {
      prologue = prologueAt(source, body[index - 1]);
      edits.push(prologue.edit);
    }
    for (const edit of statementEdits) edits.push(edit);
  }
  if (prologue === undefined) return { script: source, specifiers: [] };
  const lexical = new Set(lexicals);
  const reopened = [...vars].filter((name) => !lexical.has(name));
  const open = `var {} = (${HELPER}.open(${JSON.stringify(lexicals)}, ${JSON.stringify(reopened)}), 0);`;
  prologue.edit.text = prologue.before + open + prologue.after;
  return { script: applyEdits(source, edits), specifiers: [...specifiers] };
}

/** How acorn reads a cell: a script whose top level may `await` and `import`. */
export const CELL_PARSE_OPTIONS = {
  ecmaVersion: "latest",
  sourceType: "script",
  allowAwaitOutsideFunction: true,
  // Only so that a top-level import parses; scanStatement refuses the others.
  allowImportExportEverywhere: true,
  allowReturnOutsideFunction: false,
  allowHashBang: true,
} as const;

function parseCell(source: string): Program {
  try {
    return parseCellSource(source, CELL_PARSE_OPTIONS);
  } catch (error) {
    // The parser's refusals are SyntaxErrors with a 0-based `loc`.
    const { loc } = error as { loc?: { line: number; column: number } };
    if (!(error instanceof SyntaxError) || loc === undefined) throw error;
    throw new CellSyntaxError(error.message.replace(/ \(\d+:\d+\)$/, ""), loc.line, loc.column + 1);
  }
}

/** A refusal of the node at `offset`. */
function refuse(source: string, offset: number, message: string): never {
  const { line, column } = getLineInfo(source, offset);
  throw new CellSyntaxError(message, line, column + 1);
}

/**
 * Refuses module syntax in `statement` other than a top-level import, and gives `addVar` each name it declares in the
 * cell's var scope (`var` declarations and functions declared in blocks, outside any function). Walks with a stack:
 * the tree is as deep as the source nests.
 */
function scanStatement(source: string, statement: Statement | AnyNode, addVar: (name: string) => void): void {
  const stack: Array<{ node: AnyNode; inFunction: boolean }> = [{ node: statement as AnyNode, inFunction: false }];
  for (let item = stack.pop(); item !== undefined; item = stack.pop()) {
    const { node, inFunction } = item;
    switch (node.type) {
      case "ImportDeclaration":
        if (node !== statement) refuse(source, node.start, NESTED_IMPORT);
        break;
      case "ExportNamedDeclaration":
      case "ExportDefaultDeclaration":
      case "ExportAllDeclaration":
        refuse(source, node.start, EXPORT);
        break;
      case "MetaProperty":
        if (node.meta.name === "import") refuse(source, node.start, IMPORT_META);
        break;
      case "VariableDeclaration":
        if (node.kind === "var" && !inFunction) for (const { id } of node.declarations) boundNames(id, addVar);
        break;
      case "FunctionDeclaration":
        // A function declared in a block is also a var of the script (the language's annex B); only `export default`,
        // refused before its child is reached, declares one without a name.
        if (node !== statement && !inFunction) addVar((node.id as Identifier).name);
        break;
    }
    const childInFunction = inFunction || FUNCTION_SCOPES.has(node.type);
    for (const value of Object.values(node)) {
      for (const child of Array.isArray(value) ? value : [value]) {
        if (isNode(child)) stack.push({ node: child, inFunction: childInFunction });
      }
    }
  }
}

/** Nodes whose `var` declarations stay inside them. */
const FUNCTION_SCOPES = new Set([
  "FunctionDeclaration",
  "FunctionExpression",
  "ArrowFunctionExpression",
  "StaticBlock",
]);

function isNode(value: unknown): value is AnyNode {
  return typeof value === "object" && value !== null && typeof (value as { type?: unknown }).type === "string";
}

/** The names a declaration's pattern binds. */
function boundNames(pattern: Pattern, add: (name: string) => void): void {
  switch (pattern.type) {
    case "Identifier":
      add(pattern.name);
      break;
    case "ObjectPattern":
      for (const property of pattern.properties) {
        boundNames(property.type === "RestElement" ? property.argument : property.value, add);
      }
      break;
    case "ArrayPattern":
      for (const element of pattern.elements) if (element !== null) boundNames(element, add);
      break;
    case "RestElement":
      boundNames(pattern.argument, add);
      break;
    case "AssignmentPattern":
      boundNames(pattern.left, add);
      break;
    case "MemberExpression":
      break;
  }
}

/** The edits of a top-level `let`, `const`, `class` or `import`, whose names it adds to `lexicals`; none for others. */
function declarationEdits(
  source: string,
  statement: Statement | AnyNode,
  lexicals: string[],
  specifiers: Set<string>,
): Edit[] {
  switch (statement.type) {
    case "VariableDeclaration":
      return statement.kind === "var" ? [] : lexicalEdits(source, statement, lexicals);
    case "ClassDeclaration":
      return classEdits(source, statement, lexicals);
    case "ImportDeclaration":
      specifiers.add(statement.source.value as string);
      return [importEdit(source, statement, lexicals)];
    default:
      return [];
  }
}

/** `let x = 1, {y} = o` -> `var {} = ( x = 1, {y} = o, 0)`; `const` also seals; `let z` -> `z = void 0`. */
function lexicalEdits(source: string, declaration: VariableDeclaration, lexicals: string[]): Edit[] {
  const names: string[] = [];
  for (const { id } of declaration.declarations) boundNames(id, (name) => names.push(name));
  for (const name of names) lexicals.push(name);
  const keywordEnd = declaration.start + declaration.kind.length;
  const edits: Edit[] = [{ start: declaration.start, end: keywordEnd, text: "var {} = (" }];
  for (const { id, init } of declaration.declarations) {
    if (init === null || init === undefined) edits.push({ start: id.end, end: id.end, text: " = void 0" });
  }
  const seal = declaration.kind === "const" ? `, ${HELPER}.seal(${JSON.stringify(names)})` : "";
  const last = declaration.declarations[declaration.declarations.length - 1] as VariableDeclarator;
  edits.push(closing(source, last.end, declaration.end, `${seal}, 0)`));
  return edits;
}

/** `class A {}` -> `var {} = (A = class A {}, 0);`. */
function classEdits(
  source: string,
  declaration: ClassDeclaration | AnonymousClassDeclaration,
  lexicals: string[],
): Edit[] {
  // Only `export default`, refused by scanStatement, declares a class without a name.
  const { name } = declaration.id as Identifier;
  lexicals.push(name);
  return [
    { start: declaration.start, end: declaration.start, text: `var {} = (${name} = ` },
    closing(source, declaration.end, declaration.end, ", 0)"),
  ];
}

/**
 * An import as a read of `await import(specifier)` bound like `const`, on the import's first line, its line breaks
 * after it.
 */
function importEdit(source: string, declaration: ImportDeclaration, lexicals: string[]): Edit {
  const specifier = JSON.stringify(declaration.source.value);
  const attributes = declaration.attributes.map(
    ({ key, value }) =>
      `${JSON.stringify(key.type === "Identifier" ? key.name : key.value)}: ${JSON.stringify(value.value)}`,
  );
  let namespace = `await import(${specifier}${attributes.length === 0 ? "" : `, { with: { ${attributes.join(", ")} } }`})`;
  const names: string[] = [];
  const properties: string[] = [];
  const targets: string[] = [];
  for (const binding of declaration.specifiers) {
    lexicals.push(binding.local.name);
    targets.push(binding.local.name);
    if (binding.type === "ImportNamespaceSpecifier") continue;
    const name =
      binding.type === "ImportDefaultSpecifier"
        ? "default"
        : binding.imported.type === "Identifier"
          ? binding.imported.name
          : String(binding.imported.value);
    names.push(name);
    properties.push(`${JSON.stringify(name)}: ${binding.local.name}`);
  }
  if (names.length > 0) namespace = `${HELPER}.imports(${namespace}, ${specifier}, ${JSON.stringify(names)})`;
  const namespaceTarget = declaration.specifiers.find((binding) => binding.type === "ImportNamespaceSpecifier");
  const bind =
    (properties.length > 0 ? `{${properties.join(", ")}} = ` : "") +
    (namespaceTarget === undefined ? "" : `${namespaceTarget.local.name} = `);
  const seal = targets.length > 0 ? `, ${HELPER}.seal(${JSON.stringify(targets)})` : "";
  const lineBreaks = source.slice(declaration.start, declaration.end).replace(/[^\n\r\u2028\u2029]/g, "");
  return {
    start: declaration.start,
    end: declaration.end,
    text: `var {} = (${bind}${namespace}${seal}, 0);${lineBreaks}`,
  };
}

/**
 * Closes a rewritten declaration right after its last part (`end`), on that part's line, and ends the statement if
 * its own semicolon does not (`statementEnd` is past it): the next line may start with `(`.
 */
function closing(source: string, end: number, statementEnd: number, text: string): Edit {
  return { start: end, end, text: source[statementEnd - 1] === ";" ? text : `${text};` };
}

/** The edit that will hold the prologue, once every name is known, between `before` and `after`. */
interface Prologue {
  edit: Edit;
  before: string;
  after: string;
}

/**
 * Where the prologue goes: right after the statement before the first declaring one, so that the declaring
 * statement's line keeps its columns when it starts a line; or at the very start, where a hashbang becomes a comment
 * of the same length.
 */
function prologueAt(source: string, previous: Statement | AnyNode | undefined): Prologue {
  if (previous === undefined) {
    const hashbang = source.startsWith("#!");
    return { edit: { start: 0, end: hashbang ? 2 : 0, text: "" }, before: "", after: hashbang ? "//" : "" };
  }
  const edit = { start: previous.end, end: previous.end, text: "" };
  return { edit, before: source[previous.end - 1] === ";" ? "" : ";", after: "" };
}

function applyEdits(source: string, edits: Edit[]): string {
  let script = "";
  let at = 0;
  for (const edit of edits) {
    script += source.slice(at, edit.start) + edit.text;
    at = edit.end;
  }
  return script + source.slice(at);
}
