// The same suite on the fake provider of the CJS build. The suite itself is
// ESM only (it imports vitest, which has no CJS build), so a CommonJS
// provider author loads their provider with require and hands it over, as
// here: its errors come from core's CJS build and must still match.
import { createRequire } from "node:module";
import { defineProviderConformance } from "@agent-computer/testing/conformance";

const require = createRequire(import.meta.url);
if (!require.resolve("@agent-computer/testing").endsWith(".cjs")) throw new Error("expected the CJS build");
const { createFakeProvider } = require("@agent-computer/testing") as typeof import("@agent-computer/testing");

defineProviderConformance({
  name: "fake provider (CJS build)",
  createProvider: () => createFakeProvider(),
  capabilities: { desktop: true, stopKeepsMachine: true, mountedHome: false },
});
