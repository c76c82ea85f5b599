/**
 * `Intl` of a sandbox made with `intl: true` (contract.md §14): thin guest objects that hold their locales and
 * options as plain data and ask the host's own `Intl` for every answer (OP_INTL, core/intl.ts), which pins what the
 * host would otherwise leak (its default locale and time zone). What comes back is JSON parsed here: strings, numbers,
 * arrays and plain objects made fresh in the guest, never a host object. Also the `toLocaleString` family of
 * `Number`, `BigInt`, `Date`, `Array` and typed arrays, and `String`'s `localeCompare` and `toLocale*Case`.
 * Shipped as source text (see core.ts).
 * @module
 */
import type { HostCall } from "./core.js";

export function guestIntl(hostCall: HostCall): void {
  // biome-ignore lint/suspicious/noRedundantUseStrict: shipped as source text and evaluated as a sloppy script.
  "use strict";
  const OP_INTL = 11;
  const G = globalThis;
  const { apply } = Reflect;
  const { defineProperty, getOwnPropertyDescriptor, getPrototypeOf } = Object;
  const { stringify, parse } = JSON;
  const { isArray } = Array;
  const TypeErrorCtor = TypeError;
  const StringCtor = String;
  const NumberCtor = Number;
  const EMPTY: unknown[] = [];
  const isNaNumber = Number.isNaN;
  const { trunc } = Math;
  const states = new WeakMap<object, { kind: string; spec: string; resolved: string; bound?: () => unknown }>();
  const numberValue = Number.prototype.valueOf;
  const bigintValue = BigInt.prototype.valueOf;
  const dateValue = Date.prototype.valueOf;
  const dateNow = Date.now;
  const stringSlice = String.prototype.slice;
  const stringValue = (self: unknown, what: string): string => {
    if (self === undefined || self === null)
      throw new TypeErrorCtor(`String.prototype.${what} called on null or undefined`);
    return StringCtor(self);
  };
  /** ToString: a symbol is a `TypeError` (`String(symbol)` would describe it). */
  const text = (value: unknown): string => {
    if (typeof value === "symbol") throw new TypeErrorCtor("Cannot convert a Symbol value to a string");
    return StringCtor(value);
  };
  /** Every option any of the constructors reads; the host's `Intl` checks them. */
  const OPTIONS = [
    "localeMatcher",
    "numberingSystem",
    "style",
    "currency",
    "currencyDisplay",
    "currencySign",
    "unit",
    "unitDisplay",
    "notation",
    "compactDisplay",
    "signDisplay",
    "useGrouping",
    "minimumIntegerDigits",
    "minimumFractionDigits",
    "maximumFractionDigits",
    "minimumSignificantDigits",
    "maximumSignificantDigits",
    "roundingPriority",
    "roundingIncrement",
    "roundingMode",
    "trailingZeroDisplay",
    "calendar",
    "hour12",
    "hourCycle",
    "timeZone",
    "weekday",
    "era",
    "year",
    "month",
    "day",
    "dayPeriod",
    "hour",
    "minute",
    "second",
    "fractionalSecondDigits",
    "timeZoneName",
    "formatMatcher",
    "dateStyle",
    "timeStyle",
    "usage",
    "sensitivity",
    "ignorePunctuation",
    "collation",
    "numeric",
    "caseFirst",
    "type",
    "granularity",
  ];

  /** A value as JSON can carry it: non-finite numbers and -0 as `{ n }`, bigints as `{ b }`. */
  const wire = (value: unknown): unknown => {
    if (typeof value === "number") {
      if (isNaNumber(value) || value === 1 / 0 || value === -1 / 0 || (value === 0 && 1 / value < 0)) {
        return { n: value === 0 ? "-0" : StringCtor(value) };
      }
      return value;
    }
    if (typeof value === "bigint") return { b: StringCtor(value) };
    if (typeof value === "symbol") throw new TypeErrorCtor("Cannot convert a Symbol value to a string");
    if (typeof value === "object" && value !== null) return StringCtor(value);
    return value;
  };
  /** Appends `value` to `list` as a data property: a setter the guest put on `Array.prototype` never runs. */
  const append = (list: unknown[], value: unknown) =>
    defineProperty(list, list.length, { value, writable: true, enumerable: true, configurable: true });
  /** The locales argument as a list of tags (CanonicalizeLocaleList's reading; the host canonicalizes). */
  const localesOf = (locales: unknown): unknown => {
    if (locales === undefined) return undefined;
    if (typeof locales === "string") return [locales];
    if (locales === null) throw new TypeErrorCtor("Cannot convert undefined or null to object");
    const list = Object(locales) as ArrayLike<unknown>;
    const length = NumberCtor(list.length) >>> 0;
    const out: string[] = [];
    for (let i = 0; i < length; i++) {
      if (!(i in list)) continue;
      const tag = list[i];
      if (typeof tag !== "string" && (typeof tag !== "object" || tag === null)) {
        throw new TypeErrorCtor("Language ID should be string or object.");
      }
      append(out, StringCtor(tag));
    }
    return out;
  };
  /** The options argument as plain data: an object's known options, other values as they are (the host refuses). */
  const optionsOf = (options: unknown): unknown => {
    if (options === undefined) return undefined;
    // A symbol's object has no options, as `true`'s has none: the host takes (or refuses) it as it takes `true`.
    if (typeof options === "symbol") return true;
    if (typeof options !== "object" || options === null) return wire(options);
    const out = { __proto__: null } as unknown as Record<string, unknown>;
    for (let i = 0; i < OPTIONS.length; i++) {
      const name = OPTIONS[i] as string;
      const value = (options as Record<string, unknown>)[name];
      if (value !== undefined) out[name] = wire(value);
    }
    return out;
  };
  /** Asks the host: `spec` is `[kind, locales, options]` as JSON, the answer JSON parsed here. */
  const ask = (spec: string, method: string, args: unknown[]): unknown =>
    parse(hostCall(OP_INTL, 0, `${spec}\n${method}\n${stringify(args)}`, EMPTY) as string);
  /** `[kind, locales, options]` as JSON; without options when there are none (`null` is a bad options argument). */
  const specOf = (kind: string, locales: unknown, options: unknown) =>
    options === undefined
      ? stringify([kind, localesOf(locales)])
      : stringify([kind, localesOf(locales), optionsOf(options)]);
  const stateOf = (self: unknown, kind: string, method: string) => {
    const state = typeof self === "object" && self !== null ? states.get(self) : undefined;
    if (state === undefined || state.kind !== kind) {
      throw new TypeErrorCtor(`Method Intl.${kind}.prototype.${method} called on incompatible receiver`);
    }
    return state;
  };
  const hide = (target: object, name: PropertyKey, value: unknown) =>
    defineProperty(target, name, { value, writable: true, enumerable: false, configurable: true });
  const IntlObject = {};
  defineProperty(IntlObject, Symbol.toStringTag, { value: "Intl", configurable: true });
  const statics = {
    getCanonicalLocales(locales: unknown) {
      return ask(stringify(["Intl", localesOf(locales)]), "getCanonicalLocales", EMPTY);
    },
    supportedValuesOf(key: unknown) {
      return ask('["Intl"]', "supportedValuesOf", [text(key)]);
    },
  };
  hide(IntlObject, "getCanonicalLocales", statics.getCanonicalLocales);
  hide(IntlObject, "supportedValuesOf", statics.supportedValuesOf);

  /** A time value the way DateTimeFormat's `format` takes a date. */
  const timeOf = (date: unknown) => wire(date === undefined ? dateNow() : NumberCtor(date));
  /** A number the way NumberFormat's `format` takes one: numbers, bigints and decimal strings keep their precision. */
  const numericOf = (value: unknown) => {
    const primitive = typeof value === "object" && value !== null ? NumberCtor(value) : value;
    return wire(typeof primitive === "string" || typeof primitive === "bigint" ? primitive : NumberCtor(primitive));
  };
  /**
   * A range's two ends, each made by `of`: neither may be `undefined` (a `TypeError`, as ECMA-402 says, with V8's
   * message: `ends` names them, or there is one message for both).
   */
  const range = (args: unknown[], of: (value: unknown) => unknown, ends?: [string, string]) => {
    for (let i = 0; i < 2; i++) {
      if (args[i] === undefined) {
        throw new TypeErrorCtor(ends === undefined ? "Invalid time value" : `Invalid ${ends[i]} : undefined`);
      }
    }
    return [of(args[0]), of(args[1])];
  };
  const listOf = (list: unknown): string[] => {
    const out: string[] = [];
    if (list === undefined) return out;
    for (const item of list as Iterable<unknown>) {
      if (typeof item !== "string")
        throw new TypeErrorCtor(`Iterable yielded ${StringCtor(item)} which is not a string`);
      append(out, item);
    }
    return out;
  };

  /**
   * Defines `Intl[kind]`: `methods` each take the state's spec and the call's arguments; `callable` constructors
   * (NumberFormat, DateTimeFormat, Collator) may be called without `new`, as ECMA-402 lets them.
   */
  const define = (
    kind: string,
    callable: boolean,
    methods: Record<string, (spec: string, args: unknown[]) => unknown>,
    bound: string | undefined,
  ) => {
    const Ctor = function (this: object, locales?: unknown, options?: unknown) {
      if (new.target === undefined) {
        if (!callable) throw new TypeErrorCtor(`Constructor Intl.${kind} requires 'new'`);
        return new (Ctor as unknown as new (l: unknown, o: unknown) => object)(locales, options);
      }
      const spec = specOf(kind, locales, options);
      // The resolved options as JSON, for `resolvedOptions` to parse fresh each time.
      states.set(this, { kind, spec, resolved: hostCall(OP_INTL, 0, `${spec}\nnew\n[]`, EMPTY) as string });
      return undefined;
    } as unknown as { prototype: object; name: string };
    defineProperty(Ctor, "name", { value: kind });
    defineProperty(Ctor, "length", { value: 0 });
    defineProperty(Ctor, "prototype", { writable: false });
    const proto = Ctor.prototype;
    defineProperty(proto, Symbol.toStringTag, { value: `Intl.${kind}`, configurable: true });
    const own = {
      resolvedOptions(this: unknown) {
        return parse(stateOf(this, kind, "resolvedOptions").resolved);
      },
      supportedLocalesOf(locales: unknown, options?: unknown) {
        return ask(specOf(kind, locales, options), "supportedLocalesOf", EMPTY);
      },
    };
    hide(proto, "resolvedOptions", own.resolvedOptions);
    defineProperty(own.supportedLocalesOf, "length", { value: 1 });
    hide(Ctor, "supportedLocalesOf", own.supportedLocalesOf);
    const names = Object.keys(methods);
    for (let i = 0; i < names.length; i++) {
      const name = names[i] as string;
      const method = methods[name] as (spec: string, args: unknown[]) => unknown;
      // ECMA-402's lengths: a range's, a comparison's and a relative time's take two arguments, the rest one.
      const length = kind === "RelativeTimeFormat" || name === "compare" || name.includes("Range") ? 2 : 1;
      const body = {
        [name](this: unknown, ...args: unknown[]) {
          return method(stateOf(this, kind, name).spec, args);
        },
      }[name] as () => unknown;
      defineProperty(body, "length", { value: length });
      if (name === bound) {
        // ECMA-402's [[BoundFormat]] and [[BoundCompare]]: made on first use, the same function after.
        const getter = getOwnPropertyDescriptor(
          {
            get [name]() {
              const state = stateOf(this, kind, name);
              if (state.bound === undefined) {
                const { spec } = state;
                state.bound = {
                  ""(...args: unknown[]) {
                    return method(spec, args);
                  },
                }[""] as () => unknown;
                defineProperty(state.bound, "length", { value: length });
              }
              return state.bound;
            },
          },
          name,
        ) as PropertyDescriptor;
        getter.enumerable = false;
        defineProperty(proto, name, getter);
      } else hide(proto, name, body);
    }
    hide(IntlObject, kind, Ctor);
  };
  define(
    "NumberFormat",
    true,
    {
      format: (spec, a) => ask(spec, "format", [numericOf(a[0])]),
      formatToParts: (spec, a) => ask(spec, "formatToParts", [numericOf(a[0])]),
      formatRange: (spec, a) => ask(spec, "formatRange", range(a, numericOf, ["start", "end"])),
      formatRangeToParts: (spec, a) => ask(spec, "formatRangeToParts", range(a, numericOf, ["start", "end"])),
    },
    "format",
  );
  define(
    "DateTimeFormat",
    true,
    {
      format: (spec, a) => ask(spec, "format", [timeOf(a[0])]),
      formatToParts: (spec, a) => ask(spec, "formatToParts", [timeOf(a[0])]),
      formatRange: (spec, a) => ask(spec, "formatRange", range(a, timeOf)),
      formatRangeToParts: (spec, a) => ask(spec, "formatRangeToParts", range(a, timeOf)),
    },
    "format",
  );
  define(
    "Collator",
    true,
    {
      compare: (spec, a) => ask(spec, "compare", [text(a[0]), text(a[1])]),
    },
    "compare",
  );
  define(
    "PluralRules",
    false,
    {
      select: (spec, a) => ask(spec, "select", [wire(NumberCtor(a[0]))]),
      selectRange: (spec, a) =>
        ask(
          spec,
          "selectRange",
          range(a, (x) => wire(NumberCtor(x)), ["startRange", "endRange"]),
        ),
    },
    undefined,
  );
  define(
    "RelativeTimeFormat",
    false,
    {
      format: (spec, a) => ask(spec, "format", [wire(NumberCtor(a[0])), text(a[1])]),
      formatToParts: (spec, a) => ask(spec, "formatToParts", [wire(NumberCtor(a[0])), text(a[1])]),
    },
    undefined,
  );
  define(
    "ListFormat",
    false,
    {
      format: (spec, a) => ask(spec, "format", [listOf(a[0])]),
      formatToParts: (spec, a) => ask(spec, "formatToParts", [listOf(a[0])]),
    },
    undefined,
  );

  // Segmenter: the host answers the length of every segment of the string at once (and for words whether each is
  // word-like); `Segments` serves them from the guest, sliced from its own string.
  type Segmented = { starts: number[]; wordLike: string; input: string; words: boolean };
  const segmentData = (state: Segmented, at: number) => {
    const { starts, input } = state;
    const index = starts[at] as number;
    const next = at + 1 < starts.length ? (starts[at + 1] as number) : input.length;
    const data: Record<string, unknown> = { segment: apply(stringSlice, input, [index, next]), index, input };
    if (state.words) data.isWordLike = state.wordLike[at] === "1";
    return data;
  };
  const SegmentsProto = {};
  const segmentsOf = new WeakMap<object, Segmented>();
  hide(SegmentsProto, "containing", function containing(this: object, index?: unknown) {
    const state = segmentsOf.get(this);
    if (state === undefined)
      throw new TypeErrorCtor("Method %Segments.prototype%.containing called on incompatible receiver");
    // ToIntegerOrInfinity: a bigint or a symbol is a TypeError, as unary plus makes it.
    const n = +(index as number);
    const at = isNaNumber(n) ? 0 : trunc(n);
    if (at < 0 || at >= state.input.length) return undefined;
    let low = 0;
    let high = state.starts.length - 1;
    while (low < high) {
      const mid = (low + high + 1) >> 1;
      if ((state.starts[mid] as number) <= at) low = mid;
      else high = mid - 1;
    }
    return segmentData(state, low);
  });
  const ITERATING = Symbol("iterating");
  const SegmentIteratorProto = { __proto__: getPrototypeOf(getPrototypeOf([][Symbol.iterator]())) };
  defineProperty(SegmentIteratorProto, Symbol.toStringTag, { value: "Segmenter String Iterator", configurable: true });
  hide(
    SegmentIteratorProto,
    "next",
    function next(this: {
      [k: symbol]: { state: Segmented; at: number };
    }) {
      const it = this[ITERATING];
      if (it === undefined) throw new TypeErrorCtor("next method called on incompatible receiver");
      if (it.at >= it.state.starts.length) return { value: undefined, done: true };
      return { value: segmentData(it.state, it.at++), done: false };
    },
  );
  hide(SegmentsProto, Symbol.iterator, function segmentsIterator(this: object) {
    const state = segmentsOf.get(this);
    if (state === undefined)
      throw new TypeErrorCtor("Method %Segments.prototype%[@@iterator] called on incompatible receiver");
    const iterator = { __proto__: SegmentIteratorProto };
    defineProperty(iterator, ITERATING, { value: { state, at: 0 } });
    return iterator;
  });
  define(
    "Segmenter",
    false,
    {
      segment: (spec, a) => {
        const input = text(a[0]);
        const [lengths, wordLike, words] = ask(spec, "segment", [input]) as [number[], string, boolean];
        const starts: number[] = [];
        for (let i = 0, at = 0; i < lengths.length; at += lengths[i] as number, i++) append(starts, at);
        const segments = { __proto__: SegmentsProto };
        segmentsOf.set(segments, { starts, wordLike, input, words });
        return segments;
      },
    },
    undefined,
  );
  hide(G, "Intl", IntlObject);

  // The locale-sensitive methods of the built-ins, as ECMA-402 defines them over the constructors above.
  const formatNumber = (value: unknown, locales: unknown, options: unknown) =>
    ask(specOf("NumberFormat", locales, options), "format", [value]);
  const numeric = {
    toLocaleString(this: unknown, locales?: unknown, options?: unknown) {
      return formatNumber(wire(apply(numberValue, this, EMPTY)), locales, options);
    },
  };
  hide(Number.prototype, "toLocaleString", numeric.toLocaleString);
  const big = {
    toLocaleString(this: unknown, locales?: unknown, options?: unknown) {
      return formatNumber(wire(apply(bigintValue, this, EMPTY)), locales, options);
    },
  };
  hide(BigInt.prototype, "toLocaleString", big.toLocaleString);
  const DATE_METHODS = ["toLocaleString", "toLocaleDateString", "toLocaleTimeString"];
  for (let i = 0; i < DATE_METHODS.length; i++) {
    const name = DATE_METHODS[i] as string;
    hide(
      Date.prototype,
      name,
      {
        [name](this: unknown, locales?: unknown, options?: unknown) {
          const time = apply(dateValue, this, EMPTY) as number;
          if (isNaNumber(time)) return "Invalid Date";
          return ask(specOf("Date", locales, options), name, [time]);
        },
      }[name],
    );
  }
  const compare = {
    localeCompare(this: unknown, that: unknown, locales?: unknown, options?: unknown) {
      const self = stringValue(this, "localeCompare");
      return ask(specOf("Collator", locales, options), "compare", [self, text(that)]);
    },
  };
  hide(String.prototype, "localeCompare", compare.localeCompare);
  for (const name of ["toLocaleUpperCase", "toLocaleLowerCase"]) {
    hide(
      String.prototype,
      name,
      {
        [name](this: unknown, locales?: unknown) {
          const self = stringValue(this, name);
          return ask(specOf("String", locales, undefined), name, [self]);
        },
      }[name],
    );
  }
  const { toLocaleString: arrayToLocaleString } = {
    toLocaleString(this: unknown, locales?: unknown, options?: unknown) {
      if (this === undefined || this === null)
        throw new TypeErrorCtor("Array.prototype.toLocaleString called on null or undefined");
      const array = Object(this) as ArrayLike<unknown>;
      const length = isArray(array) ? array.length : NumberCtor(array.length) >>> 0;
      let out = "";
      for (let i = 0; i < length; i++) {
        if (i > 0) out += ",";
        const item = array[i] as { toLocaleString(l: unknown, o: unknown): unknown } | undefined | null;
        if (item !== undefined && item !== null) out += StringCtor(item.toLocaleString(locales, options));
      }
      return out;
    },
  };
  hide(Array.prototype, "toLocaleString", arrayToLocaleString);
  hide(getPrototypeOf(Uint8Array.prototype), "toLocaleString", arrayToLocaleString);
  // ECMA-402's lengths: `localeCompare` takes one argument, the rest none.
  const BUILT_INS: [object, string][] = [
    [Number.prototype, "toLocaleString"],
    [BigInt.prototype, "toLocaleString"],
    [Date.prototype, "toLocaleString"],
    [Date.prototype, "toLocaleDateString"],
    [Date.prototype, "toLocaleTimeString"],
    [String.prototype, "localeCompare"],
    [String.prototype, "toLocaleUpperCase"],
    [String.prototype, "toLocaleLowerCase"],
    [Array.prototype, "toLocaleString"],
  ];
  for (let i = 0; i < BUILT_INS.length; i++) {
    const [target, name] = BUILT_INS[i] as [object, string];
    defineProperty((target as Record<string, object>)[name], "length", { value: name === "localeCompare" ? 1 : 0 });
  }
}
