// Core's README example as a provider author runs it: the conformance suite
// on the fake provider, both from the published @agent-computer/testing.
import { createFakeProvider } from "@agent-computer/testing";
import { defineProviderConformance } from "@agent-computer/testing/conformance";

defineProviderConformance({
  name: "fake provider (ESM build)",
  createProvider: () => createFakeProvider(),
  capabilities: { desktop: true, stopKeepsMachine: true, mountedHome: false },
});
