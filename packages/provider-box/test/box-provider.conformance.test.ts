import { defineProviderConformance } from "@agent-computer/testing/conformance";
import { BOX_CAPABILITIES } from "../src/index.js";
import { boxTestEnvironment } from "./box-test-environment.js";

// The contract's suite, desktop section included, through the package's
// client against the emulator whose boxes are real containers of the
// computer image (screens reach the gateway through the private route).
const env = await boxTestEnvironment("SandboxProvider conformance: box");
if (!env.missing) {
  defineProviderConformance({
    name: "box",
    createProvider: () => env.provider(),
    capabilities: { ...BOX_CAPABILITIES },
    timeouts: { testMs: 90_000, provisionMs: 120_000 },
  });
}
