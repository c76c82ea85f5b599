/**
 * The process's wasm compiled early (node/compiled-early.ts): the module compiled on V8's background threads when it
 * is done before anyone asks, compiled on the caller's thread when asked sooner (or waited for, with `joinBackground`),
 * and the same module for every call either way. `WebAssembly.compile` is replaced by a compile the test settles.
 */
import { readFileSync } from "node:fs";
import { afterEach, describe, expect, it, vi } from "vitest";
import { compiledEarly } from "../../node/compiled-early.js";

const bytes = readFileSync(new URL("../../wasm/quickjs-fuel.wasm", import.meta.url));

afterEach(() => {
  vi.restoreAllMocks();
});

/** Replaces the background compile with one the test settles; `settle` gives it `module`. */
function heldCompile(): { settle: (module: WebAssembly.Module) => void; asked: () => number } {
  let settle: (module: WebAssembly.Module) => void = () => {};
  const held = new Promise<WebAssembly.Module>((resolve) => {
    settle = resolve;
  });
  const compile = vi.spyOn(WebAssembly, "compile").mockReturnValue(held);
  return { settle, asked: () => compile.mock.calls.length };
}

const turn = () => new Promise((resolve) => setImmediate(resolve));

describe("compiledEarly", () => {
  it("compiles on the caller's thread when asked before the background compile is done, and keeps that module", async () => {
    const background = heldCompile();
    const module = compiledEarly(Promise.resolve(bytes));
    const first = await module();
    expect(background.asked()).toBe(1);
    expect(WebAssembly.Module.exports(first).some(({ name }) => name === "fuel")).toBe(true);
    background.settle(new WebAssembly.Module(bytes));
    await turn();
    expect(await module()).toBe(first);
  });

  it("gives the background compile's module when it is done first, compiling nothing on the caller's thread", async () => {
    const background = heldCompile();
    const compiledInBackground = new WebAssembly.Module(bytes);
    const module = compiledEarly(Promise.resolve(bytes));
    background.settle(compiledInBackground);
    await turn();
    const construct = vi.spyOn(WebAssembly, "Module");
    expect(await module()).toBe(compiledInBackground);
    expect(await module()).toBe(compiledInBackground);
    expect(construct).not.toHaveBeenCalled();
  });

  it("with joinBackground, waits for the background compile under way rather than compile again", async () => {
    const background = heldCompile();
    const compiledInBackground = new WebAssembly.Module(bytes);
    const module = compiledEarly(Promise.resolve(bytes), true);
    const construct = vi.spyOn(WebAssembly, "Module");
    const asked = module();
    await turn();
    background.settle(compiledInBackground);
    expect(await asked).toBe(compiledInBackground);
    expect(await module()).toBe(compiledInBackground);
    expect(background.asked()).toBe(1);
    expect(construct).not.toHaveBeenCalled();
  });

  it("with joinBackground, rejects with the background compile's error", async () => {
    const module = compiledEarly(Promise.resolve(new Uint8Array([1, 2, 3, 4])), true);
    await expect(module()).rejects.toThrow(WebAssembly.CompileError);
  });

  it("rejects each call with the read's failure, and leaves no unhandled rejection when nobody asks", async () => {
    const failure = new Error("ENOENT: no such file");
    const unhandled = vi.fn();
    process.on("unhandledRejection", unhandled);
    try {
      compiledEarly(Promise.reject(failure));
      const asked = compiledEarly(Promise.reject(failure));
      await expect(asked()).rejects.toBe(failure);
      await expect(asked()).rejects.toBe(failure);
      await turn();
      expect(unhandled).not.toHaveBeenCalled();
    } finally {
      process.off("unhandledRejection", unhandled);
    }
  });

  it("reports a file that is not wasm as the compile's error when asked", async () => {
    const module = compiledEarly(Promise.resolve(new Uint8Array([1, 2, 3, 4])));
    await expect(module()).rejects.toThrow(WebAssembly.CompileError);
  });
});
