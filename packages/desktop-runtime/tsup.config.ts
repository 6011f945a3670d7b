import { defineConfig } from "tsup";
import { BUILD_TYPES } from "../../tsup.preset.js";

export default defineConfig([
  {
    entry: { index: "src/index.ts" },
    format: ["esm", "cjs"],
    dts: BUILD_TYPES,
    sourcemap: true,
    target: "node20",
    // The image folder is found from the module's own location; the shim
    // gives the CJS build an import.meta.url too.
    shims: true,
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
    // ws loads these optional native speed-ups inside try/catch: left out,
    // it falls back to plain JavaScript.
    external: ["bufferutil", "utf-8-validate"],
    // Inlined CommonJS (ws) requires Node's built-ins: give the ESM bundle a require.
    banner: {
      js: 'import { createRequire as __agentComputerRequire } from "node:module";\nconst require = __agentComputerRequire(import.meta.url);',
    },
    treeshake: true,
    splitting: false,
    sourcemap: false,
  },
]);
