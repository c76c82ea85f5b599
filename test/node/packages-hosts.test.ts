/**
 * Packages on every Node host: refusals when a sandbox is made, the threaded sandbox, a package's code never run on
 * the host, `--package` and `runcode packages add` with its lock file, and `run_code`'s guide. The packages are made
 * in a temporary directory.
 */
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, describe, expect, it } from "vitest";
import { createSandbox, createSession, restoreSession } from "../../node/index.js";
import { readPackagesLock } from "../../node/packages-lock.js";
import { serveOptionsOf } from "../../node/serve/settings.js";
import { RUNCODE_VERSION } from "../../src/core/version.js";
import { createMcpServer } from "../../src/host/mcp/server.js";
import { createRunOnce } from "../../src/host/runs/run-once.js";
import { DEFAULT_MEMORY_LIMIT_BYTES } from "../../src/index.js";
import type { JsonValue } from "../../src/values/json.js";
import { fromWire } from "../../src/values/wire.js";
import { outcome } from "../security/helpers.js";

const CLI = fileURLToPath(new URL("../../dist/bundle/cli.js", import.meta.url));
const dir = mkdtempSync(join(tmpdir(), "runcode-packages-"));
afterAll(() => rmSync(dir, { recursive: true }));
const js = { language: "javascript" } as const;

function install(name: string, files: Record<string, string>): void {
  const root = join(dir, "node_modules", name);
  mkdirSync(root, { recursive: true });
  for (const [file, text] of Object.entries(files)) writeFileSync(join(root, file), text);
}

/** A CommonJS package of one file, `index.js`, at version 1.0.0. */
function commonJs(name: string, index: string): void {
  install(name, {
    "package.json": JSON.stringify({ name, version: "1.0.0", main: "index.js" }),
    "index.js": index,
  });
}

install("greet", {
  "package.json": JSON.stringify({
    name: "greet",
    version: "1.2.3",
    type: "module",
    exports: { ".": "./index.js", "./loud": "./loud.js" },
  }),
  "index.js": 'export const greet = (name) => "hello " + name;\nexport default "greet";\n',
  "loud.js": 'import { greet } from "./index.js";\nexport const loud = (name) => greet(name).toUpperCase();\n',
});
install("tally", {
  "package.json": JSON.stringify({ name: "tally", version: "0.1.0", main: "index.js" }),
  "index.js": "let n = 0;\nexports.next = () => ++n;\nexports.class = 'reserved words stay names';\n",
});
install("browser-build", {
  "package.json": JSON.stringify({ name: "browser-build", version: "2.0.0", main: "node.js", browser: "browser.js" }),
  "node.js": 'throw new Error("not on Node");\n',
  "browser.js": 'const where = "browser";\nmodule.exports = { where };\n',
});
// A hostile package.json: its version names the bundle's file, and climbed out of the bundles' directory.
install("climbs", {
  "package.json": JSON.stringify({ name: "climbs", version: "1.0.0/../../../../../climbed", type: "module" }),
  "index.js": "export const x = 1;\n",
});
commonJs("needs-fs", 'module.exports = require("node:fs").readFileSync;\n');

// Packages whose code betrays, on the host, any run of it there: a global set, and a file written with the Node `fs`
// that their browser builds, which are what is bundled, leave out.
const PWNED = join(dir, "pwned");
const betray = (name: string) =>
  `globalThis.__runcodePwned = ${JSON.stringify(name)};\nconst fs = require("fs");\n` +
  `if (typeof fs.writeFileSync === "function") fs.writeFileSync(${JSON.stringify(PWNED)}, ${JSON.stringify(name)});\n`;
install("pwn", {
  "package.json": JSON.stringify({ name: "pwn", version: "1.0.0", main: "index.js", browser: { fs: false } }),
  "index.js": `${betray("pwn")}exports.hello = (name) => "hi " + name;\n`,
});
// TypeScript's re-export of a module's names, as tsc emits it.
const exportStar =
  'var __exportStar = (this && this.__exportStar) || function (m, exports) { for (var p in m) if (p !== "default" && !Object.prototype.hasOwnProperty.call(exports, p)) exports[p] = m[p]; };\n';
