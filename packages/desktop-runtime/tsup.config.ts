import { defineConfig } from "tsup";

export default defineConfig([
  {
    entry: { index: "src/index.ts" },
    format: ["esm", "cjs"],
    dts: true,
    sourcemap: true,
    target: "node20",
    // The image folder is found from the module's own location; the shim
    // gives the CJS build an import.meta.url too.
    shims: true,
  },
  {
    entry: { "bin/agent-computer-image": "bin/agent-computer-image.ts" },
    format: ["esm"],
    sourcemap: true,
    target: "node20",
    shims: true,
    banner: { js: "#!/usr/bin/env node" },
  },
]);
