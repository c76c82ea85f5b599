/**
 * A battery of the HTML structured clone algorithm: the case list of the web-platform-tests structured-clone battery
 * (its transferable cases included) for what a JavaScript realm without a DOM has, plus the algorithm's steps that
 * battery leaves to other files: proxies, wrapper objects, error names, every typed array kind, the transfer list's
 * checks and WebIDL's required argument.
 *
 * `cloneBattery` is self-contained (it closes over nothing and uses only ECMAScript built-ins), so its source text
 * runs anywhere: on a host against the platform's own `structuredClone`, the oracle (`test/clone-battery.test.ts` in
 * Node, `test/browser/clone-battery.browser.ts` in Chromium), and inside the sandbox against the guest's
 * (`guestCloneSuite`).
 * @module
 */
import { describe, expect, it } from "vitest";
import type { RunCode } from "../../src/core/types.js";
import { ok } from "./helpers.js";

/** A `structuredClone`: the platform's or the sandbox's. */
export type Clone = (...args: unknown[]) => unknown;

/** What a battery run found: the cases it ran and, for each that failed, `description: what differed`. */
export interface BatteryOutcome {
  ran: number;
  failures: string[];
}

export function cloneBattery(clone: Clone): BatteryOutcome {
  type Obj = Record<PropertyKey, unknown>;
  type Compare = (actual: unknown, input: unknown) => void;
  const failures: string[] = [];
  let ran = 0;
  const show = (value: unknown): string => {
    if (Object.is(value, -0)) return "-0";
    if (typeof value === "string") return JSON.stringify(value);
    if (typeof value === "bigint") return `${value}n`;
    if (typeof value === "object" && value !== null) return Object.prototype.toString.call(value);
    return String(value);
  };
  const fail = (what: string): never => {
    throw new Error(what);
  };
  const same = (actual: unknown, expected: unknown, what: string) => {
    if (!Object.is(actual, expected)) fail(`${what}: ${show(actual)} instead of ${show(expected)}`);
  };
  const truth = (value: boolean, what: string) => {
    if (!value) fail(what);
  };
  const run = (description: string, body: () => void) => {
    ran++;
    try {
      body();
    } catch (error) {
      failures.push(`${description}: ${String((error as Error)?.message ?? error)}`);
    }
  };
  /** The error `body` throws (failing when it returns). */
  const thrown = (body: () => unknown): unknown => {
    try {
      body();
    } catch (error) {
      return error;
    }
    return fail("did not throw");
  };
  const check = (description: string, make: () => unknown, compare: Compare) =>
    run(description, () => {
      const input = make();
      compare(clone(input), input);
    });
  const dataCloneError = (error: unknown) => {
    const e = error as { name?: unknown; code?: unknown };
    truth(error instanceof Error, `threw ${show(error)}, not an error`);
    same(e.name, "DataCloneError", "name");
    same(e.code, 25, "code");
  };
  const refuses = (description: string, make: () => unknown, options?: unknown) =>
    run(description, () => {
      const input = make();
      dataCloneError(thrown(() => (options === undefined ? clone(input) : clone(input, options))));
    });
  const typeError = (description: string, call: () => unknown) =>
    run(description, () => {
      const error = thrown(call);
      truth(error instanceof TypeError, `threw ${show(error)}, not a TypeError`);
    });

  const primitive: Compare = (actual, input) => same(actual, input, "value");
  const arrayOf =
    (each: Compare): Compare =>
    (actual, input) => {
      truth(Array.isArray(actual), "not an array");
      truth(actual !== input, "the input itself");
      same((actual as unknown[]).length, (input as unknown[]).length, "length");
      for (const key in input as Obj) each((actual as Obj)[key], (input as Obj)[key]);
    };
  const objectOf =
    (each: Compare): Compare =>
    (actual, input) => {
      truth(actual instanceof Object && !Array.isArray(actual), "not an object");
      truth(actual !== input, "the input itself");
      for (const key in input as Obj) each((actual as Obj)[key], (input as Obj)[key]);
    };
  /** Checks a value alone, in an array and in an object. */
  const family = (name: string, values: [string, unknown][], compare: Compare) => {
    for (const [label, value] of values) check(`${name} ${label}`, () => value, compare);
    check(`Array ${name}s`, () => values.map(([, value]) => value), arrayOf(compare));
    check(`Object ${name}s`, () => Object.fromEntries(values), objectOf(compare));
  };

  // Primitives.
  const primitives: [string, unknown][] = [
    ["undefined", undefined],
    ["null", null],
    ["true", true],
    ["false", false],
    ["empty string", ""],
    ["lone high surrogate", "\uD800"],
    ["lone low surrogate", "\uDC00"],
    ["NUL", "\u0000"],
    ["astral character", "\uDBFF\uDFFD"],
    ["0.2", 0.2],
    ["0", 0],
    ["-0", -0],
    ["NaN", Number.NaN],
    ["Infinity", Number.POSITIVE_INFINITY],
    ["-Infinity", Number.NEGATIVE_INFINITY],
    ["9007199254740992", 9007199254740992],
    ["-9007199254740992", -9007199254740992],
    ["9007199254740994", 9007199254740994],
    ["-9007199254740994", -9007199254740994],
    ["0n", 0n],
    ["-0n", -0n],
    ["-9007199254740994000n", -9007199254740994000n],
    ["a 250-bit BigInt", -(2n ** 250n) + 1n],
  ];
  family("primitive", primitives, primitive);

  // Boolean, String, Number and BigInt wrapper objects.
  const wrapper =
    (Type: (value: unknown) => unknown): Compare =>
    (actual, input) => {
      truth(Object.getPrototypeOf(actual) === (Type as unknown as { prototype: object }).prototype, "prototype");
      same(Type(actual), Type(input), "converted to primitive");
      truth(actual !== input, "the input itself");
    };
  family(
    "Boolean",
    [
      ["true", Object(true)],
      ["false", Object(false)],
    ],
    wrapper(Boolean),
  );
  family(
    "String",
    ["", "\uD800", "\uDC00", "\u0000", "\uDBFF\uDFFD"].map((s) => [JSON.stringify(s), Object(s)]),
    wrapper(String),
  );
  family(
    "Number",
    [0.2, 0, -0, Number.NaN, Infinity, -Infinity, 9007199254740992, -9007199254740992, 9007199254740994].map((n) => [
      show(n),
      Object(n),
    ]),
    wrapper(Number),
  );
  family(
    "BigInt",
    [["-9007199254740994n", Object(-9007199254740994n)]],
    wrapper(BigInt as (value: unknown) => unknown),
  );

  // Dates.
  const date: Compare = (actual, input) => {
    truth(actual instanceof Date, "not a Date");
    same(Number(actual), Number(input), "time");
    truth(actual !== input, "the input itself");
  };
  family(
    "Date",
    [0, -0, -8.64e15, 8.64e15].map((t) => [show(t), new Date(t)]),
    date,
  );

  // Regular expressions: flags kept, `lastIndex` back to 0.
  const regExp =
    (source: string): Compare =>
    (actual, input) => {
      const a = actual as RegExp;
      const i = input as RegExp;
      truth(a instanceof RegExp, "not a RegExp");
      for (const flag of ["global", "ignoreCase", "multiline", "sticky", "unicode"] as const)
        same(a[flag], i[flag], flag);
      same(a.source, source, "source");
      same(a.lastIndex, 0, "lastIndex");
      truth(actual !== input, "the input itself");
    };
  const withLastIndex = () => {
    const r = /foo/gim;
    r.lastIndex = 2;
    return r;
  };
  const regExps: [string, () => RegExp, string][] = [
    ["flags and lastIndex", withLastIndex, "foo"],
    ["sticky flag", () => /foo/y, "foo"],
    ["unicode flag", () => /foo/u, "foo"],
    ["empty", () => /(?:)/, "(?:)"],
    ["slash", () => /\//, "\\/"],
    ["new line", () => /\n/, "\\n"],
  ];
  for (const [label, make, source] of regExps) {
    check(`RegExp ${label}`, make, regExp(source));
    check(`Array RegExp object, ${label}`, () => [make()], arrayOf(regExp(source)));
    check(`Object RegExp object, ${label}`, () => ({ x: make() }), objectOf(regExp(source)));
  }

  // Errors: the seven standard names pick the type, any other name is "Error"; own properties are dropped.
  const error =
    (name: string, type: unknown): Compare =>
    (actual, input) => {
      const a = actual as Error & { foo?: unknown };
      const i = input as Error;
      truth(a instanceof Error, "not an Error");
      same(a.constructor, type, "constructor");
      same(a.name, name, "name");
      same(Object.hasOwn(a, "message"), Object.hasOwn(i, "message"), "has an own message");
      same(a.message, i.message, "message");
      same(a.foo, undefined, "custom property");
    };
  check("Empty Error object", () => new Error(), error("Error", Error));
  for (const Type of [Error, EvalError, RangeError, ReferenceError, SyntaxError, TypeError, URIError]) {
    check(
      `${Type.name} object`,
      () => Object.assign(new Type("Error message here"), { foo: "testing" }),
      error(Type.name, Type),
    );
  }
  check(
    "an Error with a custom name is an Error",
    () => Object.assign(new TypeError("m"), { name: "CustomError" }),
    error("Error", Error),
  );
  check(
    "an Error whose name is another standard name takes that type",
    () => Object.assign(new TypeError("m"), { name: "RangeError" }),
    error("RangeError", RangeError),
  );
  check(
    "an instance of an Error subclass is its standard base",
    () => {
      class MyError extends RangeError {}
      return new MyError("m");
    },
    error("RangeError", RangeError),
  );
  check(
    "an object with Error.prototype and no error inside is a plain object",
    () => Object.create(Error.prototype),
    (actual) => same(Object.getPrototypeOf(actual), Object.prototype, "prototype"),
  );

  // Buffers and views.
  const arrayBuffer: Compare = (actual, input) => {
    const a = actual as ArrayBuffer & { maxByteLength: number; resizable: boolean };
    const i = input as typeof a;
    truth(a instanceof ArrayBuffer, "not an ArrayBuffer");
    same(a.byteLength, i.byteLength, "byteLength");
    same(a.maxByteLength, i.maxByteLength, "maxByteLength");
    same(a.resizable, i.resizable, "resizable");
    same(new Uint8Array(a).join(), new Uint8Array(i).join(), "bytes");
    truth(actual !== input, "the input itself");
  };
  const view =
    (kind: string): Compare =>
    (actual, input) => {
      const a = actual as Uint8Array;
      const i = input as Uint8Array;
      same(Object.prototype.toString.call(a), `[object ${kind}]`, "kind");
      same(a.length, i.length, "length");
      same(a.byteLength, i.byteLength, "byteLength");
      same(a.byteOffset, i.byteOffset, "byteOffset");
      truth(a.buffer !== i.buffer, "the input's buffer");
      for (let n = 0; n < (a.length ?? 0); n++) same(a[n], i[n], `[${n}]`);
    };
  const resizable = (length: number, maxByteLength: number) =>
    new (ArrayBuffer as unknown as new (n: number, o: object) => ArrayBuffer)(length, { maxByteLength });
  check("ArrayBuffer", () => new Uint8Array([1, 2, 250]).buffer, arrayBuffer);
  check("Resizable ArrayBuffer", () => resizable(16, 1024), arrayBuffer);
  const typedValues: [string, unknown[]][] = [
    ["Int8Array", [-128, 0, 127]],
    ["Uint8Array", [0, 1, 255]],
    ["Uint8ClampedArray", [0, 128, 255]],
    ["Int16Array", [-32768, 0, 32767]],
    ["Uint16Array", [0, 1, 65535]],
    ["Int32Array", [-2147483648, 0, 2147483647]],
    ["Uint32Array", [0, 1, 4294967295]],
    ["Float16Array", [-0, Number.NaN, 1.5, 65504, 2 ** -24, -Infinity]],
    ["Float32Array", [-0, Number.NaN, 1.5]],
    ["Float64Array", [-0, Number.NaN, Number.MIN_VALUE]],
    ["BigInt64Array", [-(2n ** 63n), 0n, 2n ** 63n - 1n]],
    ["BigUint64Array", [0n, 1n, 2n ** 64n - 1n]],
  ];
  for (const [kind, values] of typedValues) {
    const Type = (globalThis as unknown as Record<string, (new (v: unknown[]) => ArrayBufferView) | undefined>)[kind];
    if (Type === undefined) continue;
    check(kind, () => new Type(values), view(kind));
    check(`${kind} at an offset`, () => new Uint8Array(new Type(values).buffer, 1, 2), view("Uint8Array"));
  }
  const tracks =
    (kind: string): Compare =>
    (actual, input) => {
      view(kind)(actual, input);
      const a = actual as DataView;
      (a.buffer as unknown as { resize(n: number): void }).resize(32);
      same(a.byteLength, 32, "byteLength once its buffer grew");
    };
  check("Length-tracking TypedArray", () => new Uint8Array(resizable(16, 1024)), tracks("Uint8Array"));
  check("Length-tracking DataView", () => new DataView(resizable(16, 1024)), tracks("DataView"));
  const outOfBounds = (make: (buffer: ArrayBuffer) => object) => () => {
    const buffer = resizable(16, 1024);
    const made = make(buffer);
    (buffer as unknown as { resize(n: number): void }).resize(0);
    return made;
  };
  refuses(
    "Serializing OOB TypedArray throws",
    outOfBounds((b) => new Uint8Array(b, 8)),
  );
  refuses(
    "Serializing OOB DataView throws",
    outOfBounds((b) => new DataView(b, 8)),
  );

  // Arrays and objects.
  check(
    "Array sparse",
    () => new Array(10),
    (actual) => {
      arrayOf(primitive)(actual, new Array(10));
      same(Object.keys(actual as object).length, 0, "own indexes");
    },
  );
  check("Array with non-index property", () => Object.assign([], { foo: "bar" }), arrayOf(primitive));
  check("Object with index property and length", () => ({ 0: "foo", length: 1 }), objectOf(primitive));
  check(
    "Array with circular reference",
    () => {
      const a: unknown[] = [];
      a[0] = a;
      return a;
    },
    (actual) => same((actual as unknown[])[0], actual, "[0]"),
  );
  check(
    "Object with circular reference",
    () => {
      const o: Obj = {};
      o.x = o;
      return o;
    },
    (actual) => same((actual as Obj).x, actual, "x"),
  );
  check(
    "Array with identical property values",
    () => {
      const o = {};
      return [o, o];
    },
    (actual) => same((actual as unknown[])[0], (actual as unknown[])[1], "[0] and [1]"),
  );
  check(
    "Object with identical property values",
    () => {
      const o = {};
      return { x: o, y: o };
    },
    (actual) => same((actual as Obj).x, (actual as Obj).y, "x and y"),
  );
  check(
    "Object with property on prototype",
    () => {
      function Foo() {}
      Foo.prototype = { foo: "bar" };
      return Reflect.construct(Foo, []);
    },
    (actual) => {
      truth(!("foo" in (actual as object)), "has foo");
      same(Object.getPrototypeOf(actual), Object.prototype, "prototype");
    },
  );
  check(
    "Object with non-enumerable property",
    () => Object.defineProperty({}, "foo", { value: "bar", enumerable: false, writable: true, configurable: true }),
    (actual) => truth(!("foo" in (actual as object)), "has foo"),
  );
  check(
    "Object with non-writable property",
    () => Object.defineProperty({}, "foo", { value: "bar", enumerable: true, writable: false, configurable: true }),
    (actual) => {
      (actual as Obj).foo += " baz";
      same((actual as Obj).foo, "bar baz", "foo once written");
    },
  );
  check(
    "Object with non-configurable property",
    () => Object.defineProperty({}, "foo", { value: "bar", enumerable: true, writable: true, configurable: false }),
    (actual) => {
      delete (actual as Obj).foo;
      truth(!("foo" in (actual as object)), "foo once deleted");
    },
  );
  check(
    "a property an earlier getter deleted is skipped",
    () => ({
      get a() {
        delete (this as Obj).b;
        return 1;
      },
      b: 2,
    }),
    (actual) => same(Object.keys(actual as object).join(), "a", "keys"),
  );
  run("Object with a getter that throws", () => {
    const exception = new Error("getter");
    const input = {
      get testProperty() {
        throw exception;
      },
    };
    same(
      thrown(() => clone(input)),
      exception,
      "thrown",
    );
  });
  check(
    "ObjectPrototype must lose its exotic-ness when cloned",
    () => Object.prototype,
    (actual, input) => {
      truth(actual !== input, "the input itself");
      const proto = { some: "proto" };
      Object.setPrototypeOf(actual, proto);
      same(Object.getPrototypeOf(actual), proto, "prototype once set");
    },
  );

  // What the algorithm refuses.
  let trapped = 0;
  const traps = {
    get(target: object, key: PropertyKey) {
      trapped++;
      return Reflect.get(target, key);
    },
    ownKeys(target: object) {
      trapped++;
      return Reflect.ownKeys(target);
    },
  };
  refuses("a Proxy of an object", () => new Proxy({ a: 1 }, traps));
  refuses("a Proxy of an array", () => new Proxy([1], traps));
  refuses("a Proxy inside an object", () => ({ p: new Proxy({}, traps) }));
  run("no trap of a refused Proxy runs", () => same(trapped, 0, "traps run"));
  refuses("a symbol", () => Symbol("s"));
  refuses("a Symbol wrapper", () => Object(Symbol("s")));
  refuses("a function", () => () => 1);
  refuses("a Promise", () => Promise.resolve(1));
  refuses("a WeakMap", () => new WeakMap());
  refuses("a WeakSet", () => new WeakSet());
  refuses("a WeakRef", () => new WeakRef({}));
  refuses("a FinalizationRegistry", () => new FinalizationRegistry(() => {}));
  typeError("structuredClone() without an argument", () => clone());
  run("structuredClone(undefined)", () => same(clone(undefined), undefined, "clone"));

  // The transfer list.
  run("ArrayBuffer", () => {
    const buffer = new Uint8Array([1]).buffer;
    const copy = clone(buffer, { transfer: [buffer] }) as ArrayBuffer;
    same(buffer.byteLength, 0, "the original's byteLength");
    same(copy.byteLength, 1, "the copy's byteLength");
    same(new Uint8Array(copy)[0], 1, "the copy's byte");
  });
  run("a resizable ArrayBuffer stays resizable", () => {
    const buffer = resizable(4, 64);
    const copy = clone(buffer, { transfer: [buffer] }) as ArrayBuffer & { maxByteLength: number };
    same(buffer.byteLength, 0, "the original's byteLength");
    same(copy.maxByteLength, 64, "the copy's maxByteLength");
  });
  run("a view of a transferred buffer views the moved contents", () => {
    const bytes = new Uint8Array([5, 6, 7, 8]);
    const copy = clone({ view: bytes.subarray(1), buffer: bytes.buffer }, { transfer: [bytes.buffer] }) as {
      view: Uint8Array;
      buffer: ArrayBuffer;
    };
    same(copy.view.buffer, copy.buffer, "the copy's view's buffer");
    same(copy.view.join(), "6,7,8", "the copy's view");
    same(bytes.length, 0, "the original view's length");
  });
  run("a transferred buffer the value does not reach is detached too", () => {
    const buffer = new ArrayBuffer(8);
    same(clone(1, { transfer: [buffer] }), 1, "clone");
    same(buffer.byteLength, 0, "the original's byteLength");
  });
  run("A detached ArrayBuffer cannot be transferred", () => {
    const buffer = new ArrayBuffer(1);
    clone(buffer, { transfer: [buffer] });
    dataCloneError(thrown(() => clone(buffer, { transfer: [buffer] })));
  });
  refuses("Transferring a non-transferable object fails", () => ({}), { transfer: [{}] });
  run("a buffer listed twice", () => {
    const buffer = new ArrayBuffer(1);
    dataCloneError(thrown(() => clone(0, { transfer: [buffer, buffer] })));
    same(buffer.byteLength, 1, "the original's byteLength");
  });
  typeError("a transfer list that is not iterable", () => clone(0, { transfer: 5 }));
  typeError("a transfer list that holds a primitive", () => clone(0, { transfer: [5] }));
  typeError("options that are not an object", () => clone(0, 5));
  run("a transfer list that is any iterable", () => {
    const buffer = new ArrayBuffer(1);
    clone(0, { transfer: new Set([buffer]) });
    same(buffer.byteLength, 0, "the original's byteLength");
  });

  return { ran, failures };
}

/** The battery run inside the sandbox, against the guest's `structuredClone`. */
export async function sandboxBattery(runCode: RunCode): Promise<BatteryOutcome> {
  const source = `export default (${cloneBattery.toString()})(structuredClone);`;
  return (await ok(runCode, source, { language: "javascript" })) as BatteryOutcome;
}

/** Cases of the battery: all of them run in the sandbox, which has every typed array kind. */
export const BATTERY_CASES = 155;

export function guestCloneSuite(runCode: RunCode): void {
  describe("§6.1 the sandbox's structuredClone follows the HTML structured clone algorithm", () => {
    it("passes every case of the battery", async () => {
      expect(await sandboxBattery(runCode)).toEqual({ ran: BATTERY_CASES, failures: [] });
    });
  });
}
