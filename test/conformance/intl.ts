/**
 * §14 `Intl` of a sandbox made with `intl: true`: the opt-in (§14.1), the sandbox answering exactly as the host's own
 * `Intl` across 33 locales (§14.2), the host's defaults never leaking (§14.3), refusals as `Intl` makes them (§14.4),
 * no host object reaching the guest (§14.5) and every call paid for (§14.6). Each case is a function run both in the
 * guest (as its source text) and on the host that runs the suite.
 * @module
 */
import { describe, expect, it } from "vitest";
import type { RunCode, SandboxOptions } from "../../src/core/types.js";
import { fails, ok, settle } from "./helpers.js";

const js = { language: "javascript" } as const;

/** The locales the suite proves (the most used on the web and in LLM-written code). */
export const INTL_LOCALES = [
  "en-US",
  "en-GB",
  "de-DE",
  "fr-FR",
  "es-ES",
  "es-MX",
  "it-IT",
  "pt-BR",
  "pt-PT",
  "nl-NL",
  "sv-SE",
  "nb-NO",
  "da-DK",
  "fi-FI",
  "pl-PL",
  "cs-CZ",
  "ru-RU",
  "uk-UA",
  "tr-TR",
  "ar-EG",
  "he-IL",
  "hi-IN",
  "bn-BD",
  "th-TH",
  "vi-VN",
  "id-ID",
  "ja-JP",
  "ko-KR",
  "zh-CN",
  "zh-TW",
  "el-GR",
  "hu-HU",
  "ro-RO",
];

/**
 * Every kind of answer for one locale: numbers, dates in several time zones, plurals, lists, collation, segments.
 * `zone` is the time zone where the guest names none: `{}` in the sandbox, `{ timeZone: "UTC" }` on the host (whose
 * own default the sandbox never takes).
 */
function answers(locale: string, zone: { timeZone?: string }): unknown[] {
  const out: unknown[] = [];
  const n = 1234567.891;
  const nf = (options?: Intl.NumberFormatOptions) => new Intl.NumberFormat(locale, options);
  out.push(nf().format(n), nf().format(-0.5), nf().format(12345678901234567890n), nf().format("1234.5678901234567"));
  out.push(nf({ style: "currency", currency: "USD" }).format(n), nf({ style: "currency", currency: "EUR" }).format(-n));
  out.push(nf({ style: "currency", currency: "JPY", currencyDisplay: "name" }).format(n));
  out.push(nf({ style: "percent", maximumFractionDigits: 1 }).format(0.12345));
  out.push(nf({ notation: "compact" }).format(n), nf({ notation: "compact", compactDisplay: "long" }).format(n));
  out.push(nf({ notation: "scientific" }).format(n), nf({ notation: "engineering" }).format(n));
  out.push(nf({ style: "unit", unit: "kilometer-per-hour", unitDisplay: "long" }).format(88));
  out.push(nf({ style: "unit", unit: "megabyte" }).format(1.5), nf({ signDisplay: "always" }).format(0));
  out.push(nf({ style: "currency", currency: "USD" }).formatToParts(-n));
  out.push(nf({ maximumSignificantDigits: 3 }).formatRange(3, 5), nf().resolvedOptions());
  out.push(n.toLocaleString(locale), (0.256).toLocaleString(locale, { style: "percent" }));
  const time = Date.UTC(2024, 1, 29, 13, 5, 9, 120);
  const date = new Date(time);
  const dtf = (options?: Intl.DateTimeFormatOptions) => new Intl.DateTimeFormat(locale, options);
  for (const timeZone of ["UTC", "America/New_York", "Asia/Kolkata", "Australia/Sydney"]) {
    out.push(dtf({ timeZone, dateStyle: "full", timeStyle: "long" }).format(date));
    out.push(dtf({ timeZone, dateStyle: "short", timeStyle: "short" }).format(time));
    out.push(dtf({ timeZone, timeZoneName: "short", hour: "numeric", minute: "2-digit" }).format(date));
  }
  out.push(dtf(zone).format(date), dtf({ ...zone, weekday: "long", month: "long", day: "numeric" }).format(date));
  out.push(dtf({ year: "numeric", month: "short", era: "short", timeZone: "Europe/Paris" }).formatToParts(date));
  out.push(dtf({ ...zone, dateStyle: "medium" }).formatRange(date, new Date(time + 5 * 864e5)));
  out.push(dtf({ dateStyle: "long", timeZone: "Asia/Tokyo" }).resolvedOptions());
  out.push(
    date.toLocaleString(locale, zone),
    date.toLocaleDateString(locale, zone),
    date.toLocaleTimeString(locale, zone),
  );
  out.push(date.toLocaleDateString(locale, { timeZone: "Pacific/Auckland", month: "long", day: "numeric" }));
  const rtf = new Intl.RelativeTimeFormat(locale, { numeric: "auto" });
  out.push(rtf.format(-1, "day"), rtf.format(2, "week"), rtf.format(-3, "month"), rtf.formatToParts(10, "seconds"));
  out.push(new Intl.RelativeTimeFormat(locale, { style: "narrow" }).format(-5, "year"));
  const plural = new Intl.PluralRules(locale);
  const ordinal = new Intl.PluralRules(locale, { type: "ordinal" });
  out.push([0, 1, 2, 3, 5, 11, 21, 100, 1.5].map((k) => `${plural.select(k)}/${ordinal.select(k)}`));
  out.push(plural.resolvedOptions());
  const items = ["apples", "pears", "plums"];
  out.push(
    new Intl.ListFormat(locale).format(items),
    new Intl.ListFormat(locale, { type: "disjunction" }).format(items),
  );
  out.push(new Intl.ListFormat(locale, { style: "narrow", type: "unit" }).formatToParts(items));
  const words = ["zebra", "Äpfel", "apple", "Zürich", "éclair", "ångström", "Ökonom", "10", "9", "résumé", "resume"];
  out.push([...words].sort(new Intl.Collator(locale).compare));
  out.push([...words].sort(new Intl.Collator(locale, { numeric: true, caseFirst: "upper" }).compare));
  out.push(new Intl.Collator(locale, { sensitivity: "base" }).compare("a", "á"), "a".localeCompare("B", locale));
  const text = 'The quick ("brown") fox can\'t jump 32.3 feet, right? 👨‍👩‍👧 🇩🇪 नमस्ते';
  out.push([...new Intl.Segmenter(locale).segment(text)].map((s) => s.segment));
  out.push(
    [...new Intl.Segmenter(locale, { granularity: "word" }).segment(text)].map((s) => [s.segment, s.isWordLike]),
  );
  out.push([...new Intl.Segmenter(locale, { granularity: "sentence" }).segment("Hi there. How are you? Fine!")].length);
  out.push("istanbul".toLocaleUpperCase(locale), "İSTANBUL".toLocaleLowerCase(locale));
  out.push([1234.5, date, null, 7n].toLocaleString(locale, { timeZone: "UTC" }));
  return out;
}

