/**
 * The guest half of the environment: the module evaluated before the process code. It turns the host functions
 * handed in through `globals` into the documented surface (`console`, `cyrnel.output`,
 * `cyrnel.services[s].tools[t].invoke`) and then hides them, so user code reaches the host only through that surface.
 *
 * Console values are formatted on the host (see `console.ts`): the guest only turns what cannot be cloned
 * (functions, symbols, class instances, getters, promises...) into cloneable descriptions, so the module QuickJS
 * parses for every execution stays a few KB.
 *
 * Shipped as source text, compiled once into every booted instance (see `RUNTIME_BOOT_MODULES`) and applied to each
 * run's globals by `RUNTIME_SOURCE`: `guestRuntime` must not close over anything in this file, and it captures every
 * intrinsic it uses when applied, before user code runs.
 * @module
 */
import { BOOT_PREFIX } from "../core/linker.js";

/** Host functions the runtime module takes from `cyrnel.__host` (and deletes from it). */
export interface GuestHost {
  /**
   * Writes one line of console output (stream 1 = stdout, 2 = stderr): the call's arguments, made cloneable by the
   * guest (see {@link LOG_MARK}); the host formats them, appends `\n` and encodes UTF-8. Answers `false` once the
   * execution's console budget is spent: later calls would print nothing, so the guest stops making them.
   */
  write(stream: 1 | 2, args: unknown[]): boolean;
  output(patch: Record<string, unknown>): void;
  invoke(serviceId: string, toolId: string, parameters: Record<string, unknown>): Promise<unknown>;
}

/** What tool discovery hands to the guest: ids, names and descriptions (schemas stay on the host). */
export type GuestServices = Record<
  string,
  {
    id: string;
    name: string;
    description: string;
    tools: Record<string, { id: string; name: string; description: string }>;
  }
> | null;

/** The `cyrnel` global as the host stages it, before the runtime module fills it in. */
interface StagedCyrnel {
  __host?: GuestHost;
  services: GuestServices | unknown;
  output?: unknown;
}

/**
 * Key of the descriptions the guest puts among logged values in place of what cannot be cloned; its value says
 * what the object stands for (see `revive` in console.ts):
 * - `{ [LOG_MARK]: "v", t }` text shown as is (a symbol, a getter, a promise, an object beyond the depth shown)
 * - `{ [LOG_MARK]: "f", s, n }` a function: the start of its source and its name
 * - `{ [LOG_MARK]: "e", n, m, v }` an error: name, message and its other enumerable properties
 * - `{ [LOG_MARK]: "c", n, v, s }` the copy `v` of an object whose prototype matters: `n` is its constructor's name
 *   (`null`: no prototype), `s` its symbol-keyed properties as `[symbol text, value]` pairs
 */
export const LOG_MARK = "@@cyrnel:log";
/** Levels of nesting the console shows; deeper objects print as `[Object]`, `[Array]`, `[ClassName]`. */
const LOG_DEPTH = 2;

