/**
 * `runcode repl` and `runcode run --session`, run as a user runs them: the built CLI in a child process, cells piped
 * to its standard input.
 */
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";

const CLI = fileURLToPath(new URL("../../dist/bundle/cli.js", import.meta.url));
const dir = mkdtempSync(join(tmpdir(), "runcode-cli-sessions-"));
afterAll(() => rmSync(dir, { recursive: true }));

function cli(args: string[], input: string) {
  const done = spawnSync(process.execPath, [CLI, ...args], { cwd: dir, input, encoding: "utf8", timeout: 30_000 });
  return { code: done.status, stdout: done.stdout, stderr: done.stderr };
}
const repl = (...lines: string[]) => cli(["repl"], `${lines.join("\n")}\n`);
const status = (stdout: string) => /status: '(\w+)'/.exec(stdout)?.[1];

describe("runcode repl", () => {
  it("runs each input as a cell of one session, printing its result as Node's REPL does", () => {
    expect(
      repl("let x = 1", "x + 1", 'console.log("seen", x)', "[x, { y: 'z' }]", "throw new TypeError('bad')", "x"),
    ).toEqual({
      code: 0,
      stdout: "undefined\n2\nundefined\n[ 1, { y: 'z' } ]\nUncaught TypeError: bad\n    at <eval> (<cell>:1:20)\n1\n",
      stderr: "seen 1\n",
    });
  });

  it("continues an input the parser finds cut short on the next line; a string left open is an error", () => {
    const run = repl(
      "function twice(n: number) {",
      "  return 2 * n;",
      "}",
      "twice(21)",
      "const s = `a",
      "b`",
      "s",
      "'open",
    );
    expect(run.stdout).toBe(
      "undefined\n42\nundefined\n'a\\nb'\n[link_error] SyntaxError: Unterminated string constant\n    at <cell>:1:1\n",
    );
  });

  it(".save writes the session to a file that another REPL's .load restores; .load refuses a file that is no snapshot", () => {
    expect(repl("let x = 1", ".save saved.snap").stdout).toBe("undefined\nSession saved to saved.snap\n");
    writeFileSync(join(dir, "not.snap"), "not a snapshot");
    const loaded = repl("let x = 2", ".load not.snap", "x", ".load saved.snap", "x", ".load missing.snap", ".nope");
    expect(loaded.stdout.split("\n")).toEqual([
      "undefined",
      expect.stringMatching(
        /^not\.snap is not a runcode session snapshot, or not one of this version \(.+\); it is left as it is$/,
      ),
      "2",
      "Session loaded from saved.snap",
      "1",
      ".load: missing.snap: no such file",
      "Invalid REPL keyword: .nope (.help lists them)",
      "",
    ]);
    expect(readFileSync(join(dir, "not.snap"), "utf8")).toBe("not a snapshot");
  });

  it("Ctrl-C stops the running cell, a loop or a wait, and the session goes on", async () => {
    const child = spawn(process.execPath, [CLI, "repl", "--web-apis", "--timeout", "60000"], { cwd: dir });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk) => {
      stdout += chunk;
    });
    child.stderr.on("data", (chunk) => {
      stderr += chunk;
    });
    /** Resolves once standard error holds `text`: the cell is running. */
    const logged = (text: string) =>
      new Promise<void>((resolve) => {
        const check = () => (stderr.includes(text) ? resolve() : setTimeout(check, 20));
        check();
      });
    child.stdin.write('var n = 0; console.log("looping"); while (true) n++;\n');
    await logged("looping");
    child.kill("SIGINT");
    child.stdin.write('console.log("waiting"); await new Promise((resolve) => setTimeout(resolve, 20_000));\n');
    await logged("waiting");
    child.kill("SIGINT");
    child.stdin.end("n > 0\n");
    const code = await new Promise((resolve) => child.on("close", resolve));
    const stopped = "[terminated] TerminatedError: Execution terminated by the caller";
    expect({ code, stdout }).toEqual({ code: 0, stdout: `${stopped}\n${stopped}\ntrue\n` });
  }, 30_000);
});

describe("runcode run --session FILE", () => {
  it("keeps the session's state between calls: a new session when FILE does not exist, saved after each cell", () => {
    const first = cli(["run", "--session", "s.snap", "-"], "let y: number = 5; y");
    expect([first.code, status(first.stdout), first.stdout.includes("result: 5")]).toEqual([0, "success", true]);
    writeFileSync(join(dir, "cell.js"), 'console.log("twice"); y * 2');
    const second = cli(["run", "--session", "s.snap", "cell.js", "--json"], "");
    expect([second.code, second.stderr, JSON.parse(second.stdout).result]).toEqual([0, "twice\n", 10]);
  });

  it("a cell that fails exits 1 and keeps what it did before it failed", () => {
    const failed = cli(["run", "--session", "f.snap"], 'var kept = "yes"; throw new Error("no")');
    expect([failed.code, status(failed.stdout)]).toEqual([1, "error"]);
    const after = cli(["run", "--session", "f.snap"], "kept");
    expect([after.code, after.stdout.includes("result: 'yes'")]).toEqual([0, true]);
  });

  it("refuses a FILE that is not a snapshot, exit 2, and leaves it as it is", () => {
    const path = join(dir, "corrupt.snap");
    writeFileSync(path, "not a snapshot at all");
    const refused = cli(["run", "--session", "corrupt.snap"], "1 + 1");
    expect(refused).toEqual({
      code: 2,
      stdout: "",
      stderr: expect.stringMatching(
        /^runcode: corrupt\.snap is not a runcode session snapshot, or not one of this version \(.+\); it is left as it is\n$/,
      ),
    });
    expect(readFileSync(path, "utf8")).toBe("not a snapshot at all");
    // A snapshot cut short, or with one bit changed, is refused as well; nothing is written beside it.
    expect(cli(["run", "--session", "whole.snap"], "let y = 1").code).toBe(0);
    const whole = readFileSync(join(dir, "whole.snap"));
    const flipped = Buffer.from(whole);
    const middle = flipped.length >> 1;
    flipped.writeUInt8(flipped.readUInt8(middle) ^ 1, middle);
    for (const bytes of [whole.subarray(0, whole.length >> 1), flipped]) {
      writeFileSync(path, bytes);
      const refusedBytes = cli(["run", "--session", "corrupt.snap"], "y");
      expect([refusedBytes.code, refusedBytes.stderr]).toEqual([
        2,
        expect.stringContaining("is not a runcode session snapshot"),
      ]);
      expect(readFileSync(path).equals(bytes)).toBe(true);
    }
    expect(readdirSync(dir).filter((name) => name.endsWith(".tmp"))).toEqual([]);
  });

  it("without --session: a one-line error and exit 2", () => {
    expect(cli(["run", "cell.ts"], "")).toEqual({
      code: 2,
      stdout: "",
      stderr: "runcode: runcode run needs --session FILE (runcode --help)\n",
    });
    expect(existsSync(join(dir, "cell.ts"))).toBe(false);
  });
});
