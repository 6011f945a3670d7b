import { defineConfig } from "tsup";

const entries = { index: "src/index.ts", "provider-utils/index": "src/provider-utils/index.ts" };

export default defineConfig([
  { entry: entries, format: ["esm"], dts: true, sourcemap: true, splitting: true, target: "node20" },
  // Without splitting each CJS entry carries its own copy of shared code;
  // AgentComputerError recognises its copies by a Symbol.for brand.
  { entry: entries, format: ["cjs"], dts: true, sourcemap: true, target: "node20" },
]);
