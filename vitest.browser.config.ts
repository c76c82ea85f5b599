import { playwright } from "@vitest/browser-playwright";
import { defineConfig } from "vitest/config";
import { chromiumLaunch } from "./e2e/playwright.config.js";

/** The core's conformance suite (and the playground's protocol) in Chromium: `test/browser/*.browser.ts`. */
export default defineConfig({
  test: {
    include: ["test/browser/**/*.browser.ts"],
    testTimeout: 30_000,
    browser: {
      enabled: true,
      headless: true,
      provider: playwright({ launchOptions: chromiumLaunch }),
      instances: [{ browser: "chromium" }],
      screenshotFailures: false,
    },
  },
  worker: { format: "es" },
});
