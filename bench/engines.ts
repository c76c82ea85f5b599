/**
 * The engines the benches compare `runCode` with: the pinned QuickJS build (2025-09-13,
 * `@jitl/quickjs-wasmfile-release-sync`) driven directly through quickjs-emscripten-core, a fresh runtime and context
 * per run (the floor), and the peer `@sebastianwessel/quickjs` (dev only) on the same build and wasm module.
 */
import { readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import variant from "@jitl/quickjs-wasmfile-release-sync";
import { loadQuickJs } from "@sebastianwessel/quickjs";
import { newQuickJSWASMModuleFromVariant, newVariant, type QuickJSWASMModule } from "quickjs-emscripten-core";

/** The pinned engine's wasm, compiled once for the floor and the peer. */
export const pinnedWasm = new WebAssembly.Module(
  await readFile(createRequire(import.meta.url).resolve("@jitl/quickjs-wasmfile-release-sync/wasm")),
);
/** The floor: the pinned engine on one ready instance. */
export const raw = await newQuickJSWASMModuleFromVariant(newVariant(variant, { wasmModule: pinnedWasm }));
/** The peer: a fresh runtime and context per run in one shared instance. */
const peer = await loadQuickJs(newVariant(variant, { wasmModule: pinnedWasm }));

/** A module's default export (a number) in a fresh runtime and context of `quickjs`, disposed after. */
export function evalModule(quickjs: QuickJSWASMModule, source: string): number {
  const runtime = quickjs.newRuntime();
  const context = runtime.newContext();
  const namespace = context.unwrapResult(context.evalCode(source, "bench.js", { type: "module" }));
  const value = context.getProp(namespace, "default");
  const result = context.getNumber(value);
  value.dispose();
  namespace.dispose();
  context.dispose();
  runtime.dispose();
  return result;
}

/** A module's default export through the peer, its values and functions given as `env`; a failed run throws. */
export async function runOnPeer(source: string, env?: Record<string, unknown>): Promise<unknown> {
  const answer = await peer.runSandboxed(
    async ({ evalCode }) => evalCode(source),
    env === undefined ? undefined : { env },
  );
  if (!answer.ok) throw new Error(`peer run failed: ${JSON.stringify(answer.error)}`);
  return answer.data;
}
