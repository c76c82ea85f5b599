/**
 * The guest half of the environment: the module evaluated before the process code. It turns the host functions
 * handed in through `globals` into the documented surface (`console`, `cyrnel.output`,
 * `cyrnel.services[s].tools[t].invoke`) and then hides them, so user code reaches the host only through that surface.
 *
 * Shipped as source text (see `RUNTIME_SOURCE`): `guestRuntime` must not close over anything in this file, and it
 * captures every intrinsic it uses before user code runs.
 * @module
 */
import { type Inspect, makeInspect } from "./inspect.js";

/** Host functions the runtime module takes from `cyrnel.__host` (and deletes from it). */
export interface GuestHost {
  /** Writes one line (the host appends `\n` and encodes UTF-8); stream 1 = stdout, 2 = stderr. */
  write(stream: 1 | 2, text: string): void;
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
export interface StagedCyrnel {
  __host?: GuestHost;
  services: GuestServices | unknown;
  output?: unknown;
}

export function guestRuntime(cyrnel: StagedCyrnel, console: Record<string, unknown>, inspector: () => Inspect): void {
  type Fn = (...args: never[]) => unknown;
  const host = cyrnel.__host as GuestHost;
  delete cyrnel.__host;
  const { format } = inspector();
  const { apply, get } = Reflect;
  const { freeze, getPrototypeOf, keys, hasOwn, defineProperty } = Object;
  const ObjectProto = Object.prototype;
  const { isArray } = Array;
  const ErrorCtor = Error;
  const StringCtor = String;
  const TypeErrorCtor = TypeError;
  const ProxyCtor = Proxy;
  const stringify = JSON.stringify;
  const promiseThen = Promise.prototype.then as Fn;
  const write = host.write;
  const output = host.output;
  const invokeHost = host.invoke;

  const isPlain = (value: unknown): value is Record<string, unknown> => {
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
  const label = (name: string): string => (/^[A-Za-z_$][\w$]*$/.test(name) ? `.${name}` : `[${stringify(name)}]`);

  const levels: [string, 1 | 2][] = [
    ["log", 1],
    ["info", 1],
    ["debug", 1],
    ["warn", 2],
    ["error", 2],
  ];
  for (const key of keys(console)) delete console[key];
  for (const [level, stream] of levels) {
    console[level] = (...args: unknown[]) => {
      write(stream, format(args));
    };
  }
  freeze(console);

  const invoke = (serviceId: string, toolId: string, parameters: unknown): Promise<unknown> => {
    const where = `cyrnel.services${label(serviceId)}.tools${label(toolId)}.invoke`;
    if (parameters === undefined) parameters = {};
    else if (!isPlain(parameters)) {
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
    return apply(promiseThen, invokeHost(serviceId, toolId, parameters as Record<string, unknown>), [
      undefined,
      fail,
    ]) as Promise<unknown>;
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

/** The runtime module: the inspector and the runtime, applied to the staged globals. */
export const RUNTIME_SOURCE = `(${guestRuntime.toString()})(cyrnel, console, (${makeInspect.toString()}));\n`;

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
