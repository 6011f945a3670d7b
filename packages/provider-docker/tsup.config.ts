import { defineConfig } from "tsup";
import { BUILD_TYPES } from "../../tsup.preset.js";

const node20 = { sourcemap: true, target: "node20" } as const;

export default defineConfig([
  { entry: { index: "src/index.ts" }, format: ["esm", "cjs"], dts: BUILD_TYPES, ...node20 },
  // `agent-computer-image build|tag`: the computer image's build on this host's engine.
  {
    entry: { "bin/agent-computer-image": "bin/agent-computer-image.ts" },
    format: ["esm"],
    banner: { js: "#!/usr/bin/env node" },
    ...node20,
  },
]);
