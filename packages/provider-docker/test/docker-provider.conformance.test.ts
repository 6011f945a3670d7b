import { defineProviderConformance } from "@agent-computer/testing/conformance";
import { temporaryDataDir } from "@agent-computer/testing/provider-test";
import { dockerTestEnvironment } from "./docker-test-environment.js";

// The contract's suite on the real engine and the real computer image, with
// the default display in a container of its own.
const env = await dockerTestEnvironment("SandboxProvider conformance: docker");
if (!env.missing) {
  const dataDir = await temporaryDataDir();
  defineProviderConformance({
    name: "docker",
    createProvider: () => env.provider({ dataDir }),
    capabilities: { desktop: true, multiScreen: true, stopKeepsMachine: true, mountedHome: true },
    timeouts: { testMs: 90_000, provisionMs: 120_000 },
  });
}
