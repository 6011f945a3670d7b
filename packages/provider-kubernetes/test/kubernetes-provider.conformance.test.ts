import { defineProviderConformance } from "@agent-computer/testing/conformance";
import { kubernetesProvider } from "../src/index.js";
import { kubernetesTestEnvironment, reportMissingEngine, TEST_NAMESPACE } from "./kubernetes-test-environment.js";

// The contract's suite through the real client, against the wire fixture
// whose pods are real containers of the computer image.
const env = await kubernetesTestEnvironment();
if (env.missing) reportMissingEngine("SandboxProvider conformance: kubernetes", env.missing);
else {
  defineProviderConformance({
    name: "kubernetes",
    createProvider: () =>
      kubernetesProvider(
        {
          kubeConfig: env.fixture.kubeConfig(),
          namespace: TEST_NAMESPACE,
          image: env.image,
          seccompLocalhostProfile: "agent-computer/chromium.json",
        },
        {},
      ),
    capabilities: { desktop: true, multiScreen: true, stopKeepsMachine: false, mountedHome: false },
    timeouts: { testMs: 90_000, provisionMs: 120_000 },
  });
}
