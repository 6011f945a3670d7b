import { defineProviderConformance } from "@agent-computer/testing/conformance";
import { BOAT_CAPABILITIES } from "../src/index.js";
import { boxTestEnvironment } from "./box-test-environment.js";

// The contract's suite, desktop section included, through the package's
// client against the emulator held to boat-v1.yaml, whose sandboxes are
// real containers of the computer image (screens reach the gateway
// through the hosted port's private route).
const env = await boxTestEnvironment("SandboxProvider conformance: boat");
if (!env.missing) {
  defineProviderConformance({
    name: "boat",
    createProvider: () => env.provider(),
    capabilities: { ...BOAT_CAPABILITIES },
    timeouts: { testMs: 90_000, provisionMs: 120_000 },
  });
}
