/**
 * Guest programs shared by the benchmarks, each written once. The CPU-bound ones are sized by their caller:
 * `npm run bench:fuel` runs them small for the meter alone, `npm run bench` at the sizes issue 32's targets name,
 * through `runCode`.
 */

/** A program: statements that set it up (may be empty) and the expression whose value is its result. */
interface Program {
  body: string;
  value: string;
}

interface Sizes {
  fib: number;
  records: number;
  numbers: number;
  pairs: number;
  iterations: number;
}

function programs({ fib, records, numbers, pairs, iterations }: Sizes) {
  return {
    fib: { body: "const fib = (n) => (n < 2 ? n : fib(n - 1) + fib(n - 2));", value: `fib(${fib})` },
    JSON: {
      body: `const big = Array.from({ length: ${records} }, (_, i) => ({ i, s: 'x' + i }));`,
      value: "JSON.parse(JSON.stringify(big)).length",
    },
    sort: {
      body: "",
      value: `Array.from({ length: ${numbers} }, (_, i) => (i * 7919) % 100003).sort((x, y) => x - y).length`,
    },
    regex: { body: "", value: `'ab'.repeat(${pairs}).replace(/(a)(b)/g, '$2$1').length` },
    strings: { body: `let s = ''; for (let i = 0; i < ${iterations}; i++) s += i.toString(36);`, value: "s.length" },
    "Map churn": {
      body: `const m = new Map(); for (let i = 0; i < ${iterations}; i++) m.set('k' + i, i);`,
      value: "m.size",
    },
  } satisfies Record<string, Program>;
}

/** As a script whose completion value is the result (evaluated directly by the engine). */
const script = ({ body, value }: Program) => (body === "" ? value : `${body} ${value}`);
/** As a module exporting the result as its default (what `runCode` returns). */
const module = ({ body, value }: Program) => `${body}\nexport default ${value};`;

/** Small enough for the meter's rounds: scripts, by name. */
const meter = programs({ fib: 22, records: 2000, numbers: 20_000, pairs: 20_000, iterations: 20_000 });
export const METER_PROGRAMS: Record<string, string> = Object.fromEntries(
  Object.entries(meter).map(([name, program]) => [name === "fib" ? "fib(22)" : name, script(program)]),
);

/**
 * The sizes of issue 32's CPU-bound targets, as modules, with the result each must give: fib(25), 100,000 numbers
 * sorted with a comparator, a JSON round trip of ~1 MB (40,000 records), and a regex `replace` over 1 MB of prose
 * (93,000 matches: the meter's pairs of `ab` at 1 MB would be 500,000, 2.5 s a run on the raw engine).
 */
const floor = programs({ fib: 25, records: 40_000, numbers: 100_000, pairs: 0, iterations: 0 });
const prose = {
  body: "const text = 'The quick brown fox jumps over the lazy dog. '.repeat(23302);",
  value: "text.replace(/o(\\w)/g, '0$1').length",
};
export const FLOOR_PROGRAMS = {
  "fib(25)": { source: module(floor.fib), result: 75_025 },
  "sort 100,000 numbers, comparator": { source: module(floor.sort), result: 100_000 },
  "regex replace over 1 MB": { source: module(prose), result: 1_048_590 },
  "JSON round trip of ~1 MB": { source: module(floor.JSON), result: 40_000 },
} as const;

/** 50 lines of the TypeScript an agent writes: interfaces, aliases, generics, a class, `satisfies`, `as`. */
export const TS_PROGRAM = `
interface Item { id: number; name: string; tags: string[]; price: number }
type Summary = { count: number; total: number; byTag: Record<string, number> };
type Level = "low" | "mid" | "high";
const TAX_RATE: number = 0.2;
function withTax(price: number): number {
  return Math.round(price * (1 + TAX_RATE) * 100) / 100;
}
function makeItems(n: number): Item[] {
  const items: Item[] = [];
  for (let i = 0; i < n; i++) {
    const tags: string[] = i % 2 === 0 ? ["even"] : ["odd", "prime?"];
    items.push({ id: i, name: \`item-\${i}\`, tags, price: i * 1.5 });
  }
  return items;
}
function summarize<T extends Item>(items: readonly T[]): Summary {
  const byTag: Record<string, number> = {};
  let total = 0;
  for (const item of items) {
    total += withTax(item.price);
    for (const tag of item.tags) byTag[tag] = (byTag[tag] ?? 0) + 1;
  }
  return { count: items.length, total, byTag } satisfies Summary;
}
class Basket<T extends Item = Item> {
  private readonly items: T[] = [];
  readonly owner: string;
  constructor(owner: string) {
    this.owner = owner;
  }
  add(item: T): this {
    this.items.push(item);
    return this;
  }
  level(): Level {
    const n = this.items.length;
    return n > 10 ? "high" : n > 3 ? "mid" : "low";
  }
  describe(): string {
    return \`\${this.owner}: \${this.items.length} items, level \${this.level()}\`;
  }
}
const basket = new Basket("bench");
for (const item of makeItems(5)) basket.add(item);
const summary = summarize(makeItems(20));
const label = basket.describe() as string;
const tags = Object.keys(summary.byTag) as (keyof Summary["byTag"])[];
export default { label, count: summary.count, total: summary.total, tags: tags.length };
`;
