/**
 * The host's half of the guest's `Intl` (guest/intl.ts, contract.md §14): each request names a constructor, its
 * locales and options (as plain data) and a method with its arguments; the host's own `Intl` answers, as JSON the
 * guest parses, so no host object ever reaches the guest. What the host would otherwise leak is pinned: no locale, or
 * none the host supports, is "en-US", and a date formatted without a `timeZone` is formatted in "UTC". The host's
 * formatters are kept by request (they are immutable), at most {@link MAX_CACHED_FORMATTERS}, for one run
 * ({@link IntlFormatters}).
 * @module
 */

/** The locale answered when none is asked for, or none asked for is supported: never the host's own. */
const DEFAULT_LOCALE = "en-US";
/** The time zone of a date formatted without one: never the host's own. */
const DEFAULT_TIME_ZONE = "UTC";
/** Most characters of a request's constructor, locales and options. */
const MAX_INTL_SPEC_CHARS = 4_096;
/**
 * Most locale tags a request names: V8 canonicalizes a list in time quadratic in its tags (716 three-letter tags, 4,000
 * characters, took 5.4 ms, 335 units of fuel a character; 128 long ones take 3 ms both passes a formatter makes, ~110
 * units a character: see `INTL_LOCALE_CHAR_FUEL` in host-fuel.ts).
 */
const MAX_LOCALES = 128;
/** Most characters of a request's arguments (the text a `Segmenter` segments, a list `ListFormat` joins). */
const MAX_INTL_ARGS_CHARS = 1 << 20;
/**
 * Most items of a list `ListFormat` formats: ICU's parts of a list take ~200 bytes of the host's heap an item
 * (`formatToParts` of 200,000 one-character items, a request of 800,000 characters, took 42 MB, and 13 MB more as
 * JSON, where an isolate on Workers has 128 MB), 16,384 items 3.3 MB.
 */
const MAX_LIST_ITEMS = 16_384;
/**
 * Host formatters a run keeps between its requests: each holds ICU's memory outside the run's cap (1,024 of four kinds
 * took 21 MB of the process), and every run in flight keeps its own; one made again is paid again.
 */
const MAX_CACHED_FORMATTERS = 16;

type Locales = string[] | undefined;
type Formatter = Record<string, (...args: unknown[]) => unknown> & { resolvedOptions(): object };

const CONSTRUCTORS: Readonly<Record<string, new (locales: Locales, options: unknown) => Formatter>> = Object.freeze({
  __proto__: null,
  NumberFormat: Intl.NumberFormat,
  DateTimeFormat: Intl.DateTimeFormat,
  Collator: Intl.Collator,
  PluralRules: Intl.PluralRules,
  RelativeTimeFormat: Intl.RelativeTimeFormat,
  ListFormat: Intl.ListFormat,
  Segmenter: Intl.Segmenter,
} as unknown as Record<string, new (locales: Locales, options: unknown) => Formatter>);

/** The methods of each constructor the guest may call. */
const METHODS: Readonly<Record<string, readonly string[]>> = Object.freeze({
  __proto__: null,
  NumberFormat: ["format", "formatToParts", "formatRange", "formatRangeToParts"],
  DateTimeFormat: ["format", "formatToParts", "formatRange", "formatRangeToParts"],
  Collator: ["compare"],
  PluralRules: ["select", "selectRange"],
  RelativeTimeFormat: ["format", "formatToParts"],
  ListFormat: ["format", "formatToParts"],
  Segmenter: ["segment"],
} as unknown as Record<string, readonly string[]>);

const DATE_METHODS = ["toLocaleString", "toLocaleDateString", "toLocaleTimeString"];
const CASE_METHODS = ["toLocaleUpperCase", "toLocaleLowerCase"];

/**
 * The host formatters one run made, by request. A run's own: kept for the process, they were shared by every run and
 * tenant, so the fee of a formatter (paid only where none was kept) made a run's `fuelUsed` tell which locales and
 * options other runs had asked for, and a run's fuel depend on what ran before it.
 */
export type IntlFormatters = Map<string, Formatter>;

/**
 * What answering a request costs the host beyond a call (see host-fuel.ts): `"formatter"` where it makes a host
 * formatter, one of a constructor the run does not keep yet and every date's `toLocale*String` (the host makes one
 * each call), which reads the locales too; `"locales"` where it only reads them (canonicalizes the list, asks which the
 * host supports: `supportedLocalesOf`, `Intl.getCanonicalLocales`, the case mappings), which costs by the characters
 * of the tags; `"remade"` for a kept formatter's method for which V8 makes ICU's formatter again each call (a range's,
 * `selectRange`) and `Intl.supportedValuesOf`, which cost as much as a formatter (35-51 us and up to 170 us a call,
 * where a call of `format` took under 10); `"call"` for any other method of a kept formatter.
 */
