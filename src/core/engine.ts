/**
 * QuickJS wasm instances, each with its own linear memory, whose growth is the real memory cap (QuickJS's own
 * limit counts allocations, not bytes, in these builds): refused past the cap of the run that holds the instance.
 * @module
 */
import variant from "@jitl/quickjs-wasmfile-release-sync";
import { type EmscriptenModuleLoader, type QuickJSEmscriptenModule, QuickJSWASMModule } from "quickjs-emscripten-core";
import type { WasmSource } from "./types.js";

const PAGE = 65_536;
/** The build needs at least 16 MiB of linear memory to start. */
const INITIAL_PAGES = 256;
/**
 * Linear memory the engine needs besides the heap QuickJS counts: static data, the C stack and allocator slack
 * (measured: see docs/performance.md).
 */
const MEMORY_OVERHEAD_BYTES = 4 * 1024 * 1024;

/**
 * The most `memoryLimitBytes` a run may ask for: with the overhead, the 2 GiB maximum the engine's wasm declares
 * (Emscripten's). A larger one failed the instance's instantiation, its run ending with an error that named neither
 * (past 4 GiB, with one that blamed the code's nesting).
 */
export const MAX_MEMORY_LIMIT_BYTES = 2 * 1024 * 1024 * 1024 - MEMORY_OVERHEAD_BYTES;

/** The most linear memory a run capped at `heapLimitBytes` can take: the cap, the overhead, whole pages, 16 MiB at least. */
export function linearMemoryBytes(heapLimitBytes: number): number {
  return memoryHolding(heapLimitBytes + MEMORY_OVERHEAD_BYTES);
}

/**
 * Smallest maximum an instance's memory is booted with. The run's own cap is enforced where the memory grows (see
 * {@link newInstance}), so one instance serves every run whose cap falls in its class, and a `memoryLimitBytes` chosen
 * per run (on a served host, by its client) boots no instance of its own: every cap a served host allows (64 MiB of
 * heap, 68 MiB of memory) is in this class. A larger maximum costs a boot nothing up to 1 GiB (docs/performance.md,
 * "Memory classes").
 */
const MIN_MEMORY_CLASS_BYTES = 128 * 1024 * 1024;

/** The maximum of the memory an instance for runs capped at `bytes` of linear memory is booted with: a power of two. */
export function memoryClassBytes(bytes: number): number {
  let classBytes = MIN_MEMORY_CLASS_BYTES;
  while (classBytes < bytes) classBytes *= 2;
  return classBytes;
}

/**
 * The custom section where scripts/build-fuel-wasm.ts pins what the core's probe finds of the engine it builds, as
 * JSON `{ breakAt, stackTop, toJSON }`: a fresh process's first boot then makes no throwaway instance (~5 ms of the
 * main thread's CPU, and a 16 MiB memory). The facts are the build's: a test checks the committed wasm's against a
 * probe, and a boot whose fresh instance is not as they say probes its module instead (core/instance.ts). The section
 * also tells the package's build, which grows its memory only through the host's resize, as the variant's own wasm
 * does (test/core/memory-classes.test.ts).
 */
export const PROBE_SECTION = "runcode.probe";

/** Modules known to grow their memory only through the host's resize, or not. */
const growsThroughHost = new WeakMap<WebAssembly.Module, boolean>();

/**
 * The maximum an instance's memory is booted with for runs capped at `maxBytes`: its class ({@link memoryClassBytes})
 * where the engine grows its memory only through the host's resize, which holds each run to its own cap (the
 * variant's wasm, the package's build); for any other module (a host's own build, which may grow its memory by itself
 * past a run's cap), the cap.
 */
export function bootedMaximum(wasm: WebAssembly.Module | undefined, maxBytes: number): number {
  if (wasm === undefined) return memoryClassBytes(maxBytes);
  let known = growsThroughHost.get(wasm);
  if (known === undefined) {
    known = WebAssembly.Module.customSections(wasm, PROBE_SECTION).length > 0;
    growsThroughHost.set(wasm, known);
  }
  return known ? memoryClassBytes(maxBytes) : maxBytes;
}

/** The linear memory that holds `bytes` from 0: whole pages, never less than an instance starts with. */
export function memoryHolding(bytes: number): number {
  return Math.max(INITIAL_PAGES, Math.ceil(bytes / PAGE)) * PAGE;
}

/**
 * Where the metered engine (scripts/build-fuel-wasm.ts) exports its counter and imports its hook for "empty", and the
 * flat fuel it charges at each call of a host import.
 */
export const METER = Object.freeze({ counter: "fuel", module: "fuel", hook: "out", hostCallFuel: 50 });

