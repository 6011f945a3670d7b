import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["*.conformance.test.mts"],
    testTimeout: 60_000,
    hookTimeout: 120_000,
  },
});
