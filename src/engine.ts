/**
 * QuickJS instances. Every run gets its own wasm instance with its own linear memory, whose `maximum` is the real
 * memory cap (QuickJS's own limit counts allocations, not bytes, in these builds).
 * @module
 */
import variant from "@jitl/quickjs-wasmfile-release-sync";
import { newQuickJSWASMModuleFromVariant, newVariant, type QuickJSWASMModule } from "quickjs-emscripten-core";
import type { WasmSource } from "./types.js";

const PAGE = 65_536;
/** The build needs at least 16 MiB of linear memory to start. */
const INITIAL_PAGES = 256;
/**
 * Linear memory the engine needs besides the heap QuickJS counts: static data, the C stack and allocator slack
 * (measured: see docs/performance.md).
 */
export const MEMORY_OVERHEAD_BYTES = 4 * 1024 * 1024;

export interface Instance {
  quickjs: QuickJSWASMModule;
  memory: WebAssembly.Memory;
  /** Bytes the memory may grow to. */
  maxBytes: number;
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
function instantiateSync(wasmModule: WebAssembly.Module) {
  return (imports: WebAssembly.Imports, receive: (instance: WebAssembly.Instance) => void) => {
    const instance = new WebAssembly.Instance(wasmModule, imports);
    receive(instance);
    return instance.exports;
  };
}

/** A fresh instance whose linear memory can hold `heapLimitBytes` of heap and no more. */
export async function newInstance(
  wasmModule: WebAssembly.Module | undefined,
  heapLimitBytes: number,
): Promise<Instance> {
  const pages = Math.max(INITIAL_PAGES, Math.ceil((heapLimitBytes + MEMORY_OVERHEAD_BYTES) / PAGE));
  const memory = new WebAssembly.Memory({ initial: INITIAL_PAGES, maximum: pages });
  const options =
    wasmModule === undefined
      ? { wasmMemory: memory }
      : { wasmMemory: memory, emscriptenModule: { instantiateWasm: instantiateSync(wasmModule) } };
  const quickjs = await newQuickJSWASMModuleFromVariant(newVariant(variant, options));
  return { quickjs, memory, maxBytes: pages * PAGE };
}
