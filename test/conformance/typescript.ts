/** §7 TypeScript support: types erased, not checked. */
import { describe, expect, it } from "vitest";
import { TRANSPILE_BASE_FUEL, TRANSPILE_FUEL_PER_CHAR } from "../../src/core/transpile.js";
import type { RunCode } from "../../src/core/types.js";
import { fails, ok } from "./helpers.js";

export function typescriptSuite(runCode: RunCode): void {
  describe("§7 TypeScript", () => {
    it("100 KiB of `<` chains, quadratic in SWC's parser, fail at their allowance of its fuel, and enums still work", async () => {
      const line = `a${"<b".repeat(600)};\n`;
      const source = `enum E { A }\n${line.repeat(84)}`;
      const allowance = TRANSPILE_BASE_FUEL + TRANSPILE_FUEL_PER_CHAR * source.length;
      const error = await fails(runCode, "link_error", source);
      expect([error.name, error.message, error.line, error.column]).toEqual([
        "SyntaxError",
        `Source is too costly to transpile: over ${allowance} units of fuel for its ${source.length} characters`,
        1,
        1,
      ]);
      expect(await ok(runCode, "enum E { A = 40 }\nexport default E.A + 2;")).toBe(42);
    }, 60_000);

    it("is the default language", async () => {
      expect(await ok(runCode, "const n: number = 40;\nexport default (n as number) + 2;")).toBe(42);
    });

    it("ignores type errors", async () => {
      expect(
        await ok(
          runCode,
          "const x: number = 'str' as any as number;\nconst y: string = 5 as unknown as string;\nexport default [x, y]",
        ),
      ).toEqual(["str", 5]);
    });

    it("erases import type of a module that does not exist", async () => {
      const source = "import type { T } from 'types-only';\nconst v: T = 1;\nexport default v";
      expect(await ok(runCode, source)).toBe(1);
    });

    it("erases inline type specifiers of a bridged import", async () => {
      const source = "import { type Reader, read } from 'fs';\nconst r: Reader = read;\nexport default r()";
      expect(await ok(runCode, source, { imports: { fs: { read: () => "read" } } })).toBe("read");
    });

    it("accepts export type and interfaces", async () => {
      const source =
        "export type Id = string;\nexport interface P { id: Id }\nconst p: P = { id: 'x' };\nexport default p";
      expect(await ok(runCode, source)).toEqual({ id: "x" });
    });

    it("accepts satisfies and as const", async () => {
      const source = "const c = { a: [1, 2] } as const satisfies { a: readonly number[] };\nexport default c.a";
      expect(await ok(runCode, source)).toEqual([1, 2]);
    });

    it("accepts generics, including a generic arrow and explicit type arguments", async () => {
      const source = `
        function first<T>(xs: T[]): T | undefined { return xs[0]; }
        const id = <T,>(x: T): T => x;
        class Box<T> { constructor(public value: T) {} }
        export default [first<number>([3, 4]), id<string>('s'), new Box<number>(9).value];
      `;
      expect(await ok(runCode, source)).toEqual([3, "s", 9]);
    });

    it("accepts enums with reverse mapping and const enums", async () => {
      const source = `
        enum Color { Red, Green = 5, Blue }
        enum Named { A = 'a', B = 'b' }
        const enum Dir { Up = 1, Down = 2 }
        export default [Color.Green, Color.Blue, Color[0], Named.B, Dir.Down];
      `;
      expect(await ok(runCode, source)).toEqual([5, 6, "Red", "b", 2]);
    });

    it("accepts namespaces", async () => {
      const source = `
        namespace Geo {
          export const unit = 'm';
          export function len(a: number, b: number): number { return Math.hypot(a, b); }
        }
        export default [Geo.unit, Geo.len(3, 4)];
      `;
      expect(await ok(runCode, source)).toEqual(["m", 5]);
    });

    it("accepts parameter properties, access modifiers, abstract classes, optional and non-null syntax", async () => {
      const source = `
        abstract class Base { abstract area(): number; describe(): string { return 'area ' + this.area(); } }
        class Sq extends Base {
          constructor(private readonly side: number, public label?: string) { super(); }
          area(): number { return this.side ** 2; }
        }
        const s: Sq | undefined = new Sq(3, 'sq');
        export default [s!.describe(), s?.label, (s as Sq).area()];
      `;
      expect(await ok(runCode, source)).toEqual(["area 9", "sq", 9]);
    });

    it("accepts declare statements and uses the globals behind them", async () => {
      const source =
        "declare const input: number[];\ndeclare function helper(n: number): number;\nexport default helper(input.length)";
      expect(await ok(runCode, source, { globals: { input: [1, 2], helper: (n: unknown) => Number(n) * 10 } })).toBe(
        20,
      );
    });

    it("accepts typed exported functions selected by execute", async () => {
      const source = "export function increment(n: number): number {\n  return n + 1;\n}";
      expect(await ok(runCode, source, { execute: { fn: "increment", args: [100] } })).toBe(101);
    });

    it("language 'javascript' rejects TypeScript syntax as a link_error SyntaxError", async () => {
      const error = await fails(runCode, "link_error", "const x: number = 1;\nexport default x", {
        language: "javascript",
      });
      expect(error.name).toBe("SyntaxError");
      expect(error.line).toBe(1);
    });

    it("language 'javascript' rejects TypeScript syntax in modules too", async () => {
      const error = await fails(runCode, "link_error", "import { a } from './a.js';\nexport default a", {
        language: "javascript",
        modules: { "./a.js": "export const a: number = 1;" },
      });
      expect(error.name).toBe("SyntaxError");
      expect(error.filename).toBe("./a.js");
    });

    it("language 'javascript' runs plain modern JavaScript", async () => {
      const source =
        "class A { #p = 1; get p() { return this.#p } }\nexport default [new A().p, 2 ** 10, [1, [2]].flat(), 1_000n]";
      expect(await ok(runCode, source, { language: "javascript" })).toEqual([1, 1024, [1, 2], 1000n]);
    });
  });
}
