import { defineConfig } from "tsup";

const entries = {
  index: "src/index.ts",
  "fake/index": "src/fake/index.ts",
  "checkpoint/index": "src/checkpoint/index.ts",
  "lease/index": "src/lease/index.ts",
  "bench/index": "src/bench/index.ts",
};

export default defineConfig([
  {
    // One ESM build for every entry, so shared code (AgentComputerError above
    // all) is one module that every subpath imports. The conformance suite
    // imports vitest, which is ESM-only, so that subpath exists only here.
    entry: { ...entries, "conformance/index": "src/conformance/index.ts" },
    format: ["esm"],
    dts: true,
    sourcemap: true,
    splitting: true,
    target: "node20",
    external: ["vitest"],
  },
  {
    entry: entries,
    format: ["cjs"],
    dts: true,
    sourcemap: true,
    target: "node20",
  },
]);
