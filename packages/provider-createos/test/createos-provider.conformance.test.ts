import { defineProviderConformance } from "@agent-computer/testing/conformance";
import { CREATEOS_CAPABILITIES } from "../src/index.js";
import { createosTestEnvironment } from "./createos-test-environment.js";

// The contract's suite, desktop section included, through the official
// SDK against the emulator held to the SDKs' wire types, whose VMs are
// real containers of the computer image (screens reach the gateway
// through the public ingress URL).
const env = await createosTestEnvironment("SandboxProvider conformance: createos");
if (!env.missing) {
  defineProviderConformance({
    name: "createos",
    createProvider: () => env.provider(),
    capabilities: { ...CREATEOS_CAPABILITIES },
    timeouts: { testMs: 90_000, provisionMs: 120_000 },
  });
}
