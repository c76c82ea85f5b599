/**
 * The module graph of one run: names, resolution and sources. Only `options.imports` (synthetic modules),
 * `options.modules` (relative, source-backed) and the instance's boot modules (`runcode:boot/<name>`, or `<name>`
 * when it is a bare specifier, as packages are) resolve; nothing reaches a host resolver.
 *
 * QuickJS swallows errors thrown by a normalizer, so `normalize` is total: an unresolvable specifier becomes a
 * unique internal name whose `load` fails with the recorded `LinkError`.
 * @module
 */

import type { CellScript } from "./cell-source.js";
import { cellFuel, charFuel, MODULE_LOAD_FUEL, MODULE_RESOLVE_FUEL } from "./host-fuel.js";
import { entryKey, INTERNAL_PREFIX as INTERNAL, stripRoot, URL_SPECIFIER } from "./options.js";
import type { FuelAccount, Transpiled, TranspilerPort } from "./ports.js";
import type { RunOptions } from "./request.js";
import { loadTraceMapping } from "./transpile.js";
import type { CodeExecutionError } from "./types.js";

/** The run's side of resolving and loading: a transpile's, the host's charges and the failures it keeps. */
interface ModuleAccount extends FuelAccount {
  /** Charges a load before it is done; `false`: the run cannot pay. */
  pay(units: number): boolean;
  /** Counts bytes the host keeps for the run (see `Limits.retain`); `false`: past its memory, the run stops. */
  retain(bytes: number): boolean;
}

/** Names of the runtime's own modules; no user specifier normalizes to one. */
export const INTERNALS_MODULE = `${INTERNAL}internals`;
/**
 * The internals module, which only the phase module and the synthetic modules of `options.imports` import: its
 * default export is the run's imports, and `phase` the core's mark that evaluation began. Compiled and evaluated once
 * at boot (core/instance.ts), it lives in the image; its exports are live bindings each run sets by calling `take`
 * with what the core staged (see `stage` in guest/core.ts). A run whose imports are staged apart
 * (core/import-stage.ts) takes none and `provide`s each as its module loads: the object that holds them is made then,
 * without a prototype, so no specifier (`__proto__`) names anything but its own import.
 */
export const INTERNALS_MODULE_SOURCE = `let imports, phase;
export { imports as default, phase };
export function take(staged) {
  imports = staged.imports;
  phase = staged.phase;
}
export function provide(specifier, values) {
  (imports ??= { __proto__: null })[specifier] = values;
}`;
const IMPORT_PREFIX = `${INTERNAL}import/`;
/**
 * The phase module: every user module imports it first, so it evaluates once the whole graph has linked and before
 * any user code, and tells the core that evaluation began (a run's status comes from that phase, never from an
 * error's name). User code may name it: by then it has evaluated, and importing it again runs nothing. Its name is
 * the same for every run (a restored instance has no module from an earlier run), so the engine's work, which hashes
 * module names, is too: with a random part, the same program's fuel varied by a few units between runs.
 */
const PHASE_MODULE = `${INTERNAL}phase`;
const UNRESOLVED_PREFIX = `${INTERNAL}unresolved/`;
/** Packages a failed bare import's message names at most (the rest counted). */
const LISTED_PACKAGES = 12;

/** The cell parser (core/cell-source.ts, with acorn's ~250 KB of code), loaded for the process's first cell. */
type CellParser = typeof import("./cell-source.js");
let cellParser: Promise<CellParser> | undefined;

/** Modules evaluated at boot (`SandboxOptions.bootModules`), which QuickJS has cached by these names. */
export const BOOT_PREFIX = `${INTERNAL}boot/`;

/** How generated code lines up with the caller's source. */
export interface ModuleMapping {
  /** Characters the runtime put in front of line 1. */
  prefixLength: number;
  map?: Transpiled["map"];
}

/** A failure the run reports as `link_error` when the guest's error is this one. */
type LinkFailure = CodeExecutionError & { name: "LinkError" | "SyntaxError" };

export class Linker {
  readonly entryName: string;
  readonly #options: RunOptions;
  readonly #entryKey: string;
  readonly #mappings: Map<string, ModuleMapping>;
  readonly #failures: LinkFailure[] = [];
  /** The instance's boot modules (see `BOOT_PREFIX`). */
  readonly #bootModules: Readonly<Record<string, string>>;
  readonly #transpiler: TranspilerPort | undefined;
  /** Set by {@link prepare} for a cell. */
  #cells: CellParser | undefined;

  /**
   * The graph of a run of `options` (checked by `resolveOptions`) on an instance booted with `bootModules`;
   * `mappings` outlive the run where its modules do (a session's cells share them).
   */
  constructor(
    options: RunOptions,
    bootModules: Readonly<Record<string, string>>,
    transpiler: TranspilerPort | undefined,
    mappings = new Map<string, ModuleMapping>(),
  ) {
    this.#options = options;
    this.#mappings = mappings;
    this.#bootModules = bootModules;
    this.#transpiler = transpiler;
    this.entryName = options.filename;
    this.#entryKey = entryKey(options.filename);
  }

