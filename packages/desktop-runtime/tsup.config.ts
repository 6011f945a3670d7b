import { copyFile, mkdir } from "node:fs/promises";
import { createRequire } from "node:module";
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
  {
    // The egress proxy of @agent-computer/egress, its self-contained build copied as it is beside the desktop
    // command (tsup wants an entry: this folder's smallest file stands in, its output discarded), so the image
    // tag covers it and a Kubernetes pod's egress container runs it from the image: a cluster has no host folder
    // to mount it from, as provider-docker does (provider-kubernetes README, "Egress by policy").
    entry: { "egress-proxy-entry": "src/image/computer-image-extras.ts" },
    outDir: "dist/egress-proxy-entry",
    format: ["cjs"],
    dts: false,
    sourcemap: false,
    async onSuccess() {
      await mkdir("image/runtime/lib", { recursive: true });
      await copyFile(
        createRequire(import.meta.url).resolve("@agent-computer/egress/proxy-server.cjs"),
        "image/runtime/lib/egress-proxy.cjs",
      );
    },
  },
]);
