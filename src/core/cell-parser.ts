/**
 * The parser of sessions' cells (core/cell-source.ts): acorn, with its work made linear in the cell's length where
 * acorn's is not, since the host parses cells before their runs and charges the run a fixed rate a character
 * (`cellFuel`). acorn keeps each scope's declared names in arrays searched at every declaration, walks the scope stack
 * from the innermost scope for every identifier, `await` and `var`, and validates regular expressions with a check
 * of duplicate group names that is quadratic: 137 KB of `var` names in 4,000 nested blocks took 17 s of host CPU, 280
 * KB of a regular expression's alternatives 7.5 s, 270 KB of `let` names 2 s.
 *
 * Here the same rules are kept with sets: each scope holds its names in sets and caches the scopes acorn looks for
 * (the nearest var scope, `this` scope, the scope that tells whether `await` and `new.target` are allowed); a `var`
 * is checked against the lexical names of the scopes it is hoisted through by one stack per name (the depths of the
 * open scopes whose lexical names or block functions it would clash with) and recorded in its own scope, whose names
 * go to its parent when it closes (the smaller set into the larger). Regular expressions are not validated here: the
 * engine compiles them, metered, and refuses a bad one as a `SyntaxError`.
 * @module
 */
import { type Options, Parser, type Program } from "acorn";

// acorn's scope flags and binding kinds (its src/scopeflags.js), which the methods replaced here take and read.
const SCOPE_TOP = 1;
const SCOPE_FUNCTION = 2;
const SCOPE_ASYNC = 4;
const SCOPE_ARROW = 16;
const SCOPE_CLASS_STATIC_BLOCK = 256;
const SCOPE_CLASS_FIELD_INIT = 512;
const SCOPE_VAR = SCOPE_TOP | SCOPE_FUNCTION | SCOPE_CLASS_STATIC_BLOCK;
const BIND_LEXICAL = 2;
const BIND_FUNCTION = 3;
const BIND_SIMPLE_CATCH = 4;

/** A scope as acorn's code reads it (`flags`), with its names in sets and the scopes acorn would look up cached. */
interface Scope {
  flags: number;
  depth: number;
  var: Set<string>;
  lexical: Set<string>;
  functions: Set<string>;
  /** Names this scope pushed on the clash stacks, popped when it closes. */
  clashes: string[];
  /** The nearest scope (this one included) that a `var` is declared in. */
  varScope: Scope;
  /** acorn's `currentVarScope()` and `currentThisScope()`. */
  functionScope: Scope;
  thisScope: Scope;
  /** The nearest scope with a function or a class's static block or field: it tells whether `await` is allowed. */
  awaitScope: Scope | undefined;
  allowsNewTarget: boolean;
}

/** The acorn internals the parser replaces or calls. */
interface AcornInternals {
  scopeStack: Scope[];
  inModule: boolean;
  options: Options;
  undefinedExports: Record<string, unknown>;
  raiseRecoverable(pos: number, message: string): never;
}

type Internals = AcornInternals & {
  /** Per name, the ascending depths of the open scopes a `var` of that name clashes with. */
  cellClashes?: Map<string, number[]>;
};

function treatsFunctionsAsVar(parser: Internals, scope: Scope): boolean {
  return (scope.flags & SCOPE_FUNCTION) !== 0 || (!parser.inModule && (scope.flags & SCOPE_TOP) !== 0);
}

function clash(parser: Internals, scope: Scope, name: string): void {
  parser.cellClashes ??= new Map();
  let depths = parser.cellClashes.get(name);
  if (depths === undefined) {
    depths = [];
    parser.cellClashes.set(name, depths);
  }
  depths.push(scope.depth);
  scope.clashes.push(name);
}

const Base = Parser as unknown as new (options: Options, input: string) => object;

