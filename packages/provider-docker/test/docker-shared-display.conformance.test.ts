import { defineProviderConformance } from "@agent-computer/testing/conformance";
import { temporaryDataDir } from "@agent-computer/testing/provider-test";
import { dockerTestEnvironment } from "./docker-test-environment.js";

// The contract's suite again with the display stack in the computer's own
// container (dockerProvider({ displayContainer: false }), README, "The
// display in its own container"): the default runs it in a second container,
// docker-provider.conformance.test.ts; the contract holds both ways.
const env = await dockerTestEnvironment("SandboxProvider conformance: docker, shared display");
if (!env.missing) {
  const dataDir = await temporaryDataDir();
  defineProviderConformance({
    name: "docker (shared display)",
    createProvider: () => env.provider({ dataDir, displayContainer: false }),
    capabilities: { desktop: true, multiScreen: true, stopKeepsMachine: true, mountedHome: true },
    timeouts: { testMs: 90_000, provisionMs: 120_000 },
  });
}