export type IntlWork = "formatter" | "locales" | "remade" | "call";

/** Methods for which V8 makes an ICU formatter each call (see {@link IntlWork}). */
const REMADE_METHODS = ["formatRange", "formatRangeToParts", "selectRange", "supportedValuesOf"];

/** The {@link IntlWork} of answering `request` for a run that keeps `kept`. */
export function intlWork(request: string, kept: IntlFormatters): IntlWork {
  const first = request.indexOf("\n");
  const spec = request.slice(0, first);
  const method = request.slice(first + 1, request.indexOf("\n", first + 1));
  if (spec.startsWith('["Date"')) return "formatter";
  if (spec.startsWith('["String"') || method === "supportedLocalesOf" || method === "getCanonicalLocales")
    return "locales";
  if (!spec.startsWith('["Intl"') && !kept.has(spec)) return "formatter";
  return REMADE_METHODS.includes(method) ? "remade" : "call";
}

/**
 * The answer to the guest's request `spec \n method \n args` (guest/intl.ts), as JSON. What the host's `Intl`
 * throws (a bad locale tag's `RangeError`, a bad option's `TypeError` or `RangeError`) is thrown for the guest.
 */
export function intlAnswer(request: string, kept: IntlFormatters): string {
  const first = request.indexOf("\n");
  const second = request.indexOf("\n", first + 1);
  if (first < 0 || second < 0) throw new TypeError("Intl: a malformed request");
  const spec = request.slice(0, first);
  const method = request.slice(first + 1, second);
  const argsText = request.slice(second + 1);
  if (spec.length > MAX_INTL_SPEC_CHARS) {
    throw new RangeError(`Intl: the locales and options take more than ${MAX_INTL_SPEC_CHARS} characters`);
  }
  if (argsText.length > MAX_INTL_ARGS_CHARS) {
    throw new RangeError(`Intl: the arguments take more than ${MAX_INTL_ARGS_CHARS} characters`);
  }
  // Locales are `null` where the guest had none; options are left out where it had none.
  const [kind, listed, options] = JSON.parse(spec) as [string, Locales | null, unknown];
  const locales = listed ?? undefined;
  if (Array.isArray(locales) && locales.length > MAX_LOCALES)
    throw new RangeError(`Intl: more than ${MAX_LOCALES} locales`);
  const args = (JSON.parse(argsText) as unknown[]).map(fromWire);
  const opts = fromWire(options);
  if (kind === "Segmenter" && method === "segment") {
    const segmenter = formatterOf(kept, spec, CONSTRUCTORS.Segmenter as never, kind, locales, opts);
    return segmented(segmenter as unknown as Intl.Segmenter, args[0] as string);
  }
  return JSON.stringify(answer(kept, spec, kind, locales, opts, method, args));
}

function answer(
  kept: IntlFormatters,
  spec: string,
  kind: string,
  locales: Locales,
  options: unknown,
  method: string,
  args: unknown[],
) {
  if (kind === "Intl" && method === "getCanonicalLocales") return Intl.getCanonicalLocales(locales);
  if (kind === "Intl" && method === "supportedValuesOf") return Intl.supportedValuesOf(args[0] as never);
  if (kind === "Date" && DATE_METHODS.includes(method)) {
    const date = new Date(args[0] as number) as unknown as Record<string, (l: Locales, o: unknown) => string>;
    return (date[method] as (l: Locales, o: unknown) => string).call(
      date,
      pinned(Intl.DateTimeFormat, locales),
      inUtc(options),
    );
  }
  if (kind === "String" && CASE_METHODS.includes(method)) {
    const text = args[0] as string;
    const list = Intl.getCanonicalLocales(locales);
    return method === "toLocaleUpperCase"
      ? text.toLocaleUpperCase(list.length === 0 ? DEFAULT_LOCALE : list)
      : text.toLocaleLowerCase(list.length === 0 ? DEFAULT_LOCALE : list);
  }
  const Ctor = CONSTRUCTORS[kind];
  if (Ctor === undefined) throw new TypeError(`Intl: no constructor ${kind}`);
  if (method === "supportedLocalesOf") {
    return (Ctor as unknown as typeof Intl.Collator).supportedLocalesOf(locales ?? [], options as never);
  }
  const formatter = formatterOf(kept, spec, Ctor, kind, locales, options);
  if (method === "new") return formatter.resolvedOptions();
  if (!(METHODS[kind] as readonly string[]).includes(method)) throw new TypeError(`Intl: no method ${kind}.${method}`);
  if (kind === "ListFormat" && Array.isArray(args[0]) && args[0].length > MAX_LIST_ITEMS) {
    throw new RangeError(`Intl: a list of more than ${MAX_LIST_ITEMS} items`);
  }
  return (formatter[method] as (...a: unknown[]) => unknown).apply(formatter, args);
}

