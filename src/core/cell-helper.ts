/**
 * The session's cell helper, which the cells core/cell-source.ts rewrites call: installed once per session by the
 * session's first cell (core/run.ts). Apart from the cell parser so that a run that parses no cell never loads it.
 * @module
 */

/** Global property holding the session's cell helper (installed once per session, hidden, non-writable, non-configurable). */
export const CELL_HELPER_KEY = "runcode:cell";

/**
 * Guest source of a sloppy script expression evaluating to the cell helper: a frozen object with no prototype whose
 * methods use only what they captured when it was evaluated (user code may replace any global later), pass
 * descriptors without prototypes (a property `Object.prototype.get` would otherwise make them accessors), and build
 * messages with `+` (the engine compiles a template literal to a call of `String.prototype.concat`).
 * - `open(lexicals, vars)`: refuses, before changing anything, a lexical name held by a non-configurable property (a
 *   `var`, a `function` or a built-in such as `NaN`: "redeclaration of 'x'", as the engine says); then makes each
 *   lexical name an accessor that throws until assigned, and each `var` name writable again (or, if `open` left it
 *   uninitialized, `undefined`).
 * - `seal(names)`: makes each name's data property read-only.
 * - `imports(namespace, specifier, names)`: the namespace, once it is known to export every name.
 */
export const CELL_HELPER_SOURCE = `(() => {
  "use strict";
  const global = globalThis;
  const { defineProperty, getOwnPropertyDescriptor, freeze, hasOwn } = Object;
  const ReferenceErrorClass = ReferenceError;
  const SyntaxErrorClass = SyntaxError;
  // The getter open installed for each name, to tell it from the user's own accessors.
  const uninitialized = { __proto__: null };
  const data = (value) => ({ __proto__: null, value, writable: true, enumerable: true, configurable: true });
  return freeze({
    __proto__: null,
    open(lexicals, vars) {
      for (let i = 0; i < lexicals.length; i++) {
        const held = getOwnPropertyDescriptor(global, lexicals[i]);
        if (held !== undefined && !held.configurable) throw new SyntaxErrorClass("redeclaration of '" + lexicals[i] + "'");
      }
      for (let i = 0; i < lexicals.length; i++) {
        const name = lexicals[i];
        const get = () => {
          throw new ReferenceErrorClass(name + " is not initialized");
        };
        const set = (assigned) => defineProperty(global, name, data(assigned));
        uninitialized[name] = get;
        defineProperty(global, name, { __proto__: null, get, set, enumerable: true, configurable: true });
      }
      for (let i = 0; i < vars.length; i++) {
        const held = getOwnPropertyDescriptor(global, vars[i]);
        if (held === undefined || !held.configurable) continue;
        const accessor = hasOwn(held, "get");
        if (accessor ? held.get !== uninitialized[vars[i]] : held.writable) continue;
        // The engine ignores making a property of the global object writable again; it takes a new one.
        delete global[vars[i]];
        defineProperty(global, vars[i], data(accessor ? undefined : held.value));
      }
    },
    seal(names) {
      for (let i = 0; i < names.length; i++) {
        const held = getOwnPropertyDescriptor(global, names[i]);
        if (held !== undefined && hasOwn(held, "value")) defineProperty(global, names[i], { __proto__: null, writable: false });
      }
    },
    imports(namespace, specifier, names) {
      for (let i = 0; i < names.length; i++) {
        if (!(names[i] in namespace)) {
          throw new SyntaxErrorClass("Could not find export '" + names[i] + "' in module '" + specifier + "'");
        }
      }
      return namespace;
    },
  });
})()`;
