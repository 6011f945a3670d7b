import { defineProviderConformance } from "@agent-computer/testing/conformance";
import { RAILWAY_CAPABILITIES } from "../src/index.js";
import { railwayTestEnvironment } from "./railway-test-environment.js";

// The contract's suite, desktop section included, through the package's
// client against the emulator held to Railway's published schema, whose
// deployments are real containers of the computer image with the home on
// a Docker volume (screens reach the gateway through the service's public
// domain for the port).
const env = await railwayTestEnvironment("SandboxProvider conformance: railway");
if (!env.missing) {
  defineProviderConformance({
    name: "railway",
    createProvider: () => env.provider(),
    capabilities: { ...RAILWAY_CAPABILITIES },
    timeouts: { testMs: 90_000, provisionMs: 120_000 },
  });
}
