/**
 * `createSandbox({ packages })` in Node: npm packages bundled and booted into the image, imported by their bare
 * names and subpaths, each README example answering as in Node, a CommonJS package's named exports the keys of its
 * `module.exports` (UMD builds' included), on the caller's thread and on worker threads.
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

  it("a CommonJS package's named exports are the keys of its module.exports, a UMD build's included", async () => {
    const source = `import { map } from "lodash";
      import { map as fpMap } from "lodash/fp";
      import * as lodash from "lodash";
      import * as fp from "lodash/fp";
      import * as semver from "semver";
      import * as dayjs from "dayjs";
      import * as validator from "validator";
      import * as moment from "moment";
      import * as he from "he";
      import * as papaparse from "papaparse";
      const names = (ns) => Object.keys(ns).filter((name) => name !== "default");
      export default [map([1, 2], (n) => n + 1), fpMap((n) => n * 3)([1]),
        [lodash, fp, semver, dayjs, validator, moment, he, papaparse].map((ns) =>
          [names(ns).length, names(ns).every((name) => ns[name] === ns.default[name])])];`;
    expect(outcome(await sandbox.runCode(source, js))).toEqual({
      status: "success",
      result: [[2, 3], [3], [308, 390, 46, 7, 112, 41, 5, 17].map((count) => [count, true])],
    });
  });

  for (const [name, { source }] of Object.entries(EXAMPLES)) {
    it(`${name}: its README's first example answers as in Node`, async () => {
      const expected = await inNode(name, source);
      expect(outcome(await sandbox.runCode(source, js))).toEqual({ status: "success", result: expected });
    });
  }
});
