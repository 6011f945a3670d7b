import { defineProviderConformance } from "@agent-computer/testing/conformance";
import { e2bTestEnvironment } from "./e2b-test-environment.js";

// The contract's suite, desktop section included, through the real e2b SDK
// against the emulator whose sandboxes are real containers of the computer image.
const env = await e2bTestEnvironment("SandboxProvider conformance: e2b");
if (!env.missing) {
  defineProviderConformance({
    name: "e2b",
    createProvider: () => env.provider(),
    capabilities: {
      desktop: true,
      multiScreen: true,
      pageBrowser: true,
      terminal: true,
      stopKeepsMachine: true,
      mountedHome: false,
      billsWhileRunning: true,
      egress: true,
    },
    timeouts: { testMs: 90_000, provisionMs: 120_000 },
  });
}
