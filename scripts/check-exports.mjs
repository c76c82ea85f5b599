/**
 * Fails, naming each, on an export of src/, node/, worker/ or web/ that no other file imports: dead code, or a
 * name that should lose its `export`. Exempt are the public entries (whatever they export is the package's API),
 * the files run or loaded by name (the Worker, the CLI, the playground's pages and workers), and ALLOWED below.
 * Every tracked TypeScript and JavaScript file counts as a user (tests, benchmarks, scripts, examples, configs).
 * Reads the syntax with the `typescript` devDependency's parser: no types, so it takes a second. Run by
 * `npm run lint`.
 */
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { dirname, join, normalize } from "node:path";
import ts from "typescript";

/** Files whose exports are used by name from outside the code: the package's entries and what a tool loads. */
const ENTRIES = new Set([
  "src/index.ts",
  "src/host/index.ts",
  "src/environment/index.ts",
  "node/index.ts",
  "node/environment.ts",
  "node/cli.ts",
  "worker/index.ts",
  "worker/fuel-bench.ts",
  "web/main.ts",
  "web/sandbox.worker.ts",
]);

/** Exports no file imports that are used all the same (`file#name`), each with why. */
const ALLOWED = new Set([
  // The guest functions, compiled to source text by name by scripts/build-guest.ts.
  "src/guest/core.ts#guestCore",
  "src/guest/marshal.ts#guestMarshal",
  "src/guest/slow-paths.ts#guestSlowPaths",
  "src/guest/web-kit.ts#guestWebKit",
  "src/guest/web-timers.ts#guestWebTimers",
  "src/guest/web-events.ts#guestWebEvents",
  "src/guest/web-text.ts#guestWebText",
  "src/guest/web-url.ts#guestWebUrl",
  "src/guest/web-crypto.ts#guestWebCrypto",
  "src/guest/intl.ts#guestIntl",
  "src/guest/web-subtle.ts#guestWebSubtle",
  "src/guest/web-blob.ts#guestWebBlob",
  "src/guest/web-performance.ts#guestWebPerformance",
  "src/guest/web-fetch.ts#guestWebFetch",
  // Used only in their own files; their `export` goes with the HTTP bodies' and schemas' rework (issue 29).
  "src/host/http/body.ts#BodyRefusal",
  "src/host/http/body.ts#readBytesWithin",
  "src/host/http/route-context.ts#requireTenant",
  "src/host/http/schemas.ts#ProcessSummary",
]);

/** The package's own specifiers (package.json `exports`), resolved to the sources of both conditions. */
const SELF = {
  runcode: ["src/index.ts", "node/index.ts"],
  "runcode/environment": ["src/environment/index.ts", "node/environment.ts"],
  "runcode/host": ["src/host/index.ts"],
};

const CHECKED = /^(src|node|worker|web)\//;
const SOURCE = /\.(ts|tsx|mts|js|mjs)$/;

const files = execFileSync("git", ["ls-files"], { encoding: "utf8" })
  .split("\n")
  .filter((file) => SOURCE.test(file) && !file.endsWith(".d.ts") && !file.endsWith(".d.mts") && existsSync(file));
const known = new Set(files);

/** The tracked file a specifier of `from` names, if it is one of ours. */
function resolve(from, specifier) {
  if (specifier in SELF) return SELF[specifier];
  if (!specifier.startsWith(".")) return [];
  const base = normalize(join(dirname(from), specifier));
  const stem = base.replace(/\.(js|mjs|ts)$/, "");
  return [base, `${stem}.ts`, `${stem}.mts`, `${stem}.tsx`, `${base}/index.ts`]
    .filter((file) => known.has(file))
    .slice(0, 1);
}

/** file -> its exported names; file -> names other files use ("*" all of them). */
const exported = new Map();
const used = new Map();
const use = (targets, name) => {
  for (const target of targets) {
    if (!used.has(target)) used.set(target, new Set());
    used.get(target).add(name);
  }
};
const hasExport = (node) => ts.getModifiers?.(node)?.some((m) => m.kind === ts.SyntaxKind.ExportKeyword) ?? false;
const isDefault = (node) => ts.getModifiers?.(node)?.some((m) => m.kind === ts.SyntaxKind.DefaultKeyword) ?? false;

for (const file of files) {
  const source = ts.createSourceFile(file, readFileSync(file, "utf8"), ts.ScriptTarget.Latest, true);
  const names = [];
  exported.set(file, names);
  for (const statement of source.statements) {
    if (ts.isExportDeclaration(statement)) {
      const targets = statement.moduleSpecifier ? resolve(file, statement.moduleSpecifier.text) : [];
      const clause = statement.exportClause;
      if (!clause || ts.isNamespaceExport(clause)) use(targets, "*");
      else
        for (const element of clause.elements) {
          names.push(element.name.text);
          use(targets, (element.propertyName ?? element.name).text);
        }
    } else if (ts.isExportAssignment(statement)) names.push("default");
    else if (hasExport(statement)) {
      if (isDefault(statement)) names.push("default");
      else if (ts.isVariableStatement(statement))
        for (const declaration of statement.declarationList.declarations)
          if (ts.isIdentifier(declaration.name)) names.push(declaration.name.text);
      if (!isDefault(statement) && statement.name) names.push(statement.name.text);
    }
  }
  const visit = (node) => {
    if (ts.isImportDeclaration(node) && ts.isStringLiteral(node.moduleSpecifier)) {
      const targets = resolve(file, node.moduleSpecifier.text);
      const clause = node.importClause;
      if (!clause) use(targets, "*");
      else {
        if (clause.name) use(targets, "default");
        const bindings = clause.namedBindings;
        if (bindings && ts.isNamespaceImport(bindings)) use(targets, "*");
        else for (const element of bindings?.elements ?? []) use(targets, (element.propertyName ?? element.name).text);
      }
    } else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument)) {
      const targets = resolve(file, node.argument.literal.text);
      use(targets, node.qualifier ? ts.getTextOfNode(node.qualifier).split(".")[0] : "*");
    } else if (
      ts.isCallExpression(node) &&
      node.expression.kind === ts.SyntaxKind.ImportKeyword &&
      node.arguments[0] &&
      ts.isStringLiteralLike(node.arguments[0])
    ) {
      // A dynamic import may reach any name of the module.
      use(resolve(file, node.arguments[0].text), "*");
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
}

const unused = [];
for (const [file, names] of exported) {
  if (!CHECKED.test(file) || ENTRIES.has(file)) continue;
  const users = used.get(file) ?? new Set();
  if (users.has("*")) continue;
  for (const name of names) if (!users.has(name) && !ALLOWED.has(`${file}#${name}`)) unused.push(`${file}: ${name}`);
}
if (unused.length > 0) {
  console.error(
    `Exported but imported by no other file (delete it, or drop its \`export\`):\n  ${unused.join("\n  ")}`,
  );
  process.exit(1);
}
