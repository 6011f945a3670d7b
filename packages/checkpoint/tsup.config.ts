import { defineConfig } from "tsup";

export default defineConfig([
  {
    entry: { index: "src/index.ts" },
    format: ["esm"],
    dts: true,
    sourcemap: true,
    splitting: true,
    target: "node20",
    external: ["vitest"],
  },
  {
    entry: { index: "src/index.ts" },
    format: ["cjs"],
    dts: true,
    sourcemap: true,
    target: "node20",
    // p-queue (and its p-timeout) ship ESM only: a require() of them gets the
    // module namespace, not the class, so the CJS build carries its own copy.
    noExternal: ["p-queue", "p-timeout"],
  },
]);
