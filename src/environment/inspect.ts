/**
 * A small `util.inspect`-like formatter for the sandbox's `console`. It runs on the host, over the values a console
 * call's arguments were cloned into: the guest describes beforehand what cannot be cloned (class names, functions,
 * symbols, getters, promises; see `console.ts`), so the module QuickJS parses for every execution stays small.
 *
 * Those values keep the guest's shared references, so depth and item limits do not bound the work: forty
 * `x = [x, x]` steps are 2^40 nodes when shown as a tree. Every call therefore spends from a {@link WorkBudget}, about
 * one unit per character it writes and per value it visits (each visit of a shared value counts); when the budget is
 * spent the walk stops where it stands, the text is cut at the budget and ends with {@link truncationMarker}. Kinds
 * are told apart by their prototype chain and confirmed by one brand check that succeeds, so a plain object costs no
 * thrown exception; regexes and string scans only see text already cut to {@link MAX_STRING} characters.
 * @module
 */
import { BudgetError, stringifyWithin, WorkBudget } from "../values/budget.js";

/** Units one `inspect` or `format` call may spend when the caller passes no budget. */
export const FORMAT_BUDGET = 1_000_000;
/** Characters of a string shown inside a value (the rest is counted: `... 5 more characters`). */
export const MAX_STRING = 10_000;

/** What ends a text whose formatting budget ran out. */
export const truncationMarker = (limit: number): string =>
  `... [console output truncated: formatting budget of ${limit} units spent]`;

/** Text a value is shown as, verbatim (what the guest described: a function, a symbol, a getter...). */
export class Verbatim {
  constructor(readonly text: string) {}
  /** Like the function or symbol it stands for, it has no JSON. */
  toJSON(): undefined {
    return undefined;
  }
}

/** `[Function: name]`, `[class Name]`, `[AsyncFunction (anonymous)]`... from the start of a function's source. */
export function functionLabel(source: string, name: string): string {
  if (source.startsWith("class")) return `[class ${name === "" ? "(anonymous)" : name}]`;
  const kind = source.startsWith("async function*")
    ? "AsyncGeneratorFunction"
    : source.startsWith("async")
      ? "AsyncFunction"
      : source.startsWith("function*")
        ? "GeneratorFunction"
        : "Function";
  return `[${kind}${name === "" ? " (anonymous)" : `: ${name}`}]`;
}

/** How `makeInspect`'s formatter shows values. */
export interface InspectOptions {
  /** Levels of nesting shown (default 2, as `util.inspect`); deeper objects show as `[Array]`, `[Object]`... */
  depth?: number;
  /** What ends a text whose budget ran out (default {@link truncationMarker} of the budget's limit). */
  truncated?: (budget: WorkBudget) => string;
}

/** What `makeInspect` returns. */
export interface Inspect {
  /**
   * One value as Node's `util.inspect` would show it (strings quoted), within `budget` (default a fresh one of
   * {@link FORMAT_BUDGET} units).
   */
  inspect(value: unknown, budget?: WorkBudget): string;
  /**
   * The arguments of one `console.log` call as one line of text (printf-style `%s %d %i %f %j %o %O %c %%`),
   * within `budget` (default a fresh one of {@link FORMAT_BUDGET} units).
   */
  format(args: readonly unknown[], budget?: WorkBudget): string;
}

type Kind = "map" | "set" | "date" | "regexp" | "error" | "buffer" | "typed" | "promise" | "weakmap" | "weakset";

