import { defineConfig } from "tsup";

const node20 = { sourcemap: true, target: "node20" } as const;

export default defineConfig([
  { entry: { index: "src/index.ts" }, format: ["esm", "cjs"], dts: true, ...node20 },
  // `agent-computer-image build|tag`: the computer image's build on this host's engine.
  {
    entry: { "bin/agent-computer-image": "bin/agent-computer-image.ts" },
    format: ["esm"],
    banner: { js: "#!/usr/bin/env node" },
    ...node20,
  },
]);
