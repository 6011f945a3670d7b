import { defineProviderConformance } from "@agent-computer/testing/conformance";
import { temporaryDataDir } from "@agent-computer/testing/provider-test";
import { dockerTestEnvironment } from "./docker-test-environment.js";

// The contract's suite again with each computer's display in a container of
// its own (README, "The display in its own container"): the same contract
// holds, pages the bot serves on its own loopback included.
const env = await dockerTestEnvironment("SandboxProvider conformance: docker, display container");
if (!env.missing) {
  const dataDir = await temporaryDataDir();
  defineProviderConformance({
    name: "docker (display container)",
    createProvider: () => env.provider({ dataDir, displayContainer: true }),
    capabilities: { desktop: true, multiScreen: true, stopKeepsMachine: true, mountedHome: true },
    timeouts: { testMs: 90_000, provisionMs: 120_000 },
  });
}
