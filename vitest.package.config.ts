import { defineConfig } from "vitest/config";

/** The package as a consumer installs it (test/package): run by `npm test` after the build, not by `vitest run`. */
export default defineConfig({
  test: {
    include: ["test/package/**/*.test.ts"],
    testTimeout: 120_000,
    hookTimeout: 300_000,
  },
});
