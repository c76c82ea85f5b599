/**
 * Every program in README.md and docs/*.md runs as a reader would copy it, and prints what it says it prints
 * (test/docs/code-blocks.ts has the convention). TypeScript and JavaScript blocks are ES modules run each in a fresh
 * `node` process, so a first run pays the cold start, importing `runcode`, `runcode/host` and `runcode/environment`
 * from this checkout's dist/ (`npm run build` first). Shell blocks run in bash against `runcode serve` on a port of
 * the test's own, anonymous on loopback, standing in for `npm start`'s `localhost:8787`.
 */
import { type ChildProcess, execFile, spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type CodeBlock, docBlocks, FLAGS, javascriptOf, PROGRAM_LANGUAGES, statedOutput } from "./code-blocks.js";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const CLI = join(ROOT, "dist/bundle/cli.js");
/** Generous: a cold process on a loaded machine; only a hang should reach it. */
const BLOCK_TIMEOUT_MS = 120_000;

const blocks = docBlocks(ROOT);
const programs = blocks.filter((block) => PROGRAM_LANGUAGES.includes(block.language));
const runnable = programs.filter((block) => !block.flags.includes("no-run"));

// A consumer's project: `runcode` is this checkout, as `npm install` of the tarball would link it.
const dir = mkdtempSync(join(tmpdir(), "runcode-docs-"));
mkdirSync(join(dir, "node_modules"));
symlinkSync(ROOT, join(dir, "node_modules/runcode"), "dir");
writeFileSync(join(dir, "package.json"), JSON.stringify({ name: "reader", private: true, type: "module" }));

const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith("RUNCODE_")));
let server: { url: string; child: ChildProcess } | undefined;

/** `runcode serve` on a free loopback port, anonymous, its database in the test's directory. */
function serve(): Promise<{ url: string; child: ChildProcess }> {
  const child = spawn(process.execPath, [CLI, "serve", "--port", "0", "--db", `file:${join(dir, "runcode.db")}`], {
    detached: true,
    env,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  return new Promise((resolve, reject) => {
    const read = (chunk: Buffer) => {
      output += chunk.toString();
      const url = /listening on (http:\/\/\S+)/.exec(output)?.[1];
      if (url !== undefined) resolve({ url, child });
    };
    child.stdout.on("data", read);
    child.stderr.on("data", read);
    child.once("exit", (code) => reject(new Error(`runcode serve exited ${code}: ${output}`)));
  });
}

beforeAll(async () => {
  if (runnable.some((block) => block.language === "sh")) server = await serve();
}, 60_000);

afterAll(() => {
  if (server) process.kill(-(server.child.pid as number), "SIGKILL");
  rmSync(dir, { recursive: true, force: true });
});

/** Runs `block` to its end: its standard output, or a rejection with its exit and standard error. */
function runBlock(block: CodeBlock, index: number): Promise<string> {
  let command: string;
  let args: string[];
  if (block.language === "sh") {
    command = "bash";
    args = ["-e", "-o", "pipefail", "-c", block.code.replaceAll("localhost:8787", (server as { url: string }).url)];
  } else {
    const file = join(dir, `block-${index}.mjs`);
    writeFileSync(file, javascriptOf(block));
    command = process.execPath;
    args = [file];
  }
  return new Promise((resolve, reject) => {
    execFile(command, args, { cwd: dir, env, timeout: BLOCK_TIMEOUT_MS }, (error, stdout, stderr) => {
      if (error) reject(new Error(`${block.where} failed (${error.code ?? error.signal}):\n${stdout}${stderr}`));
      else resolve(stdout);
    });
  });
}

describe("the docs' code blocks", () => {
  it("are found, and programs carry only the known flags", () => {
    // A guard against the extraction finding nothing: the README's and library.md's programs at least.
    expect(runnable.map((block) => block.where)).toEqual(
      expect.arrayContaining([expect.stringMatching(/^README\.md:/), expect.stringMatching(/^docs\/library\.md:/)]),
    );
    for (const block of programs) {
      expect([block.where, block.flags.filter((flag) => !FLAGS.includes(flag))]).toEqual([block.where, []]);
    }
  });

  it.each(runnable.map((block, index) => [block.where, block, index] as const))(
    "%s prints what it says",
    async (_where, block, index) => {
      const stdout = await runBlock(block, index);
      const lines = stdout === "" ? [] : stdout.replace(/\n$/, "").split("\n");
      expect(lines).toEqual(statedOutput(block));
    },
    BLOCK_TIMEOUT_MS + 10_000,
  );
});
