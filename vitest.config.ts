import { configDefaults, defineConfig } from "vitest/config";

/** Node: the conformance suite and every Node-side test. workerd, Chromium and the packed package have their own configs. */
export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    exclude: [...configDefaults.exclude, "test/workers/**", "test/package/**"],
    testTimeout: 30_000,
  },
});
