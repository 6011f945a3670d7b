import { packageBuild } from "../../tsup.preset.js";

// The conformance suites and the provider test helper import vitest, which
// is ESM-only, so those subpaths have no CJS build.
export default packageBuild(
  {
    index: "src/index.ts",
    "conformance/index": "src/conformance/index.ts",
    "bench/index": "src/bench/index.ts",
    "provider-test/index": "src/provider-test/index.ts",
    "emulator/index": "src/emulator/index.ts",
  },
  { esmOnly: ["conformance/index", "provider-test/index"] },
);
