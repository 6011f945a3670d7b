import { defineConfig } from "tsup";
import { BUILD_TYPES } from "../../tsup.preset.js";

const node20 = { sourcemap: true, target: "node20" } as const;

export default defineConfig([
  {
    entry: { index: "src/index.ts", "testing/index": "src/testing/index.ts" },
    format: ["esm", "cjs"],
    dts: BUILD_TYPES,
    ...node20,
  },
  // `agent-computer-e2b-template build`: the computer template on E2B.
  {
    entry: { "bin/agent-computer-e2b-template": "bin/agent-computer-e2b-template.ts" },
    format: ["esm"],
    banner: { js: "#!/usr/bin/env node" },
    ...node20,
  },
]);
