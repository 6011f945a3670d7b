import { defineProviderConformance } from "@agent-computer/testing/conformance";
import { DAYTONA_CAPABILITIES } from "../src/index.js";
import { daytonaTestEnvironment } from "./daytona-test-environment.js";

// The contract's suite, desktop section included, through the real
// @daytonaio/sdk against the emulator whose sandboxes are real containers
// of the computer image.
const env = await daytonaTestEnvironment("SandboxProvider conformance: daytona");
if (!env.missing) {
  defineProviderConformance({
    name: "daytona",
    createProvider: () => env.provider(),
    capabilities: { ...DAYTONA_CAPABILITIES },
    timeouts: { testMs: 90_000, provisionMs: 120_000 },
  });
}
