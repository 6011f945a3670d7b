// What a provider's tests and benches share (docs/architecture.md §12): the
// provider a suite runs on, chosen from what this machine has (a suite
// that cannot run fails under CI and is skipped elsewhere), fixtures inside
// a computer (a site, an RFB and a terminal client of the screen gateway)
// and home-transfer bench parts. ESM only: it imports vitest.

export {
  type AppliedChromiumPolicy,
  appliedChromiumPolicies,
  expectChromiumApplies,
} from "./applied-chromium-policies.js";
export { bridgeFixtureHost, bridgeFixtureTrio, type EgressFixtureTrio } from "./bridge-fixture-host.js";
export { chooseTestProvider } from "./choose-test-provider.js";
export { closeEmulatorAfterAll } from "./close-emulator-after-all.js";
export { fixtureApi, nodeHttpsGet } from "./credential-fixtures.js";
export {
  authorizationSeen,
  type ComputerShell,
  type CredentialInjectionSetting,
  computerShell,
  credentialInjectionCases,
  expectNoProcessHolds,
} from "./credential-injection-cases.js";
export { bypassScript, displayBrowserReach, FIXTURE_REPLY, fixtureHost, hostSideTarget } from "./egress-fixtures.js";
export { expectRfbScreen } from "./expect-rfb-screen.js";
export { failureOf } from "./failure-of.js";
export { historyOf, pixelsOf, SITE, SITE_PORT, serveFixtureSite } from "./fixture-site.js";
export { IMPOSTOR_LOG, impostorHeard, startImpostorGateway } from "./impostor-gateway.js";
export { countBytes, writeMixedHome } from "./mixed-home.js";
export { connectionsAfterPlanting } from "./planted-listener.js";
export { pointerAfterTakeover, pointerAfterTakeoverThroughExec } from "./pointer-after-takeover.js";
export { PROCESS_MEMORY_SCAN } from "./process-memory-scan.js";
export { provisionToFirstExec } from "./provision-to-first-exec.js";
export { reportMissingProvider } from "./report-missing-provider.js";
export { type Closed, RfbTestClient, refusalOf } from "./rfb-test-client.js";
export {
  expectBotsKeepTheirOwnCookies,
  expectBotsStillLoggedIn,
  expectLostMachineReplaced,
  type ReplacementScenario,
} from "./runtime-scenarios.js";
export { SaidRecorder } from "./said-recorder.js";
export { temporaryDataDir } from "./temporary-data-dir.js";
export { TerminalTestClient } from "./terminal-test-client.js";
export type { SuiteProviderOptions, TestProvider } from "./test-provider.js";
export type { ProviderCheck, TestProviderCandidate } from "./test-provider-candidate.js";
