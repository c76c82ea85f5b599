/**
 * The fenced code blocks of the docs, as a reader copies them. A `ts`, `js` or `sh` block is a program and runs unless
 * its info string says `no-run` (```ts no-run); blocks of other languages (json, toml, text, none) are data. What a
 * program prints is stated in it, line by line, as `// prints: <line>` (`# prints: <line>` in sh), where `...`
 * stands for any text (a duration, a timestamp). A `vite` block is also built by Vite as a page's module and run in
 * Chromium, where it must print the same (test/package/smoke.test.ts, against the packed package).
 * @module
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import ts from "typescript";
import { expect } from "vitest";

export const PROGRAM_LANGUAGES = ["ts", "js", "sh"];
/** The words a program's info string may carry after its language. */
export const FLAGS = ["no-run", "vite"];

export interface CodeBlock {
  /** `README.md` or `docs/<name>.md`, and the fence's line (1-based), e.g. `docs/library.md:6`. */
  where: string;
  language: string;
  /** Words of the info string after the language (`no-run`, `vite`). */
  flags: string[];
  code: string;
}

/** The blocks of `README.md` and `docs/*.md` under `root`, in order. */
export function docBlocks(root: string): CodeBlock[] {
  const files = ["README.md", ...readdirSync(join(root, "docs")).map((name) => `docs/${name}`)].filter((name) =>
    name.endsWith(".md"),
  );
  return files.flatMap((file) => blocksOf(file, readFileSync(join(root, file), "utf8")));
}

function blocksOf(file: string, text: string): CodeBlock[] {
  const lines = text.split("\n");
  const blocks: CodeBlock[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^( *)```(.*)$/.exec(lines[i] as string);
    if (!open) continue;
    const indent = (open[1] as string).length;
    const [language = "", ...flags] = (open[2] as string).trim().split(/\s+/);
    const body: string[] = [];
    let j = i + 1;
    for (; j < lines.length && !/^ *```\s*$/.test(lines[j] as string); j++)
      body.push((lines[j] as string).slice(indent));
    if (j === lines.length) throw new Error(`${file}:${i + 1}: a code block that never closes`);
    blocks.push({ where: `${file}:${i + 1}`, language, flags, code: `${body.join("\n")}\n` });
    i = j;
  }
  return blocks;
}

/** A `ts` or `js` block as the JavaScript module a reader's toolchain makes of it: types erased, nothing else. */
export function javascriptOf(block: CodeBlock): string {
  if (block.language !== "ts") return block.code;
  const compilerOptions = { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 };
  return ts.transpileModule(block.code, { compilerOptions }).outputText;
}

/** The lines a program says it prints, in order, as matchers of what it prints: `...` stands for any text. */
export function statedOutput(block: CodeBlock): unknown[] {
  const marker = block.language === "sh" ? /#\s*prints:(?: (.*))?$/ : /\/\/\s*prints:(?: (.*))?$/;
  return block.code.split("\n").flatMap((line) => {
    const stated = marker.exec(line);
    return stated ? [matcherOf(stated[1] ?? "")] : [];
  });
}

function matcherOf(stated: string): unknown {
  if (!stated.includes("...")) return stated;
  const escaped = stated.split("...").map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"));
  return expect.stringMatching(new RegExp(`^${escaped.join(".*")}$`));
}