function guestRuntime(cyrnel: StagedCyrnel, console: Record<string, unknown>, K: string, depth: number): void {
  type Fn = (...args: never[]) => unknown;
  type Obj = Record<PropertyKey, unknown>;
  const host = cyrnel.__host as GuestHost;
  delete cyrnel.__host;
  const { apply, get, ownKeys } = Reflect;
  const { freeze, getPrototypeOf, keys, hasOwn, defineProperty, getOwnPropertyDescriptor: descriptor } = Object;
  const ObjectProto = Object.prototype;
  const { isArray } = Array;
  const ErrorCtor = Error;
  const StringCtor = String;
  const TypeErrorCtor = TypeError;
  const ProxyCtor = Proxy;
  const MapCtor = Map;
  const SetCtor = Set;
  const PromiseCtor = Promise;
  const ErrorProto = ErrorCtor.prototype;
  const stringify = JSON.stringify;
  const call = (fn: unknown, self: unknown, ...args: unknown[]): unknown => apply(fn as Fn, self, args);
  const getter = (proto: object, key: PropertyKey) => (descriptor(proto, key) as PropertyDescriptor).get;
  const brand = (fn: unknown, value: unknown): boolean => {
    try {
      call(fn, value, ObjectProto);
      return true;
    } catch {
      return false;
    }
  };
  const promiseThen = PromiseCtor.prototype.then;
  const fnToString = Function.prototype.toString;
  const symToString = Symbol.prototype.toString;
  const { slice, indexOf } = StringCtor.prototype;
  const mapGet = MapCtor.prototype.get;
  const mapSet = MapCtor.prototype.set;
  const mapForEach = MapCtor.prototype.forEach;
  const setAdd = SetCtor.prototype.add;
  const setHas = SetCtor.prototype.has;
  const setForEach = SetCtor.prototype.forEach;
  /** Brands of what crosses as itself and shows at any depth (Date, RegExp)... */
  const dateGetTime = Date.prototype.getTime;
  const RegExpProto = RegExp.prototype;
  const regExpSource = getter(RegExpProto, "source");
  const TypedArrayProto = getPrototypeOf(Uint8Array.prototype);
  const typedArrayTag = getter(TypedArrayProto, Symbol.toStringTag);
  const typedArrayLength = getter(TypedArrayProto, "length");
  /** ...and of what crosses as itself (ArrayBuffer, typed arrays, DataView). */
  const binary = [
    getter(ArrayBuffer.prototype, "byteLength"),
    getter(getPrototypeOf(Uint8Array.prototype), "buffer"),
    getter(DataView.prototype, "buffer"),
  ];
  const mapSize = getter(MapCtor.prototype, "size");
  const setSize = getter(SetCtor.prototype, "size");
  const weakMapHas = WeakMap.prototype.has;
  const weakSetHas = WeakSet.prototype.has;
  const write = host.write;
  const output = host.output;
  const invokeHost = host.invoke;

  const define = (target: object, key: PropertyKey, value: unknown) =>
    defineProperty(target, key, { value, writable: true, enumerable: true, configurable: true });
  const isPlain = (value: unknown): value is Obj => {
    if (typeof value !== "object" || value === null || isArray(value)) return false;
    const proto = getPrototypeOf(value);
    return proto === ObjectProto || proto === null;
  };
  const kindOf = (value: unknown): string => {
    if (value === null) return "null";
    if (isArray(value)) return "an array";
    if (typeof value === "object") {
      const ctor = (getPrototypeOf(value) as { constructor?: { name?: unknown } } | null)?.constructor?.name;
      return typeof ctor === "string" && ctor !== "" ? `an instance of ${ctor}` : "an object";
    }
    return typeof value;
  };
  // `.name` or `["na-me"]`; past 200 characters by its start (QuickJS's regex engine runs out of memory on MBs).
  const label = (name: string): string => {
    const short = name.length > 200 ? `${call(slice, name, 0, 200)}...` : name;
    return short === name && /^[A-Za-z_$][\w$]*$/.test(name) ? `.${name}` : `[${stringify(short)}]`;
  };

  // Console: arguments made cloneable here, formatted on the host.
  const text = (t: string) => ({ [K]: "v", t });
  /** The name of the nearest constructor on the prototype chain, as the host's formatter shows it. */
  const ctorName = (value: object): string | undefined => {
    for (let p = getPrototypeOf(value); p !== null; p = getPrototypeOf(p)) {
      const ctor = (descriptor(p, "constructor") as PropertyDescriptor | undefined)?.value;
      if (typeof ctor === "function" && typeof ctor.name === "string" && ctor.name !== "") return ctor.name;
    }
    return undefined;
  };
  /** Copies own enumerable properties (of an array: the first items and the non-index keys); returns symbol ones. */
  const props = (from: Obj, to: object, level: number, array: boolean, skip?: string[]): unknown[][] => {
    const symbols: unknown[][] = [];
    const list = ownKeys(from);
    for (let i = 0; i < list.length; i++) {
      const key = list[i] as string | symbol;
      if (array && (key === "length" || (typeof key === "string" && StringCtor(+key >>> 0) === key && +key >= 100)))
        continue;
      if (skip !== undefined && (key === skip[0] || key === skip[1] || key === skip[2])) continue;
      const d = descriptor(from, key);
      if (d === undefined || !d.enumerable) continue;
      const value =
        d.get || d.set ? text(d.set ? (d.get ? "[Getter/Setter]" : "[Setter]") : "[Getter]") : lift(d.value, level + 1);
      if (typeof key === "symbol") define(symbols, symbols.length, [call(symToString, key), value]);
      else define(to, key, value);
    }
    return symbols;
  };
  let seen = new MapCtor<object, [number, unknown]>();
  const lift = (value: unknown, level: number): unknown => {
    if (typeof value === "symbol") return text(call(symToString, value) as string);
    if (typeof value === "function") {
      let s = "";
      try {
        s = call(slice, call(fnToString, value), 0, 24) as string;
      } catch {
        // Not a real function after all.
      }
      const n = (descriptor(value, "name") as PropertyDescriptor | undefined)?.value;
      return { [K]: "f", s, n: typeof n === "string" ? n : "" };
    }
    if (typeof value !== "object" || value === null) return value;
    const known = call(mapGet, seen, value) as [number, unknown] | undefined;
    if (known !== undefined && known[0] <= level) return known[1];
    if (brand(dateGetTime, value) || (value !== RegExpProto && brand(regExpSource, value))) return value;
    const o = value as Obj;
    const proto = getPrototypeOf(o);
    let error = false;
    for (let p = proto; p !== null; p = getPrototypeOf(p)) if (p === ErrorProto) error = true;
    if (error) {
      const copy = { [K]: "e", n: "Error", m: "", v: {} as Obj, s: [] as unknown[] };
      call(mapSet, seen, o, [level, copy]);
      try {
        copy.n = StringCtor(o.name);
        copy.m = StringCtor(o.message);
      } catch {
        // Keep the defaults.
      }
      // Its own properties show one level down, like an object's; beyond the depth shown only its name and message.
      if (level <= depth) copy.s = props(o, copy.v, level, false, ["stack", "message", "name"]);
      return copy;
    }
    const array = isArray(o);
    const name = ctorName(o);
    if (level > depth) return text(array ? "[Array]" : `[${name ?? "Object"}]`);
    // Some hosts have no Float16Array to receive (Node 20): its first items cross as an array the host shows as one.
    if (call(typedArrayTag, o) === "Float16Array") {
      const length = call(typedArrayLength, o) as number;
      const items: number[] = [];
      for (let i = 0; i < length && i < 100; i++) define(items, i, o[i]);
      defineProperty(items, "length", { value: length });
      return { [K]: "c", n: "Float16Array", v: items, s: [] };
    }
    for (let i = 0; i < binary.length; i++) if (brand(binary[i], o)) return value;
    if (o instanceof PromiseCtor) return text("Promise { <pending or settled> }");
    if (brand(weakMapHas, o)) return text("WeakMap { <items unknown> }");
    if (brand(weakSetHas, o)) return text("WeakSet { <items unknown> }");
    const map = !array && brand(mapSize, o);
    const set = !array && !map && brand(setSize, o);
    const copy = (array ? [] : map ? new MapCtor() : set ? new SetCtor() : {}) as Obj;
    call(mapSet, seen, o, [level, copy]);
    if (array) defineProperty(copy, "length", { value: o.length });
    if (map)
      call(mapForEach, o, (v: unknown, k: unknown) => call(mapSet, copy, lift(k, level + 1), lift(v, level + 1)));
    if (set) call(setForEach, o, (v: unknown) => call(setAdd, copy, lift(v, level + 1)));
    const symbols = map || set ? [] : props(o, copy, level, array);
    const natural = array ? "Array" : map ? "Map" : set ? "Set" : proto === ObjectProto ? "Object" : undefined;
    const n = proto === null ? null : name === natural ? undefined : name;
    // A copy that has the description key of its own is wrapped in a description, so it is never read as one.
    return n === undefined && symbols.length === 0 && !hasOwn(copy, K) ? copy : { [K]: "c", n, v: copy, s: symbols };
  };
  // `%j` is JSON of the guest's value (its getters, its `toJSON`) and `%s` of a function its source: made here.
  // Returns the indexes of the descriptions it made, which are sent as they are.
  const directives = (args: unknown[]): Set<number> => {
    const made = new SetCtor<number>();
    const first = args[0];
    if (typeof first !== "string" || (call(indexOf, first, "%") as number) < 0) return made;
    for (let i = 0, next = 1; i < first.length - 1 && next < args.length; i++) {
      if (first[i] !== "%") continue;
      const kind = first[++i] as string;
      if (kind === "%" || (call(indexOf, "sdifjoOc", kind) as number) < 0) continue;
      if (kind === "j") {
        let t: string;
        try {
          t = stringify(args[next]) ?? "undefined";
        } catch {
          t = "[Circular]";
        }
        args[next] = text(t);
        call(setAdd, made, next);
      } else if (kind === "s" && typeof args[next] === "function") args[next] = StringCtor(args[next]);
      next++;
    }
    return made;
  };
  let muted = false;
  const log = (stream: 1 | 2, args: unknown[]) => {
    if (muted) return;
    const made = directives(args);
    const outer = seen;
    seen = new MapCtor();
    const lifted: unknown[] = [];
    for (let i = 0; i < args.length; i++) {
      let value: unknown;
      try {
        value = call(setHas, made, i) ? args[i] : lift(args[i], 0);
      } catch {
        value = text("[object that cannot be inspected]");
      }
      define(lifted, i, value);
    }
    seen = outer;
    try {
      if (write(stream, lifted) === false) muted = true;
    } catch {
      write(stream, [text("[object that cannot be inspected]")]);
    }
  };
  for (const key of keys(console)) delete console[key];
  const levels = ["log", "info", "debug", "warn", "error"];
  for (let i = 0; i < levels.length; i++) {
    console[levels[i] as string] = (...args: unknown[]) => log(i < 3 ? 1 : 2, args);
  }
  freeze(console);

  const invoke = (serviceId: string, toolId: string, parameters: unknown): Promise<unknown> => {
    if (parameters === undefined) parameters = {};
    else if (!isPlain(parameters)) {
      const where = `cyrnel.services${label(serviceId)}.tools${label(toolId)}.invoke`;
      throw new TypeErrorCtor(`${where}(parameters) expects a plain object, got ${kindOf(parameters)}`);
    }
    // The call site's stack, taken now: a rejection arrives later, from the host, with no user frame on it.
    const site = new ErrorCtor();
    const fail = (reason: unknown) => {
      const known = typeof reason === "object" && reason !== null;
      const message = known ? StringCtor((reason as { message?: unknown }).message) : StringCtor(reason);
      const error = new ErrorCtor(message);
      const name = known ? (reason as { name?: unknown }).name : undefined;
      if (typeof name === "string" && name !== "Error") {
        defineProperty(error, "name", { value: name, writable: true, configurable: true, enumerable: false });
      }
      defineProperty(error, "stack", { value: site.stack, writable: true, configurable: true, enumerable: false });
      throw error;
    };
    return call(promiseThen, invokeHost(serviceId, toolId, parameters as Obj), undefined, fail) as Promise<unknown>;
  };

  const skip = (key: PropertyKey): boolean => typeof key !== "string" || key === "then" || key in ObjectProto;
  /** A frozen record whose unknown names fail with the list of known ones (clearer than `undefined.tools`). */
  const strict = <T extends object>(target: T, what: string, kind: string): T =>
    new ProxyCtor(freeze(target), {
      get(t, key, receiver) {
        if (!skip(key) && !hasOwn(t, key)) {
          const known = keys(t);
          throw new TypeErrorCtor(
            `${what} has no ${kind} '${StringCtor(key)}' (available: ${known.length === 0 ? "none" : known.join(", ")})`,
          );
        }
        return get(t, key, receiver);
      },
    });

  const discovered = cyrnel.services as GuestServices;
  let services: object;
  if (discovered === null || discovered === undefined) {
    // No tool discovery on this host: every name is forwarded as written; the host says whether it exists.
    services = new ProxyCtor(freeze({}), {
      get(_t, serviceId) {
        if (skip(serviceId)) return undefined;
        const tools = new ProxyCtor(freeze({}), {
          get(_u, toolId) {
            if (skip(toolId)) return undefined;
            return freeze({ invoke: (p?: unknown) => invoke(StringCtor(serviceId), StringCtor(toolId), p) });
          },
        });
        return freeze({ id: serviceId, tools });
      },
    });
  } else {
    const table: Record<string, object> = {};
    for (const serviceId of keys(discovered)) {
      const service = discovered[serviceId] as NonNullable<GuestServices>[string];
      const tools: Record<string, object> = {};
      for (const toolId of keys(service.tools)) {
        const tool = service.tools[toolId] as { id: string; name: string; description: string };
        tools[toolId] = freeze({
          id: tool.id,
          name: tool.name,
          description: tool.description,
          invoke: (p?: unknown) => invoke(serviceId, toolId, p),
        });
      }
      table[serviceId] = freeze({
        id: service.id,
        name: service.name,
        description: service.description,
        tools: strict(tools, `cyrnel.services${label(serviceId)}.tools`, "tool"),
      });
    }
    services = strict(table, "cyrnel.services", "service");
  }

  cyrnel.services = services;
  cyrnel.output = (patch: unknown): void => {
    if (!isPlain(patch)) {
      throw new TypeErrorCtor(`cyrnel.output(value) expects a plain object such as { total: 3 }, got ${kindOf(patch)}`);
    }
    output(patch);
  };
  freeze(cyrnel);
}

