import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { withCustomSection } from "../../scripts/build-fuel-wasm.js";
import { PROBE_SECTION } from "../../src/core/engine.js";
import { BootedInstance, C_STACK_BYTES, memoryLayout, probeFacts } from "../../src/core/instance.js";

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

const committed = new Uint8Array(readFileSync(new URL("../../wasm/quickjs-fuel.wasm", import.meta.url)));

/** `bytes` without their custom sections named {@link PROBE_SECTION}. */
function withoutProbeSection(bytes: Uint8Array): Uint8Array {
  const read = reader(bytes);
  const kept: Uint8Array[] = [bytes.subarray(0, 8)];
  read.at = 8;
  while (read.at < bytes.length) {
    const start = read.at;
    const id = bytes[read.at++] as number;
    const length = read.unsigned();
    const end = read.at + length;
    const nameLength = id === 0 ? read.unsigned() : 0;
    const name = new TextDecoder().decode(bytes.subarray(read.at, read.at + nameLength));
    if (id !== 0 || name !== PROBE_SECTION) kept.push(bytes.subarray(start, end));
    read.at = end;
  }
  return new Uint8Array(Buffer.concat(kept));
}

describe("the engine's memory layout", () => {
  it("has its C stack of C_STACK_BYTES right below where the stack pointer starts, above static data", async () => {
    const bytes = committed;
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

const bare = withoutProbeSection(committed);
/** What the probe finds of the engine without its section. */
const truth = (await probeFacts(await WebAssembly.compile(bare as BufferSource))) as NonNullable<
  Awaited<ReturnType<typeof probeFacts>>
>;

describe("the probe's findings pinned in the engine's wasm", () => {
  const pinning = (facts: unknown) => withCustomSection(bare, PROBE_SECTION, JSON.stringify(facts));
  const layoutOf = async (bytes: Uint8Array) => memoryLayout(await WebAssembly.compile(bytes as BufferSource));

  it("are what the probe finds of it, in one section", async () => {
    const sections = WebAssembly.Module.customSections(new WebAssembly.Module(committed), PROBE_SECTION);
    expect(sections.length).toBe(1);
    expect(JSON.parse(new TextDecoder().decode(sections[0]))).toEqual(truth);
    expect(Object.keys(truth).sort()).toEqual(["breakAt", "stackTop", "toJSON"]);
  });

  it("are taken as pinned, without a probe", async () => {
    // A break no probe finds there: only the section says so.
    expect(await layoutOf(pinning({ ...truth, breakAt: 4 }))).toEqual({ breakAt: 4, stackTop: truth.stackTop });
  });

  it.each([
    ["none", bare],
    ["not JSON", withCustomSection(bare, PROBE_SECTION, "{breakAt: 4")],
    ["null", pinning(null)],
    ["missing a fact", pinning({ breakAt: 4, stackTop: truth.stackTop })],
    ["a string", pinning({ ...truth, breakAt: "4" })],
    ["negative", pinning({ ...truth, toJSON: -1 })],
    ["fractional", pinning({ ...truth, stackTop: truth.stackTop + 0.5 })],
    ["a break not on a word", pinning({ ...truth, breakAt: 6 })],
    ["a break above the stack's top", pinning({ ...truth, breakAt: truth.stackTop })],
    ["there twice", withCustomSection(pinning({ ...truth, breakAt: 4 }), PROBE_SECTION, JSON.stringify(truth))],
  ])("are probed for when the section is %s", async (_, bytes) => {
    expect(await layoutOf(bytes)).toEqual({ breakAt: truth.breakAt, stackTop: truth.stackTop });
  });

  it.each([
    ["the stack pointer at rest is not the pinned top", { ...truth, stackTop: truth.stackTop + 16 }],
    ["the word at the pinned break is no address above the stack", { ...truth, breakAt: 4 }],
  ])("are probed for again by a boot where %s", async (_, facts) => {
    const module = await WebAssembly.compile(pinning(facts) as BufferSource);
    const { toJSON: _toJSON, ...pinned } = facts;
    expect(await memoryLayout(module)).toEqual(pinned);
    const booted = await BootedInstance.boot(module, 16 * 1024 * 1024, true);
    expect(await memoryLayout(module)).toEqual({ breakAt: truth.breakAt, stackTop: truth.stackTop });
    expect(booted.release(true)).toBe(true);
    expect(booted.restore()).toBe(true);
  });
});
