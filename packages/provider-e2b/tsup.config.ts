import { defineConfig } from "tsup";

const node20 = { sourcemap: true, target: "node20" } as const;

export default defineConfig([
  {
    entry: { index: "src/index.ts", "testing/index": "src/testing/index.ts" },
    format: ["esm", "cjs"],
    dts: true,
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
