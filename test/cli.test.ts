/** The `runcode` command, run as a user runs it: the built CLI in a child process. */
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";

const CLI = fileURLToPath(new URL("../dist/node/cli.js", import.meta.url));
const dir = mkdtempSync(join(tmpdir(), "runcode-cli-"));
afterAll(() => rmSync(dir, { recursive: true }));

function cli(args: string[], files: Record<string, string> = {}, input?: string) {
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  const done = spawnSync(process.execPath, [CLI, ...args], { cwd: dir, input, encoding: "utf8", timeout: 20_000 });
  return { code: done.status, stdout: done.stdout, stderr: done.stderr };
}
const status = (stdout: string) => /status: '(\w+)'/.exec(stdout)?.[1];

describe("runcode [file]", () => {
  it("runs .js files as JavaScript and .ts as TypeScript; --ts and --js decide instead", () => {
    const typed = "export default (1 as number) + 1;";
    expect(status(cli(["a.ts"], { "a.ts": typed }).stdout)).toBe("success");
    expect(status(cli(["a.js"], { "a.js": typed }).stdout)).toBe("link_error");
    expect(status(cli(["a.js", "--ts"]).stdout)).toBe("success");
    expect(status(cli(["a.ts", "--js"]).stdout)).toBe("link_error");
  });

  it("reads standard input for `-`", () => {
    const run = cli(["-"], {}, "export default 40 + 2;");
    expect({ code: run.code, status: status(run.stdout), result: run.stdout.includes("result: 42") }).toEqual({
      code: 0,
      status: "success",
      result: true,
    });
  });

  it("bad --args or --globals: one line on standard error, exit 2, nothing run", () => {
    expect(cli(["a.ts", "--args", "[1"])).toEqual({
      code: 2,
      stdout: "",
      stderr:
        "runcode: --args is not valid JSON: Expected ',' or ']' after array element in JSON at position 2 (runcode --help)\n",
    });
    expect(cli(["a.ts", "--globals", "[]"])).toEqual({
      code: 2,
      stdout: "",
      stderr: "runcode: --globals must be a JSON object (runcode --help)\n",
    });
    expect(cli(["missing.ts"]).code).toBe(2);
  });

  it("--timeout stops a synchronous loop at its figure", () => {
    const run = cli(["loop.js", "--timeout", "300"], { "loop.js": "for (;;) {}" });
    expect({ code: run.code, status: status(run.stdout) }).toEqual({ code: 1, status: "terminated" });
  });

  it("--timeout stops a native loop that never polls on time: the run is on a worker thread", () => {
    const started = performance.now();
    const run = cli(["big.js", "--timeout", "300"], {
      "big.js": "const x = (1n << 1048000n) - 1n;\nfor (;;) String(x);",
    });
    expect({ code: run.code, status: status(run.stdout) }).toEqual({ code: 1, status: "terminated" });
    expect(run.stdout).toContain("message: '300 ms budget'");
    // One conversion takes seconds between two polls (SECURITY.md); a hang bound, not a timing.
    expect(performance.now() - started).toBeLessThan(10_000);
  });

  it("a module without the selected export says so in one line, with a hint", () => {
    const run = cli(["lib.ts"], { "lib.ts": "export const x = 1;" });
    expect({ code: run.code, status: status(run.stdout), stderr: run.stderr }).toEqual({
      code: 1,
      status: "link_error",
      stderr: "runcode: lib.ts has no export 'default': add `export default ...` or pass --export <name>\n",
    });
  });
});