/**
 * Where the metered engine exports its C stack pointer and the pointer's low-water mark, the least value it has had
 * since the host last set it (see `markStackLow` in scripts/build-fuel-wasm.ts), and how far below the pointer a
 * function may write without moving it: LLVM's red zone for wasm, which the build checks.
 */
export const STACK_MARK = Object.freeze({ low: "stack_low", pointer: "stack_pointer", redZoneBytes: 128 });

/** The program name the engine sees: Emscripten's own default, which it uses wherever it finds no script path. */
const PROGRAM = "./this.program";

/** The most fuel the counter holds. */
const FULL_COUNTER = 0x7fff_ffff;

/**
 * Fuel the engine (and SWC) gets at a time: each refill reads the stops and the clock, so a stop lands inside
 * natives too (100,000 units is ~0.1-0.6 ms of work).
 */
export const FUEL_QUANTUM = 100_000;

/**
 * The metered engine's fuel counter (see scripts/build-fuel-wasm.ts): the engine spends from `counter` and calls
 * `onEmpty` when it drops below zero, which refills it or throws.
 */
export class Meter {
  onEmpty: () => void = () => this.idle();

  constructor(readonly counter: WebAssembly.Global) {}

  /**
   * Gives back a host call's flat fee: the engine's call to grow its heap, made only when the memory is smaller than
   * the allocator's new break. An instance restored after a run keeps the memory that run grew it to, so the same
   * program would make fewer of these calls on it: refunded, its fuel does not depend on what ran before.
   */
  refundHostCall(): void {
    const units = this.counter.value as number;
    // A counter below zero is a latched hard stop (see core/limits.ts); a full one (idle) has no room.
    if (units >= 0) this.counter.value = Math.min(FULL_COUNTER, units + METER.hostCallFuel);
  }

  /** Full, and refilled whenever it runs out: how an instance no run holds (booting, probing, idle) spends. */
  idle(): void {
    this.onEmpty = () => this.idle();
    this.counter.value = FULL_COUNTER;
  }
}

export interface Instance {
  quickjs: QuickJSWASMModule;
  /** `undefined` for an engine built without the meter. */
  meter: Meter | undefined;
  /** The C stack pointer and its low-water mark ({@link STACK_MARK}); `undefined` for an engine built without them. */
  stack: { pointer: WebAssembly.Global; low: WebAssembly.Global } | undefined;
  /** The Emscripten module under it (its allocator is probed once: see core/instance.ts). */
  emscripten: QuickJSEmscriptenModule;
  memory: WebAssembly.Memory;
  /**
   * Bytes the memory may grow to: the cap of the run that holds the instance (set as it is taken: see
   * `BootedInstance.capMemory`), at most {@link classBytes}.
   */
  maxBytes: number;
  /** The memory's maximum ({@link bootedMaximum}): the runs whose caps it serves. */
  readonly classBytes: number;
  /** `true` once the engine asked for more memory than `maxBytes` allows. */
  growthRefused: boolean;
  /**
   * The wall clock the engine reads (`Date.now()`, `new Date()`), which the instance's holder answers (core/instance.ts);
   * only an engine instantiated from a given module reads it (see `withClock`).
   */
  clock: { now: () => number };
}

/** Resolves a {@link WasmSource} to a compiled module once; `undefined` means "let the variant load it". */
export function compiledModule(source: WasmSource | undefined): () => Promise<WebAssembly.Module | undefined> {
  let compiled: Promise<WebAssembly.Module | undefined> | undefined;
  const compile = async () => {
    if (source === undefined || source instanceof WebAssembly.Module) return source;
    const loaded = typeof source === "function" ? await source() : source;
    if (loaded instanceof WebAssembly.Module) return loaded;
    // Cloudflare Workers have no WebAssembly.compile at all: there the module must arrive compiled.
    const { compile: compileBytes } = WebAssembly as unknown as {
      compile?: (bytes: BufferSource) => Promise<WebAssembly.Module>;
    };
    if (compileBytes === undefined)
      throw new TypeError("This platform cannot compile wasm: pass a compiled WebAssembly.Module");
    return compileBytes(loaded as BufferSource);
  };
  return () => {
    compiled ??= compile();
    return compiled;
  };
}

/**
 * Emscripten's instantiation hook, synchronous: `WebAssembly.instantiate` waits for a task of the event loop, which
 * costs more than the instantiation itself (measured: ~1 ms of idle time per run in Node).
 */
