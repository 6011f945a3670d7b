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
  {
    // The in-computer desktop command: one file for the image's Node 18,
    // dependencies inlined, written into the image's runtime folder so the
    // image tag covers it. No source map: it would make the bytes, and so
    // the tag, depend on where the repository lives.
    entry: { desktop: "computer/desktop/desktop-main.ts" },
    outDir: "image/runtime/lib",
    outExtension: () => ({ js: ".mjs" }),
    format: ["esm"],
    platform: "node",
    target: "node18",
    noExternal: [/.*/],
    treeshake: true,
    splitting: false,
    sourcemap: false,
  },
]);
