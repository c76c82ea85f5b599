/**
 * The packages test/node/packages.test.ts boots, each with the first example of its README (made deterministic where
 * it draws random values or reads the clock), as a module whose default export is what is compared with Node's.
 */
export interface PackageExample {
  /** What the sandbox is given in `packages`. */
  packages: string[];
  source: string;
}

export const EXAMPLES: Record<string, PackageExample> = {
  zod: {
    packages: ["zod"],
    source: `import * as z from "zod";
const User = z.object({ name: z.string() });
const data = User.parse({ name: "Billie" });
const bad = User.safeParse({ name: 42 });
export default [data, bad.success, bad.error.issues[0].message];`,
  },
  lodash: {
    packages: ["lodash"],
    source: `import _ from "lodash";
export default [_.defaults({ a: 1 }, { a: 3, b: 2 }), _.partition([1, 2, 3, 4], (n) => n % 2), _.chunk(["a", "b", "c", "d"], 3)];`,
  },
  "date-fns": {
    packages: ["date-fns", "date-fns/format"],
    source: `import { compareAsc, addDays } from "date-fns";
import { format } from "date-fns/format";
const dates = [new Date(1995, 6, 2), new Date(1987, 1, 11), new Date(1989, 6, 10)];
dates.sort(compareAsc);
export default [format(new Date(2014, 1, 11), "yyyy-MM-dd"), dates.map((d) => format(d, "yyyy-MM-dd")),
  format(addDays(new Date(2024, 0, 31), 1), "EEEE, MMMM do")];`,
  },
  dayjs: {
    packages: ["dayjs"],
    source: `import dayjs from "dayjs";
export default [dayjs("2018-08-08").format("YYYY-MM-DD"), dayjs("2019-01-25").add(1, "day").subtract(1, "year").year(2009).format("DD/MM/YYYY"),
  dayjs("2018-04-04T16:00:00.000Z").isBefore(dayjs("2018-04-05"))];`,
  },
  uuid: {
    packages: ["uuid"],
    source: `import { v4 as uuidv4, v5, validate, version } from "uuid";
const id = uuidv4();
export default [validate(id), version(id), v5("hello.example.com", v5.DNS)];`,
  },
  nanoid: {
    packages: ["nanoid"],
    source: `import { nanoid, customAlphabet } from "nanoid";
export default [nanoid().length, /^[\\w-]{21}$/.test(nanoid()), customAlphabet("1234567890abcdef", 10)().length];`,
  },
  papaparse: {
    packages: ["papaparse"],
    source: `import Papa from "papaparse";
const parsed = Papa.parse("name,age\\nAda,36\\nAlan,41", { header: true, dynamicTyping: true });
export default [parsed.data, Papa.unparse([{ a: 1, b: "x,y" }])];`,
  },
  yaml: {
    packages: ["yaml"],
    source: `import YAML from "yaml";
export default [YAML.parse("3.14159"), YAML.parse("[ true, false, maybe, null ]\\n"),
  YAML.stringify({ number: 3, plain: "string", block: "two\\nlines\\n" })];`,
  },
  marked: {
    packages: ["marked"],
    source: `import { marked } from "marked";
export default marked.parse("# Marked in the browser\\n\\nRendered by **marked**.");`,
  },
  "@cfworker/json-schema": {
    packages: ["@cfworker/json-schema"],
    source: `import { Validator } from "@cfworker/json-schema";
const validator = new Validator({ type: "number" });
const result = validator.validate(7);
const bad = new Validator({ type: "object", required: ["id"] }).validate({});
export default [result.valid, bad.valid, bad.errors.map((e) => e.error)];`,
  },
  mathjs: {
    packages: ["mathjs"],
    source: `import { sqrt, evaluate, round, atan2, chain, format } from "mathjs";
export default [evaluate("12 / (2.3 + 0.7)"), sqrt(-4).toString(), round(Math.E, 3), format(atan2(3, -3) / Math.PI, 4),
  evaluate("12.7 cm to inch").toString(), chain(3).add(4).multiply(2).done()];`,
  },
  "decimal.js": {
    packages: ["decimal.js"],
    source: `import Decimal from "decimal.js";
const x = new Decimal(123.4567);
const y = new Decimal("123456.7e-3");
const z = new Decimal(x);
export default [x.equals(y) && y.equals(z) && x.equals(z), new Decimal(0.1).plus(0.2).toString(),
  new Decimal(2).sqrt().toFixed(20), x.times("0.1").toString()];`,
  },
  immer: {
    packages: ["immer"],
    source: `import { produce } from "immer";
const baseState = [{ title: "Learn TypeScript", done: true }, { title: "Try Immer", done: false }];
const nextState = produce(baseState, (draft) => { draft[1].done = true; draft.push({ title: "Tweet about it" }); });
export default [baseState.length, nextState.length, nextState[1].done, baseState[0] === nextState[0], Object.isFrozen(nextState)];`,
  },
  ramda: {
    packages: ["ramda"],
    source: `import * as R from "ramda";
const double = (x) => x * 2;
export default [R.map(double, [1, 2, 3]), R.map(double, { x: 1, y: 2, z: 3 }), R.pipe(R.filter((n) => n % 2 === 0), R.sum)([1, 2, 3, 4])];`,
  },
  "csv-parse": {
    packages: ["csv-parse/browser/esm/sync"],
    source: `import { parse } from "csv-parse/browser/esm/sync";
const input = "a,b,c\\n1,2,3\\n";
export default [parse(input, { columns: true, skip_empty_lines: true }), parse('"x,y",z\\n')];`,
  },
  "fast-xml-parser": {
    packages: ["fast-xml-parser"],
    source: `import { XMLParser, XMLBuilder, XMLValidator } from "fast-xml-parser";
const xml = '<root a="1"><item>one</item><item>two</item><n>5</n></root>';
const parser = new XMLParser({ ignoreAttributes: false });
const obj = parser.parse(xml);
export default [obj, XMLValidator.validate(xml), new XMLBuilder({ ignoreAttributes: false }).build(obj)];`,
  },
  semver: {
    packages: ["semver"],
    source: `import semver from "semver";
import { valid } from "semver";
export default [semver.valid("1.2.3"), valid("a.b.c"), semver.clean("  =v1.2.3   "), semver.satisfies("1.2.3", "1.x || >=2.5.0 || 5.0.0 - 7.2.3"),
  semver.gt("1.2.3", "9.8.7"), semver.lt("1.2.3", "9.8.7"), semver.minVersion(">=1.0.0").version, semver.valid(semver.coerce("v2")),
  semver.inc("1.2.3", "minor")];`,
  },
  "jsonpath-plus": {
    packages: ["jsonpath-plus"],
    source: `import { JSONPath } from "jsonpath-plus";
const json = { store: { book: [{ author: "Nigel Rees", price: 8.95 }, { author: "Evelyn Waugh", price: 12.99 }], bicycle: { price: 19.95 } } };
export default [JSONPath({ path: "$.store.book[*].author", json }), JSONPath({ path: "$..price", json }),
  JSONPath({ path: "$..book[?(@.price < 10)].author", json })];`,
  },
  validator: {
    packages: ["validator"],
    source: `import validator from "validator";
export default [validator.isEmail("foo@bar.com"), validator.isEmail("foo@"), validator.isURL("https://example.com/x?y=1"),
  validator.isUUID("a0e8f3a4-9b3c-4d2e-8f1a-2b3c4d5e6f70"), validator.escape("<a href='x'>")];`,
  },
  qs: {
    packages: ["qs"],
    source: `import qs from "qs";
const obj = qs.parse("a=c");
export default [obj, qs.stringify(obj), qs.parse("a[b][c]=d&e[]=1&e[]=2"), qs.stringify({ a: { b: ["x", "y"] } }, { encode: false })];`,
  },
  he: {
    packages: ["he"],
    source: `import he from "he";
export default [he.encode("foo © bar ≠ baz 𝌆 qux"), he.decode("foo &copy; bar &ne; baz &#x1D306; qux"), he.escape("<img src='x'>")];`,
  },
  "js-yaml": {
    packages: ["js-yaml"],
    source: `import * as yaml from "js-yaml";
const doc = yaml.load("greeting: hello\\nlist:\\n  - 1\\n  - two\\nnested: { a: true }\\n");
export default [doc, yaml.dump({ name: "runcode", tags: ["a", "b"] })];`,
  },
  "lodash-es": {
    packages: ["lodash-es"],
    source: `import { debounce, groupBy, sortBy, uniq } from "lodash-es";
export default [typeof debounce, groupBy([6.1, 4.2, 6.3], Math.floor), sortBy([{ n: "b", a: 2 }, { n: "a", a: 1 }], ["a"]), uniq([2, 1, 2])];`,
  },
  "change-case": {
    packages: ["change-case"],
    source: `import { camelCase, snakeCase, kebabCase, pascalCase, capitalCase, constantCase } from "change-case";
const s = "Hello world_from-runcode";
export default [camelCase(s), snakeCase(s), kebabCase(s), pascalCase(s), capitalCase(s), constantCase(s)];`,
  },
  ms: {
    packages: ["ms"],
    source: `import ms from "ms";
export default [ms("2 days"), ms("1d"), ms("10h"), ms("2.5 hrs"), ms("-3 days"), ms(60000), ms(2 * 60000), ms(ms("10 hours"), { long: true })];`,
  },
  moment: {
    packages: ["moment"],
    source: `import moment from "moment";
const m = moment.utc("2024-03-15T10:30:00Z");
export default [m.format("MMMM Do YYYY, h:mm:ss a"), m.clone().add(7, "days").format("dddd"), m.diff(moment.utc("2024-01-01"), "days"),
  moment.utc("2024-02-29").isValid(), moment.duration(90, "minutes").asHours()];`,
  },
};
