import { defineConfig } from "tsup";
import { BUILD_TYPES } from "../../tsup.preset.js";

export default defineConfig([
  {
    entry: { index: "src/index.ts" },
    format: ["esm", "cjs"],
    dts: BUILD_TYPES,
    sourcemap: true,
    target: "node20",
    // import() stays import() in the CommonJS build: an ESM-only provider
    // (provider-createos) loads there too (provider-from-environment.ts).
    esbuildOptions(options) {
      options.supported = { ...options.supported, "dynamic-import": true };
    },
  },
  {
    // The bin: ESM only (top-level await), run by node from its shebang.
    entry: { main: "src/main.ts" },
    format: ["esm"],
    sourcemap: true,
    target: "node20",
    banner: { js: "#!/usr/bin/env node" },
  },
]);
