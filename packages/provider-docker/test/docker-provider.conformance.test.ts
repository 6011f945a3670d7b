import { defineProviderConformance } from "@agent-computer/testing/conformance";
import { dockerProvider } from "../src/index.js";
import { dockerTestEnvironment, reportMissingDocker, temporaryDataDir } from "./docker-test-environment.js";

// The contract's suite on the real engine and the real computer image.
const env = await dockerTestEnvironment();
if (env.missing) reportMissingDocker("SandboxProvider conformance: docker", env.missing);
else {
  const dataDir = await temporaryDataDir();
  defineProviderConformance({
    name: "docker",
    createProvider: () => dockerProvider({ docker: env.docker, image: env.image, dataDir }),
    capabilities: { desktop: true, multiScreen: true, stopKeepsMachine: true, mountedHome: true },
    timeouts: { testMs: 90_000, provisionMs: 120_000 },
  });
}
