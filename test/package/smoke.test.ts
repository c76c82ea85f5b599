/**
 * The package as a consumer gets it: `npm pack`, installed into a fresh project (with the typescript and vite this
 * repository pins), then used as the README and the docs show: ESM and CommonJS in Node, a CommonJS npm package in
 * `packages` (bundled by the package's esbuild, its names found by the probe script it ships), `runcode/environment`
 * and `runcode/host`, `tsc --strict` under the node16, nodenext and bundler resolutions, Vite builds of pages that run
 * `runCode` in Chromium (one wiring SWC itself, and the README's `vite` blocks as they stand, TypeScript with no
 * wiring), and `runcode serve` with its playground.
 */
import { execFileSync, spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "@playwright/test";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { docBlocks, javascriptOf, statedOutput } from "../docs/code-blocks.js";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const manifest = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as Record<
  "dependencies" | "devDependencies",
  Record<string, string>
>;
const pinned = { ...manifest.dependencies, ...manifest.devDependencies };
const dir = mkdtempSync(join(tmpdir(), "runcode-package-"));
const run = (command: string, args: string[], cwd = dir) =>
  execFileSync(command, args, { cwd, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });

beforeAll(() => {
  // dist/ is built by `npm test` before this suite runs.
  const tarball = run("npm", ["pack", "--ignore-scripts", "--pack-destination", dir, "--silent"], ROOT).trim();
  writeFileSync(join(dir, "package.json"), JSON.stringify({ name: "consumer", private: true, type: "module" }));
  run("npm", [
    "install",
    "--no-audit",
    "--no-fund",
    "--prefer-offline",
    join(dir, tarball),
    `typescript@${pinned.typescript}`,
    `@types/node@${pinned["@types/node"]}`,
    `vite@${pinned.vite}`,
  ]);
}, 300_000);

afterAll(() => rmSync(dir, { recursive: true, force: true }));
/** `tsc`'s own report when it fails, rather than only "Command failed". */
function typeCheck(args: string[]): string {
  try {
    return run("node", [join(dir, "node_modules/typescript/bin/tsc"), ...args]);
  } catch (error) {
    throw new Error(`tsc ${args.join(" ")}:\n${(error as { stdout?: string }).stdout ?? ""}`);
  }
}

describe("the installed package", () => {
  it("runs in Node as ESM and as CommonJS, TypeScript included", () => {
    writeFileSync(
      join(dir, "esm.mjs"),
      `import { runCode, nodeWasm } from "runcode";
const result = await runCode("const n: bigint = 2n ** 64n; export default new Set([n]);");
console.log(JSON.stringify([result.status, [...result.result].map(String), typeof nodeWasm]));`,
    );
    expect(JSON.parse(run("node", ["esm.mjs"]))).toEqual(["success", ["18446744073709551616"], "function"]);
    writeFileSync(
      join(dir, "cjs.cjs"),
      `const { runCode } = require("runcode");
runCode("export default [1, , 3].length", { language: "javascript" }).then((r) => console.log(JSON.stringify([r.status, r.result])));`,
    );
    expect(JSON.parse(run("node", ["cjs.cjs"]))).toEqual(["success", 3]);
  });

  it("gives the guest a CommonJS npm package installed beside it, a UMD build's names included", () => {
    const installed = join(dir, "node_modules/twice");
    mkdirSync(installed, { recursive: true });
    writeFileSync(
      join(installed, "package.json"),
      JSON.stringify({ name: "twice", version: "1.0.0", main: "index.js" }),
    );
    // Names only running it finds, in the sandbox, by the probe script the package ships.
    writeFileSync(
      join(installed, "index.js"),
      '(function (root, api) { if (typeof module == "object") module.exports = api; else root.twice = api; })' +
        "(this, { twice: (n) => n * 2 });\n",
    );
    writeFileSync(
      join(dir, "packages.mjs"),
      `import { createSandbox } from "runcode";
const { runCode } = createSandbox({ packages: ["twice"], threads: false });
const result = await runCode('import { twice } from "twice"; export default twice(21);', { language: "javascript" });
console.log(JSON.stringify([result.status, result.result]));`,
    );
    expect(JSON.parse(run("node", ["packages.mjs"]))).toEqual(["success", 42]);
  });

  it("runcode/environment and runcode/host work as their docs show, the engine's wasm defaulted in Node", () => {
    writeFileSync(
      join(dir, "host.mjs"),
      `import { instantiate } from "runcode/environment";
import { createHost } from "runcode/host";
const { app, service } = await createHost({ environment: { module: instantiate() } });
const created = await app.fetch(new Request("http://host/processes", {
  method: "POST", headers: { "content-type": "application/json" }, body: '{"code":"console.log(6 * 7)"}',
}));
const { pid } = await created.json();
await service.idle();
const stdout = await (await app.fetch(new Request(\`http://host/processes/\${pid}/stdout\`))).text();
console.log(JSON.stringify([created.status, stdout]));`,
    );
    expect(JSON.parse(run("node", ["host.mjs"]))).toEqual([201, "42\n"]);
  });

  it("runcode serve serves the playground at / from the package's dist/web", async () => {
    const server = spawn(
      process.execPath,
      [
        join(dir, "node_modules/runcode/dist/bundle/cli.js"),
        "serve",
        "--port",
        "0",
        "--db",
        `file:${join(dir, "serve.db")}`,
      ],
      { cwd: dir, detached: true, stdio: ["ignore", "pipe", "pipe"] },
    );
    try {
      let output = "";
      const url = await new Promise<string>((resolve, reject) => {
        const read = (chunk: Buffer) => {
          output += chunk.toString();
          const listening = /listening on (http:\/\/\S+)/.exec(output)?.[1];
          if (listening !== undefined) resolve(listening);
        };
        server.stdout.on("data", read);
        server.stderr.on("data", read);
        server.once("exit", (code) => reject(new Error(`runcode serve exited ${code}: ${output}`)));
      });
      expect(output).toContain("playground served");
      const page = await fetch(`${url}/`);
      expect([page.status, page.headers.get("content-type")]).toEqual([200, "text/html; charset=utf-8"]);
      expect(await page.text()).toContain("<title>runcode playground</title>");
    } finally {
      process.kill(-(server.pid as number), "SIGKILL");
    }
  });

  it("type-checks with --strict under node16, nodenext and bundler resolution", () => {
    writeFileSync(
      join(dir, "consumer.ts"),
      `import { type CodeExecutionResult, createSandbox, runCode } from "runcode";
import { type EnvironmentModule, instantiate } from "runcode/environment";
import { createApp, createHost, type HostOptions } from "runcode/host";
const result: CodeExecutionResult = await runCode("export default 1", { memoryLimitBytes: 1 << 24 });
const sandbox = createSandbox({ defaultMemoryLimitBytes: 1 << 24 });
const environment: EnvironmentModule = instantiate({ concurrency: 2 });
const options: HostOptions = { environment: { module: environment } };
const { app } = await createHost(options);
export const used = [result.status, sandbox.runCode, app.fetch, createApp];
`,
    );
    writeFileSync(
      join(dir, "node-only.ts"),
      `import { nodeWasm } from "runcode";\nexport const loader: () => Promise<Uint8Array> = nodeWasm as () => Promise<Uint8Array>;\n`,
    );
    const common = ["--strict", "--noEmit", "--skipLibCheck", "false", "--target", "es2022", "--types", "node"];
    for (const [module, resolution] of [
      ["node16", "node16"],
      ["nodenext", "nodenext"],
    ]) {
      typeCheck([
        ...common,
        "--module",
        module as string,
        "--moduleResolution",
        resolution as string,
        "consumer.ts",
        "node-only.ts",
      ]);
    }
    typeCheck([...common, "--module", "esnext", "--moduleResolution", "bundler", "consumer.ts"]);
  }, 300_000); // three full type checks: over two minutes on a loaded machine

  it("a Vite build of a page runs runCode in Chromium, TypeScript by SWC's wasm from the package", async () => {
    const { title } = await inChromium(
      "wired",
      `import { createSandbox, Transpiler } from "runcode";
import { instantiate } from "runcode/swc";
import swcWasmUrl from "runcode/swc.wasm?url";
const transpiler = new Transpiler(async () => {
  const module = await WebAssembly.compileStreaming(fetch(swcWasmUrl));
  return (out) => instantiate(module, out);
});
const { runCode } = createSandbox({ transpiler });
const result = await runCode("const n: number = 20; export default new Map([['n', n + 22]]);");
document.title = result.status + ":" + result.result.get("n");`,
    );
    expect(title).toBe("success:42");
  });

  it.each(docBlocks(ROOT).filter((block) => block.flags.includes("vite")))(
    "$where, built by Vite as it stands, prints in Chromium what it says, TypeScript with no wiring",
    async (block) => {
      const { logs } = await inChromium("readme", `${javascriptOf(block)}\ndocument.title = "done";`);
      expect(logs).toEqual(statedOutput(block));
    },
  );
});

/**
 * Builds `code` as the module of a page with Vite (in `name/` of the consumer's project), serves the build with
 * `vite preview` and loads it in Chromium until the page sets its title: the title and the page's `console.log` lines.
 */
async function inChromium(name: string, code: string): Promise<{ title: string; logs: string[] }> {
  const root = join(dir, name);
  mkdirSync(root, { recursive: true });
  writeFileSync(join(root, "index.html"), `<!doctype html><script type="module" src="./page.js"></script>`);
  writeFileSync(join(root, "page.js"), code);
  const vite = join(dir, "node_modules/vite/bin/vite.js");
  run("node", [vite, "build", "--logLevel", "error"], root);
  const server = spawn(process.execPath, [vite, "preview", "--port", "8791", "--strictPort"], {
    cwd: root,
    stdio: "ignore",
  });
  const browser = await chromium.launch({ executablePath: "/usr/bin/chromium", args: ["--headless", "--no-sandbox"] });
  try {
    const page = await browser.newPage();
    const logs: string[] = [];
    // The page's console.log lines (not the browser's own errors, such as a missing favicon's 404).
    page.on("console", (message) => {
      if (message.type() === "log") logs.push(message.text());
    });
    for (let i = 0; i < 100; i++) {
      if (
        await page.goto("http://127.0.0.1:8791/").then(
          () => true,
          () => false,
        )
      )
        break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    await page.waitForFunction(() => document.title !== "", null, { timeout: 30_000 });
    return { title: await page.title(), logs };
  } finally {
    await browser.close();
    server.kill();
  }
}
