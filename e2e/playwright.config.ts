import { defineConfig, devices } from "@playwright/test";
import { API_KEYS_SETTING, CALC_HEADERS, CALC_URL } from "./helpers.js";

/** Debian's Chromium (never `playwright install`), with the flags that keep it off the closed network. */
export const chromiumLaunch = {
  executablePath: "/usr/bin/chromium",
  args: [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
  ],
};

/**
 * The local edge host (`wrangler dev`): the playground and the API on one origin, as `npm start` serves them, but
 * closed as a deployment is: three tenants' keys, no anonymous access, a rate per tenant the burst test exceeds and
 * room in each tenant's share of CPU for the suites' concurrent runs;
 * `POST /mcp` bridges in the tests' upstream MCP server, which the MCP tests start on {@link CALC_URL}.
 */
/** Not `npm start`'s 8787, so the suites run while the local edge host is up. */
export const PORT = 8786;
const VARS = [
  `RUNCODE_ORIGINS:http://127.0.0.1:${PORT}`,
  `RUNCODE_API_KEYS:${API_KEYS_SETTING}`,
  "RUNCODE_TENANT_RUNS_PER_MINUTE:300",
  "RUNCODE_TENANT_CPU_MS_PER_MINUTE:6000000",
  "RUNCODE_TENANT_CPU_BURST_MS:1000000",
  `RUNCODE_MCP_SERVERS:${JSON.stringify({ mcpServers: { calc: { url: CALC_URL, headers: CALC_HEADERS } } })}`,
];

export default defineConfig({
  testDir: ".",
  testMatch: "**/*.spec.ts",
  outputDir: "../test-results/e2e",
  fullyParallel: false,
  workers: 1,
  timeout: 30_000,
  globalTimeout: 900_000,
  retries: 0,
  reporter: [["list"]],
  use: {
    baseURL: `http://127.0.0.1:${PORT}`,
    launchOptions: chromiumLaunch,
    trace: "off",
  },
  projects: [
    {
      name: "chromium-light",
      use: { ...devices["Desktop Chrome"], colorScheme: "light", launchOptions: chromiumLaunch },
    },
  ],
  webServer: {
    command: `npx vite build && npx wrangler dev --ip 127.0.0.1 --port ${PORT} --persist-to .wrangler/e2e-state ${VARS.map((v) => `--var '${v}'`).join(" ")}`,
    env: { CLOUDFLARE_CF_FETCH_ENABLED: "false", WRANGLER_SEND_METRICS: "false" },
    cwd: "..",
    url: `http://127.0.0.1:${PORT}/`,
    reuseExistingServer: false,
    timeout: 60_000,
    stdout: "ignore",
    stderr: "pipe",
  },
});