install("reexports", {
  "package.json": JSON.stringify({ name: "reexports", version: "1.0.0", main: "index.js", browser: { fs: false } }),
  "index.js": 'module.exports = require("./impl");\n',
  "impl.js": `"use strict";\n${exportStar}${betray("reexports")}Object.defineProperty(exports, "__esModule", { value: true });
exports.a = "a";
var b_1 = require("./b");
Object.defineProperty(exports, "b", { enumerable: true, get: function () { return b_1.b; } });
__exportStar(require("./star"), exports);
exports["not-a-name; globalThis.x = 1"] = 1;
`,
  "b.js": 'exports.b = "b";\n',
  // Back to the entry: a cycle.
  "star.js": `${exportStar}exports.s = "star";\n__exportStar(require("./index"), exports);\n`,
});
// lodash's shape: a UMD build whose names no reading of its source finds, only running it.
install("umd", {
  "package.json": JSON.stringify({ name: "umd", version: "1.0.0", main: "umd.js" }),
  "umd.js": `;(function () {
  var root = typeof self == "object" ? self : this;
  function _(value) { return value; }
  _.map = function (list, f) { return list.map(f); };
  _.chunk = function (list, size) { var out = []; for (var i = 0; i < list.length; i += size) out.push(list.slice(i, i + size)); return out; };
  if (typeof module == "object" && module && module.exports) module.exports = _; else root._ = _;
}.call(this));
`,
});
// A top level that leaves a timer pending (where the probe runs it), which the probe's run would wait for.
commonJs(
  "ticks",
  'const api = {};\napi.tick = "tock";\nif (typeof setInterval === "function") setInterval(() => {}, 1000);\nmodule.exports = api;\n',
);
commonJs("many", `for (let i = 0; i < 5000; i++) exports["n" + i] = i;\nexports["x".repeat(300)] = 1;\n`);
// Packages whose top level fails only where the probe runs it (with the Web APIs, unlike the sandboxes below): they
// loop forever, or throw.
commonJs("loops", 'exports.never = 1;\nif (typeof setTimeout === "function") for (;;) {}\n');
commonJs("throws", 'exports.never = 1;\nif (typeof setTimeout === "function") throw new Error("no");\n');

// A CommonJS package first bundled while its probe cannot run.
commonJs("later", "exports.soon = 1;\n");

