import { defineProviderConformance } from "@agent-computer/testing/conformance";
import { e2bTestEnvironment } from "./e2b-test-environment.js";

// The contract's suite, desktop section included, on the Novita flavour:
// the real novita-sandbox SDK (its v1 paths and Novita-* headers) against the emulator.
const env = await e2bTestEnvironment("SandboxProvider conformance: novita", "novita");
if (!env.missing) {
  defineProviderConformance({
    name: "novita",
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
