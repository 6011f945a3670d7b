import { defineConfig } from "tsup";
import { BUILD_TYPES } from "../../tsup.preset.js";

// ESM only: the official SDK (@nodeops-createos/sandbox) ships ESM alone
// (its exports have no require condition), so a CommonJS build could not
// load it. CommonJS programs load this package with import().
export default defineConfig({
  entry: { index: "src/index.ts", testing: "src/testing/index.ts" },
  format: ["esm"],
  dts: BUILD_TYPES,
  sourcemap: true,
  target: "node20",
});
