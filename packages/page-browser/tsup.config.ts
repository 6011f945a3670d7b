import { packageBuild } from "../../tsup.preset.js";

export default packageBuild({ index: "src/index.ts", "emulator/index": "src/emulator/index.ts" });