  /** Readies type erasure when the run is TypeScript, and the cell parser for a session's `cell`. */
  async prepare(cell = false): Promise<void> {
    if (cell) {
      cellParser ??= import("./cell-source.js");
      this.#cells = await cellParser;
    }
    if (this.#options.language !== "typescript") return;
    if (this.#transpiler === undefined) {
      throw new TypeError("TypeScript needs SWC: this sandbox was given no transpiler (see SandboxOptions.transpiler)");
    }
    // Any transpiler's maps are read by originalPosition; its library loads while the transpiler does.
    await Promise.all([loadTraceMapping(), this.#transpiler.load()]);
  }

  /** The entry's code ready for QuickJS, or the syntax error that stops it from linking; transpiling is `account`'s. */
  entry(source: string, account: FuelAccount): string | LinkFailure {
    return this.#compile(this.entryName, source, account);
  }

  /**
   * A session's cell ready for QuickJS (core/cell-source.ts), its imports resolved, or the failure that stops it:
   * a syntax error, or the first import that does not resolve. Transpiling and resolving are `account`'s.
   */
  cell(source: string, account: ModuleAccount): CellScript | LinkFailure {
    let code = source;
    let map: Transpiled["map"] | undefined;
    if (this.#options.language === "typescript") {
      const result = (this.#transpiler as TranspilerPort).transpile(source, account);
      if (!("code" in result)) return { name: "SyntaxError", ...result, filename: this.entryName };
      ({ code, map } = result);
    }
    // Parsed on the host: charged before, so a cell its run cannot pay for is never parsed (the run stops on its fuel).
    if (!account.pay(cellFuel(code.length))) {
      return { name: "LinkError", message: "The run's fuel cannot pay for parsing the cell" };
    }
    const cells = this.#cells;
    if (cells === undefined) throw new Error("Linker.cell() called before prepare(true)");
    let cell: CellScript;
    try {
      cell = cells.cellScript(code);
    } catch (error) {
      if (!(error instanceof cells.CellSyntaxError)) throw error;
      const { message, line, column } = error;
      return { name: "SyntaxError", message, filename: this.entryName, line, column };
    }
    this.#mappings.set(this.entryName, map === undefined ? { prefixLength: 0 } : { prefixLength: 0, map });
    for (const specifier of cell.specifiers) {
      const name = this.normalize(this.entryName, specifier, account);
      if (!name.startsWith(UNRESOLVED_PREFIX)) continue;
      const failure = this.#failures[Number(name.slice(UNRESOLVED_PREFIX.length) || Number.NaN)];
      return failure ?? { name: "LinkError", message: `Cannot import '${specifier}'`, specifier };
    }
    return cell;
  }

  /** QuickJS's normalizer: never throws (see the module comment); its work is `account`'s (see host-fuel.ts). */
  normalize = (base: string, specifier: string, account: ModuleAccount): string => {
    if (specifier === PHASE_MODULE || this.#isBootModule(specifier)) return specifier;
    if ((base.startsWith(IMPORT_PREFIX) || base === PHASE_MODULE) && specifier === INTERNALS_MODULE) return specifier;
    account.spend(MODULE_RESOLVE_FUEL + charFuel(base.length + specifier.length));
    if (Object.hasOwn(this.#options.imports, specifier)) return IMPORT_PREFIX + specifier;
    // A boot module named by a bare specifier (a package, `date-fns/format`) is imported by that name too.
    if (!specifier.startsWith(".") && !specifier.startsWith("/") && Object.hasOwn(this.#bootModules, specifier))
      return BOOT_PREFIX + specifier;
    if (specifier.startsWith("./") || specifier.startsWith("../")) {
      const key = resolveRelative(this.#directoryOf(base), specifier);
      if (key === this.#entryKey) return this.entryName;
      if (key !== undefined && Object.hasOwn(this.#options.modules, key)) return key;
      return this.#fail(
        specifier,
        `Cannot find module '${specifier}' imported from ${base}: it is not in options.modules`,
        account,
      );
    }
    if (URL_SPECIFIER.test(specifier)) {
      return this.#fail(specifier, `Cannot import '${specifier}': URL imports are not supported`, account);
    }
    return this.#fail(specifier, `Cannot find module '${specifier}': ${this.#resolvable()}`, account);
  };

  /** What a bare specifier may name: the imports, the modules, and the packages booted by their bare names (a few). */
  #resolvable(): string {
    const packages = Object.keys(this.#bootModules).filter((name) => !name.startsWith(".") && !name.startsWith("/"));
    if (packages.length === 0) return "only options.imports and options.modules resolve";
    const named = packages.slice(0, LISTED_PACKAGES).join(", ");
    const more = packages.length > LISTED_PACKAGES ? `, and ${packages.length - LISTED_PACKAGES} more` : "";
    return `only options.imports, options.modules and the sandbox's packages resolve (${named}${more})`;
  }

  /** QuickJS's loader: source text for a normalized name, or the error that fails the import. */
  load = (name: string, account: ModuleAccount): string | { error: Error } => {
    if (name === PHASE_MODULE) return `import { phase } from "${INTERNALS_MODULE}";\nphase();\n`;
    if (!account.pay(MODULE_LOAD_FUEL + charFuel(name.length + (this.#options.modules[name]?.length ?? 0))))
      return { error: new Error("The run's fuel cannot pay for loading the module") };
    if (name === UNRESOLVED_PREFIX) return { error: new Error("The run's memory cannot keep another failed import") };
    if (name.startsWith(UNRESOLVED_PREFIX))
      return { error: asError(this.#failures[Number(name.slice(UNRESOLVED_PREFIX.length))]) };
    if (name.startsWith(IMPORT_PREFIX)) return syntheticModule(name.slice(IMPORT_PREFIX.length), this.#options.imports);
    const source = this.#options.modules[name];
    if (source === undefined) return { error: new Error(`Cannot find module '${name}'`) };
    const compiled = this.#compile(name, source, account);
    return typeof compiled === "string" ? compiled : { error: asError(compiled) };
  };

  /** The recorded failure a guest error stands for, if any. */
  failure(name: string, message: string): LinkFailure | undefined {
    return this.#failures.find((f) => f.name === name && f.message === message);
  }

  /** The specifier of `options.imports` whose synthetic module a QuickJS module name is, if it is one. */
  importOf(name: string): string | undefined {
    return name.startsWith(IMPORT_PREFIX) ? name.slice(IMPORT_PREFIX.length) : undefined;
  }

  /** The specifier a QuickJS module name came from (for "Could not find export ... in module 'x'"). */
  specifierOf(name: string): string {
    return name.startsWith(IMPORT_PREFIX) ? name.slice(IMPORT_PREFIX.length) : name;
  }

  /** Position mapping of a user module, `undefined` for internal and unknown names. */
  mapping(name: string): ModuleMapping | undefined {
    return this.#mappings.get(name);
  }

  #compile(name: string, source: string, account: FuelAccount): string | LinkFailure {
    let code = source;
    let map: Transpiled["map"] | undefined;
    if (this.#options.language === "typescript") {
      const result = (this.#transpiler as TranspilerPort).transpile(source, account);
      if (!("code" in result)) {
        const failure: LinkFailure = { name: "SyntaxError", ...result, filename: name };
        this.#failures.push(failure);
        return failure;
      }
      ({ code, map } = result);
    }
    // A hashbang must stay first; as a comment it keeps every position.
    if (code.startsWith("#!")) code = `//${code.slice(2)}`;
    const prefix = `import"${PHASE_MODULE}";import.meta.url=${JSON.stringify(`sandbox:${name}`)};`;
    this.#mappings.set(
      name,
      map === undefined ? { prefixLength: prefix.length } : { prefixLength: prefix.length, map },
    );
    return prefix + code;
  }

  /**
   * Records a failure to resolve, kept for the run: counted against its memory as its logs are (a specifier is the
   * guest's, of any length), so a loop of failed imports ends with `memory` rather than filling the host's heap.
   * Past it the name stands for no failure (the run is stopping).
   */
  #fail(specifier: string, message: string, account: ModuleAccount): string {
    if (!account.retain(2 * (specifier.length + message.length))) return UNRESOLVED_PREFIX;
    const index = this.#failures.push({ name: "LinkError", message, specifier }) - 1;
    return UNRESOLVED_PREFIX + index;
  }

  #isBootModule(specifier: string): boolean {
    return specifier.startsWith(BOOT_PREFIX) && Object.hasOwn(this.#bootModules, specifier.slice(BOOT_PREFIX.length));
  }

  #directoryOf(name: string): string {
    const path = name === this.entryName ? stripRoot(name) : name.slice(2);
    return path.slice(0, path.lastIndexOf("/") + 1);
  }
}

/** Source of the synthetic module for `options.imports[specifier]`: its keys become its exports. */
function syntheticModule(specifier: string, imports: Record<string, string[]>): string {
  const names = imports[specifier] ?? [];
  const reads = names.map((key, i) => `const v${i} = ns[${JSON.stringify(key)}];`).join("\n");
  const exports = names.map((key, i) => `v${i} as ${JSON.stringify(key)}`).join(", ");
  return `import t from "${INTERNALS_MODULE}";\nconst ns = t[${JSON.stringify(specifier)}];\n${reads}\nexport { ${exports} };\n`;
}

/** Joins `./`/`../` specifiers onto a directory of the graph; `undefined` when the path leaves the root. */
function resolveRelative(directory: string, specifier: string): string | undefined {
  const parts = directory === "" ? [] : directory.slice(0, -1).split("/");
  for (const part of specifier.split("/")) {
    if (part === "..") {
      if (parts.length === 0) return undefined;
      parts.pop();
    } else if (part !== "." && part !== "") parts.push(part);
  }
  return `./${parts.join("/")}`;
}

function asError(failure: LinkFailure | undefined): Error {
  const error = new Error(failure?.message ?? "Module failed to link");
  error.name = failure?.name ?? "LinkError";
  return error;
}
