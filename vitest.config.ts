import { configDefaults, defineConfig } from "vitest/config";

/** Node: the conformance suite and every Node-side test. workerd and Chromium have their own configs. */
export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    exclude: [...configDefaults.exclude, "test/workers/**"],
    testTimeout: 30_000,
  },
});
