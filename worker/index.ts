/**
 * The edge host: a Cloudflare Worker serving runcode's HTTP app (src/host) and the playground. The Worker is an
 * adapter: it reads the settings, gives the app its backends (the registry and process objects, one kv object per
 * tenant, one object per session, the sandbox for `POST /run`) and hands what no route matches to the static assets.
 * Its sandboxes boot the deployment's npm packages (worker/sandboxes.ts), which `run_code`'s guide lists.
 * @module
 */
import { instantiate } from "../src/environment/index.js";
import type { Quotas } from "../src/host/admission/quotas.js";
import { RUN_DEFAULT_MEMORY_BYTES } from "../src/host/admission/run-admission.js";
import { createApp } from "../src/host/http/app.js";
import { createHost } from "../src/host/index.js";
import { appOptionsOf, fetchOptionOf, runCpuSharesOf, runSandboxOptionsOf, runWebOf } from "../src/host/settings.js";
import wasm from "../wasm/quickjs-fuel.wasm";
import { configOf, type EdgeConfig } from "./config.js";
import { KvObject, kvStoreOf } from "./kv-object.js";
import { bootModules, packages } from "./packages.generated.js";
import { ProcessObject } from "./process-object.js";
import { edgeProcesses } from "./processes.js";
import { RegistryObject, registryCpuBudget } from "./registry.js";
import { unwrap } from "./rpc-refusals.js";
import { edgeSandbox } from "./sandboxes.js";
import { SessionObject } from "./session-object.js";
import { edgeSessions } from "./sessions.js";

export { KvObject, ProcessObject, RegistryObject, SessionObject };

/**
 * The app of this isolate, made on its first request (settings do not change within an isolate). A bad setting
 * answers every request with a 500 that names it, rather than serving with a guess.
 */
let app: Promise<ReturnType<typeof createApp>> | undefined;

export default {
  async fetch(request, env, ctx): Promise<Response> {
    app ??= edgeApp(env);
    try {
      return await (await app).fetch(request, env, ctx);
    } catch (error) {
      return Response.json(
        { error: { code: "internal", message: `The edge host is misconfigured: ${(error as Error).message}` } },
        { status: 500 },
      );
    }
  },
} satisfies ExportedHandler<Env>;

async function edgeApp(env: Env): Promise<ReturnType<typeof createApp>> {
  const config = await configOf(env);
  // The catalog and `/run`'s services: the same tools every process object has, `kv` stores per tenant.
  const { service, tools } = await createHost({
    kv: kvStoreOf(env),
    kvLimits: { maxStoreBytes: config.tenantKvBytes },
    environment: {
      module: instantiate({
        wasm,
        webApis: config.webApis,
        ...fetchOptionOf(config),
        bootModules,
        createSandbox: edgeSandbox,
      }),
    },
  });
  // A timer cannot stop synchronous guest code on the isolate's one thread, and deployed Workers freeze clocks during
  // it: each run's `timeoutMs` lowers its fuel to hold its time limit, natives included (`[limits] cpu_ms` in
  // wrangler.toml is the platform's backstop).
  const { runCode } = edgeSandbox({ wasm, ...runSandboxOptionsOf(config) });
  return createApp({
    processes: edgeProcesses(env, { maxActive: config.maxActive, tenantMaxActive: config.tenantMaxActive }),
    catalog: service,
    sessions: edgeSessions(env, config.sessions),
    run: {
      runCode,
      ...runWebOf(config),
      packages,
      defaultMemoryLimitBytes: RUN_DEFAULT_MEMORY_BYTES,
      tools,
      cpu: runCpuSharesOf(config, registryCpuBudget(env, config.tenantCpu)),
      ...(config.fetch && { fetchAllow: config.fetch.allow }),
    },
    ...appOptionsOf(config),
    quotas: registryQuotas(env, config),
    fallback: (request) => env.ASSETS.fetch(request),
  });
}

/** Runs per minute counted in the registry, so every isolate of the deployment counts against one bucket. */
function registryQuotas(env: Env, config: EdgeConfig): Quotas {
  const registry = () => env.REGISTRY.get(env.REGISTRY.idFromName("registry"));
  return {
    admit: async (tenant) => {
      unwrap(await registry().admit(tenant, config.tenantRunsPerMinute));
    },
  };
}
