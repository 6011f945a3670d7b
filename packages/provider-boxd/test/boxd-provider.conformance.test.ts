import { defineProviderConformance } from "@agent-computer/testing/conformance";
import { BOXD_CAPABILITIES } from "../src/index.js";
import { boxdTestEnvironment } from "./boxd-test-environment.js";

// The contract's suite, desktop section included, through the package's
// gRPC client against the emulator held to proto/boxd-api.proto, whose
// machines are real containers of the computer image; the screen gateway
// is reached through each machine's public URL (its port 8000).
const env = await boxdTestEnvironment("SandboxProvider conformance: boxd");
if (!env.missing) {
  defineProviderConformance({
    name: "boxd",
    createProvider: () => env.provider(),
    capabilities: { ...BOXD_CAPABILITIES },
    timeouts: { testMs: 90_000, provisionMs: 120_000 },
  });
}