/** Module name of the runtime in the run's module graph. */
export const RUNTIME_MODULE = "./__runtime__.js";
/** Module name of the process code: error positions are reported for this module. */
export const PROCESS_MODULE = "./process.ts";
/** Name of the entry module. */
export const ENTRY_FILENAME = "__entry__.js";

/**
 * Source text without what the parser need not read: indentation and whole-line comments. Safe for the runtime's
 * own source only (it has no multi-line strings, templates or comments).
 */
function compact(source: string): string {
  return source
    .split("\n")
    .map((line) => line.trim())
    .filter((line) => line !== "" && !line.startsWith("//") && !(line.startsWith("/*") && line.endsWith("*/")))
    .join("\n");
}

const RUNTIME_BOOT_NAME = "cyrnel-runtime";

/** The runtime, compiled once into every booted instance of the environment (see `SandboxOptions.bootModules`). */
export const RUNTIME_BOOT_MODULES: Readonly<Record<string, string>> = Object.freeze({
  [RUNTIME_BOOT_NAME]: `export default ${compact(guestRuntime.toString())}\n`,
});

/** The runtime module: the booted runtime applied to the run's staged globals. */
export const RUNTIME_SOURCE = `import runtime from ${JSON.stringify(BOOT_PREFIX + RUNTIME_BOOT_NAME)};
runtime(cyrnel, console, ${JSON.stringify(LOG_MARK)}, ${LOG_DEPTH});
`;

/**
 * The entry: runtime first, then the process code (top-level await included); a default-exported function is
 * called and awaited after the module body.
 */
export const ENTRY_SOURCE = `import ${JSON.stringify(RUNTIME_MODULE)};
import * as main from ${JSON.stringify(PROCESS_MODULE)};
export default async () => {
  const run = main.default;
  if (typeof run === "function") await run();
};
`;
