// A loopback Daytona for tests: the SDK's wire calls, sandboxes as real containers (docs/architecture.md §12).
export type { FaultRule, Violation } from "@agent-computer/testing/emulator";
export { DAYTONA_OPERATIONS } from "./daytona-definition.js";
export { DaytonaEmulator, PREVIEW_DOMAIN } from "./daytona-emulator.js";
export type { DaytonaEmulatorOptions, EmulatedSandboxState } from "./daytona-emulator-options.js";
export { EMULATOR_LABEL } from "./daytona-sandbox.js";
export { PREVIEW_WARNING_COOKIE, parsePreviewHost, SKIP_PREVIEW_WARNING_HEADER } from "./preview-proxy.js";
