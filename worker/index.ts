/**
 * The edge host: a Cloudflare Worker serving runcode's HTTP API and the playground.
 *
 * API routes are answered first (with permissive CORS), everything else comes from the static assets. State lives
 * in Durable Objects with SQLite: a registry (pids, summaries for listing), one object per process (its record, its
 * execution, its event stream), and one for the `kv` service. `POST /run` runs in the Worker itself.
 * @module
 */
import wasm from "@jitl/quickjs-wasmfile-release-sync/wasm";
import { instantiate } from "../src/environment/index.js";
import { isJsonContentType, readBytesWithin } from "../src/host/body.js";
import { createHost, DEFAULT_MAX_BODY_BYTES, type ProcessStore } from "../src/host/index.js";
import { createSandbox } from "../src/index.js";
import { KvObject, kvStoreOf } from "./kv-object.js";
import { PID_HEADER, ProcessObject } from "./process-object.js";
import { RegistryObject } from "./registry.js";
import { handleRun, jsonError } from "./run.js";

export { KvObject, ProcessObject, RegistryObject };

/** Heap cap of a `/run` that sets none: several runs share a 128 MB isolate. */
const RUN_DEFAULT_MEMORY_BYTES = 32 * 1024 * 1024;

/**
 * The sandbox of `POST /run`, with the runtime's own stop from `[vars]` (RUN_CPU_MS, RUN_INTERRUPT_POLLS). Deployed
 * Workers freeze clocks during synchronous work, so the poll count is what stops a tight loop there (~1-12 polls per
 * ms of guest work); `[limits] cpu_ms` in wrangler.toml is the platform's backstop.
 */
let sandbox: ReturnType<typeof createSandbox> | undefined;
function sandboxFor(env: Env): ReturnType<typeof createSandbox> {
  sandbox ??= createSandbox({
    wasm,
    safetyCap: { cpuTimeMs: Number(env.RUN_CPU_MS), interruptPolls: Number(env.RUN_INTERRUPT_POLLS) },
    defaultMemoryLimitBytes: RUN_DEFAULT_MEMORY_BYTES,
  });
  return sandbox;
}
const PROCESS_ROUTE = /^\/processes\/([^/]+)(?:\/.*)?$/;
const CORS = {
  "access-control-allow-origin": "*",
  "access-control-allow-methods": "GET, POST, DELETE, OPTIONS",
  "access-control-allow-headers": "content-type",
  "access-control-max-age": "86400",
};

const isApi = (path: string) =>
  path === "/run" ||
  path === "/openapi.json" ||
  path === "/processes" ||
  path.startsWith("/processes/") ||
  path.startsWith("/environment/") ||
  path === "/tools" ||
  path.startsWith("/tools/");

export default {
  async fetch(request, env): Promise<Response> {
    const path = new URL(request.url).pathname;
    if (!isApi(path)) return env.ASSETS.fetch(request);
    if (request.method === "OPTIONS") return new Response(null, { status: 204, headers: CORS });
    const response = await api(request, env, path);
    const headers = new Headers(response.headers);
    for (const [key, value] of Object.entries(CORS)) headers.set(key, value);
    return new Response(response.body, { status: response.status, statusText: response.statusText, headers });
  },
} satisfies ExportedHandler<Env>;

async function api(request: Request, env: Env, path: string): Promise<Response> {
  const registry = registryOf(env);
  if (path === "/run" && request.method === "POST") {
    const { tools } = await localHost(env);
    return handleRun(request, sandboxFor(env).runCode, () => tools.modules());
  }
  if (path === "/processes" && request.method === "POST") {
    // Only a JSON body, as on POST /run, and checked before a pid is spent. A text/plain, form or untyped POST is a
    // "simple" cross-origin request that browsers send without a CORS preflight (and with ambient cookies, should
    // the API ever sit behind cookie auth); this API used to accept text/plain and untyped JSON bodies silently.
    if (!isJsonContentType(request.headers)) {
      return jsonError(
        415,
        "unsupported_media_type",
        "POST /processes takes a JSON body (Content-Type: application/json)",
      );
    }
    // Read here, within the limit, before a pid is spent: forwarding the stream let the object refuse it while the
    // Worker still piped it ("Can't read from request stream after response has been sent" failed the request).
    const body = await readBytesWithin(request, DEFAULT_MAX_BODY_BYTES);
    if (body === undefined) {
      return jsonError(413, "payload_too_large", `The body is larger than ${DEFAULT_MAX_BODY_BYTES} bytes`);
    }
    const maxActive = Number(env.MAX_ACTIVE_PROCESSES);
    const pid = await registry.allocate(maxActive);
    if (pid === null) {
      return jsonError(429, "too_many_processes", `${maxActive} processes are active already: wait for one to finish`);
    }
    const forwarded = new Request(request.url, { method: "POST", headers: request.headers, body });
    forwarded.headers.set(PID_HEADER, String(pid));
    let response: Response;
    try {
      response = await processObject(env, pid).fetch(forwarded);
    } catch (error) {
      // Without this the placeholder stayed `queued` in the registry for ever and held one of the active slots.
      await registry.remove(pid);
      return jsonError(500, "internal", `Process ${pid} could not be created: ${(error as Error).message}`);
    }
    // A refused creation leaves no trace but a pid that is never handed out again.
    if (response.status !== 201) await registry.remove(pid);
    return response;
  }
  const pid = PROCESS_ROUTE.exec(path)?.[1];
  if (pid !== undefined && /^[1-9][0-9]{0,15}$/.test(pid)) {
    // The pid header is the Worker's word to a new object, never the client's: a client that sent it with any
    // process route could make an object being created take another pid, and overwrite that process's summary in
    // the registry (found by test/workers/abuse.test.ts).
    const forwarded = new Request(request);
    forwarded.headers.delete(PID_HEADER);
    return processObject(env, Number(pid)).fetch(forwarded);
  }
  return (await localHost(env)).app.fetch(request);
}

function processObject(env: Env, pid: number) {
  return env.PROCESSES.get(env.PROCESSES.idFromName(String(pid)));
}

function registryOf(env: Env) {
  return env.REGISTRY.get(env.REGISTRY.idFromName("registry"));
}

/**
 * The host the Worker itself answers with: listing (from the registry), documentation, tools, OpenAPI, and
 * malformed process routes. Creating, reading and running processes are the process objects' own work.
 */
let local: ReturnType<typeof createHost> | undefined;
function localHost(env: Env): ReturnType<typeof createHost> {
  local ??= createHost({
    store: registryView(env),
    kv: kvStoreOf(env),
    environment: { module: instantiate({ wasm }) },
  });
  return local;
}

/** The registry as a read-only process store: `list` is all the Worker-level host asks of it. */
function registryView(env: Env): ProcessStore {
  const elsewhere = async (): Promise<never> => {
    throw new Error("Processes are created and changed by their own Durable Object, not by the Worker");
  };
  return {
    list: (filter) => registryOf(env).list(filter ?? {}),
    nextPid: elsewhere,
    create: elsewhere,
    get: async () => undefined,
    update: elsewhere,
    delete: elsewhere,
  };
}
