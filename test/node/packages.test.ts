/**
 * `createSandbox({ packages })` in Node: npm packages bundled and booted into the image, imported by their bare
 * names and subpaths, each README example answering as in Node, on the caller's thread and on worker threads.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { beforeAll, describe, expect, it } from "vitest";
import { createSandbox } from "../../node/index.js";
import { outcome } from "../security/helpers.js";
import { EXAMPLES } from "./package-examples.js";

const ROOT = join(import.meta.dirname, "../..");
const ALL = Object.values(EXAMPLES).flatMap((example) => example.packages);
const js = { language: "javascript" } as const;

/** The default export of `source` as Node's `import` gives it, resolved from the repository's `node_modules`. */
async function inNode(name: string, source: string): Promise<unknown> {
  const dir = join(ROOT, "node_modules/.cache/runcode/test");
  mkdirSync(dir, { recursive: true });
  const file = join(dir, `${name.replaceAll("/", "+")}.mjs`);
  writeFileSync(file, source);
  return (await import(`${pathToFileURL(file).href}?${Date.now()}`)).default;
}

describe("packages", () => {
  const sandbox = createSandbox({
    packages: [...ALL, "lodash/fp"],
    packagesFrom: ROOT,
    webApis: true,
    threads: false,
  });

  // The boot of all of them (seconds: mathjs alone is most of it, see docs/performance.md), bounded only for a hang.
  beforeAll(async () => {
    expect(outcome(await sandbox.runCode("export default 1", js))).toEqual({ status: "success", result: 1 });
  }, 120_000);

  it("lodash/fp, a subpath Node's ES modules cannot import without its extension, answers as Node's require", async () => {
    const fp = createRequire(import.meta.url)("lodash/fp");
    const source = `import fp from "lodash/fp";
      export default [fp.map((n) => n * 2)([1, 2]), fp.flow(fp.filter((n) => n > 1), fp.sum)([1, 2, 3]), fp.get("a.b")({ a: { b: 7 } })];`;
    expect(outcome(await sandbox.runCode(source, js))).toEqual({
      status: "success",
      result: [
        fp.map((n: number) => n * 2)([1, 2]),
        fp.flow(
          fp.filter((n: number) => n > 1),
          fp.sum,
        )([1, 2, 3]),
        7,
      ],
    });
  });

  for (const [name, { source }] of Object.entries(EXAMPLES)) {
    it(`${name}: its README's first example answers as in Node`, async () => {
      const expected = await inNode(name, source);
      expect(outcome(await sandbox.runCode(source, js))).toEqual({ status: "success", result: expected });
    });
  }
});