/** What the sandbox answers when the guest names no locale and no time zone, with the host's answers named. */
function defaults(): unknown[] {
  const date = new Date(Date.UTC(2024, 6, 4, 23, 30));
  return [
    new Intl.NumberFormat().resolvedOptions().locale,
    new Intl.DateTimeFormat().resolvedOptions().timeZone,
    new Intl.DateTimeFormat().resolvedOptions().locale,
    date.toLocaleString(),
    (1234.5).toLocaleString(),
    new Intl.DateTimeFormat("en-US", { timeStyle: "full" }).format(date),
    new Intl.NumberFormat("qaa").resolvedOptions().locale,
    "i".toLocaleUpperCase(),
  ];
}

/** The host's answers to `defaults` when its own defaults are the sandbox's. */
const PINNED_DEFAULTS = [
  "en-US",
  "UTC",
  "en-US",
  "7/4/2024, 11:30:00 PM",
  "1,234.5",
  "11:30:00 PM Coordinated Universal Time",
  "en-US",
  "I",
];

export function intlSuite(sandbox: (settings: SandboxOptions) => RunCode): void {
  const runCode = sandbox({ intl: true });
  const plain = sandbox({});
  const web = sandbox({ webApis: true });

  describe("§14.1 Intl is opt-in per sandbox", () => {
    const probe = `export default [typeof Intl, (1234.5).toLocaleString("de-DE"), "a".localeCompare("b")]`;

    it("a sandbox made without intl (or with webApis only) has no Intl, and QuickJS's own toLocaleString", async () => {
      expect(await ok(plain, probe, js)).toEqual(["undefined", "1234.5", -1]);
      expect(await ok(web, probe, js)).toEqual(["undefined", "1234.5", -1]);
    });

    it("a sandbox made with intl: true has Intl, not enumerable on globalThis", async () => {
      const source = `export default [typeof Intl, Object.prototype.toString.call(Intl), Object.keys(globalThis),
        Object.getOwnPropertyNames(Intl).sort(), (1234.5).toLocaleString("de-DE")]`;
      expect(await ok(runCode, source, js)).toEqual([
        "object",
        "[object Intl]",
        [],
        [
          "Collator",
          "DateTimeFormat",
          "ListFormat",
          "NumberFormat",
          "PluralRules",
          "RelativeTimeFormat",
          "Segmenter",
          "getCanonicalLocales",
          "supportedValuesOf",
        ],
        "1.234,5",
      ]);
    });

    it("a sandbox setting of intl that is not a boolean is refused", () => {
      expect(() => sandbox({ intl: "yes" as unknown as boolean })).toThrow("createSandbox: intl must be a boolean");
    });
  });

  describe("§14.2 the sandbox answers as the host's Intl, locale by locale", () => {
    it.each(INTL_LOCALES)("%s", async (locale) => {
      const source = `${answers.toString()}\nexport default answers(${JSON.stringify(locale)}, {})`;
      expect(await ok(runCode, source, js)).toEqual(answers(locale, { timeZone: "UTC" }));
    });
  });

  describe("§14.3 the host's default locale and time zone never answer", () => {
    it("no locale is en-US, no time zone is UTC, an unsupported locale is en-US", async () => {
      const source = `${defaults.toString()}\nexport default defaults()`;
      expect(await ok(runCode, source, js)).toEqual(PINNED_DEFAULTS);
    });
  });

  describe("§14.4 refusals are Intl's own", () => {
    it.each([
      ['new Intl.NumberFormat("en-US-x")', "RangeError"],
      ['new Intl.DateTimeFormat("en", { timeZone: "Mars/Olympus" })', "RangeError"],
      ['new Intl.NumberFormat("en", { style: "currency" })', "TypeError"],
      ['new Intl.NumberFormat("en", { maximumFractionDigits: 101 })', "RangeError"],
      ["new Intl.Collator(null)", "TypeError"],
      ['new Intl.NumberFormat("en", null)', "TypeError"],
      ['new Intl.PluralRules("en", { type: "cardinal-ish" })', "RangeError"],
      ['(5).toLocaleString("en", { style: "unit", unit: "parsec" })', "RangeError"],
      ['new Intl.DateTimeFormat("en").format(NaN)', "RangeError"],
      ["Intl.PluralRules()", "TypeError"],
      ['new Intl.ListFormat("en").format(["a", 1])', "TypeError"],
      ["Intl.NumberFormat.prototype.format.call({}, 1)", "TypeError"],
    ])("%s throws a %s", async (expression, name) => {
      const guarded = `let out; try { ${expression}; out = "no error" } catch (e) { out = e.name }\nexport default out`;
      expect(await ok(runCode, guarded, js)).toBe(name);
    });

    it("locales and options longer than the host takes are a RangeError", async () => {
      const error = await fails(runCode, "error", `new Intl.NumberFormat("en", { currency: "x".repeat(5000) })`, js);
      expect(error).toMatchObject({
        name: "RangeError",
        message: "Intl: the locales and options take more than 4096 characters",
      });
    });
  });

  describe("§14.5 no host object reaches the guest", () => {
    it("resolvedOptions and formatToParts are fresh plain data each call; format is a bound function", async () => {
      const source = `const nf = new Intl.NumberFormat("en", { style: "currency", currency: "USD" });
        const a = nf.resolvedOptions(); a.locale = "changed";
        const parts = nf.formatToParts(1);
        export default [nf.resolvedOptions().locale, Object.getPrototypeOf(a) === Object.prototype,
          Array.isArray(parts), Object.getPrototypeOf(parts[0]) === Object.prototype, nf.format === nf.format,
          [1, 2].map(nf.format), nf instanceof Intl.NumberFormat, Intl.NumberFormat("de") instanceof Intl.NumberFormat]`;
      expect(await ok(runCode, source, js)).toEqual(["en", true, true, true, true, ["$1.00", "$2.00"], true, true]);
    });

    it("a Segments object answers containing() and iterates again", async () => {
      const source = `const s = new Intl.Segmenter("en", { granularity: "word" }).segment("Hello big world");
        export default [s.containing(7), s.containing(99), [...s].length, [...s].length]`;
      expect(await ok(runCode, source, js)).toEqual([
        { segment: "big", index: 6, input: "Hello big world", isWordLike: true },
        undefined,
        5,
        5,
      ]);
    });
  });

  describe("§14.6 every call is paid for before it is answered", () => {
    it("a call costs fuel, more for a formatter the host must make", async () => {
      const fuel = async (body: string) => (await settle(runCode, `${body}\nexport default 1`, js)).fuelUsed as number;
      const base = await fuel("const nf = new Intl.NumberFormat('en');");
      const calls = await fuel("const nf = new Intl.NumberFormat('en'); for (let i = 0; i < 100; i++) nf.format(i);");
      expect(calls - base).toBeGreaterThan(100 * 3_500);
    });

    it("a run pays for the formatters it makes whatever other runs made: the same fuel on every run", async () => {
      // The host kept formatters for the process: a second run found this one made and paid 40,000 units less, so a
      // tenant's fuelUsed told whether another had asked for these locales and options.
      const source = `export default new Intl.DateTimeFormat("fr-CA", { timeZone: "Asia/Kathmandu", era: "short" }).format(0)`;
      const spent = [];
      for (let i = 0; i < 3; i++) spent.push((await settle(runCode, source, js)).fuelUsed);
      expect(new Set(spent).size).toBe(1);
    });

    it("a run keeps 16 formatters: one made again past them is paid again", async () => {
      // Twice over 20 formatters, in turn: each is made again on the second pass, and paid for.
      const pass =
        "for (let i = 0; i < 20; i++) new Intl.NumberFormat('en', { minimumIntegerDigits: i + 1 }).format(1);";
      const once = (await settle(runCode, `${pass}\nexport default 1`, js)).fuelUsed as number;
      const twice = (await settle(runCode, `${pass}\n${pass}\nexport default 1`, js)).fuelUsed as number;
      expect(twice - once).toBeGreaterThan(20 * 40_000);
    });

    it("reading a list of locales is paid by its characters, and a list holds at most 128", async () => {
      // 80 tags of 47 characters: the host canonicalizes them and asks which it supports, ~0.5 us a character. Before,
      // a loop making such formatters held the host 12x as long per unit of fuel as a spinning loop.
      const tags = `const tags = []; for (let i = 0; i < 80; i++) tags.push("de-DE-u-co-phonebk-ca-gregory-nu-latn-x-" + i.toString(36).padStart(6, "a"));`;
      const fuel = async (body: string) =>
        (await settle(runCode, `${tags}\n${body}\nexport default 1`, js)).fuelUsed as number;
      const one = await fuel(`new Intl.NumberFormat(tags.slice(0, 1), { minimumIntegerDigits: 2 });`);
      const all = await fuel(`new Intl.NumberFormat(tags, { minimumIntegerDigits: 2 });`);
      expect(all - one).toBeGreaterThan(79 * 50 * 192);
      const many = `export default new Intl.NumberFormat(Array.from({ length: 129 }, (_, i) => "en-" + (100 + i)))`;
      expect(await fails(runCode, "error", many, js)).toMatchObject({
        name: "RangeError",
        message: "Intl: more than 128 locales",
      });
    });

    it("a range's format, selectRange and supportedValuesOf pay as making a formatter: the host makes one each call", async () => {
      // Each took 35-170 us of the host's CPU where a call was charged ~14 us: loops of them took 2.5-4.3x a spinning
      // loop's CPU per unit of fuel.
      const fuel = async (call: string) =>
        (
          await settle(
            runCode,
            `const p = new Intl.PluralRules("ar"); const n = new Intl.NumberFormat("en");
             for (let i = 0; i < 100; i++) ${call};\nexport default 1`,
            js,
          )
        ).fuelUsed as number;
      const select = await fuel("p.select(i)");
      for (const call of ["p.selectRange(i, i + 9)", "n.formatRange(i, i + 9)", 'Intl.supportedValuesOf("unit")'])
        expect((await fuel(call)) - select).toBeGreaterThan(100 * 36_000);
    });

    it("a collator's sort of 10^5 strings stops at the run's fuel", async () => {
      const source = `const c = new Intl.Collator("de");
        const a = Array.from({ length: 100000 }, (_, i) => "w" + ((i * 7919) % 100000));
        a.sort(c.compare); export default a[0]`;
      const FUEL = 50_000_000;
      const capped = sandbox({ intl: true, safetyCap: { fuel: FUEL, cpuTimeMs: 1e9 } });
      const result = await capped(source, js);
      expect({ status: result.status, error: result.error }).toEqual({
        status: "terminated",
        error: { name: "TerminatedError", message: `Execution stopped by the safety cap after ${FUEL} units of fuel` },
      });
    });
  });
}
