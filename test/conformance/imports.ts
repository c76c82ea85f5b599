/** §3.2 imports: bare specifiers backed by host objects. */
import { describe, expect, it } from "vitest";
import type { RunCode } from "../../src/core/types.js";
import { fails, ok } from "./helpers.js";

export function importsSuite(runCode: RunCode): void {
  describe("§3.2 imports", () => {
    it("resolves a named import of a host function", async () => {
      const calls: unknown[] = [];
      const source = "import { readFile } from 'fs';\nexport default await readFile('/a.txt')";
      const result = await ok(runCode, source, {
        imports: {
          fs: {
            readFile: async (path: unknown) => {
              calls.push(path);
              return `content of ${String(path)}`;
            },
          },
        },
      });
      expect(result).toBe("content of /a.txt");
      expect(calls).toEqual(["/a.txt"]);
    });

    it("resolves a default import from the 'default' key", async () => {
      const source = "import greet from 'greeter';\nexport default greet('ada')";
      const greeter = { default: (name: unknown) => `hi, ${String(name)}` };
      expect(await ok(runCode, source, { imports: { greeter } })).toBe("hi, ada");
    });

    it("resolves named and default imports of the same module together", async () => {
      const source = "import d, { a } from 'm';\nexport default [d, a]";
      expect(await ok(runCode, source, { imports: { m: { default: "D", a: "A" } } })).toEqual(["D", "A"]);
    });

    it("resolves non-function values", async () => {
      const source = "import { port, tags, when } from 'config';\nexport default [port, tags, when.getTime()]";
      const imports = { config: { port: 8080, tags: ["a", "b"], when: new Date(5) } };
      expect(await ok(runCode, source, { imports })).toEqual([8080, ["a", "b"], 5]);
    });

    it("resolves a namespace import with the host object's keys", async () => {
      const source = "import * as fs from 'fs';\nexport default [Object.keys(fs).sort(), await fs.readFile('x')]";
      const imports = { fs: { readFile: async () => "r", writeFile: async () => undefined } };
      expect(await ok(runCode, source, { imports })).toEqual([["readFile", "writeFile"], "r"]);
    });

    it("a namespace import is a copy: mutating the host object later changes nothing", async () => {
      const fs = { a: 1 };
      const run = runCode("import * as ns from 'fs';\nawait null;\nexport default ns.a", { imports: { fs } });
      fs.a = 2;
      expect(await run).toMatchObject({ status: "success", result: 1 });
    });

    it("a namespace import cannot be mutated in strict module code", async () => {
      const source = `
        import * as ns from 'fs';
        const out = [];
        try { ns.a = 2; out.push('assigned'); } catch (e) { out.push(e.name); }
        try { ns.added = 2; out.push('added'); } catch (e) { out.push(e.name); }
        try { delete ns.a; out.push('deleted'); } catch (e) { out.push(e.name); }
        export default [out, ns.a, Object.isExtensible(ns)];
      `;
      expect(await ok(runCode, source, { imports: { fs: { a: 1 } } })).toEqual([
        ["TypeError", "TypeError", "TypeError"],
        1,
        false,
      ]);
    });

    it("resolves export names that are not identifiers", async () => {
      const source = "import { 'read-file' as rf } from 'x';\nexport default rf('p')";
      const imports = { x: { "read-file": (p: unknown) => `read ${String(p)}` } };
      expect(await ok(runCode, source, { imports })).toBe("read p");
    });

    it("resolves scoped package names", async () => {
      const source = "import { v } from '@scope/pkg';\nexport default v";
      expect(await ok(runCode, source, { imports: { "@scope/pkg": { v: "scoped" } } })).toBe("scoped");
    });

    it("an empty host object gives an empty namespace", async () => {
      const source = "import * as e from 'empty';\nexport default Object.keys(e)";
      expect(await ok(runCode, source, { imports: { empty: {} } })).toEqual([]);
    });

    it("one bridged module is one instance for every importer", async () => {
      const source = "import { o } from 'cfg';\nimport { same } from './a.js';\nexport default o === same";
      const modules = { "./a.js": "import { o } from 'cfg';\nexport const same = o;" };
      expect(await ok(runCode, source, { imports: { cfg: { o: { n: 1 } } }, modules })).toBe(true);
    });

    it("an unknown specifier is a link_error with the specifier", async () => {
      const error = await fails(runCode, "link_error", "import { x } from 'unknown-pkg';\nexport default x");
      expect(error.name).toBe("LinkError");
      expect(error.specifier).toBe("unknown-pkg");
    });

    it("a side-effect import of an unknown specifier is a link_error", async () => {
      const error = await fails(runCode, "link_error", "import 'ghost';\nexport default 1");
      expect(error.name).toBe("LinkError");
      expect(error.specifier).toBe("ghost");
    });

    it("a missing named export is a link_error (SyntaxError) naming the module", async () => {
      const error = await fails(runCode, "link_error", "import { nope } from 'fs';\nexport default nope", {
        imports: { fs: { readFile: () => "" } },
      });
      expect(error.name).toBe("SyntaxError");
      expect(error.specifier).toBe("fs");
      expect(error.message).toContain("nope");
    });

    it("a missing default export of a bridged module is a link_error", async () => {
      const error = await fails(runCode, "link_error", "import d from 'fs';\nexport default d", {
        imports: { fs: { readFile: () => "" } },
      });
      expect(error.name).toBe("SyntaxError");
      expect(error.specifier).toBe("fs");
    });

    it("a URL specifier is a link_error", async () => {
      const error = await fails(runCode, "link_error", "import x from 'https://example.com/x.js';\nexport default x");
      expect(error.name).toBe("LinkError");
      expect(error.specifier).toBe("https://example.com/x.js");
    });

    it.each(["node:fs", "fs", "path", "vitest", "typescript", "quickjs-emscripten-core"])(
      "'%s' is not resolved from the host",
      async (specifier) => {
        const error = await fails(runCode, "link_error", `import x from '${specifier}';\nexport default typeof x`);
        expect(error.name).toBe("LinkError");
        expect(error.specifier).toBe(specifier);
      },
    );

    it("a relative import of a module not in modules is a link_error", async () => {
      const error = await fails(runCode, "link_error", "import { a } from './missing.js';\nexport default a");
      expect(error.name).toBe("LinkError");
      expect(error.specifier).toBe("./missing.js");
    });

    it("a bare specifier is not resolved from modules", async () => {
      const error = await fails(runCode, "link_error", "import { a } from 'math.js';\nexport default a", {
        modules: { "./math.js": "export const a = 1" },
      });
      expect(error.specifier).toBe("math.js");
    });

    it("the error of a failed link carries no host path", async () => {
      const error = await fails(runCode, "link_error", "import x from 'node:fs';\nexport default x");
      for (const text of [error.message, error.stack ?? ""]) {
        expect(text).not.toContain("node_modules");
        expect(text).not.toContain("/work");
        expect(text).not.toContain("file://");
      }
    });

    it("a non-function default export is the value itself", async () => {
      const source = "import cfg from 'cfg';\nexport default cfg";
      expect(await ok(runCode, source, { imports: { cfg: { default: { a: [1] } } } })).toEqual({ a: [1] });
    });

    it("an object two imports, or an import and a global, hold is one object in the guest", async () => {
      const shared = { n: 1 };
      const buffer = new ArrayBuffer(4);
      const source = `import { o as a, bytes } from 'a';
        import { o as b, words } from 'b';
        export default [a === b, a === g, bytes.buffer === words.buffer, typeof (await import('b')).o]`;
      const options = {
        globals: { g: shared },
        imports: { a: { o: shared, bytes: new Uint8Array(buffer) }, b: { o: shared, words: new Uint16Array(buffer) } },
      };
      expect(await ok(runCode, source, options)).toEqual([true, true, true, "object"]);
    });

    it("imports hold the same functions wherever they are named: one stand-in each", async () => {
      const f = () => 1;
      const source =
        "import { f as a } from 'a';\nconst { f: b } = await import('b');\nexport default [a === b, a === g, a()]";
      expect(await ok(runCode, source, { globals: { g: f }, imports: { a: { f }, b: { f } } })).toEqual([
        true,
        true,
        1,
      ]);
    });
  });
}