function instantiateSync(
  wasmModule: WebAssembly.Module,
  clock: Instance["clock"],
  metered: (meter: Meter, exports: WebAssembly.Exports) => void,
) {
  return (imports: WebAssembly.Imports, receive: (instance: WebAssembly.Instance) => void) => {
    let meter: Meter | undefined;
    // An engine built without the meter neither imports this nor exports the counter.
    const hook = { [METER.hook]: () => meter?.onEmpty() };
    const instance = new WebAssembly.Instance(wasmModule, { ...withClock(imports, clock), [METER.module]: hook });
    const counter = instance.exports[METER.counter];
    if (counter instanceof WebAssembly.Global) {
      meter = new Meter(counter);
      metered(meter, instance.exports);
    }
    receive(instance);
    return instance.exports;
  };
}

/** Emscripten's import of the wall clock (`emscripten_date_now`), known by its source: the import names are minified. */
const DATE_NOW_SOURCE = "()=>Date.now()";

/**
 * `imports` with the engine's wall clock read from `clock` (see `Instance.clock`); as they are where a bundler rewrote
 * the import's source, the engine then reading the platform's clock (Node's default path, which replays the clock,
 * loads the package's own glue, and its tests check the replay).
 */
function withClock(imports: WebAssembly.Imports, clock: Instance["clock"]): WebAssembly.Imports {
  for (const [module, functions] of Object.entries(imports)) {
    for (const [name, fn] of Object.entries(functions)) {
      if (typeof fn === "function" && fn.toString() === DATE_NOW_SOURCE) {
        return { ...imports, [module]: { ...functions, [name]: () => clock.now() } };
      }
    }
  }
  return imports;
}

/**
 * The variant's Emscripten loader and FFI class, imported once. `newQuickJSWASMModuleFromVariant` imports them
 * again for every module it makes, which measured ~1.5 ms of a 3 ms instance.
 */
let parts:
  | Promise<[Awaited<ReturnType<typeof variant.importModuleLoader>>, Awaited<ReturnType<typeof variant.importFFI>>]>
  | undefined;

/** A fresh instance whose linear memory can hold `heapLimitBytes` of heap and no more. */
export async function newInstance(
  wasmModule: WebAssembly.Module | undefined,
  heapLimitBytes: number,
): Promise<Instance> {
  parts ??= Promise.all([variant.importModuleLoader(), variant.importFFI()]);
  const [imported, FFI] = await parts;
  const loader = (
    "default" in imported ? imported.default : imported
  ) as EmscriptenModuleLoader<QuickJSEmscriptenModule>;
  const maxBytes = linearMemoryBytes(heapLimitBytes);
  const classBytes = bootedMaximum(wasmModule, maxBytes);
  const memory = new WebAssembly.Memory({ initial: INITIAL_PAGES, maximum: classBytes / PAGE });
  let meter: Meter | undefined;
  let stack: Instance["stack"];
  const clock = { now: Date.now };
  // The environment strings the engine copies into its heap at start name the program: in Node, the main script's
  // path. Its length moved every later allocation, and with them the engine's work (fuel) on hash chains keyed by
  // address: the same everywhere, so fuel is the same on every host.
  const settings = { wasmMemory: memory, thisProgram: PROGRAM };
  const emscripten = await loader(
    wasmModule === undefined
      ? settings
      : {
          ...settings,
          instantiateWasm: instantiateSync(wasmModule, clock, (made, exports) => {
            meter = made;
            const { [STACK_MARK.pointer]: pointer, [STACK_MARK.low]: low } = exports;
            if (pointer instanceof WebAssembly.Global && low instanceof WebAssembly.Global) stack = { pointer, low };
          }),
        },
  );
  emscripten.type = "sync";
  const instance: Instance = {
    quickjs: new QuickJSWASMModule(emscripten, new FFI(emscripten)),
    meter,
    stack,
    emscripten,
    memory,
    maxBytes,
    classBytes,
    growthRefused: false,
    clock,
  };
  // The allocator asks the memory to grow and takes a refusal as "out of memory": note it, so a failure that
  // follows is reported as `memory` even when the heap stopped short of the maximum.
  const grow = memory.grow.bind(memory);
  memory.grow = (delta: number) => {
    try {
      // The run's cap, refused as the memory's maximum would be: Emscripten grows only through this call where the
      // memory's maximum is a class's (see bootedMaximum), and its resize tries smaller growths before it gives up,
      // whatever the maximum.
      if (memory.buffer.byteLength + delta * PAGE > instance.maxBytes) {
        throw new RangeError(`WebAssembly.Memory.grow(): Maximum memory size exceeded (${instance.maxBytes} bytes)`);
      }
      const before = grow(delta);
      // Only the engine's resize import grows the memory, at most once a call, its fee charged before.
      meter?.refundHostCall();
      return before;
    } catch (refused) {
      instance.growthRefused = true;
      throw refused;
    }
  };
  return instance;
}
