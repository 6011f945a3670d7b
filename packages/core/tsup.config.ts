import { defineConfig } from "tsup";

export default defineConfig([
  {
    // Dual-format entries: usable from ESM and CommonJS apps alike.
    entry: {
      index: "src/index.ts",
      "fake/index": "src/fake/index.ts",
      "checkpoint/index": "src/checkpoint/index.ts",
      "lease/index": "src/lease/index.ts",
      "bench/index": "src/bench/index.ts",
    },
    format: ["esm", "cjs"],
    dts: true,
    sourcemap: true,
    target: "node20",
  },
  {
    // The conformance suite imports vitest, which is ESM-only, so this
    // subpath is ESM-only too and never reached from the main entry.
    entry: { "conformance/index": "src/conformance/index.ts" },
    format: ["esm"],
    dts: true,
    sourcemap: true,
    target: "node20",
    external: ["vitest"],
  },
]);
