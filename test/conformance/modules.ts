/** §3.3 modules: relative ES modules supplied as source. */
import { describe, expect, it } from "vitest";
import type { RunCode } from "../../src/core/types.js";
import { fails, ok } from "./helpers.js";

export function modulesSuite(runCode: RunCode): void {
  describe("§3.3 modules", () => {
    it("imports a sibling module", async () => {
      const source = "import { add } from './math.js';\nexport const result = add(1, 2);";
      const options = {
        execute: { fn: "result" },
        modules: { "./math.js": "export const add = (a, b) => a + b;" },
      };
      expect(await ok(runCode, source, options)).toBe(3);
    });

    it("imports a module in a folder", async () => {
      const source = "import { mul } from './lib/math.js';\nexport default mul(3, 4)";
      expect(await ok(runCode, source, { modules: { "./lib/math.js": "export const mul = (a, b) => a * b" } })).toBe(
        12,
      );
    });

    it("resolves entry imports from filename", async () => {
      const source = "import { u } from './util.js';\nexport default u";
      const options = { filename: "src/main.ts", modules: { "./src/util.js": "export const u = 'src util'" } };
      expect(await ok(runCode, source, options)).toBe("src util");
    });

    it("resolves a module's imports from its own key", async () => {
      const source = "import { a } from './lib/a.js';\nexport default a";
      const modules = {
        "./lib/a.js": "import { c } from './c.js';\nexport const a = 'a+' + c;",
        "./lib/c.js": "export const c = 'lib c';",
        "./c.js": "export const c = 'root c';",
      };
      expect(await ok(runCode, source, { modules })).toBe("a+lib c");
    });

    it("resolves ../ within the graph", async () => {
      const source = "import { a } from './lib/a.js';\nexport default a";
      const modules = {
        "./lib/a.js": "import { b } from '../b.js';\nexport const a = 'a+' + b;",
        "./b.js": "export const b = 'b';",
      };
      expect(await ok(runCode, source, { modules })).toBe("a+b");
    });

    it("resolves ./ and ../ segments in the middle of a specifier", async () => {
      const source = "import { b } from './lib/../lib/./b.js';\nexport default b";
      expect(await ok(runCode, source, { modules: { "./lib/b.js": "export const b = 'normalized'" } })).toBe(
        "normalized",
      );
    });

    it("an import escaping above the root is a link_error", async () => {
      const source = "import { x } from '../x.js';\nexport default x";
      await fails(runCode, "link_error", source, { modules: { "./x.js": "export const x = 1" } });
    });

    it("an import escaping above the root from a module is a link_error", async () => {
      const source = "import { a } from './lib/a.js';\nexport default a";
      const modules = {
        "./lib/a.js": "import { x } from '../../x.js';\nexport const a = x;",
        "./x.js": "export const x = 1",
      };
      await fails(runCode, "link_error", source, { modules });
    });

    it("erases TypeScript in modules", async () => {
      const source = "import { n, type T } from './t.ts';\nconst v: T = 'ok';\nexport default [n, v]";
      const modules = { "./t.ts": "export const n: number = 1;\nexport type T = string;\ninterface I { a: T }" };
      expect(await ok(runCode, source, { modules })).toEqual([1, "ok"]);
    });

    it("evaluates a module once for all its importers", async () => {
      const source =
        "import { list } from './a.js';\nimport { list as l2 } from './c.js';\nexport default [list === l2, list]";
      const modules = {
        "./c.js": "export const list = []; list.push('c');",
        "./a.js": "import { list } from './c.js'; list.push('a'); export { list };",
      };
      expect(await ok(runCode, source, { modules })).toEqual([true, ["c", "a"]]);
    });

    it("supports circular imports", async () => {
      const source = "import { a } from './a.js';\nexport default a()";
      const modules = {
        "./a.js":
          "import { b } from './b.js';\nexport function a() { return 'a' + b(); }\nexport function z() { return 'z'; }",
        "./b.js": "import { z } from './a.js';\nexport function b() { return 'b' + z(); }",
      };
      expect(await ok(runCode, source, { modules })).toBe("abz");
    });

    it("does not evaluate modules nobody imports", async () => {
      const source = "export default 'fine'";
      expect(await ok(runCode, source, { modules: { "./side.js": "throw new Error('should not run')" } })).toBe("fine");
    });

    it("re-exports from a module", async () => {
      const source = "export { v as default } from './v.js'";
      expect(await ok(runCode, source, { modules: { "./v.js": "export const v = 're'" } })).toBe("re");
    });

    it("dynamic import of a module works", async () => {
      const source = "const m = await import('./x.js');\nexport default m.v";
      expect(await ok(runCode, source, { modules: { "./x.js": "export const v = 'dyn'" } })).toBe("dyn");
    });

    it("dynamic import of a bridged module works", async () => {
      const source = "const fs = await import('fs');\nexport default fs.read('k')";
      expect(await ok(runCode, source, { imports: { fs: { read: (k: unknown) => `v:${String(k)}` } } })).toBe("v:k");
    });

    it("dynamic import from inside a module resolves from that module", async () => {
      const source = "import { load } from './lib/a.js';\nexport default await load()";
      const modules = {
        "./lib/a.js": "export const load = async () => (await import('./b.js')).b;",
        "./lib/b.js": "export const b = 'lib b';",
      };
      expect(await ok(runCode, source, { modules })).toBe("lib b");
    });

    it("a failed dynamic import is catchable in the guest as a LinkError", async () => {
      expect(await ok(runCode, "export default await import('nope').catch((e) => e.name)")).toBe("LinkError");
    });

    it("a dynamic import of a URL rejects", async () => {
      const source = "export default await import('https://example.com/x.js').then(() => 'loaded', (e) => e.name)";
      expect(await ok(runCode, source)).toBe("LinkError");
    });

    it("an uncaught failed dynamic import ends the run with a LinkError", async () => {
      const r = await runCode("await import('./missing.js');\nexport default 1");
      expect(["error", "link_error"]).toContain(r.status);
      expect(r.error?.name).toBe("LinkError");
    });

    it("a throw while evaluating an imported module is an error positioned in that module", async () => {
      const source = "import { x } from './a.js';\nexport default x";
      const error = await fails(runCode, "error", source, {
        modules: { "./a.js": "export const x = 1;\nthrow new Error('in a')" },
      });
      expect({ name: error.name, message: error.message, filename: error.filename, line: error.line }).toEqual({
        name: "Error",
        message: "in a",
        filename: "./a.js",
        line: 2,
      });
    });

    it("an unknown bare specifier inside a module is a link_error with that specifier", async () => {
      const source = "import { a } from './a.js';\nexport default a";
      const error = await fails(runCode, "link_error", source, {
        modules: { "./a.js": "import { z } from 'zeta';\nexport const a = z;" },
      });
      expect(error.name).toBe("LinkError");
      expect(error.specifier).toBe("zeta");
    });

    it("a missing named export of a module is a link_error (SyntaxError) naming the module", async () => {
      const error = await fails(runCode, "link_error", "import { nope } from './a.js';\nexport default nope", {
        modules: { "./a.js": "export const a = 1" },
      });
      expect(error.name).toBe("SyntaxError");
      expect(error.specifier).toBe("./a.js");
      expect(error.message).toContain("nope");
    });
  });
}
