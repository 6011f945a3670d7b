import { defineProviderConformance } from "../conformance/define-provider-conformance.js";
import { createFakeProvider } from "./fake-provider.js";

// The fake provider runs the whole suite three times, once per contract
// path: the default (private home, stop keeps the machine), a mounted home
// like Docker's, and stop-deletes like Kubernetes pods.
defineProviderConformance({
  name: "fake (default)",
  createProvider: () => createFakeProvider(),
  capabilities: { desktop: true, stopKeepsMachine: true, mountedHome: false },
});

defineProviderConformance({
  name: "fake (mounted home)",
  createProvider: () => createFakeProvider({ capabilities: { mountedHome: true } }),
  capabilities: { mountedHome: true },
});

defineProviderConformance({
  name: "fake (stop deletes, no desktop)",
  createProvider: () =>
    createFakeProvider({ capabilities: { stopKeepsMachine: false, desktop: false, multiScreen: false } }),
  capabilities: { stopKeepsMachine: false, desktop: false },
});