class CellParser extends Base {
  enterScope(this: Internals, flags: number): void {
    const parent = this.scopeStack.at(-1);
    const scope = { flags, depth: this.scopeStack.length } as Scope;
    scope.var = new Set();
    scope.lexical = new Set();
    scope.functions = new Set();
    scope.clashes = [];
    scope.varScope = flags & SCOPE_VAR || parent === undefined ? scope : parent.varScope;
    const functionLike = flags & (SCOPE_VAR | SCOPE_CLASS_FIELD_INIT | SCOPE_CLASS_STATIC_BLOCK);
    scope.functionScope = functionLike || parent === undefined ? scope : parent.functionScope;
    scope.thisScope = (functionLike && !(flags & SCOPE_ARROW)) || parent === undefined ? scope : parent.thisScope;
    scope.awaitScope =
      flags & (SCOPE_CLASS_STATIC_BLOCK | SCOPE_CLASS_FIELD_INIT | SCOPE_FUNCTION) ? scope : parent?.awaitScope;
    scope.allowsNewTarget =
      (flags & (SCOPE_CLASS_STATIC_BLOCK | SCOPE_CLASS_FIELD_INIT)) !== 0 ||
      ((flags & SCOPE_FUNCTION) !== 0 && (flags & SCOPE_ARROW) === 0) ||
      (parent?.allowsNewTarget ?? false);
    this.scopeStack.push(scope);
  }

  exitScope(this: Internals): void {
    const scope = this.scopeStack.pop() as Scope;
    for (const name of scope.clashes) this.cellClashes?.get(name)?.pop();
    const parent = this.scopeStack.at(-1);
    if (parent === undefined || scope.flags & SCOPE_VAR) return;
    // What a block declared with `var` is declared in the blocks around it, up to its var scope.
    let [into, from] = [parent.var, scope.var];
    if (from.size > into.size) [into, from] = [from, into];
    for (const name of from) into.add(name);
    parent.var = into;
  }

  declareName(this: Internals, name: string, bindingType: number, pos: number): void {
    const scope = this.scopeStack.at(-1) as Scope;
    let redeclared = false;
    if (bindingType === BIND_LEXICAL) {
      redeclared = scope.lexical.has(name) || scope.functions.has(name) || scope.var.has(name);
      scope.lexical.add(name);
      clash(this, scope, name);
      if (this.inModule && scope.flags & SCOPE_TOP) delete this.undefinedExports[name];
    } else if (bindingType === BIND_SIMPLE_CATCH) {
      // A simple catch clause's parameter, which a `var` of its name may declare again: no clash.
      scope.lexical.add(name);
    } else if (bindingType === BIND_FUNCTION) {
      const asVar = treatsFunctionsAsVar(this, scope);
      redeclared = scope.lexical.has(name) || (!asVar && scope.var.has(name));
      scope.functions.add(name);
      if (!asVar) clash(this, scope, name);
    } else {
      const depths = this.cellClashes?.get(name);
      const nearest = depths === undefined || depths.length === 0 ? -1 : (depths.at(-1) as number);
      redeclared = nearest >= scope.varScope.depth;
      scope.var.add(name);
      if (this.inModule && scope.varScope.flags & SCOPE_TOP) delete this.undefinedExports[name];
    }
    if (redeclared) this.raiseRecoverable(pos, `Identifier '${name}' has already been declared`);
  }

  checkLocalExport(this: Internals, id: { name: string }): void {
    const top = this.scopeStack[0] as Scope;
    if (!top.lexical.has(id.name) && !top.var.has(id.name)) this.undefinedExports[id.name] = id;
  }

  currentVarScope(this: Internals): Scope {
    return (this.scopeStack.at(-1) as Scope).functionScope;
  }

  currentThisScope(this: Internals): Scope {
    return (this.scopeStack.at(-1) as Scope).thisScope;
  }

  get canAwait(): boolean {
    const self = this as unknown as Internals;
    const scope = (self.scopeStack.at(-1) as Scope).awaitScope;
    if (scope === undefined) {
      // acorn has made `ecmaVersion` a number by now ("latest" is 1e8).
      return (self.inModule && (self.options.ecmaVersion as number) >= 13) || !!self.options.allowAwaitOutsideFunction;
    }
    if (scope.flags & (SCOPE_CLASS_STATIC_BLOCK | SCOPE_CLASS_FIELD_INIT)) return false;
    return (scope.flags & SCOPE_ASYNC) !== 0;
  }

  get allowNewDotTarget(): boolean {
    return ((this as unknown as Internals).scopeStack.at(-1) as Scope).allowsNewTarget;
  }

  validateRegExpPattern(): void {}
}

/** `source` parsed as acorn's `parse` would with `options`, in time linear in its length. */
export function parseCellSource(source: string, options: Options): Program {
  return (CellParser as unknown as typeof Parser).parse(source, options);
}
