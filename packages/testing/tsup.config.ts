import { defineConfig } from "tsup";

export default defineConfig([
  {
    // The conformance suites and the provider test helper import vitest,
    // which is ESM-only, so those subpaths have no CJS build.
    entry: {
      index: "src/index.ts",
      "conformance/index": "src/conformance/index.ts",
      "bench/index": "src/bench/index.ts",
      "provider-test/index": "src/provider-test/index.ts",
    },
    format: ["esm"],
    dts: true,
    sourcemap: true,
    splitting: true,
    target: "node20",
    external: ["vitest"],
  },
  {
    entry: { index: "src/index.ts", "bench/index": "src/bench/index.ts" },
    format: ["cjs"],
    dts: true,
    sourcemap: true,
    target: "node20",
  },
]);
