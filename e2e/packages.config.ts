import { defineConfig } from "@playwright/test";
import { API_KEYS_SETTING } from "./helpers.js";
import { chromiumLaunch } from "./playwright.config.js";

/**
 * The edge with a packages lock file, as a deployment that ran `runcode packages add dayjs nanoid` builds it: the lock
 * and its bundles are written into .wrangler/e2e-packages/, `vite build` reads them (RUNCODE_PACKAGES) into the Worker
 * and the playground, and `wrangler dev` serves both with `Intl` (RUNCODE_INTL). Its own port, so it runs beside
 * playwright.config.ts's server; its own files (`*.packages.ts`), which that config does not match.
 */
const PORT = 19320;
const LOCK = ".wrangler/e2e-packages/runcode-packages.json";
const VARS = [
  `RUNCODE_ORIGINS:http://127.0.0.1:${PORT}`,
  `RUNCODE_API_KEYS:${API_KEYS_SETTING}`,
  "RUNCODE_INTL:true",
  "RUNCODE_WEB_APIS:true",
];

export default defineConfig({
  testDir: ".",
  testMatch: "**/*.packages.ts",
  outputDir: "../test-results/e2e-packages",
  fullyParallel: false,
  workers: 1,
  timeout: 30_000,
  globalTimeout: 300_000,
  retries: 0,
  reporter: [["list"]],
  use: { baseURL: `http://127.0.0.1:${PORT}`, launchOptions: chromiumLaunch, trace: "off" },
  projects: [{ name: "chromium", use: { launchOptions: chromiumLaunch } }],
  webServer: {
    command: [
      `node dist/bundle/cli.js packages add dayjs nanoid --lock ${LOCK}`,
      `RUNCODE_PACKAGES=${LOCK} npx vite build`,
      `npx wrangler dev --ip 127.0.0.1 --port ${PORT} --persist-to .wrangler/e2e-packages-state ${VARS.map((v) => `--var '${v}'`).join(" ")}`,
    ].join(" && "),
    env: { CLOUDFLARE_CF_FETCH_ENABLED: "false", WRANGLER_SEND_METRICS: "false" },
    cwd: "..",
    url: `http://127.0.0.1:${PORT}/`,
    reuseExistingServer: false,
    timeout: 120_000,
    stdout: "ignore",
    stderr: "pipe",
  },
});