describe("packages", () => {
  it("are refused when the sandbox is made when they need a Node built-in, are not installed or are not names", () => {
    expect(() => createSandbox({ packages: ["needs-fs"], packagesFrom: dir })).toThrow(
      new TypeError("createSandbox: package 'needs-fs' needs the Node built-in 'fs', which the sandbox does not have"),
    );
    expect(() => createSandbox({ packages: ["absent"], packagesFrom: dir })).toThrow(
      new TypeError(`createSandbox: package 'absent' is not installed in ${dir}`),
    );
    expect(() => createSandbox({ packages: ["./greet"], packagesFrom: dir })).toThrow(
      new TypeError('createSandbox: packages: "./greet" is not a package name'),
    );
    expect(() => createSandbox({ packages: ["greet", "greet"], packagesFrom: dir })).toThrow(
      new TypeError("createSandbox: package 'greet' is given twice"),
    );
    expect(() => createSandbox({ packages: ["climbs"], packagesFrom: dir })).toThrow(
      new TypeError(
        "createSandbox: package 'climbs' has the version \"1.0.0/../../../../../climbed\", which is not a semantic version",
      ),
    );
    expect(existsSync(join(dir, "climbed-runcode0.1.0.js"))).toBe(false);
    expect(() => createSandbox({ packages: ["greet"], packagesFrom: dir, bootModules: { greet: "" } })).toThrow(
      new TypeError("createSandbox: package 'greet' is in bootModules too"),
    );
  });

  it("are imported by name and subpath on worker threads, a CommonJS package with Node's shape, each run as booted", async () => {
    const sandbox = createSandbox({ packages: ["greet", "greet/loud", "tally"], packagesFrom: dir, threads: true });
    const source = `import greetDefault, { greet } from "greet";
      import { loud } from "greet/loud";
      import tally, { next } from "tally";
      export default [greetDefault, greet("a"), loud("b"), next(), next(), tally.class, typeof tally.next];`;
    for (let i = 0; i < 2; i++)
      expect(outcome(await sandbox.runCode(source, js))).toEqual({
        status: "success",
        result: ["greet", "hello a", "HELLO B", 1, 2, "reserved words stay names", "function"],
      });
    expect(outcome(await sandbox.runCode('import "needs-fs"; export default 1', js))).toEqual({
      status: "link_error",
      error:
        "LinkError: Cannot find module 'needs-fs': only options.imports, options.modules and the sandbox's packages resolve (greet, greet/loud, tally)",
    });
    expect(existsSync(join(dir, "node_modules/.cache/runcode/packages/greet+loud@1.2.3-runcode0.1.0.js"))).toBe(true);
    // A CommonJS package's names are those of the build bundled, its browser build (its Node build throws on load).
    const browser = createSandbox({ packages: ["browser-build"], packagesFrom: dir, threads: false });
    const importBrowser = 'import b, { where } from "browser-build"; export default [b, where];';
    expect(outcome(await browser.runCode(importBrowser, js))).toEqual({
      status: "success",
      result: [{ where: "browser" }, "browser"],
    });
  });

  it("never run on the host: a CommonJS package's names are the keys it gives the guest, found in a sandbox", async () => {
    const packages = ["pwn", "reexports", "umd", "ticks", "many"];
    const sandbox = createSandbox({ packages, packagesFrom: dir, threads: false });
    const host = () => [(globalThis as { __runcodePwned?: unknown }).__runcodePwned, existsSync(PWNED)];
    expect(host()).toEqual([undefined, false]);
    const source = `import pwn, { hello } from "pwn";
      import * as reexports from "reexports";
      import { a, b, s } from "reexports";
      import _, { map, chunk } from "umd";
      import { tick } from "ticks";
      import * as many from "many";
      export default [hello("guest"), typeof pwn.hello, Object.keys(reexports), [a, b, s], map([1, 2], (n) => n * 2),
        chunk([1, 2, 3], 2), typeof _, tick, Object.keys(many).length, [many.n0, many.n4095, "n4096" in many]];`;
    expect(outcome(await sandbox.runCode(source, js))).toEqual({
      status: "success",
      result: [
        "hi guest",
        "function",
        ["a", "b", "default", "s"],
        ["a", "b", "star"],
        [2, 4],
        [[1, 2], [3]],
        "function",
        "tock",
        // 4,096 names at most, each an identifier of 256 characters at most, and the default export.
        4097,
        [0, 4095, false],
      ],
    });
    expect(host()).toEqual([undefined, false]);
  });

  it("have the default export alone when their top level throws or loops forever where it is probed", async () => {
    const sandbox = createSandbox({ packages: ["loops", "throws"], packagesFrom: dir, threads: false });
    const source = `import * as loops from "loops";
      import * as throws from "throws";
      export default [Object.keys(loops), loops.default.never, Object.keys(throws), throws.default.never];`;
    expect(outcome(await sandbox.runCode(source, js))).toEqual({
      status: "success",
      result: [["default"], 1, ["default"], 1],
    });
  });

  it("are refused, and not cached, when their probe gives no answer: the next sandbox probes again", async () => {
    const cached = join(dir, `node_modules/.cache/runcode/packages/later@1.0.0-runcode${RUNCODE_VERSION}.js`);
    const { execPath } = process;
    // The probe's child cannot start (a machine out of processes, say): a clear error, no bundle kept without names.
    process.execPath = join(dir, "no-node");
    try {
      expect(() => createSandbox({ packages: ["later"], packagesFrom: dir })).toThrow(
        /^createSandbox: package 'later' could not be probed for its names: spawnSync .*no-node ENOENT$/,
      );
    } finally {
      process.execPath = execPath;
    }
    expect(existsSync(cached)).toBe(false);
    const sandbox = createSandbox({ packages: ["later"], packagesFrom: dir, threads: false });
    const run = await sandbox.runCode('import * as later from "later"; export default Object.keys(later);', js);
    expect(outcome(run)).toEqual({ status: "success", result: ["default", "soon"] });
    expect(existsSync(cached)).toBe(true);
  });

  it("are given to Node's sessions too, and a snapshot restores only with the same packages", async () => {
    const session = await createSession({ packages: ["tally"], packagesFrom: dir });
    expect(outcome(await session.run('import { next } from "tally";\nnext(); next()', js))).toEqual({
      status: "success",
      result: 2,
    });
    const snapshot = await session.snapshot();
    const restored = await restoreSession(snapshot, { packages: ["tally"], packagesFrom: dir });
    expect(outcome(await restored.run("next()", js))).toEqual({ status: "success", result: 3 });
    await expect(restoreSession(snapshot)).rejects.toThrow(
      "the snapshot was taken with other webApis, fetch, intl, packages or bootModules settings",
    );
    session.close();
    restored.close();
  });
});

