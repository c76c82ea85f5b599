import { cloudflareTest } from "@cloudflare/vitest-pool-workers";
import { defineConfig } from "vitest/config";

/** The conformance suite and the Worker's own tests, inside workerd. */
export default defineConfig({
  plugins: [
    cloudflareTest({
      wrangler: { configPath: "./wrangler.toml" },
      // The module runner ships each module as one WebSocket message: SWC's wasm (2.7 MB) is over the 1 MiB default.
      miniflare: {
        compatibilityFlags: ["increase_websocket_message_size"],
        // Production's CPU cap (a tight loop ends within the test; a process awaiting 1,000 kv calls spends over 300 ms of
        // guest CPU on a loaded machine, its host calls' synchronous parts included); two tenants (test/workers/client.ts)
        // with room for the suite's bursts and concurrent runs in their rates and shares of CPU (the quotas themselves
        // are tested against the registry with their own figures, in tenants.test.ts); 1 MiB of kv per tenant, so
        // filling it takes a fraction of that cap.
        bindings: {
          RUN_CPU_MS: "2000",
          RUN_FUEL: "1000000000",
          RUNCODE_TENANT_MAX_ACTIVE: "256",
          RUNCODE_TENANT_RUNS_PER_MINUTE: "100000",
          RUNCODE_TENANT_CPU_MS_PER_MINUTE: "6000000",
          RUNCODE_TENANT_CPU_BURST_MS: "1000000",
          RUNCODE_TENANT_KV_BYTES: "1048576",
          RUNCODE_API_KEYS: "alpha:alpha-test-key-0123456789abcdef,beta:beta-test-key-0123456789abcdef",
          // The name test/workers/client.ts sends requests to.
          RUNCODE_ORIGINS: "http://runcode.test",
          // Runs and processes have the Web APIs (test/workers/api.test.ts).
          RUNCODE_WEB_APIS: "true",
          // Processes are kept a day after they end (test/workers/retention.test.ts).
          RUNCODE_RETENTION_DAYS: "1",
        },
      },
    }),
  ],
  test: {
    include: ["test/workers/**/*.test.ts"],
    testTimeout: 30_000,
  },
});
