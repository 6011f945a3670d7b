import { defineProviderConformance } from "@agent-computer/testing/conformance";
import { hostProvider } from "../src/host-provider.js";
import { hostTestEnvironment } from "./host-test-environment.js";

// The contract's suite on this machine, twice: shell and files only, and
// with a private display per bot (Xvfb, as the computer image runs it),
// whose desktop and page-browser sections then run too. A host computer
// offers no terminal: that section is left out by its capabilities.
const bare = await hostTestEnvironment("SandboxProvider conformance: host", "none");
if (!bare.missing) {
  const options = await bare.options();
  defineProviderConformance({
    name: "host",
    createProvider: () => hostProvider(options),
    capabilities: {
      desktop: false,
      terminal: false,
      billsWhileRunning: false,
      stopKeepsMachine: true,
      mountedHome: false,
      recordsRunTime: false,
    },
  });
}

const withDisplay = await hostTestEnvironment("SandboxProvider conformance: host, private display", "private");
if (!withDisplay.missing) {
  const options = await withDisplay.options();
  defineProviderConformance({
    name: "host, private display",
    createProvider: () => hostProvider(options),
    capabilities: { desktop: true, multiScreen: true, pageBrowser: true, terminal: false, recordsRunTime: false },
    timeouts: { testMs: 90_000, provisionMs: 120_000 },
  });
}
