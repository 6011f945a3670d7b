import { defineConfig } from "tsup";
import { BUILD_TYPES } from "../../tsup.preset.js";

export default defineConfig({
  entry: { index: "src/index.ts" },
  format: ["esm", "cjs"],
  dts: BUILD_TYPES,
  sourcemap: true,
  target: "node20",
  // noVNC is served from its installed package, found from this module's
  // location; the shim gives the CJS build an import.meta.url too.
  shims: true,
});
