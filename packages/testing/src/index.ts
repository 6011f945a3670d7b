// What a provider or store author tests with (docs/architecture.md §12): the in-process fake provider, test clocks and the fencing
// history checker. The vitest suites are `/conformance`, the bench runner is
// `/bench`.
export { createFakeProvider, FAKE_DEFAULT_CAPABILITIES, type FakeProviderOptions } from "./fake/fake-provider.js";
export { encodePng } from "./fake/png.js";
export { withProvision } from "./fake/with-provision.js";
export { checkFencingHistory } from "./leases/check-fencing-history.js";
export type { FencingEvent } from "./leases/fencing-event.js";
export type { FencingViolation } from "./leases/fencing-violation.js";
export type { LeaseContentionOptions } from "./leases/lease-contention-options.js";
export type { LeaseContentionResult } from "./leases/lease-contention-result.js";
export { runLeaseContention } from "./leases/run-lease-contention.js";
export { manualEngine } from "./leases/test-clock.js";
