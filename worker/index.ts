/**
 * The edge host: a Cloudflare Worker serving runcode's HTTP API.
 * @module
 */
import wasm from "@jitl/quickjs-wasmfile-release-sync/wasm";
import { createSandbox } from "../src/index.js";

export const sandbox = createSandbox({ wasm });

export default {
  async fetch(): Promise<Response> {
    return new Response("runcode", { status: 200 });
  },
} satisfies ExportedHandler;
