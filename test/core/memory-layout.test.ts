import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { C_STACK_BYTES, memoryLayout } from "../../src/core/instance.js";

/** LEB128 readers over the wasm's bytes. */
function reader(bytes: Uint8Array) {
  let at = 0;
  const unsigned = () => {
    let value = 0;
    let shift = 0;
    let byte: number;
    do {
      byte = bytes[at++] as number;
      value += (byte & 127) * 2 ** shift;
      shift += 7;
    } while (byte & 128);
    return value;
  };
  const signed32 = () => {
    let value = 0;
    let shift = 0;
    let byte: number;
    do {
      byte = bytes[at++] as number;
      value |= (byte & 127) << shift;
      shift += 7;
    } while (byte & 128);
    return shift < 32 && byte & 64 ? value | (-1 << shift) : value;
  };
  return {
    unsigned,
    signed32,
    get at() {
      return at;
    },
    set at(value: number) {
      at = value;
    },
  };
}

/** The initial value of the wasm's first global (the stack pointer) and the end of its active data segments. */
function buildFacts(bytes: Uint8Array): { stackPointer: number; dataEnd: number } {
  const read = reader(bytes);
  read.at = 8;
  let stackPointer = -1;
  let dataEnd = 0;
  while (read.at < bytes.length) {
    const id = bytes[read.at++] as number;
    const length = read.unsigned();
    const end = read.at + length;
    if (id === 6) {
      read.unsigned(); // count
      read.at += 2; // type, mutability
      expect(bytes[read.at++]).toBe(0x41); // i32.const
      stackPointer = read.signed32();
    }
    if (id === 11) {
      const count = read.unsigned();
      for (let i = 0; i < count; i++) {
        const flag = read.unsigned();
        expect(flag).toBe(0); // active, memory 0, i32.const offset
        read.at++;
        const offset = read.signed32();
        read.at++; // end
        const size = read.unsigned();
        dataEnd = Math.max(dataEnd, offset + size);
        read.at += size;
      }
    }
    read.at = end;
  }
  return { stackPointer, dataEnd };
}

describe("the engine's memory layout", () => {
  it("has its C stack of C_STACK_BYTES right below where the stack pointer starts, above static data", async () => {
    const bytes = new Uint8Array(readFileSync(new URL("../../wasm/quickjs-fuel.wasm", import.meta.url)));
    const { stackPointer, dataEnd } = buildFacts(bytes);
    const layout = await memoryLayout(await WebAssembly.compile(bytes));
    expect(layout?.stackTop).toBe(stackPointer);
    // Static data (initialized, then zeroed, the allocator's break among it) ends where the stack begins.
    const low = stackPointer - C_STACK_BYTES;
    expect(dataEnd).toBeLessThanOrEqual(low);
    expect(layout?.breakAt).toBeLessThan(low);
    expect(low - dataEnd).toBeLessThan(64 * 1024);
  });
});
