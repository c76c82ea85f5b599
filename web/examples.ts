/**
 * Examples of what runs and how it ends (values, reports, modules, TypeScript, loops to stop, a memory bomb, an error
 * with its position), each a whole session.
 * @module
 */
import { defaultSession, type Session } from "./session.js";

interface Example {
  id: string;
  title: string;
  session: Session;
}

const base = (patch: Partial<Session>): Session => ({ ...defaultSession(), globals: [], ...patch });

export const EXAMPLES: Example[] = [
  {
    id: "single-value",
    title: "Single value",
    session: base({
      files: [
        { name: "main.ts", source: "const n = input.reduce((a: number, b: number) => a + b, 0);\nexport default n;\n" },
      ],
      globals: [{ specifier: "", name: "input", kind: "json", text: "[1, 2, 3]" }],
    }),
  },
  {
    id: "flagging",
    title: "Flagging items with report",
    session: base({
      files: [
        {
          name: "main.ts",
          source: `// report() is the built-in bridge (options.report): each value shows up while the run goes on.\nfor (const row of rows) {\n  if (row.flagged) report(row.id);\n  await tick(); // a host round-trip per row\n}\nexport default rows.length;\n`,
        },
      ],
      globals: [
        {
          specifier: "",
          name: "rows",
          kind: "json",
          text: JSON.stringify(Array.from({ length: 8 }, (_, i) => ({ id: `row-${i}`, flagged: i % 3 === 0 }))),
        },
        { specifier: "", name: "tick", kind: "function", text: "() => new Promise((r) => setTimeout(r, 150))" },
      ],
    }),
  },
  {
    id: "imports-modules",
    title: "Imports + modules",
    session: base({
      files: [
        {
          name: "main.ts",
          source: `import { readFile } from "fs";\nimport { add, mean } from "./lib/math.ts";\n\nconst text: string = await readFile("numbers.txt");\nconst numbers = text.split(",").map(Number);\nexport function summary(scale: number) {\n  return { sum: add(...numbers) * scale, mean: mean(numbers), byName: new Map([["first", numbers[0]]]) };\n}\n`,
        },
        {
          name: "./lib/math.ts",
          source: `export const add = (...xs: number[]) => xs.reduce((a, b) => a + b, 0);\nexport const mean = (xs: number[]) => add(...xs) / xs.length;\n`,
        },
      ],
      executeFn: "summary",
      executeArgs: "[10]",
      imports: [
        {
          specifier: "fs",
          name: "readFile",
          kind: "function",
          text: 'async (path) => (path === "numbers.txt" ? "4,8,15,16,23,42" : Promise.reject(new Error("ENOENT: " + path)))',
        },
      ],
    }),
  },
  {
    id: "typescript",
    title: "TypeScript: enums and namespaces",
    session: base({
      files: [
        {
          name: "main.ts",
          source: `enum Level { Low = 1, High = 10 }\n\nnamespace Scores {\n  export const weight = 2;\n  export function of(level: Level): bigint {\n    return BigInt(level * weight);\n  }\n}\n\ninterface Row { id: string; level: Level }\nconst rows: Row[] = [{ id: "a", level: Level.Low }, { id: "b", level: Level.High }];\nexport default new Map(rows.map((r) => [r.id, Scores.of(r.level)] as const));\n`,
        },
      ],
    }),
  },
  {
    id: "infinite-loop",
    title: "An infinite loop to stop",
    session: base({
      files: [
        { name: "main.ts", source: "// Press Stop: the worker is terminated and replaced at once.\nwhile (true) {}\n" },
      ],
    }),
  },
  {
    id: "native-loop",
    title: "A native-heavy loop to stop",
    session: base({
      files: [
        {
          name: "main.ts",
          source:
            "// JSON work in C never reaches the interrupt handler: only Stop (worker restart) ends it.\nconst big = Array.from({ length: 20000 }, (_, i) => ({ i, s: 'x'.repeat(20) }));\nfor (;;) JSON.parse(JSON.stringify(big));\n",
        },
      ],
    }),
  },
  {
    id: "memory-bomb",
    title: "A memory bomb",
    session: base({
      files: [
        {
          name: "main.ts",
          source: "const chunks = [];\nwhile (true) chunks.push(new Uint8Array(1024 * 1024));\n",
        },
      ],
      memoryLimitBytes: "16777216",
    }),
  },
  {
    id: "error-position",
    title: "An error with its position",
    session: base({
      files: [
        { name: "main.ts", source: `import { parse } from "./parse.ts";\n\nexport default parse("{ not json");\n` },
        {
          name: "./parse.ts",
          source: `export function parse(text: string): unknown {\n  const value: any = null;\n  console.info("parsing", text.length, "chars");\n  return value.field;\n}\n`,
        },
      ],
    }),
  },
];
