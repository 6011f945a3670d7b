import { defineConfig } from "tsup";

const common = { entry: { index: "src/index.ts" }, dts: true, sourcemap: true, target: "node20" } as const;

export default defineConfig([
  { ...common, format: ["esm"] },
  // p-queue (and its p-timeout) ship ESM only: a require() of them gets the
  // module namespace, not the class, so the CJS build carries its own copy.
  { ...common, format: ["cjs"], noExternal: ["p-queue", "p-timeout"] },
]);