export function makeInspect(options: InspectOptions = {}): Inspect {
  type Fn = (...args: never[]) => unknown;
  const { apply } = Reflect;
  const { getPrototypeOf, getOwnPropertyNames, getOwnPropertySymbols, getOwnPropertyDescriptor, is } = Object;
  const { isArray } = Array;
  const numberIsNaN = Number.isNaN;
  const min = Math.min;
  const trunc = Math.trunc;
  const stringify = JSON.stringify;
  const StringCtor = String;
  const NumberCtor = Number;
  const ObjectProto = Object.prototype;
  const getter = (proto: object, key: PropertyKey) => getOwnPropertyDescriptor(proto, key)?.get as Fn;
  const call = (fn: Fn, self: unknown, ...args: unknown[]): unknown => apply(fn, self, args);
  /** `true` when `fn` accepts `value` as its receiver; called only on values whose prototype says it will. */
  const brand = (fn: Fn, value: unknown, ...args: unknown[]): boolean => {
    try {
      apply(fn, value, args);
      return true;
    } catch {
      return false;
    }
  };
  const fnToString = Function.prototype.toString as Fn;
  const symToString = Symbol.prototype.toString as Fn;
  const dateGetTime = Date.prototype.getTime as Fn;
  const dateToISO = Date.prototype.toISOString as Fn;
  const regExpToString = RegExp.prototype.toString as Fn;
  const regExpSource = getter(RegExp.prototype, "source");
  const mapSize = getter(Map.prototype, "size");
  const mapEntries = Map.prototype.entries as Fn;
  const setSize = getter(Set.prototype, "size");
  const setValues = Set.prototype.values as Fn;
  const weakMapHas = WeakMap.prototype.has as Fn;
  const weakSetHas = WeakSet.prototype.has as Fn;
  const bufferByteLength = getter(ArrayBuffer.prototype, "byteLength");
  const TypedArrayProto = getPrototypeOf(Uint8Array.prototype) as object;
  const typedArrayTag = getter(TypedArrayProto, Symbol.toStringTag);
  const typedArrayLength = getter(TypedArrayProto, "length");
  /** The nearest of these on a value's prototype chain says what it claims to be. */
  const KINDS = new Map<object, Kind>([
    [Map.prototype, "map"],
    [Set.prototype, "set"],
    [Date.prototype, "date"],
    [RegExp.prototype, "regexp"],
    [Error.prototype, "error"],
    [ArrayBuffer.prototype, "buffer"],
    [TypedArrayProto, "typed"],
    [Promise.prototype, "promise"],
    [WeakMap.prototype, "weakmap"],
    [WeakSet.prototype, "weakset"],
  ]);
  /** Prototypes looked at per value: deeper chains are only made on purpose. */
  const MAX_CHAIN = 64;
  const IDENTIFIER = /^[A-Za-z_$][\w$]*$/;
  const DEPTH = options.depth ?? 2;
  const truncated = options.truncated ?? ((spent: WorkBudget) => truncationMarker(spent.limit));
  const BREAK_LENGTH = 72;
  const MAX_ITEMS = 100;
  const CUT = "...";
  const moreItems = (count: number) => `... ${count} more item${count === 1 ? "" : "s"}`;

  /** The budget of the current top-level call (calls are synchronous and do not nest). */
  let budget = new WorkBudget(FORMAT_BUDGET, "formatting");
  /** Charges `text` and returns it: what a value writes costs its length. */
  const emit = (text: string): string => {
    budget.trySpend(text.length);
    return text;
  };
  /** A string written as is (a console argument, a `%s`): cut to what the budget has left. */
  const take = (text: string): string => {
    const room = budget.left;
    if (text.length <= room) {
      budget.trySpend(text.length);
      return text;
    }
    // Only the part written is paid for (and one unit more, which spends the budget).
    budget.trySpend(room + 1);
    return text.slice(0, room);
  };

  const quote = (s: string): string => {
    const text = s.length > MAX_STRING ? `${s.slice(0, MAX_STRING)}... ${s.length - MAX_STRING} more characters` : s;
    const json = stringify(text);
    const body = json.slice(1, -1);
    if (!text.includes("'")) return `'${body.replace(/\\"/g, '"')}'`;
    if (!text.includes('"')) return json;
    if (!text.includes("`") && !text.includes("${")) return `\`${body.replace(/\\"/g, '"')}\``;
    return `'${body.replace(/\\"/g, '"').replace(/'/g, "\\'")}'`;
  };
  const symbolText = (symbol: symbol): string => {
    const text = call(symToString, symbol) as string;
    return text.length > MAX_STRING ? `${text.slice(0, MAX_STRING)}...)` : text;
  };
  const keyText = (key: string | symbol): string =>
    emit(
      typeof key === "symbol"
        ? `[${symbolText(key)}]`
        : key.length <= MAX_STRING && IDENTIFIER.test(key)
          ? key
          : quote(key),
    );
  const kindOf = (value: object): Kind | undefined => {
    try {
      let hops = 0;
      for (let p = getPrototypeOf(value); p !== null && hops < MAX_CHAIN; p = getPrototypeOf(p), hops++) {
        const kind = KINDS.get(p);
        if (kind !== undefined) return kind;
      }
    } catch {
      // A hostile prototype chain (a proxy that throws): a plain object.
    }
    return undefined;
  };
  const constructorName = (value: object): string | undefined => {
    try {
      let hops = 0;
      for (let p = getPrototypeOf(value); p !== null && hops < MAX_CHAIN; p = getPrototypeOf(p), hops++) {
        const ctor = getOwnPropertyDescriptor(p, "constructor")?.value as { name?: unknown } | undefined;
        if (typeof ctor === "function" && typeof ctor.name === "string" && ctor.name !== "") return ctor.name;
      }
    } catch {
      // A hostile prototype chain (a proxy that throws): fall through.
    }
    return undefined;
  };
  const labelOf = (fn: object): string => {
    let source = "";
    try {
      source = (call(fnToString, fn) as string).slice(0, 24);
    } catch {
      // Not a real function after all.
    }
    let name = "";
    try {
      const own = getOwnPropertyDescriptor(fn, "name")?.value;
      if (typeof own === "string") name = own.slice(0, MAX_STRING);
    } catch {
      // Keep it anonymous.
    }
    return functionLabel(source, name);
  };
  /** `prefix { a, b }` on one line when it fits, else one item per line. */
  const wrap = (prefix: string, open: string, close: string, items: string[], indent: string): string => {
    if (items.length === 0) return emit(`${prefix}${open}${close}`);
    // Brackets, separators and indentation: an upper bound of what either layout adds to the items.
    budget.trySpend(prefix.length + 4 + items.length * (indent.length + 4));
    let width = prefix.length + open.length + close.length + indent.length + 2 * items.length;
    for (let i = 0; i < items.length && width <= BREAK_LENGTH; i++) width += (items[i] as string).length;
    if (width <= BREAK_LENGTH) {
      const oneLine = `${prefix}${open} ${items.join(", ")} ${close}`;
      if (!oneLine.includes("\n")) return oneLine;
    }
    const inner = `${indent}  `;
    return `${prefix}${open}\n${inner}${items.join(`,\n${inner}`)}\n${indent}${close}`;
  };

  const inspectValue = (value: unknown, depth: number, seen: Set<object>, indent: string): string => {
    switch (typeof value) {
      case "string":
        return emit(quote(value));
      case "number":
        return emit(is(value, -0) ? "-0" : StringCtor(value));
      case "bigint":
        return emit(`${StringCtor(value)}n`);
      case "boolean":
      case "undefined":
        return emit(StringCtor(value));
      case "symbol":
        return emit(symbolText(value));
      case "function":
        return emit(labelOf(value));
    }
    if (value === null) return emit("null");
    if (!budget.trySpend(1)) return CUT;
    if (value instanceof Verbatim) return take(value.text);
    const object = value as Record<PropertyKey, unknown>;
    if (seen.has(object)) return emit("[Circular]");
    const kind = kindOf(object);
    if (kind === "date" && brand(dateGetTime, object)) {
      const time = call(dateGetTime, object) as number;
      return emit(!numberIsNaN(time) ? (call(dateToISO, object) as string) : "Invalid Date");
    }
    if (kind === "regexp" && brand(regExpSource, object)) return emit(call(regExpToString, object) as string);
    const ctor = constructorName(object);
    if (kind === "error") {
      let name = "Error";
      let message = "";
      try {
        name = StringCtor(object.name);
        message = StringCtor(object.message);
      } catch {
        // Keep the defaults.
      }
      const head = take(message === "" ? name : `${name}: ${message}`);
      const text = depth === DEPTH ? head : `[${head}]`;
      // Beyond the depth shown, an error is its name and message: a chain of errors stops like nested objects.
      if (depth < 0) return text;
      seen.add(object);
      try {
        const extra = ownEntries(object, depth - 1, seen, `${indent}  `, ["stack", "message", "name"]);
        return extra.length === 0 ? text : wrap(`${text} `, "{", "}", extra, indent);
      } finally {
        seen.delete(object);
      }
    }
    if (depth < 0) return emit(isArray(object) ? "[Array]" : `[${ctor ?? "Object"}]`);
    seen.add(object);
    try {
      const next = depth - 1;
      const inner = `${indent}  `;
      if (isArray(object)) {
        const items: string[] = [];
        const length = object.length;
        let holes = 0;
        const flush = () => {
          if (holes > 0) items.push(emit(`<${holes} empty item${holes === 1 ? "" : "s"}>`));
          holes = 0;
        };
        const shown = min(length, MAX_ITEMS);
        budget.trySpend(shown);
        for (let i = 0; i < shown; i++) {
          if (budget.exhausted) break;
          if (!getOwnPropertyDescriptor(object, i)) {
            holes++;
            continue;
          }
          flush();
          items.push(propertyValue(object, i, next, seen, inner));
        }
        flush();
        if (budget.exhausted) items.push(CUT);
        else if (length > MAX_ITEMS) items.push(emit(moreItems(length - MAX_ITEMS)));
        const extra = ownEntries(object, next, seen, inner, [], true);
        const prefix = ctor === "Array" || ctor === undefined ? "" : `${ctor}(${length}) `;
        return wrap(prefix, "[", "]", [...items, ...extra], indent);
      }
      if ((kind === "map" && brand(mapSize, object)) || (kind === "set" && brand(setSize, object))) {
        const map = kind === "map";
        const size = call(map ? mapSize : setSize, object) as number;
        const iterator = call(map ? mapEntries : setValues, object) as Iterator<unknown>;
        const items: string[] = [];
        for (let i = 0; i < MAX_ITEMS; i++) {
          if (budget.exhausted) {
            items.push(CUT);
            break;
          }
          const step = iterator.next();
          if (step.done === true) break;
          if (map) {
            const [k, v] = step.value as [unknown, unknown];
            items.push(`${inspectValue(k, next, seen, inner)}${emit(" => ")}${inspectValue(v, next, seen, inner)}`);
          } else items.push(inspectValue(step.value, next, seen, inner));
        }
        if (size > MAX_ITEMS && !budget.exhausted) items.push(emit(moreItems(size - MAX_ITEMS)));
        return wrap(`${ctor ?? (map ? "Map" : "Set")}(${size}) `, "{", "}", items, indent);
      }
      if (kind === "typed" && call(typedArrayTag, object) !== undefined) {
        const length = call(typedArrayLength, object) as number;
        const items: string[] = [];
        for (let i = 0; i < length && i < MAX_ITEMS; i++) {
          if (budget.exhausted) {
            items.push(CUT);
            break;
          }
          items.push(inspectValue(object[i], next, seen, inner));
        }
        if (length > MAX_ITEMS && !budget.exhausted) items.push(emit(moreItems(length - MAX_ITEMS)));
        return wrap(`${call(typedArrayTag, object) as string}(${length}) `, "[", "]", items, indent);
      }
      if (kind === "buffer" && brand(bufferByteLength, object)) {
        return emit(`${ctor ?? "ArrayBuffer"} { byteLength: ${call(bufferByteLength, object) as number} }`);
      }
      if (kind === "promise") return emit("Promise { <pending or settled> }");
      if (kind === "weakmap" && brand(weakMapHas, object, ObjectProto)) return emit("WeakMap { <items unknown> }");
      if (kind === "weakset" && brand(weakSetHas, object, ObjectProto)) return emit("WeakSet { <items unknown> }");
      const entries = ownEntries(object, next, seen, inner, []);
      let proto: object | null = null;
      try {
        proto = getPrototypeOf(object);
      } catch {
        // A proxy that refuses: treat as a plain object.
      }
      const prefix =
        proto === null ? "[Object: null prototype] " : proto === ObjectProto || ctor === undefined ? "" : `${ctor} `;
      return wrap(prefix, "{", "}", entries, indent);
    } finally {
      seen.delete(object);
    }
  };
  const propertyValue = (
    object: object,
    key: PropertyKey,
    depth: number,
    seen: Set<object>,
    indent: string,
  ): string => {
    const descriptor = getOwnPropertyDescriptor(object, key);
    if (descriptor === undefined) return emit("undefined");
    if (descriptor.get !== undefined || descriptor.set !== undefined) {
      return emit(
        descriptor.get === undefined ? "[Setter]" : descriptor.set === undefined ? "[Getter]" : "[Getter/Setter]",
      );
    }
    return inspectValue(descriptor.value, depth, seen, indent);
  };
  /** Own enumerable properties as `key: value` (for arrays, only the non-index ones). */
  const ownEntries = (
    object: object,
    depth: number,
    seen: Set<object>,
    indent: string,
    skip: string[],
    skipIndexes = false,
  ): string[] => {
    const out: string[] = [];
    if (budget.exhausted) return out;
    let keys: (string | symbol)[];
    try {
      keys = [...getOwnPropertyNames(object), ...getOwnPropertySymbols(object)];
    } catch {
      return out;
    }
    // Listing the keys took time in proportion to their number: every visit pays for it.
    budget.trySpend(keys.length);
    for (const key of keys) {
      if (budget.exhausted) {
        out.push(CUT);
        break;
      }
      if (typeof key === "string" && (skip.includes(key) || (skipIndexes && isIndex(key)))) continue;
      if (skipIndexes && key === "length") continue;
      const descriptor = getOwnPropertyDescriptor(object, key);
      if (descriptor === undefined || !descriptor.enumerable) continue;
      out.push(`${keyText(key)}${emit(": ")}${propertyValue(object, key, depth, seen, indent)}`);
    }
    return out;
  };
  /** An array index (`"0"`...`"4294967294"`): at most 10 digits, so the number conversion stays short. */
  const isIndex = (key: string): boolean =>
    key.length <= 10 && StringCtor(NumberCtor(key) >>> 0) === key && key !== "4294967295";

  const show = (value: unknown): string => {
    try {
      return inspectValue(value, DEPTH, new Set(), "");
    } catch {
      return emit("[object that cannot be inspected]");
    }
  };
  /** `text` as the call's result: cut at what the budget had when it started, marked when the budget ran out. */
  const finish = (text: string, room: number): string => {
    if (!budget.exhausted) return text;
    const cut = text.length <= room ? text : text.slice(0, room);
    return `${cut}${cut === "" ? "" : " "}${truncated(budget)}`;
  };
  const within = (given: WorkBudget | undefined, work: () => string): string => {
    const outer = budget;
    budget = given ?? new WorkBudget(FORMAT_BUDGET, "formatting");
    const room = budget.left;
    try {
      return finish(work(), room);
    } finally {
      budget = outer;
    }
  };

  const inspect = (value: unknown, given?: WorkBudget): string => within(given, () => show(value));
  const format = (args: readonly unknown[], given?: WorkBudget): string =>
    within(given, () => {
      let rest = 0;
      let head: string | undefined;
      const first = args[0];
      if (typeof first === "string" && first.includes("%") && args.length > 1) {
        rest = 1;
        // The format string's own text is written as is: only what fits is scanned for directives.
        head = take(first).replace(/%([sdifjoOc%])/g, (match, kind: string) => {
          if (kind === "%") return "%";
          if (rest >= args.length) return match;
          const arg = args[rest++];
          switch (kind) {
            case "s":
              return typeof arg === "string"
                ? take(arg)
                : typeof arg === "object" && arg !== null
                  ? show(arg)
                  : emit(StringCtor(arg));
            case "d":
            case "i": {
              if (typeof arg === "bigint") return emit(`${StringCtor(arg)}n`);
              if (typeof arg === "symbol" || (typeof arg === "object" && arg !== null)) return "NaN";
              const n = NumberCtor(arg);
              return emit(StringCtor(kind === "i" ? trunc(n) : n));
            }
            case "f":
              return typeof arg === "symbol" ? "NaN" : emit(StringCtor(NumberCtor(arg)));
            case "j":
              // The sandbox's console makes `%j` text in the guest (its getters, its `toJSON`).
              if (arg instanceof Verbatim) return take(arg.text);
              try {
                return stringifyWithin(arg, budget) ?? "undefined";
              } catch (error) {
                return error instanceof BudgetError ? "" : "[Circular]";
              }
            case "c":
              return "";
            default:
              return show(arg);
          }
        });
      } else if (typeof first === "string") {
        head = take(first);
        rest = 1;
      }
      const parts = head === undefined ? [] : [head];
      // Each part pays for the space before it, so a million empty strings cost a million units.
      for (let i = rest; i < args.length && budget.trySpend(1); i++) {
        const arg = args[i];
        parts.push(typeof arg === "string" ? take(arg) : show(arg));
      }
      return parts.join(" ");
    });
  return { inspect, format };
}
