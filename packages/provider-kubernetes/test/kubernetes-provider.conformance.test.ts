import { defineProviderConformance } from "@agent-computer/testing/conformance";
import { kubernetesTestEnvironment } from "./kubernetes-test-environment.js";

// The contract's suite through the real client, against the wire fixture
// whose pods are real containers of the computer image.
const env = await kubernetesTestEnvironment("SandboxProvider conformance: kubernetes");
if (!env.missing) {
  defineProviderConformance({
    name: "kubernetes",
    createProvider: () => env.provider({ seccompLocalhostProfile: "agent-computer/chromium.json" }),
    capabilities: {
      desktop: true,
      multiScreen: true,
      pageBrowser: true,
      terminal: true,
      stopKeepsMachine: false,
      mountedHome: false,
    },
    timeouts: { testMs: 90_000, provisionMs: 120_000 },
  });
}