/** Characters a `Segmenter` is given at once (see {@link segmented}). */
const SEGMENT_WINDOW = 1_024;

/**
 * Every segment of `text`, as JSON `[lengths, wordLike, words]`: each segment's length in order, then for word
 * segments a "1" or "0" a segment telling whether it is word-like, and whether they are words (the guest slices the
 * segments from its own text). The text is written as it is segmented, a window at a time: an answer of objects, a
 * `[segment, index, isWordLike]` a segment, took ~100 bytes of the host's heap a character segmented (100 MB for
 * 1,000,000 characters, where an isolate on Workers has 128 MB), this a few. V8's segment iteration takes time
 * quadratic in the text's length (16,000 characters took 84 ms, 108,000 took 3.7 s on Node 20), so the text is
 * segmented in windows, never cutting a surrogate pair: each window's last two segments (the last may be cut, and the
 * boundary before it may depend on what was cut, as a regional indicator's pairing does) are segmented again at the
 * head of the next (a boundary is where ICU's rules restart), and a window holding fewer segments grows.
 */
function segmented(segmenter: Intl.Segmenter, text: string): string {
  const words = segmenter.resolvedOptions().granularity === "word";
  const lengths: string[] = [];
  const wordLike: string[] = [];
  let start = 0;
  let window = SEGMENT_WINDOW;
  while (start < text.length) {
    let end = Math.min(text.length, start + window);
    const lead = text.charCodeAt(end - 1);
    if (end < text.length && lead >= 0xd800 && lead <= 0xdbff) end--;
    const found: Intl.SegmentData[] = [...segmenter.segment(text.slice(start, end))];
    const whole = end === text.length;
    if (!whole && found.length < 3) {
      window *= 2;
      continue;
    }
    const kept = whole ? found : found.slice(0, -2);
    lengths.push(kept.map(({ segment }) => segment.length).join(","));
    if (words) wordLike.push(kept.map(({ isWordLike }) => (isWordLike ? "1" : "0")).join(""));
    const last = kept[kept.length - 1] as Intl.SegmentData;
    start += last.index + last.segment.length;
    window = SEGMENT_WINDOW;
  }
  return `[[${lengths.join(",")}],"${wordLike.join("")}",${words}]`;
}

/** The host formatter of `spec`, made (and kept for the run) on first use. */
function formatterOf(
  kept: IntlFormatters,
  spec: string,
  Ctor: new (locales: Locales, options: unknown) => Formatter,
  kind: string,
  locales: Locales,
  options: unknown,
): Formatter {
  let formatter = kept.get(spec);
  if (formatter !== undefined) return formatter;
  const list = pinned(Ctor as unknown as typeof Intl.Collator, locales);
  formatter = new Ctor(list, kind === "DateTimeFormat" ? inUtc(options) : options);
  if (kept.size >= MAX_CACHED_FORMATTERS) kept.delete(kept.keys().next().value as string);
  kept.set(spec, formatter);
  return formatter;
}

/**
 * The locales as the host takes them: canonicalized (a bad tag throws its `RangeError`), and "en-US" where the list
 * is empty or the host supports none of it, so that the host's own default locale never answers.
 */
function pinned(Ctor: { supportedLocalesOf(l: string[]): string[] }, locales: Locales): string[] {
  const list = Intl.getCanonicalLocales(locales);
  return list.length === 0 || Ctor.supportedLocalesOf(list).length === 0 ? [DEFAULT_LOCALE] : list;
}

/** Date options with the time zone "UTC" where they name none (ToObject of a primitive has none). */
function inUtc(options: unknown): unknown {
  if (options === null) return options;
  if (typeof options !== "object" || options === undefined) return { timeZone: DEFAULT_TIME_ZONE };
  const { timeZone } = options as { timeZone?: unknown };
  return timeZone === undefined ? { ...options, timeZone: DEFAULT_TIME_ZONE } : options;
}

/** A value from the guest's JSON: `{ n }` a non-finite number or -0, `{ b }` a bigint (see `wire` in guest/intl.ts). */
function fromWire(value: unknown): unknown {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return value;
  const { n, b } = value as { n?: string; b?: string };
  if (typeof n === "string") return Number(n);
  if (typeof b === "string") return BigInt(b);
  const out: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(value)) out[key] = fromWire(item);
  return out;
}
