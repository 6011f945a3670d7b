import { defineConfig } from "tsup";
import { BUILD_TYPES } from "../../tsup.preset.js";

export default defineConfig([
  {
    entry: { index: "src/index.ts" },
    format: ["esm", "cjs"],
    dts: BUILD_TYPES,
    sourcemap: true,
    target: "node20",
    // The proxy's script is found from this module's location; the shim gives the CJS build an import.meta.url too.
    shims: true,
  },
  {
    // The proxy as one file for a container's Node 18 (the computer image's), every dependency inlined,
    // so provider-docker mounts it into a container and installs nothing (proxy-main.ts).
    entry: { "proxy-server": "src/proxy-main.ts" },
    format: ["cjs"],
    platform: "node",
    target: "node18",
    noExternal: [/.*/],
    treeshake: true,
    splitting: false,
    sourcemap: false,
  },
]);
