import { defineConfig } from "vitest/config";

// One test run for the whole tree. Suites that need a real engine (Docker,
// Chromium, PostgreSQL) fail instead of skipping when CI is set.
export default defineConfig({
  test: {
    include: [
      "packages/*/src/**/*.test.ts",
      "packages/*/test/**/*.test.ts",
      "examples/*/test/**/*.test.ts",
      "test/**/*.test.ts",
    ],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    fileParallelism: true,
    pool: "forks",
  },
});
