import { defineConfig } from "tsup";

export default defineConfig([
  {
    entry: { index: "src/index.ts" },
    format: ["esm"],
    dts: true,
    sourcemap: true,
    splitting: true,
    target: "node20",
    external: ["vitest"],
  },
  {
    entry: { index: "src/index.ts" },
    format: ["cjs"],
    dts: true,
    sourcemap: true,
    target: "node20",
  },
]);
