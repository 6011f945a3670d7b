import { defineProviderConformance } from "@agent-computer/testing/conformance";
import { BOAT_CAPABILITIES } from "../src/index.js";
import { boxTestEnvironment } from "./box-test-environment.js";

// The contract's suite again on the legacy Box base (`/api/box/v1`,
// `/boxes`, answers under `box`), which still answers: a deployment
// configured with the old base keeps working, and its exchanges too are
// held to the definition.
const env = await boxTestEnvironment("SandboxProvider conformance: boat on the legacy Box base", {}, "box");
if (!env.missing) {
  defineProviderConformance({
    name: "boat (legacy Box base)",
    createProvider: () => env.provider(),
    capabilities: { ...BOAT_CAPABILITIES },
    timeouts: { testMs: 90_000, provisionMs: 120_000 },
  });
}
