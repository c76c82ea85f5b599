/** The `runcode` command, run as a user runs it: the built CLI in a child process. */
import { execFile, spawn, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { FORMAT_BUDGET } from "../../src/environment/index.js";
import type { JsonValue } from "../../src/values/json.js";
import { fromWire } from "../../src/values/wire.js";
import { startServer } from "../fetch/server.js";

const CLI = fileURLToPath(new URL("../../dist/bundle/cli.js", import.meta.url));
const dir = mkdtempSync(join(tmpdir(), "runcode-cli-"));
afterAll(() => rmSync(dir, { recursive: true }));

function cli(args: string[], files: Record<string, string> = {}, input?: string) {
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  const done = spawnSync(process.execPath, [CLI, ...args], { cwd: dir, input, encoding: "utf8", timeout: 20_000 });
  return { code: done.status, stdout: done.stdout, stderr: done.stderr };
}
const status = (stdout: string) => /status: '(\w+)'/.exec(stdout)?.[1];

describe("runcode [file] --allow-fetch", () => {
  it("gives the code fetch reaching only the origins named, none without the flag; a bad origin exits 2", async () => {
    const server = await startServer();
    writeFileSync(
      join(dir, "f.js"),
      `export default [typeof fetch, await fetch("${server.origin}/echo/cli")
      .then((res) => res.json()).then((echo) => echo.path, (e) => e.message)];`,
    );
    const run = (args: string[]) =>
      new Promise<{ code: number | null; stdout: string }>((resolve) =>
        execFile(process.execPath, [CLI, ...args], { cwd: dir, timeout: 20_000 }, (error, stdout) =>
          resolve({ code: error === null ? 0 : (error.code as number), stdout }),
        ),
      );
    expect(await run(["f.js", "--allow-fetch", "https://x.org", "--allow-fetch", server.origin])).toEqual({
      code: 0,
      stdout: expect.stringContaining("result: [ 'function', '/echo/cli' ]"),
    });
    const refused = await run(["f.js", "--allow-fetch", "https://x.org"]);
    expect(refused.stdout).toContain(`"fetch: ${server.origin} is not on the sandbox's allow list"`);
    expect(status((await run(["f.js"])).stdout)).toBe("error");
    await server.close();
    expect(cli(["f.js", "--allow-fetch", "api.example.com"])).toEqual({
      code: 2,
      stdout: "",
      stderr: 'runcode: --allow-fetch is not an absolute URL, got "api.example.com" (runcode --help)\n',
    });
  });
});

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

  it("--web-apis gives the code the Web APIs, and the run waits for its timers; without it they are absent", () => {
    const files = {
      "web.js": `const out = [new URL("../x", "https://h.example/a/b").href, atob(btoa("ok")), typeof crypto.randomUUID];
setTimeout(() => out.push("timer"), 10);
export default out;`,
    };
    const run = cli(["web.js", "--web-apis"], files);
    expect({ code: run.code, status: status(run.stdout) }).toEqual({ code: 0, status: "success" });
    expect(run.stdout).toContain("result: [ 'https://h.example/x', 'ok', 'function', 'timer' ]");
    const without = cli(["web.js"]);
    expect({ code: without.code, status: status(without.stdout) }).toEqual({ code: 1, status: "error" });
    expect(without.stdout).toContain("message: \"'URL' is not defined\"");
  });

  it("--intl gives the code Intl, answering in UTC; without it Intl is absent", () => {
    const files = {
      "intl.js": `export default [new Intl.PluralRules("pl").select(3), new Date(0).toLocaleTimeString("de-DE")];`,
    };
    const run = cli(["intl.js", "--intl"], files);
    expect({ code: run.code, status: status(run.stdout) }).toEqual({ code: 0, status: "success" });
    expect(run.stdout).toContain("result: [ 'few', '00:00:00' ]");
    const without = cli(["intl.js"]);
    expect({ code: without.code, status: status(without.stdout) }).toEqual({ code: 1, status: "error" });
    expect(without.stdout).toContain("message: \"'Intl' is not defined\"");
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

  it("a script without a default export runs: exit 0, its logs printed, no result", () => {
    const run = cli(["hello.ts"], { "hello.ts": "const who: string = 'world';\nconsole.log('hello ' + who);" });
    // Its log is printed as the guest makes it, so the run goes on to a worker at its first: `fuelRedone` is the attempt's.
    const stdout = run.stdout
      .replace(/timestamp: \d+/, "timestamp: 0")
      .replace(/(durationMs|memoryUsedBytes|fuelUsed|fuelRedone): [\d.]+/g, "$1: 0");
    expect({ code: run.code, stdout, stderr: run.stderr }).toEqual({
      code: 0,
      stdout: `{
  status: 'success',
  result: undefined,
  reports: [],
  logs: [
    { level: 'log', args: [ 'hello world' ], timestamp: 0 }
  ],
  durationMs: 0,
  memoryUsedBytes: 0,
  fuelUsed: 0,
  fuelRedone: 0
}
`,
      // Console output as it happens, on standard error.
      stderr: "hello world\n",
    });
  });

  it("--export or --args name a call: a module without that export says so in one line", () => {
    const named = cli(["lib.ts", "--export", "main"], { "lib.ts": "export const x = 1;" });
    expect({ code: named.code, status: status(named.stdout), stderr: named.stderr }).toEqual({
      code: 1,
      status: "link_error",
      stderr: "runcode: lib.ts has no export 'main' to call (--export, --args)\n",
    });
    const called = cli(["lib.ts", "--args", "[1]"]);
    expect({ code: called.code, status: status(called.stdout), stderr: called.stderr }).toEqual({
      code: 1,
      status: "link_error",
      stderr: "runcode: lib.ts has no export 'default' to call (--export, --args)\n",
    });
  });

  it("guest text of every kind is printed with its control characters escaped", () => {
    // ESC and BEL make an OSC 52 clipboard write; \u202e and \u2066 reorder what the terminal shows.
    const source = String.raw`const OSC52 = "\x1b]52;c;aGk=\x07";
const error = new TypeError("bad" + OSC52);
error.name = "Type\x1b[2JError";
error.stack = "at\x1b[31m evil";
console.log("log" + OSC52, error, Symbol("s\x1b"));
export default {
  text: "a\x7f\x9b\u202eb\r\t",
  ["key\x1b\u2066"]: new Map([["k\x1b", new Set(["v\x1b"])]]),
  re: new RegExp(OSC52 + "\\[2J", "g"),
  error,
};`;
    const run = cli(["controls.js"], { "controls.js": source });
    const stdout = run.stdout
      .replace(/timestamp: \d+/, "timestamp: 0")
      .replace(/(durationMs|memoryUsedBytes|fuelUsed|fuelRedone): [\d.]+/g, "$1: 0");
    expect({ code: run.code, stdout }).toEqual({
      code: 0,
      stdout: String.raw`{
  status: 'success',
  result: {
    text: 'a\x7F\x9B\u202Eb\r\t',
    'key\u001b\u2066': Map(1) { 'k\u001b' => Set(1) { 'v\u001b' } },
    re: /\x1B]52;c;aGk=\x07\[2J/g,
    error: [Type\x1B[2JError: bad\x1B]52;c;aGk=\x07]
  },
  reports: [],
  logs: [
    {
      level: 'log',
      args: [
        'log\u001b]52;c;aGk=\u0007',
        [Type\x1B[2JError: bad\x1B]52;c;aGk=\x07],
        'Symbol(s\u001b)'
      ],
      timestamp: 0
    }
  ],
  durationMs: 0,
  memoryUsedBytes: 0,
  fuelUsed: 0,
  fuelRedone: 0
}
`,
    });
  });

  it("a shared-reference result prints within the printing budget, marked where it was cut", () => {
    // 2^30 leaves in a few hundred bytes: printed in full it was 128 MiB over 17 s.
    const run = cli(["dag.js"], {
      "dag.js": "let x = 1;\nfor (let i = 0; i < 30; i++) x = [x, x];\nexport default x;",
    });
    expect(run.code).toBe(0);
    expect(run.stdout.startsWith("{\n  status: 'success',\n  result: [\n    [\n")).toBe(true);
    expect(run.stdout.endsWith(`\n} ... [output truncated: printing budget of ${FORMAT_BUDGET} units spent]\n`)).toBe(
      true,
    );
    expect(run.stdout.length).toBeLessThan(FORMAT_BUDGET);
  });

  it("printing counts within --timeout: past it, the output is cut and says so", () => {
    const run = cli(["late.js", "--timeout", "3000"], {
      "late.js": "let x = 1;\nfor (let i = 0; i < 30; i++) x = [x, x];\nconsole.log(x);\nwhile (true) await null;",
    });
    expect({ code: run.code, status: status(run.stdout) }).toEqual({ code: 1, status: "terminated" });
    expect(run.stdout.endsWith("\n} ... [output truncated: the 3000 ms timeout ran out]\n")).toBe(true);
    // The clock is read every 1,024 units spent: what was written before the timeout ran out is all there is.
    expect(run.stdout.length).toBeLessThan(64 * 1024);
  });

  it("prints console output on standard error as the guest makes it, escaped, before the run ends", async () => {
    writeFileSync(
      join(dir, "live.js"),
      'console.log("started", { n: 1 }, "\\x1b[2J");\nconsole.warn("w");\nfor (;;) {}',
    );
    // The run would end by itself within the test's time; the output must come before.
    const child = spawn(process.execPath, [CLI, "live.js", "--timeout", "20000"], { cwd: dir });
    let stderr = "";
    let stdout = "";
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk));
    try {
      for await (const chunk of child.stderr) {
        stderr += chunk;
        if (stderr.endsWith("w\n")) break;
      }
    } finally {
      child.kill();
    }
    expect({ stderr, stdout }).toEqual({ stderr: "started { n: 1 } \\x1B[2J\nw\n", stdout: "" });
  });

  it("--json prints the result in the wire encoding, with the characters a terminal acts on escaped as JSON allows", () => {
    const run = cli(["json.js", "--json"], {
      "json.js":
        'console.log("logged");\nexport default { big: 2n ** 64n, m: new Map([[1, undefined]]), t: "a\\x9b\\u202eb" };',
    });
    expect([run.code, run.stderr, run.stdout.includes("\\u009B\\u202E")]).toEqual([0, "logged\n", true]);
    const result = fromWire(JSON.parse(run.stdout) as JsonValue) as Record<string, unknown>;
    expect([result.status, result.result, (result.logs as { args: unknown }[])[0]?.args]).toEqual([
      "success",
      { big: 2n ** 64n, m: new Map([[1, undefined]]), t: "a\x9b\u202eb" },
      ["logged"],
    ]);
  });
});