describe("hosts", () => {
  const cli = (args: string[]) => {
    const done = spawnSync(process.execPath, [CLI, ...args], { cwd: dir, encoding: "utf8", timeout: 20_000 });
    return { code: done.status, stdout: done.stdout, stderr: done.stderr };
  };

  it("runcode --package gives a run the package; one that cannot be bundled exits 2 naming it", () => {
    writeFileSync(join(dir, "main.js"), 'import { loud } from "greet/loud";\nexport default loud("cli");\n');
    expect(cli(["main.js", "--package", "greet/loud"])).toMatchObject({
      code: 0,
      stdout: expect.stringContaining("result: 'HELLO CLI'"),
    });
    expect(cli(["main.js", "--package", "needs-fs"])).toMatchObject({
      code: 2,
      stderr:
        "runcode: --package: package 'needs-fs' needs the Node built-in 'fs', which the sandbox does not have (runcode --help)\n",
    });
  });

  it("runcode packages add writes the bundles and a lock file hosts boot from, each bundle checked", async () => {
    expect(cli(["packages", "add", "greet", "tally"])).toMatchObject({
      code: 0,
      stdout: "greet@1.2.3: runcode-packages/greet@1.2.3.js\ntally@0.1.0: runcode-packages/tally@0.1.0.js\n",
    });
    const lockPath = join(dir, "runcode-packages.json");
    const lock = JSON.parse(readFileSync(lockPath, "utf8"));
    expect(lock.packages.map((p: { specifier: string; version: string }) => `${p.specifier}@${p.version}`)).toEqual([
      "greet@1.2.3",
      "tally@0.1.0",
    ]);
    const { packages } = readPackagesLock(lockPath);
    expect(packages).toEqual([
      { specifier: "greet", version: "1.2.3" },
      { specifier: "tally", version: "0.1.0" },
    ]);
    const served = await serveOptionsOf(["--packages", lockPath], {});
    expect(served.packages?.packages).toEqual(packages);
    const sandbox = createSandbox({ bootModules: served.packages?.bootModules ?? {}, threads: false });
    expect(outcome(await sandbox.runCode('import { greet } from "greet"; export default greet("lock")', js))).toEqual({
      status: "success",
      result: "hello lock",
    });
    writeFileSync(join(dir, "runcode-packages/tally@0.1.0.js"), "export default 1;\n");
    expect(() => readPackagesLock(lockPath)).toThrow(
      new TypeError(`${lockPath}: package 'tally': runcode-packages/tally@0.1.0.js does not match its sha256`),
    );
  });

  it("runcode serve boots the lock file of RUNCODE_PACKAGES into /run and processes", async () => {
    expect(cli(["packages", "add", "greet", "tally"]).code).toBe(0);
    const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith("RUNCODE_")));
    const child = spawn(process.execPath, [CLI, "serve", "--port", "0", "--db", `file:${join(dir, "serve.db")}`], {
      cwd: dir,
      detached: true,
      env: { ...env, RUNCODE_PACKAGES: join(dir, "runcode-packages.json") },
      stdio: ["ignore", "pipe", "pipe"],
    });
    try {
      const url = await new Promise<string>((resolve, reject) => {
        let output = "";
        const failed = setTimeout(() => reject(new Error(`runcode serve did not start: ${output}`)), 30_000);
        const read = (chunk: Buffer) => {
          output += chunk.toString();
          const listening = /listening on (http:\/\/\S+)/.exec(output)?.[1];
          if (listening === undefined) return;
          clearTimeout(failed);
          resolve(listening);
        };
        child.stdout?.on("data", read);
        child.stderr?.on("data", read);
      });
      const response = await fetch(`${url}/run`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ source: 'import { greet } from "greet"; export default greet("serve")' }),
      });
      expect(await response.json()).toMatchObject({ status: "success", result: "hello serve" });
      const created = await fetch(`${url}/processes`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ code: 'import { greet } from "greet";\nconsole.log(greet("process"));' }),
      });
      const { pid } = (await created.json()) as { pid: number };
      let record: { state: string; exitState: string | null; error: string | null } | undefined;
      for (let i = 0; i < 600 && record?.state !== "idle"; i++) {
        await new Promise((resolve) => setTimeout(resolve, 25));
        record = await (await fetch(`${url}/processes/${pid}`)).json();
      }
      expect([record?.exitState, record?.error]).toEqual(["success", null]);
      expect(await (await fetch(`${url}/processes/${pid}/stdout`)).text()).toBe("hello process\n");
    } finally {
      process.kill(-(child.pid as number), "SIGKILL");
    }
  });

  it("runcode mcp --package gives run_code and its sessions the package, and its guide lists it", async () => {
    const client = new Client({ name: "test", version: "1" });
    await client.connect(
      new StdioClientTransport({
        command: process.execPath,
        args: [CLI, "mcp", "--package", "tally"],
        cwd: dir,
        stderr: "pipe",
      }),
    );
    try {
      const { tools } = await client.listTools();
      expect(tools[0]?.description).toContain("and no others: `tally` 0.1.0.");
      const call = async (args: Record<string, unknown>) =>
        fromWire(
          ((await client.callTool({ name: "run_code", arguments: args })) as CallToolResult)
            .structuredContent as JsonValue,
        );
      const code = 'import { next } from "tally"; export default [next(), next()];';
      expect(await call({ code, language: "javascript" })).toMatchObject({ status: "success", result: [1, 2] });
      expect(await call({ code: 'import { next } from "tally";\nnext()', session: "s" })).toMatchObject({
        status: "success",
        result: 1,
      });
    } finally {
      await client.close();
    }
  });

  it("run_code's guide lists the packages installed", async () => {
    const { runCode } = createSandbox({ threads: false });
    const { run } = createRunOnce({ runCode, defaultMemoryLimitBytes: DEFAULT_MEMORY_LIMIT_BYTES });
    const server = createMcpServer({ run, packages: [{ specifier: "greet", version: "1.2.3" }] });
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    await server.connect(serverSide);
    const client = new Client({ name: "test", version: "1" });
    await client.connect(clientSide);
    const { tools } = await client.listTools();
    expect(tools[0]?.description).toContain(
      '- Installed npm packages, imported by name (`import { z } from "zod"`), and no others: `greet` 1.2.3.\n',
    );
    await client.close();
  });
});
