/**
 * A small `util.inspect`-like formatter for the sandbox's `console`. It runs on the host, over the values a console
 * call's arguments were cloned into: the guest describes beforehand what cannot be cloned (class names, functions,
 * symbols, getters, promises; see `console.ts`), so the module QuickJS parses for every execution stays small.
 * @module
 */

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

/** What `makeInspect` returns. */
export interface Inspect {
  /** One value as Node's `util.inspect` would show it (depth 2, strings quoted). */
  inspect(value: unknown): string;
  /** The arguments of one `console.log` call as one line of text (printf-style `%s %d %i %f %j %o %O %c %%`). */
  format(args: readonly unknown[]): string;
}

export function makeInspect(): Inspect {
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
  const PromiseCtor = Promise;
  const getter = (proto: object, key: PropertyKey) => getOwnPropertyDescriptor(proto, key)?.get as Fn;
  const call = (fn: Fn, self: unknown, ...args: unknown[]): unknown => apply(fn, self, args);
  const brand = (fn: Fn, value: unknown): boolean => {
    try {
      apply(fn, value, []);
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
  const mapForEach = Map.prototype.forEach as Fn;
  const setSize = getter(Set.prototype, "size");
  const setForEach = Set.prototype.forEach as Fn;
  const weakMapHas = WeakMap.prototype.has as Fn;
  const weakSetHas = WeakSet.prototype.has as Fn;
  const bufferByteLength = getter(ArrayBuffer.prototype, "byteLength");
  const TypedArrayProto = getPrototypeOf(Uint8Array.prototype) as object;
  const typedArrayTag = getter(TypedArrayProto, Symbol.toStringTag);
  const typedArrayLength = getter(TypedArrayProto, "length");
  const ErrorProto = Error.prototype;
  const IDENTIFIER = /^[A-Za-z_$][\w$]*$/;
  const DEPTH = 2;
  const BREAK_LENGTH = 72;
  const MAX_ITEMS = 100;
  const MAX_STRING = 10_000;

  const quote = (s: string): string => {
    const text = s.length > MAX_STRING ? `${s.slice(0, MAX_STRING)}... ${s.length - MAX_STRING} more characters` : s;
    const json = stringify(text);
    const body = json.slice(1, -1);
    if (!text.includes("'")) return `'${body.replace(/\\"/g, '"')}'`;
    if (!text.includes('"')) return json;
    if (!text.includes("`") && !text.includes("${")) return `\`${body.replace(/\\"/g, '"')}\``;
    return `'${body.replace(/\\"/g, '"').replace(/'/g, "\\'")}'`;
  };
  const keyText = (key: string | symbol): string =>
    typeof key === "symbol" ? `[${call(symToString, key) as string}]` : IDENTIFIER.test(key) ? key : quote(key);
  const isError = (value: object): boolean => {
    for (let p = getPrototypeOf(value); p !== null; p = getPrototypeOf(p)) if (p === ErrorProto) return true;
    return false;
  };
  const constructorName = (value: object): string | undefined => {
    try {
      for (let p = getPrototypeOf(value); p !== null; p = getPrototypeOf(p)) {
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
      source = call(fnToString, fn) as string;
    } catch {
      // Not a real function after all.
    }
    let name = "";
    try {
      const own = getOwnPropertyDescriptor(fn, "name")?.value;
      if (typeof own === "string") name = own;
    } catch {
      // Keep it anonymous.
    }
    return functionLabel(source, name);
  };
  /** `prefix { a, b }` on one line when it fits, else one item per line. */
  const wrap = (prefix: string, open: string, close: string, items: string[], indent: string): string => {
    if (items.length === 0) return `${prefix}${open}${close}`;
    const oneLine = `${prefix}${open} ${items.join(", ")} ${close}`;
    if (oneLine.length + indent.length <= BREAK_LENGTH && !oneLine.includes("\n")) return oneLine;
    const inner = `${indent}  `;
    return `${prefix}${open}\n${inner}${items.join(`,\n${inner}`)}\n${indent}${close}`;
  };

  const inspectValue = (value: unknown, depth: number, seen: object[], indent: string): string => {
    switch (typeof value) {
      case "string":
        return quote(value);
      case "number":
        return is(value, -0) ? "-0" : StringCtor(value);
      case "bigint":
        return `${StringCtor(value)}n`;
      case "boolean":
      case "undefined":
        return StringCtor(value);
      case "symbol":
        return call(symToString, value) as string;
      case "function":
        return labelOf(value);
    }
    if (value === null) return "null";
    if (value instanceof Verbatim) return value.text;
    const object = value as Record<PropertyKey, unknown>;
    if (seen.includes(object)) return "[Circular]";
    const ctor = constructorName(object);
    let proto: object | null = null;
    try {
      proto = getPrototypeOf(object);
    } catch {
      // A proxy that refuses: treat as a plain object.
    }
    if (brand(dateGetTime, object)) {
      const time = call(dateGetTime, object) as number;
      return !numberIsNaN(time) ? (call(dateToISO, object) as string) : "Invalid Date";
    }
    if (brand(regExpSource, object)) return call(regExpToString, object) as string;
    if (isError(object)) {
      let name = "Error";
      let message = "";
      try {
        name = StringCtor(object.name);
        message = StringCtor(object.message);
      } catch {
        // Keep the defaults.
      }
      const head = message === "" ? name : `${name}: ${message}`;
      const extra = ownEntries(object, depth, seen, indent, ["stack", "message", "name"]);
      const text = depth === DEPTH ? head : `[${head}]`;
      return extra.length === 0 ? text : wrap(`${text} `, "{", "}", extra, indent);
    }
    if (depth < 0) return isArray(object) ? "[Array]" : `[${ctor ?? "Object"}]`;
    seen.push(object);
    try {
      const next = depth - 1;
      const inner = `${indent}  `;
      if (isArray(object)) {
        const items: string[] = [];
        const length = object.length;
        let holes = 0;
        const flush = () => {
          if (holes > 0) items.push(`<${holes} empty item${holes === 1 ? "" : "s"}>`);
          holes = 0;
        };
        const shown = min(length, MAX_ITEMS);
        for (let i = 0; i < shown; i++) {
          if (!getOwnPropertyDescriptor(object, i)) {
            holes++;
            continue;
          }
          flush();
          items.push(propertyValue(object, i, next, seen, inner));
        }
        flush();
        if (length > MAX_ITEMS) items.push(`... ${length - MAX_ITEMS} more item${length - MAX_ITEMS === 1 ? "" : "s"}`);
        const extra = ownEntries(object, next, seen, inner, [], true);
        const prefix = ctor === "Array" || ctor === undefined ? "" : `${ctor}(${length}) `;
        return wrap(prefix, "[", "]", [...items, ...extra], indent);
      }
      if (brand(mapSize, object)) {
        const items: string[] = [];
        call(mapForEach, object, (v: unknown, k: unknown) => {
          if (items.length < MAX_ITEMS)
            items.push(`${inspectValue(k, next, seen, inner)} => ${inspectValue(v, next, seen, inner)}`);
        });
        const size = call(mapSize, object) as number;
        if (size > MAX_ITEMS) items.push(`... ${size - MAX_ITEMS} more items`);
        return wrap(`${ctor ?? "Map"}(${size}) `, "{", "}", items, indent);
      }
      if (brand(setSize, object)) {
        const items: string[] = [];
        call(setForEach, object, (v: unknown) => {
          if (items.length < MAX_ITEMS) items.push(inspectValue(v, next, seen, inner));
        });
        const size = call(setSize, object) as number;
        if (size > MAX_ITEMS) items.push(`... ${size - MAX_ITEMS} more items`);
        return wrap(`${ctor ?? "Set"}(${size}) `, "{", "}", items, indent);
      }
      if (call(typedArrayTag, object) !== undefined) {
        const length = call(typedArrayLength, object) as number;
        const items: string[] = [];
        for (let i = 0; i < length && i < MAX_ITEMS; i++) items.push(inspectValue(object[i], next, seen, inner));
        if (length > MAX_ITEMS) items.push(`... ${length - MAX_ITEMS} more items`);
        return wrap(`${call(typedArrayTag, object) as string}(${length}) `, "[", "]", items, indent);
      }
      if (brand(bufferByteLength, object)) {
        return `${ctor ?? "ArrayBuffer"} { byteLength: ${call(bufferByteLength, object) as number} }`;
      }
      if (object instanceof PromiseCtor) return "Promise { <pending or settled> }";
      if (tryBrand(weakMapHas, object)) return "WeakMap { <items unknown> }";
      if (tryBrand(weakSetHas, object)) return "WeakSet { <items unknown> }";
      const entries = ownEntries(object, next, seen, inner, []);
      const prefix =
        proto === null ? "[Object: null prototype] " : proto === ObjectProto || ctor === undefined ? "" : `${ctor} `;
      return wrap(prefix, "{", "}", entries, indent);
    } finally {
      seen.pop();
    }
  };
  /** `true` when `fn` accepts `value` as its receiver (brand check by a harmless call). */
  const tryBrand = (fn: Fn, value: object): boolean => {
    try {
      apply(fn, value, [ObjectProto]);
      return true;
    } catch {
      return false;
    }
  };
  const propertyValue = (object: object, key: PropertyKey, depth: number, seen: object[], indent: string): string => {
    const descriptor = getOwnPropertyDescriptor(object, key);
    if (descriptor === undefined) return "undefined";
    if (descriptor.get !== undefined || descriptor.set !== undefined) {
      return descriptor.get === undefined ? "[Setter]" : descriptor.set === undefined ? "[Getter]" : "[Getter/Setter]";
    }
    return inspectValue(descriptor.value, depth, seen, indent);
  };
  /** Own enumerable properties as `key: value` (for arrays, only the non-index ones). */
  const ownEntries = (
    object: object,
    depth: number,
    seen: object[],
    indent: string,
    skip: string[],
    skipIndexes = false,
  ): string[] => {
    const out: string[] = [];
    let keys: (string | symbol)[];
    try {
      keys = [...getOwnPropertyNames(object), ...getOwnPropertySymbols(object)];
    } catch {
      return out;
    }
    for (const key of keys) {
      if (typeof key === "string" && (skip.includes(key) || (skipIndexes && StringCtor(NumberCtor(key) >>> 0) === key)))
        continue;
      if (skipIndexes && key === "length") continue;
      const descriptor = getOwnPropertyDescriptor(object, key);
      if (descriptor === undefined || !descriptor.enumerable) continue;
      out.push(`${keyText(key)}: ${propertyValue(object, key, depth, seen, indent)}`);
    }
    return out;
  };

  const inspect = (value: unknown): string => {
    try {
      return inspectValue(value, DEPTH, [], "");
    } catch {
      return "[object that cannot be inspected]";
    }
  };
  const format = (args: readonly unknown[]): string => {
    let rest = 0;
    let head: string | undefined;
    const first = args[0];
    if (typeof first === "string" && first.includes("%") && args.length > 1) {
      rest = 1;
      head = first.replace(/%([sdifjoOc%])/g, (match, kind: string) => {
        if (kind === "%") return "%";
        if (rest >= args.length) return match;
        const arg = args[rest++];
        switch (kind) {
          case "s":
            return typeof arg === "string"
              ? arg
              : typeof arg === "object" && arg !== null
                ? inspect(arg)
                : StringCtor(arg);
          case "d":
          case "i": {
            if (typeof arg === "bigint") return `${StringCtor(arg)}n`;
            if (typeof arg === "symbol" || (typeof arg === "object" && arg !== null)) return "NaN";
            const n = NumberCtor(arg);
            return StringCtor(kind === "i" ? trunc(n) : n);
          }
          case "f":
            return typeof arg === "symbol" ? "NaN" : StringCtor(NumberCtor(arg));
          case "j":
            if (arg instanceof Verbatim) return arg.text;
            try {
              return stringify(arg) ?? "undefined";
            } catch {
              return "[Circular]";
            }
          case "c":
            return "";
          default:
            return inspect(arg);
        }
      });
    } else if (typeof first === "string") {
      head = first;
      rest = 1;
    }
    const parts = head === undefined ? [] : [head];
    for (let i = rest; i < args.length; i++) {
      const arg = args[i];
      parts.push(typeof arg === "string" ? arg : inspect(arg));
    }
    return parts.join(" ");
  };
  return { inspect, format };
}
