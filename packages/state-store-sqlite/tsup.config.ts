import { defineConfig } from "tsup";
import { BUILD_TYPES } from "../../tsup.preset.js";

export default defineConfig({
  entry: { index: "src/index.ts" },
  format: ["esm", "cjs"],
  dts: BUILD_TYPES,
  sourcemap: true,
  target: "node20",
});
