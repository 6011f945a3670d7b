import { packageBuild } from "../../tsup.preset.js";

// Without splitting each CJS entry carries its own copy of shared code;
// AgentComputerError recognises its copies by a Symbol.for brand.
export default packageBuild({ index: "src/index.ts", "provider-utils/index": "src/provider-utils/index.ts" });
